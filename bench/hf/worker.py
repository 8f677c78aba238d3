"""One model, one arm, one fresh process: Dynamo's break census, outputs, and (optionally) timing.

Run by bench/hf/run.py as a subprocess (never imported by it), so each model starts from a clean
Dynamo and compile cache, and a crash or hang costs one model only:

    python bench/hf/worker.py census --model t5 --out r.json [--pkg-root DIR] [--ref-dir DIR]
    python bench/hf/worker.py timing --model t5 --out r.json [--pkg-root DIR] --ref-dir DIR

--pkg-root DIR   a directory holding a `transformers` package to import instead of the installed one
                 (the fixed arm); it goes first on sys.path before anything imports transformers.
--ref-dir DIR    where the original arm saved the state_dict and eager outputs; the fixed arm loads
                 the same weights from there and compares its eager outputs with them.
--corpus NAME    the corpus (bench/hf/corpora.py) whose flags apply: config overrides, fp16, sequence
                 length, and eval mode's grad context (no_grad, or inference_mode for paper-4.52.4).

census: for eval()/no_grad and train()/grad, compile with a counting backend (backend "eager"
semantics: the captured graphs run as they are), run forward (and backward in train), and record
every graph break Dynamo logs, with its type, GB id, reason, and the transformers frames of its user
stack; then the same under torch._dynamo.explain (cross-check: explain misses skipped frames), and a
fullgraph=True compile. Also records the source lines Dynamo traced (for detection precision).
"""
from __future__ import annotations

import argparse
import functools
import json
import linecache
import os
import sys
import time
import traceback

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _setup_path(pkg_root: str | None) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    validator = os.path.normpath(os.path.join(here, "..", "..", "gpu-validator"))  # the shared break recorder
    for path in (validator, here):
        if path not in sys.path:
            sys.path.insert(0, path)
    if pkg_root:
        sys.path.insert(0, os.path.abspath(pkg_root))


def _flatten(obj, prefix="out"):
    """Tensors of a model output, flattened to (name, tensor) pairs in a stable order."""
    import torch

    if isinstance(obj, torch.Tensor):
        yield prefix, obj
    elif isinstance(obj, dict) or hasattr(obj, "to_tuple") and hasattr(obj, "keys"):
        for k in obj.keys():
            yield from _flatten(obj[k], f"{prefix}.{k}")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _flatten(v, f"{prefix}[{i}]")


def _loss_of(out):
    import torch

    loss = getattr(out, "loss", None)
    if isinstance(loss, torch.Tensor) and loss.requires_grad:
        return loss
    for _, t in _flatten(out):
        if t.is_floating_point() and t.requires_grad:
            return t.float().sum()
    return None


EVAL_CONTEXT = "no_grad"  # set from the corpus in main(): "no_grad" or "inference_mode"


def _eval_ctx():
    """The grad context of eval mode: torch.no_grad(), or torch.inference_mode() where the corpus says."""
    import torch

    return torch.inference_mode() if EVAL_CONTEXT == "inference_mode" else torch.no_grad()


def _step(model, compiled, inputs, train):
    """One call of `compiled`; in train mode with the backward pass and the gradients cleared after."""
    if train:
        loss = _loss_of(compiled(**inputs))
        if loss is not None:
            loss.backward()
        model.zero_grad(set_to_none=True)
    else:
        with _eval_ctx():
            compiled(**inputs)


@functools.lru_cache(maxsize=None)
def _char_column(filename: str, lineno: int, byte_col: int) -> int:
    """Python's instruction columns count UTF-8 bytes; findings count characters."""
    line = linecache.getline(filename, lineno)
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore")) if line else byte_col


class Recorder:
    """Dynamo's graph breaks (graphmend_validator.break_recorder, shared with the oracle) and the source
    positions it traced, recorded for the duration of a run."""

    def __init__(self, roots: tuple[str, ...]):
        from torch._dynamo.symbolic_convert import InstructionTranslatorBase

        _setup_path(None)
        import sites
        from graphmend_validator.break_recorder import BreakRecorder

        self.sites = sites
        self.roots = roots
        self.events: list[dict] = []
        self.traced: dict[str, set[int]] = {}
        # (line, column) of every instruction Dynamo stepped, so that a finding on an operand that a
        # static test short-circuits (`dtype == float16 and isinf(h).any()` in float32) is not taken
        # as refuted just because its line ran
        self.positions: dict[str, set[tuple[int, int]]] = {}
        self.mode = None
        itb = InstructionTranslatorBase
        orig_line = itb.starts_line
        orig_step = itb.step
        rec = self
        rel_of_code: dict[object, str | None] = {}

        def starts_line(self_, lineno):
            rel = sites.package_relpath(self_.f_code.co_filename, rec.roots)
            if rel is not None:
                rec.traced.setdefault(rel, set()).add(lineno)
            return orig_line(self_, lineno)

        def step(self_):
            ip = self_.instruction_pointer
            if ip is not None and ip < len(self_.instructions):
                code = self_.f_code
                if code not in rel_of_code:
                    rel_of_code[code] = sites.package_relpath(code.co_filename, rec.roots)
                rel = rel_of_code[code]
                pos = self_.instructions[ip].positions
                if rel is not None and pos is not None and pos.lineno is not None and pos.col_offset is not None:
                    rec.positions.setdefault(rel, set()).add(
                        (pos.lineno, _char_column(code.co_filename, pos.lineno, pos.col_offset)))
            return orig_step(self_)

        # a failure in _record never changes Dynamo's behaviour: the recorder keeps it from Dynamo
        self._breaks = BreakRecorder(on_event=self._record, on_error=self._harness_error).install()
        itb.starts_line = starts_line
        itb.step = step
        self._restore = (itb, orig_line, orig_step)

    def uninstall(self) -> None:
        itb, orig_line, orig_step = self._restore
        itb.starts_line = orig_line
        itb.step = orig_step
        self._breaks.uninstall()

    def _harness_error(self, error: BaseException) -> None:
        self.events.append({"mode": self.mode, "kind": "harness error", "error": repr(error)})

    def _record(self, event) -> None:
        gb_type = event.gb_chain[0]  # the type Dynamo raised; for a loop (GB7000) the kind is its cause's
        msg = event.message
        first = msg.strip().splitlines()[0].strip() if msg.strip() else gb_type
        in_loop = event.in_loop
        kind = first if in_loop else gb_type
        chain = []
        for fs in event.frames:
            fr = self.sites.frame_of(fs.filename, fs.lineno or 0, fs.name, self.roots)
            if fr is not None:
                chain.append(vars(fr))
        ev = {"mode": self.mode, "kind": kind, "gb_id": event.gb_id, "in_loop": in_loop,
              "reason": event.reason[:200],
              "detail": first[:200] if not in_loop else msg.split("*** While handling")[0].strip()[:400],
              "file": None}
        inner = event.innermost
        if inner is not None:
            ev["innermost"] = {"file": inner.filename, "line": inner.lineno, "function": inner.name}
        if chain:
            ev.update(chain[-1])
            ev["chain"] = chain[:-1]
        self.events.append(ev)


def _seed_all(seed: int = 1234) -> None:
    """Seed every RNG a model's forward may draw from: torch, numpy (SpecAugment in wav2vec2-style
    models draws mask positions with np.random) and Python's random."""
    import random

    import numpy as np
    import torch

    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


class _Skip(Exception):
    pass


def _compare(a: dict, b: dict) -> dict:
    import torch

    if set(a) != set(b):
        return {"equal": False, "reason": "different output fields", "max_abs_diff": None}
    worst = 0.0
    for k in a:
        x, y = a[k], b[k]
        if x.shape != y.shape or x.dtype != y.dtype:
            return {"equal": False, "reason": f"{k}: shape/dtype differ", "max_abs_diff": None}
        if x.is_floating_point():
            if not torch.equal(torch.isnan(x), torch.isnan(y)):
                return {"equal": False, "reason": f"{k}: NaN pattern differs", "max_abs_diff": None}
            d = (x.double() - y.double()).abs().nan_to_num(0.0).max().item() if x.numel() else 0.0
            worst = max(worst, d)
            if not torch.allclose(x, y, rtol=1e-5, atol=1e-6, equal_nan=True):
                return {"equal": False, "reason": f"{k}: values differ", "max_abs_diff": worst}
        elif not torch.equal(x, y):
            return {"equal": False, "reason": f"{k}: values differ", "max_abs_diff": None}
    return {"equal": True, "reason": "", "max_abs_diff": worst, "bitwise": worst == 0.0}


def _eager_outputs(model, recipe, cfg, train: bool, corpus=None):
    import torch

    from recipes import make_inputs

    inputs = make_inputs(recipe, cfg, train, corpus=corpus)
    _seed_all(1234)
    if train:
        model.train()
        out = model(**inputs)
        loss = _loss_of(out)
        res = {k: v.detach().clone() for k, v in _flatten(out)}
        if loss is not None:
            loss.backward()
            grads = [p.grad.detach().double().norm().item() for p in model.parameters() if p.grad is not None]
            res["grad_norm_sum"] = torch.tensor(sum(grads), dtype=torch.float64)
            model.zero_grad(set_to_none=True)
        return res
    model.eval()
    with _eval_ctx():
        out = model(**inputs)
    # clone outside the grad context: no inference tensors in the saved reference
    return {k: v.detach().clone() for k, v in _flatten(out)}


def census(args) -> dict:
    _setup_path(args.pkg_root)
    import torch
    import transformers

    import recipes

    tf_root = os.path.dirname(os.path.abspath(transformers.__file__))
    if args.pkg_root and not tf_root.startswith(os.path.abspath(args.pkg_root)):
        raise RuntimeError(f"fixed arm imported transformers from {tf_root}, not from {args.pkg_root}")
    torch.set_num_threads(max(1, args.threads))
    r = recipes.BY_NAME[args.model]
    res: dict = {"model": r.name, "arm": "fixed" if args.pkg_root else "original", "transformers_root": tf_root,
                 "torch": torch.__version__, "transformers": transformers.__version__, "corpus": args.corpus,
                 "eval_context": EVAL_CONTEXT}
    t0 = time.time()
    model, cfg = recipes.build(r, corpus=args.corpus)
    res["dtype"] = str(next(model.parameters()).dtype)
    res["modules"] = [m.replace("transformers.", "").replace(".", "/") + ".py" for m in recipes.recipe_modules(r)]
    res["params"] = sum(p.numel() for p in model.parameters())
    if args.ref_dir and os.path.exists(os.path.join(args.ref_dir, "state.pt")):
        sd = torch.load(os.path.join(args.ref_dir, "state.pt"))
        missing, unexpected = model.load_state_dict(sd, strict=False)
        res["state_dict_mismatch"] = {"missing": list(missing), "unexpected": list(unexpected)}
    elif args.ref_dir:
        os.makedirs(args.ref_dir, exist_ok=True)
        torch.save(model.state_dict(), os.path.join(args.ref_dir, "state.pt"))
    res["build_s"] = round(time.time() - t0, 3)

    # eager outputs, both modes, saved by the original arm and compared by the fixed arm
    outs = {"eval": _eager_outputs(model, r, cfg, False, args.corpus),
            "train": _eager_outputs(model, r, cfg, True, args.corpus)}
    if args.ref_dir:
        ref_path = os.path.join(args.ref_dir, "outputs.pt")
        if args.pkg_root and os.path.exists(ref_path):
            ref = torch.load(ref_path)
            res["outputs"] = {m: _compare(ref[m], outs[m]) for m in ("eval", "train")}
        elif not args.pkg_root:
            torch.save(outs, ref_path)

    rec = Recorder((tf_root,))
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

        inputs = recipes.make_inputs(r, cfg, train, corpus=args.corpus)
        model.train(train)
        compiled = torch.compile(model, backend=counting_backend)
        m: dict = {}
        t1 = time.time()
        try:
            _seed_all(1234)
            _step(model, compiled, inputs, train)
            m["ok"] = True
        except Exception as e:
            m["ok"] = False
            m["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300] if str(e).strip() else ''}"
        m["compile_run_s"] = round(time.time() - t1, 3)
        m["graphs"] = len(graphs)
        m["graph_nodes"] = graphs
        m["counters"] = {
            "graph_break": sum(counters["graph_break"].values()),
            "unimplemented": sum(counters["unimplemented"].values()),
            "frames_total": counters["frames"]["total"],
            "frames_ok": counters["frames"]["ok"],
            "unique_graphs": counters["stats"]["unique_graphs"],
        }
        m["events"] = rec.events[n_before:]
        m["break_events"] = len(m["events"])

        # cross-check with explain (one more trace of the same inputs)
        torch._dynamo.reset()
        if args.skip_explain:
            m["explain"] = {"skipped": True}
        rec.mode = mode + ":explain"
        n_explain = len(rec.events)
        try:
            if args.skip_explain:
                raise _Skip
            _seed_all(1234)
            if train:
                ex = torch._dynamo.explain(model)(**inputs)
            else:
                with _eval_ctx():
                    ex = torch._dynamo.explain(model)(**inputs)
            m["explain"] = {"graph_count": ex.graph_count, "graph_break_count": ex.graph_break_count,
                            "reasons": [br.reason.splitlines()[0][:160] for br in ex.break_reasons]}
        except _Skip:
            pass
        except Exception as e:
            m["explain"] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
        del rec.events[n_explain:]

        # does the whole forward compile as one graph?
        torch._dynamo.reset()
        rec.mode = mode + ":fullgraph"
        n_full = len(rec.events)
        try:
            _seed_all(1234)
            fg = torch.compile(model, backend="eager", fullgraph=True)
            if train:
                fg(**inputs)
            else:
                with _eval_ctx():
                    fg(**inputs)
            m["fullgraph"] = {"ok": True}
        except Exception as e:
            first = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
            m["fullgraph"] = {"ok": False, "error": first}
        del rec.events[n_full:]
        res["modes"][mode] = m

    res["traced_lines"] = {k: sorted(v) for k, v in rec.traced.items()}
    res["traced_positions"] = {k: sorted(v) for k, v in rec.positions.items()}
    res["elapsed_s"] = round(time.time() - t0, 3)
    return res


def timing(args) -> dict:
    """Cold start (compile + first step) and steady state under inductor, in one mode.

    eval: forward under no_grad (inference_mode where the corpus says). train: forward and backward
    with train() on (the mode where most
    real breaks live). Run once per fresh process, with the caches the caller disabled.
    """
    _setup_path(args.pkg_root)
    t_import = time.time()
    import torch
    import transformers

    import recipes

    torch.set_num_threads(max(1, args.threads))
    r = recipes.BY_NAME[args.model]
    model, cfg = recipes.build(r, corpus=args.corpus)
    if args.ref_dir and os.path.exists(os.path.join(args.ref_dir, "state.pt")):
        model.load_state_dict(torch.load(os.path.join(args.ref_dir, "state.pt")), strict=False)
    train = args.mode == "train"
    model.train(train)
    inputs = recipes.make_inputs(r, cfg, train, corpus=args.corpus)
    import_s = time.time() - t_import
    compiled = torch.compile(model, backend="inductor")

    def step():
        _step(model, compiled, inputs, train)

    _seed_all(1234)
    t0 = time.perf_counter()
    step()
    cold = time.perf_counter() - t0
    for _ in range(3):
        step()
    ts = []
    for _ in range(args.iters):
        t1 = time.perf_counter()
        step()
        ts.append(time.perf_counter() - t1)
    ts.sort()
    from torch._dynamo.utils import counters

    return {"model": r.name, "arm": "fixed" if args.pkg_root else "original", "mode": args.mode,
            "transformers_root": os.path.dirname(transformers.__file__), "import_build_s": import_s,
            "cold_s": cold, "steady_median_s": ts[len(ts) // 2], "steady_min_s": ts[0],
            "unique_graphs": counters["stats"]["unique_graphs"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("task", choices=["census", "timing"])
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--pkg-root")
    ap.add_argument("--ref-dir")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--mode", choices=["eval", "train"], default="eval")
    ap.add_argument("--skip-explain", action="store_true", help="census without the explain() cross-check")
    ap.add_argument("--corpus", default="default", help="corpus whose flags apply (bench/hf/corpora.py)")
    args = ap.parse_args(argv)
    global EVAL_CONTEXT
    try:
        _setup_path(None)
        import corpora

        EVAL_CONTEXT = corpora.get(args.corpus).eval_context
        res = census(args) if args.task == "census" else timing(args)
        res["status"] = "ok"
    except Exception as e:
        res = {"model": args.model, "status": "error", "error": f"{type(e).__name__}: {e}"[:2000],
               "traceback": traceback.format_exc()[-4000:]}
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1, default=lambda o: sorted(o) if isinstance(o, set) else str(o))
    return 0 if res["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
