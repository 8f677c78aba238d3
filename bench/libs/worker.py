"""One bench/libs model, one arm, one fresh process: Dynamo's break census and eager outputs.

Run by bench/libs/run.py as a subprocess under .venv-libs (never imported by it):

    .venv-libs/bin/python bench/libs/worker.py --model timm_vit_tiny_patch16_224 --out r.json \\
        [--pkg-root DIR] [--ref-dir DIR] [--fullgraph]

--pkg-root DIR   a directory holding a copy of the model's library package (the fixed arm); it goes first on
                 sys.path before anything imports the library.
--ref-dir DIR    where the original arm saves the state_dict and eager outputs; the fixed arm loads the same
                 weights from there and compares its eager outputs with them (bench/hf's tolerance).

Census, as bench/hf/worker.py does it (and with its Recorder: graphmend_validator's break recorder plus the
source positions Dynamo traced): for eval() under no_grad and train() with backward, compile with a counting
backend (backend "eager" semantics), run once, and record every graph break Dynamo logs with the library
frames of its user stack. No explain() pass; `--fullgraph` adds a fullgraph=True compile per mode.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
import traceback

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
HF = os.path.join(os.path.dirname(HERE), "hf")


def _hf_worker():
    """bench/hf/worker.py under another module name (this file is also called worker.py)."""
    spec = importlib.util.spec_from_file_location("hf_worker", os.path.join(HF, "worker.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _loss(out):
    """Sum of every floating output that requires grad (detection models return a dict of losses)."""
    hfw = _hf_worker_mod
    parts = [t.float().sum() for _, t in hfw._flatten(out) if t.is_floating_point() and t.requires_grad]
    if not parts:
        return None
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    return total


def _flat_outputs(out) -> dict:
    hfw = _hf_worker_mod
    if hasattr(out, "_asdict"):  # namedtuples (GoogLeNetOutputs)
        out = out._asdict()
    return {k: v.detach().clone() for k, v in hfw._flatten(out)}


def _run(model, fn, recipe, train: bool):
    """One call of `fn` (the model or its compiled form) in the mode, with backward in train; the outputs."""
    import torch

    model.train(train)
    args, kwargs = recipe.inputs(train)
    hfw = _hf_worker_mod
    hfw._seed_all(1234)
    if train:
        out = fn(*args, **kwargs)
        if hasattr(out, "_asdict"):
            out = out._asdict()
        res = _flat_outputs(out)
        loss = _loss(out)
        if loss is not None:
            loss.backward()
            grads = [p.grad.detach().double().norm().item() for p in model.parameters() if p.grad is not None]
            res["grad_norm_sum"] = torch.tensor(sum(grads), dtype=torch.float64)
        model.zero_grad(set_to_none=True)
        return res
    with torch.no_grad():
        out = fn(*args, **kwargs)
    return _flat_outputs(out)


_hf_worker_mod = None


class ExecutedFiles:
    """The package's files whose code runs (Python-level calls) while installed: decides which models a fix can
    touch at all. `with ExecutedFiles(root) as ex: ...; ex.files` (paths relative to root)."""

    def __init__(self, root: str):
        self.prefix = os.path.abspath(root).rstrip(os.sep) + os.sep
        self.files: set[str] = set()
        self._seen: set = set()

    def _prof(self, frame, event, arg):
        if event == "call":
            code = frame.f_code
            if code not in self._seen:
                self._seen.add(code)
                fn = code.co_filename
                if fn.startswith(self.prefix):
                    self.files.add(fn[len(self.prefix):].replace(os.sep, "/"))

    def __enter__(self):
        import threading

        sys.setprofile(self._prof)
        threading.setprofile(self._prof)
        return self

    def __exit__(self, *exc):
        import threading

        sys.setprofile(None)
        threading.setprofile(None)


def census(args) -> dict:
    global _hf_worker_mod
    if args.pkg_root:
        sys.path.insert(0, os.path.abspath(args.pkg_root))
    sys.path.insert(0, HERE)
    import recipes

    r = recipes.BY_NAME[args.model]
    lib = importlib.import_module(r.lib)
    import torch

    _hf_worker_mod = hfw = _hf_worker()
    hfw._setup_path(None)  # bench/hf and gpu-validator on sys.path: sites, the break recorder
    import sites

    sites.PACKAGE = r.lib
    root = os.path.dirname(os.path.abspath(lib.__file__))
    if args.pkg_root and not root.startswith(os.path.abspath(args.pkg_root)):
        raise RuntimeError(f"fixed arm imported {r.lib} from {root}, not from {args.pkg_root}")
    torch.set_num_threads(max(1, args.threads))
    res: dict = {"model": r.name, "lib": r.lib, "arm": "fixed" if args.pkg_root else "original", "lib_root": root,
                 "torch": torch.__version__, "lib_version": getattr(lib, "__version__", "?")}
    t0 = time.time()
    model = r.build()
    res["params"] = sum(p.numel() for p in model.parameters())
    if args.ref_dir and os.path.exists(os.path.join(args.ref_dir, "state.pt")) and args.pkg_root:
        sd = torch.load(os.path.join(args.ref_dir, "state.pt"))
        missing, unexpected = model.load_state_dict(sd, strict=False)
        res["state_dict_mismatch"] = {"missing": list(missing), "unexpected": list(unexpected)}
    elif args.ref_dir:
        os.makedirs(args.ref_dir, exist_ok=True)
        torch.save(model.state_dict(), os.path.join(args.ref_dir, "state.pt"))
    res["build_s"] = round(time.time() - t0, 3)

    outs, eager_err = {}, {}
    with ExecutedFiles(root) as executed:
        for mode in ("eval", "train"):
            try:
                outs[mode] = _run(model, model, r, mode == "train")
            except Exception as e:
                eager_err[mode] = f"{type(e).__name__}: {str(e)[:300]}"
    res["executed_files"] = sorted(executed.files)
    if eager_err:
        res["eager_errors"] = eager_err
    if args.files_only:
        return res
    if args.ref_dir:
        ref_path = os.path.join(args.ref_dir, "outputs.pt")
        if args.pkg_root and os.path.exists(ref_path):
            ref = torch.load(ref_path)
            res["outputs"] = {m: (hfw._compare(ref[m], outs[m]) if m in outs and m in ref else
                                  {"equal": False, "reason": eager_err.get(m, "missing reference")})
                              for m in ("eval", "train")}
        elif not args.pkg_root:
            torch.save(outs, ref_path)

    class Recorder(hfw.Recorder):
        """bench/hf's recorder, keeping Dynamo's whole message (explanation, hints) for the list of misses."""

        def _record(self, event) -> None:
            n = len(self.events)
            super()._record(event)
            if len(self.events) > n:
                self.events[-1]["message"] = event.message.split("*** While handling")[0].strip()[:1500]

    rec = Recorder((root,))
    from torch._dynamo.utils import counters

    res["modes"] = {}
    for mode in ("eval", "train"):
        train = mode == "train"
        torch._dynamo.reset()
        counters.clear()
        rec.mode = mode
        n_before = len(rec.events)
        graphs = []

        def counting_backend(gm, example_inputs):
            graphs.append(len(gm.graph.nodes))
            return gm.forward

        compiled = torch.compile(model, backend=counting_backend)
        m: dict = {}
        t1 = time.time()
        try:
            _run(model, compiled, r, train)
            m["ok"] = True
        except Exception as e:
            m["ok"] = False
            m["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300] if str(e).strip() else ''}"
        m["compile_run_s"] = round(time.time() - t1, 3)
        m["graphs"] = len(graphs)
        m["graph_nodes"] = graphs
        m["counters"] = {"graph_break": sum(counters["graph_break"].values()),
                         "unimplemented": sum(counters["unimplemented"].values()),
                         "frames_total": counters["frames"]["total"], "frames_ok": counters["frames"]["ok"],
                         "unique_graphs": counters["stats"]["unique_graphs"]}
        m["events"] = rec.events[n_before:]
        m["break_events"] = len(m["events"])
        m["explain"] = {"skipped": True}
        if args.fullgraph:
            torch._dynamo.reset()
            rec.mode = mode + ":fullgraph"
            n_full = len(rec.events)
            try:
                _run(model, torch.compile(model, backend="eager", fullgraph=True), r, train)
                m["fullgraph"] = {"ok": True}
            except Exception as e:
                first = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
                m["fullgraph"] = {"ok": False, "error": first}
            del rec.events[n_full:]
        else:
            m["fullgraph"] = {"ok": None}
        res["modes"][mode] = m
    rec.uninstall()
    res["traced_lines"] = {k: sorted(v) for k, v in rec.traced.items()}
    res["traced_positions"] = {k: sorted(v) for k, v in rec.positions.items()}
    res["elapsed_s"] = round(time.time() - t0, 3)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--pkg-root")
    ap.add_argument("--ref-dir")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--fullgraph", action="store_true", help="also compile each mode with fullgraph=True")
    ap.add_argument("--files-only", action="store_true",
                    help="only the eager runs: which package files execute (executed_files); no census")
    args = ap.parse_args(argv)
    try:
        res = census(args)
        res["status"] = "ok"
    except Exception as e:
        res = {"model": args.model, "status": "error", "error": f"{type(e).__name__}: {e}"[:2000],
               "traceback": traceback.format_exc()[-4000:]}
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1, default=lambda o: sorted(o) if isinstance(o, set) else str(o))
    return 0 if res["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
