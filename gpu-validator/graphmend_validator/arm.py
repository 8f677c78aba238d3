"""One arm of a validation, run in its own process: `python -m graphmend_validator.arm SPEC.json`.

Roles:
- `prepare`: imports the original target, calls its factory with the seed, and saves the weights
  (state_dict), the inputs and the eager reference output, so that every measured arm runs the same
  weights on the same inputs.
- `measure`: imports one source (original or fixed) under the target's module name, loads those
  weights and inputs, runs eager once (compared with the reference), then compiles and measures:
  cold start (first compiled call, compile included), graphs, breaks, recompiles, compiled vs eager
  equality, and steady state. With `analyze`, also whether `fullgraph=True` compiles and a
  cross-check of the graph count with a counting backend.

The result is JSON written to spec["result_path"]; stdout and stderr belong to the user's code.
"""

import json
import logging
import math
import os
import re
import resource
import statistics
import sys
import time
import traceback

from graphmend_validator import procs

EXPLAIN_RE = re.compile(r"gb(\d{4})\.html")
LOC_RE = re.compile(r"in user code at (.*):(\d+)\s*$")
FRAME_RE = re.compile(r'^\s*File "(.*)", line (\d+), in (.*)$')
WRAPPER_PREFIXES = (
    "Encountered graph break when attempting to trace",
    "Failed to handle graph break gracefully",
    "graph break in loop",
    "*** While handling this graph break",
)


class ArmError(Exception):
    """An error with a kind the server reports as is (bad_factory, state_dict, ...)."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


# ----------------------------------------------------------------------------------------------
# Loading the target


def load_target_module(module_name, source_file, search_root, original_file):
    """Imports `source_file` as module `module_name`, its parent packages from `search_root`."""
    import importlib
    import importlib.util

    if search_root and search_root not in sys.path:
        sys.path.insert(0, search_root)
    parent, _, leaf = module_name.rpartition(".")
    if parent:
        importlib.import_module(parent)
    is_package = os.path.basename(original_file) == "__init__.py"
    spec = importlib.util.spec_from_file_location(
        module_name,
        source_file,
        submodule_search_locations=[os.path.dirname(original_file)] if is_package else None,
    )
    if spec is None or spec.loader is None:
        raise ArmError("bad_target", f"cannot load {source_file} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    if parent:
        setattr(sys.modules[parent], leaf, module)
    spec.loader.exec_module(module)
    return module


def install_replacement(module_name, source_file):
    """Imports `source_file` as `module_name` (its parent packages first) before anything else imports it."""
    import importlib
    import importlib.util

    parent, _, leaf = module_name.rpartition(".")
    if parent:
        importlib.import_module(parent)
    spec = importlib.util.spec_from_file_location(module_name, source_file)
    if spec is None or spec.loader is None:
        raise ArmError("bad_target", f"cannot load {source_file} as module {module_name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    if parent:
        setattr(sys.modules[parent], leaf, module)
    spec.loader.exec_module(module)


def import_target(spec):
    if spec["search_root"] and spec["search_root"] not in sys.path:
        sys.path.insert(0, spec["search_root"])
    if spec.get("replace_module"):
        install_replacement(spec["replace_module"], spec["replace_source"])
    return load_target_module(spec["module_name"], spec["source_file"], spec["search_root"], spec["original_file"])


def call_factory(module, factory_name):
    obj = module
    for part in factory_name.split("."):
        if not hasattr(obj, part):
            raise ArmError("bad_target", f"{module.__name__} has no attribute {factory_name!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ArmError("bad_target", f"{factory_name!r} in {module.__name__} is not callable")
    produced = obj()
    if not isinstance(produced, (tuple, list)) or len(produced) not in (2, 3):
        raise ArmError(
            "bad_factory",
            f"{factory_name}() must return (callable, args) or (callable, args, kwargs), "
            f"got {type(produced).__name__}",
        )
    fn, args = produced[0], produced[1]
    kwargs = produced[2] if len(produced) == 3 else {}
    if not callable(fn):
        raise ArmError("bad_factory", f"{factory_name}()[0] is not callable")
    if not isinstance(args, (tuple, list)):
        args = (args,)
    if kwargs is None:
        kwargs = {}
    if not isinstance(kwargs, dict):
        raise ArmError("bad_factory", f"{factory_name}()[2] must be a dict of keyword arguments")
    return fn, tuple(args), dict(kwargs)


# ----------------------------------------------------------------------------------------------
# Tensors, structures and comparison


def map_tensors(obj, fn):
    """Applies `fn` to every tensor of an input structure, keeping container types where it can
    (tuples, namedtuples, lists, dicts and their subclasses); other objects pass through as they are."""
    import torch

    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, dict):
        mapped = {k: map_tensors(v, fn) for k, v in obj.items()}
        if type(obj) is dict:
            return mapped
        try:
            return type(obj)(mapped)
        except Exception:
            return mapped
    if isinstance(obj, (list, tuple)):
        items = [map_tensors(v, fn) for v in obj]
        if type(obj) in (list, tuple):
            return type(obj)(items)
        try:
            return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
        except Exception:
            return items
    return obj


def to_cpu(obj):
    return map_tensors(obj, lambda t: t.detach().to("cpu", copy=True))


def normalise(obj, depth=0):
    """An output as plain data for saving and comparing: CPU tensors, dicts, lists and scalars.

    Other objects (a Hugging Face cache, a dataclass) become {"__type__": name, **their attributes},
    so their tensors are compared rather than their identity.
    """
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.detach().to("cpu", copy=True)
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
        return obj
    if depth > 8:
        return f"<{type(obj).__name__} nested too deep>"
    if isinstance(obj, dict):
        return {k: normalise(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [normalise(v, depth + 1) for v in obj]
    if isinstance(obj, torch.nn.Module):
        return f"<module {type(obj).__name__}>"
    if isinstance(obj, (torch.dtype, torch.device, torch.Size)):
        return str(obj)
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict):
        fields = {"__type__": type(obj).__qualname__}
        for key, value in attrs.items():
            if not key.startswith("__") and not callable(value):
                fields[key] = normalise(value, depth + 1)
        return fields
    return repr(obj)


def detach_cpu(obj):
    return normalise(obj)


def compare(a, b, rtol, atol, path="out"):
    """Returns (equal, max_abs_diff, first_difference or None) for two output structures."""
    import torch

    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False, math.inf, f"{path}: tensor vs {type(b if isinstance(a, torch.Tensor) else a).__name__}"
        if a.shape != b.shape:
            return False, math.inf, f"{path}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
        if a.dtype != b.dtype:
            return False, math.inf, f"{path}: dtype {a.dtype} vs {b.dtype}"
        a = a.detach().cpu()
        b = b.detach().cpu()
        if a.is_complex():
            a, b = torch.view_as_real(a), torch.view_as_real(b)
        if a.dtype.is_floating_point:
            if a.numel() == 0:
                return True, 0.0, None
            af, bf = a.double(), b.double()
            both_nan = torch.isnan(af) & torch.isnan(bf)
            diff = (af - bf).abs()
            diff = torch.where(both_nan, torch.zeros_like(diff), diff)
            diff = torch.where(torch.isnan(diff), torch.full_like(diff, math.inf), diff)
            # Equal infinities give nan differences above only when signs differ; same-sign inf is 0.
            same_inf = torch.isinf(af) & (af == bf)
            diff = torch.where(same_inf, torch.zeros_like(diff), diff)
            max_diff = float(diff.max())
            ok = bool(torch.allclose(af, bf, rtol=rtol, atol=atol, equal_nan=True))
            return ok, max_diff, None if ok else f"{path}: max abs diff {max_diff:.3g}"
        equal = bool(torch.equal(a, b))
        if equal:
            return True, 0.0, None
        max_diff = float((a.long() - b.long()).abs().max()) if a.numel() else 0.0
        return False, max_diff, f"{path}: integer values differ (max {max_diff:.3g})"
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a.keys()) != list(b.keys()):
            return False, math.inf, f"{path}: keys {list(a.keys())} vs {list(b.keys())}"
        return _compare_items([(k, a[k], b[k]) for k in a], rtol, atol, path)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return False, math.inf, f"{path}: length {len(a)} vs {len(b)}"
        return _compare_items([(i, x, y) for i, (x, y) in enumerate(zip(a, b))], rtol, atol, path)
    if isinstance(a, float) and isinstance(b, (int, float)) or isinstance(b, float) and isinstance(a, (int, float)):
        if math.isnan(a) and math.isnan(b):
            return True, 0.0, None
        ok = math.isclose(a, b, rel_tol=rtol, abs_tol=atol)
        return ok, abs(a - b), None if ok else f"{path}: {a!r} vs {b!r}"
    try:
        ok = bool(a == b)
    except Exception:
        ok = type(a) is type(b) and repr(a) == repr(b)
    return ok, 0.0 if ok else math.inf, None if ok else f"{path}: {a!r:.80} vs {b!r:.80}"


def _compare_items(items, rtol, atol, path):
    equal, worst, first = True, 0.0, None
    for key, x, y in items:
        ok, diff, where = compare(x, y, rtol, atol, f"{path}[{key!r}]")
        worst = max(worst, diff)
        if not ok and equal:
            equal, first = False, where
    return equal, worst, first


def finite(value):
    """JSON has no infinity: an unbounded difference is reported as null."""
    return value if value is not None and math.isfinite(value) else None


# ----------------------------------------------------------------------------------------------
# Dynamo instrumentation


class BreakRecorder(logging.Handler):
    """Collects Dynamo's graph-break and recompile log records (TORCH_LOGS=graph_breaks,recompiles).

    Log records, not break_recorder's `log_graph_break` hook (the oracle's and the benchmark's): the
    validator runs on the user's torch, 2.2 and later, and older releases log breaks through a
    module-level `log_graph_break(code_options, reason, exc_info, user_stack)` that is handed no
    exception to read. Recompiles are only log records. On torch 2.13 both see the same breaks
    (tests/validator/test_break_recorder.py)."""

    def __init__(self, torch_dir):
        super().__init__(level=logging.DEBUG)
        self.torch_dir = torch_dir
        self.enabled = True
        self.breaks = []
        self.recompiles = 0

    def emit(self, record):
        if not self.enabled:
            return
        try:
            message = record.getMessage()
        except Exception:
            return
        if record.name.endswith("__recompiles"):
            if "Recompiling function" in message:
                self.recompiles += 1
            return
        self.breaks.append(self.parse(message))

    def parse(self, message):
        lines = message.splitlines()
        file, line = None, None
        for text in lines[:2]:
            m = LOC_RE.search(text)
            if m:
                file, line = m.group(1), int(m.group(2))
                break
        reason_lines = []
        for i, text in enumerate(lines):
            if text.startswith("Graph Break Reason:"):
                reason_lines = [text[len("Graph Break Reason:"):].strip()] + lines[i + 1:]
                break
        gb_type, explanation = None, None
        for text in reason_lines:
            stripped = text.strip()
            if not stripped or stripped.startswith(WRAPPER_PREFIXES):
                continue
            if gb_type is None:
                gb_type = stripped.rstrip(":")
                continue
            if stripped.startswith("Explanation:"):
                explanation = stripped[len("Explanation:"):].strip()
                break
        ids = EXPLAIN_RE.findall(message)
        registry_id = f"GB{ids[0]}" if ids else None
        # Innermost frame of the user traceback that is not torch's own code.
        frames = []
        for text in lines:
            m = FRAME_RE.match(text)
            if m:
                frames.append((m.group(1), int(m.group(2)), m.group(3)))
        function = None
        user_frames = [f for f in frames if not f[0].startswith(self.torch_dir)]
        if user_frames:
            innermost = user_frames[-1]
            if file is None or file.startswith(self.torch_dir) or (innermost[0], innermost[1]) == (file, line):
                file, line, function = innermost
        if function is None:
            for f in reversed(frames):
                if (f[0], f[1]) == (file, line):
                    function = f[2]
                    break
        if function and function.startswith("torch_dynamo_resume_in_"):
            function = function[len("torch_dynamo_resume_in_"):].rsplit("_at_", 1)[0]
        code = None
        if file and line:
            import linecache

            code = linecache.getline(file, line).strip() or None
        return {
            "type": gb_type or "unknown",
            "code": code,
            "registry_id": registry_id,
            "explanation": explanation,
            "file": file,
            "line": line,
            "function": function,
            "frame_skipped": "Skipping the function" in message or "graph break in loop" in message,
        }


def install_recorder(torch):
    torch_dir = os.path.dirname(torch.__file__) + os.sep
    recorder = BreakRecorder(torch_dir)
    torch._logging.set_logs(graph_breaks=True, recompiles=True)
    for name in ("torch._dynamo.symbolic_convert.__graph_breaks", "torch._dynamo.guards.__recompiles"):
        logger = logging.getLogger(name)
        logger.addHandler(recorder)
        logger.propagate = False  # keep Dynamo's long messages out of the user's stderr
    return recorder


def summarise_breaks(events, path_map):
    """Unique break sites (file, line, type) with their event counts, in order of first event."""
    sites = {}
    for event in events:
        file = path_map.get(event["file"], event["file"])
        key = (file, event["line"], event["type"])
        if key not in sites:
            site = dict(event)
            site["file"] = file
            site["count"] = 0
            sites[key] = site
        sites[key]["count"] += 1
    return list(sites.values())


# ----------------------------------------------------------------------------------------------
# Timing


class Timer:
    def __init__(self, torch, device):
        self.torch = torch
        self.cuda = device.startswith("cuda")

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def once(self, fn):
        """Wall time of one call, host-synchronised (includes compilation on a first call)."""
        self.sync()
        start = time.perf_counter()
        out = fn()
        self.sync()
        return time.perf_counter() - start, out

    def steady(self, fn, warmup, iters, max_seconds):
        for _ in range(warmup):
            fn()
        self.sync()
        samples = []
        began = time.perf_counter()
        while len(samples) < iters:
            if self.cuda:
                start = self.torch.cuda.Event(enable_timing=True)
                end = self.torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                samples.append(start.elapsed_time(end) / 1000.0)
            else:
                t0 = time.perf_counter()
                fn()
                samples.append(time.perf_counter() - t0)
            if len(samples) >= 5 and time.perf_counter() - began > max_seconds:
                break
        return samples


# ----------------------------------------------------------------------------------------------
# Roles


def seed_everything(torch, seed):
    import random

    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except Exception:
        pass


def make_call(torch, fn, args, kwargs, mode):
    if mode == "train":
        def call():
            out = fn(*args, **kwargs)
            loss = None
            for leaf in _tensor_leaves(out):
                if leaf.requires_grad and leaf.dtype.is_floating_point:
                    term = leaf.float().sum()
                    loss = term if loss is None else loss + term
            if loss is not None:
                loss.backward()
            if isinstance(fn, torch.nn.Module):
                fn.zero_grad(set_to_none=True)
            return out
        return call

    def call():
        with torch.no_grad():
            return fn(*args, **kwargs)
    return call


def _tensor_leaves(obj):
    import torch

    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from _tensor_leaves(value)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            yield from _tensor_leaves(value)


def set_mode(torch, fn, mode):
    if isinstance(fn, torch.nn.Module):
        fn.train(mode == "train")


def apply_threads(torch, spec):
    if spec.get("threads"):
        torch.set_num_threads(int(spec["threads"]))


def run_prepare(spec, result):
    import torch

    apply_threads(torch, spec)
    module = import_target(spec)
    seed_everything(torch, spec["seed"])
    fn, args, kwargs = call_factory(module, spec["factory"])
    is_module = isinstance(fn, torch.nn.Module)
    if is_module:
        state = {k: v.detach().to("cpu", copy=True) for k, v in fn.state_dict().items()}
        torch.save(state, spec["state_path"])
        result["parameters"] = int(sum(p.numel() for p in fn.parameters()))
        result["state_entries"] = len(state)
    # Inputs keep their types (a model may check isinstance); outputs below are normalised for comparing.
    torch.save({"args": to_cpu(args), "kwargs": to_cpu(kwargs)}, spec["inputs_path"])
    device = spec["device"]
    if is_module:
        fn.to(device)
    args = map_tensors(args, lambda t: t.to(device))
    kwargs = map_tensors(kwargs, lambda t: t.to(device))
    set_mode(torch, fn, spec["mode"])
    seed_everything(torch, spec["seed"])
    out = make_call(torch, fn, args, kwargs, spec["mode"])()
    torch.save(detach_cpu(out), spec["reference_path"])
    result["is_module"] = is_module
    result["callable"] = type(fn).__name__ if is_module else getattr(fn, "__qualname__", repr(fn))


def load_model(torch, spec, result):
    """The arm's callable on the device with the prepared weights, and the prepared inputs there."""
    device = spec["device"]
    t_import = time.perf_counter()
    module = import_target(spec)
    result["import_s"] = time.perf_counter() - t_import
    seed_everything(torch, spec["seed"])
    fn, _, _ = call_factory(module, spec["factory"])
    inputs = torch.load(spec["inputs_path"], weights_only=False)
    args = map_tensors(inputs["args"], lambda t: t.to(device))
    kwargs = map_tensors(inputs["kwargs"], lambda t: t.to(device))
    if isinstance(fn, torch.nn.Module):
        if spec.get("state_path") and os.path.exists(spec["state_path"]):
            state = torch.load(spec["state_path"], weights_only=False)
            missing, unexpected = fn.load_state_dict(state, strict=False)
            result["state_dict_missing"] = list(missing)
            result["state_dict_unexpected"] = list(unexpected)
        fn.to(device)
    return fn, args, kwargs


def run_deploy_arm(spec, result):
    import torch

    from graphmend_validator import deploy

    apply_threads(torch, spec)

    def prepare_model(spec):
        fn, args, kwargs = load_model(torch, spec, result)
        set_mode(torch, fn, "eval")  # deployment is inference: the validator refuses deploy in train mode
        seed_everything(torch, spec["seed"])
        return fn, args, kwargs

    def compare_finite(a, b, rtol, atol):
        ok, diff, where = compare(a, b, rtol, atol)
        return ok, finite(diff), where

    deploy.run_deploy(spec, result, prepare_model, compare_finite)


def run_measure(spec, result):
    import torch

    apply_threads(torch, spec)
    counters = None
    try:
        from torch._dynamo.utils import counters
    except Exception:
        pass
    device = spec["device"]
    timer = Timer(torch, device)
    fn, args, kwargs = load_model(torch, spec, result)
    set_mode(torch, fn, spec["mode"])
    rtol, atol = spec["rtol"], spec["atol"]

    # Eager, once: the semantic check against the original's eager output.
    seed_everything(torch, spec["seed"])
    eager_call = make_call(torch, fn, args, kwargs, spec["mode"])
    eager_out = detach_cpu(eager_call())
    reference = torch.load(spec["reference_path"], weights_only=False)
    ok, diff, where = compare(reference, eager_out, rtol, atol)
    result["matches_reference"] = ok
    result["reference_max_abs_diff"] = finite(diff)
    result["reference_difference"] = where

    # Compiled: cold start, then graphs and breaks of that first call.
    recorder = install_recorder(torch)
    torch._dynamo.reset()
    graphs_before = counters["stats"]["unique_graphs"] if counters is not None else 0
    compiled = torch.compile(fn, backend=spec["backend"])
    compiled_call = make_call(torch, compiled, args, kwargs, spec["mode"])
    seed_everything(torch, spec["seed"])
    result["progress"] = "compiling"
    cold, compiled_out = timer.once(compiled_call)
    result["cold_start_s"] = cold
    first_call_graphs = (counters["stats"]["unique_graphs"] - graphs_before) if counters is not None else None
    first_call_breaks = list(recorder.breaks)
    ok, diff, where = compare(eager_out, detach_cpu(compiled_out), spec["compiled_rtol"], spec["compiled_atol"])
    result["compiled_matches_eager"] = ok
    result["compiled_max_abs_diff"] = finite(diff)
    result["compiled_difference"] = where

    samples = timer.steady(compiled_call, spec["warmup"], spec["iters"], spec["max_steady_s"])
    result["steady_state_s"] = statistics.median(samples)
    result["steady_state_samples"] = len(samples)
    result["steady_state_min_s"] = min(samples)
    result["steady_state_max_s"] = max(samples)
    graphs_after = counters["stats"]["unique_graphs"] if counters is not None else None
    result["graph_count"] = first_call_graphs
    result["graph_break_count"] = len(first_call_breaks)
    result["graphs_after_first_call"] = (graphs_after - graphs_before - first_call_graphs) if counters is not None else None
    result["recompiles"] = recorder.recompiles
    path_map = {spec["source_file"]: spec["report_file"]}
    if spec.get("replace_source"):
        path_map[spec["replace_source"]] = spec["replace_source"]
    result["breaks"] = summarise_breaks(first_call_breaks, path_map)
    result["break_events_total"] = len(recorder.breaks)
    if counters is not None:
        result["dynamo_counters"] = {
            "graph_break": int(sum(counters["graph_break"].values())),
            "unimplemented": int(sum(counters["unimplemented"].values())),
            "frames_total": int(counters["frames"]["total"]),
            "frames_ok": int(counters["frames"]["ok"]),
            "unique_graphs": int(counters["stats"]["unique_graphs"]),
        }
    recorder.enabled = False

    eager_samples = timer.steady(eager_call, min(spec["warmup"], 2), spec["iters"], spec["max_steady_s"])
    result["eager_steady_state_s"] = statistics.median(eager_samples)

    if spec.get("analyze"):
        # Cross-check the graph count with a counting backend (Dynamo's own eager backend underneath).
        counted = []

        def counting_backend(gm, example_inputs):
            counted.append(sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")))
            return gm.forward

        torch._dynamo.reset()
        seed_everything(torch, spec["seed"])
        make_call(torch, torch.compile(fn, backend=counting_backend), args, kwargs, spec["mode"])()
        result["counting_backend_graphs"] = len(counted)
        result["ops_per_graph"] = counted
        torch._dynamo.reset()
        seed_everything(torch, spec["seed"])
        try:
            make_call(torch, torch.compile(fn, backend="eager", fullgraph=True), args, kwargs, spec["mode"])()
            result["fullgraph"] = True
            result["fullgraph_error"] = None
        except Exception as exc:
            result["fullgraph"] = False
            first = str(exc).strip().splitlines()
            result["fullgraph_error"] = f"{type(exc).__name__}: {first[0] if first else ''}"[:300]
        torch._dynamo.reset()


def set_memory_limit(limit_mb):
    if not limit_mb:
        return
    limit = int(limit_mb) * 1024 * 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def classify_exception(exc):
    if isinstance(exc, ArmError):
        return exc.kind
    module = type(exc).__module__ or ""
    if module.startswith(("torch._dynamo", "torch._inductor")):
        return "compile_error"  # Dynamo or the backend failed, not the user's own code
    if isinstance(exc, MemoryError) or "can't allocate memory" in str(exc) or "out of memory" in str(exc).lower():
        return "memory"
    return "exception"


def user_location(tb, user_files):
    """Innermost traceback frame in one of the user's files: (file, line) or (None, None)."""
    found = (None, None)
    for frame in traceback.extract_tb(tb):
        if frame.filename in user_files:
            found = (frame.filename, frame.lineno)
    return found


def watch_parent():
    """Kills this arm's process tree and group when the validator that started it goes away."""
    import signal
    import threading

    parent = os.getppid()

    def loop():
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                try:
                    procs.kill_descendants()
                    os.killpg(os.getpgrp(), signal.SIGKILL)
                finally:
                    os._exit(4)

    threading.Thread(target=loop, name="graphmend-parent-watch", daemon=True).start()


def main(argv):
    spec_path = argv[0]
    # Before user code runs: what it detaches (setsid, double forks) stays below this process.
    procs.become_subreaper()
    watch_parent()
    with open(spec_path, encoding="utf-8") as handle:
        spec = json.load(handle)
    result = {"ok": False, "role": spec["role"], "arm": spec.get("arm"), "pid": os.getpid()}
    sys.dont_write_bytecode = True
    try:
        if spec.get("rlimit_as_mb"):
            set_memory_limit(spec["rlimit_as_mb"])
        if spec["role"] == "prepare":
            run_prepare(spec, result)
        elif spec["role"] == "deploy":
            run_deploy_arm(spec, result)
        else:
            run_measure(spec, result)
        result["ok"] = True
    except BaseException as exc:  # SystemExit and KeyboardInterrupt from user code included
        user_files = {spec["source_file"]} | ({spec["replace_source"]} if spec.get("replace_source") else set())
        file, line = user_location(exc.__traceback__, user_files)
        result["error"] = {
            "kind": classify_exception(exc) if not isinstance(exc, SystemExit) else "exited",
            "type": type(exc).__name__,
            "message": str(exc)[:2000],
            "file": file,
            "line": line,
            "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-6000:],
        }
    result.pop("progress", None)
    tmp = spec["result_path"] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    os.replace(tmp, spec["result_path"])
    sys.stdout.flush()
    sys.stderr.flush()
    # Nothing user code started outlives the arm (compile workers, detached processes).
    procs.kill_descendants()
    # Skip interpreter teardown: user atexit hooks and torch's can hang or crash after the result is safe.
    os._exit(0 if result["ok"] else 3)


if __name__ == "__main__":
    main(sys.argv[1:])
