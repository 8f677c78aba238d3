"""Differential execution: the proof that a safe fix keeps every observation (docs/fix-safety.md).

`compare_files(original, fixed)` imports both files side by side and runs each `example()` on a battery of
inputs: the example's own (seeds 0, 1, 2), the fixture's `inputs()` when it has one, and variants of every
tensor argument that take the other branch, fail guards or stress the untaken side (negated, zeros, NaN,
+inf, -inf, empty, bool, int64, uint8, int8, float16, transposed). For every input it runs the original and the fixed
code eagerly and under torch.compile (backend aot_eager, breaks allowed; GRAPHMEND_DIFFERENTIAL_BACKEND
overrides it), and compares:

  * the outcome: returned value (structure, and for tensors shape, dtype, device, requires_grad and the
    exact bits, NaN == NaN) or the exception (class, message, and the class and message of its cause);
  * aliasing: which returned tensors are an argument or a parameter/buffer itself, or share its storage (a
    view), and which returned tensors are the same object;
  * the transcript: stdout, stderr, log records and warnings, in order;
  * state after the call: the module's state_dict (bits), its plain attributes, the arguments (written in
    place?), the global RNG state, the grad mode;
  * gradients (eager): with floating inputs requiring grad, the gradients of the inputs and parameters
    after backward of the sum of the floating outputs (bits, NaN == NaN), or the backward's exception;
    a select may change the order in which autograd sums a tensor's several uses, so values may differ
    by a few units in the last place there (same_gradients_up_to_summation_order), nothing else.

The result lists every difference; a safe fix must have none.
"""
from __future__ import annotations

import ast
import contextlib
import dataclasses
import math
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable

import torch
import torch._dynamo
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "oracle"))
from dynamo_breaks import is_driver  # noqa: E402
from fixture_support import _normalise_transcript as _normalise  # noqa: E402
from fixture_support import build_example, load_fixture, transcript  # noqa: E402

SEEDS = (0, 1, 2)


@dataclasses.dataclass
class Result:
    cases: int = 0  # (input, mode) pairs compared
    differences: list[str] = dataclasses.field(default_factory=list)


# ---------------------------------------------------------------- inputs


def _map_tensors(value: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, tuple):
        return tuple(_map_tensors(v, fn) for v in value)
    if isinstance(value, list):
        return [_map_tensors(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: _map_tensors(v, fn) for k, v in value.items()}
    return value


def _floating(t: torch.Tensor, fill: float) -> torch.Tensor:
    return torch.full_like(t, fill) if t.is_floating_point() else t.clone()


def _empty(t: torch.Tensor) -> torch.Tensor:
    if t.dim() == 0:
        return t.clone()
    return t.new_empty((0,) + tuple(t.shape[1:]))


def _integral(t: torch.Tensor, low: int, high: int, dtype: torch.dtype) -> torch.Tensor:
    values = t.nan_to_num(0.0).round() if t.is_floating_point() else t.long()
    return values.clamp(low, high).to(dtype)


def _transposed(t: torch.Tensor) -> torch.Tensor:
    return t.mT.contiguous().mT if t.dim() >= 2 else t.clone()  # same values, not contiguous


VARIANTS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "negated": lambda t: -t if t.dtype != torch.bool and t.is_floating_point() else t.clone(),
    "zeros": torch.zeros_like,
    "nan": lambda t: _floating(t, math.nan),
    "inf": lambda t: _floating(t, math.inf),
    "-inf": lambda t: _floating(t, -math.inf),
    "large": lambda t: t * 1e4 if t.is_floating_point() else t.clone(),
    "empty": _empty,
    "bool": lambda t: t > 0,
    "int64": lambda t: t.round().long() if t.is_floating_point() else t.long(),
    "float16": lambda t: t.half() if t.is_floating_point() else t.clone(),
    # Integer dtypes with narrow ranges: a number that does not fit raises (`x.clamp(0, 300)` on int8 and
    # uint8, `x.clamp(max=-1)` on uint8 from torch 2.15), on the untaken path too.
    "uint8": lambda t: _integral(t, 0, 255, torch.uint8),
    "int8": lambda t: _integral(t, -128, 127, torch.int8),
    "transposed": _transposed,
}


def input_battery(module, seeds=SEEDS) -> list[tuple[str, int, Any]]:
    """(label, seed used to build the callable, args) for every input of a fixture module."""
    battery = []
    for seed in seeds:
        _, args = build_example(module, seed)
        battery.append((f"seed {seed}", seed, args))
    _, base = build_example(module, 0)
    for name, variant in VARIANTS.items():
        battery.append((name, 0, _map_tensors(base, variant)))
    extra = getattr(module, "inputs", None)
    if extra is not None:
        for i, args in enumerate(extra()):
            battery.append((f"inputs()[{i}]", 0, tuple(args)))
    return battery


# ---------------------------------------------------------------- observations

_LINE_RE = re.compile(r"(line \d+|:\d+(:\d+)?\b|0x[0-9a-f]+)")


def _message(exc: BaseException) -> str:
    # Messages may quote a file position or an address, and Dynamo appends the user's source lines
    # ("from user code:"): those move with any edit.
    text = str(exc).split("\n\nfrom user code:")[0]
    return _LINE_RE.sub("<pos>", text)


_FAKE_CALL_RE = re.compile(r"got (\w+)\((['\"])(.*?)\2\)", re.S)


def _describe_exception(exc: BaseException) -> tuple:
    # Dynamo wraps an error raised while tracing in TorchRuntimeError, whose text quotes the user's code and
    # the fake tensors; the observation is the error it wraps.
    if type(exc).__name__ == "TorchRuntimeError":
        m = _FAKE_CALL_RE.search(str(exc))
        if m:
            return ("raise", m.group(1), _LINE_RE.sub("<pos>", m.group(3)), None, "traced")
        cause = exc.__cause__
        if cause is not None:
            return _describe_exception(cause)[:4] + ("traced",)
    cause = exc.__cause__
    return ("raise", type(exc).__qualname__, _message(exc),
            None if cause is None else (type(cause).__qualname__, _message(cause)))


def _describe(value: Any) -> Any:
    """A comparable description of a returned value (tensors by metadata and bits)."""
    if isinstance(value, torch.Tensor):
        t = value.detach()
        bits = t.cpu()
        if bits.is_floating_point():
            nan = torch.isnan(bits)
            bits = torch.where(nan, torch.zeros_like(bits), bits)
            key = (bits.tolist(), nan.tolist())
        else:
            key = bits.tolist()
        return ("tensor", tuple(t.shape), str(t.dtype), str(t.device), value.requires_grad, key)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_describe(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _describe(v)) for k, v in value.items()))
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    if hasattr(value, "__dict__") and not isinstance(value, type) and type(value).__module__ != "builtins":
        return (type(value).__name__, _describe(dict(vars(value))))
    return value


def _state(fn) -> Any:
    if not isinstance(fn, nn.Module):
        return None
    state = {k: _describe(v) for k, v in fn.state_dict().items()}
    attrs = {}
    for name, sub in fn.named_modules():
        for k, v in vars(sub).items():
            if k.startswith("_") or isinstance(v, (nn.Module, torch.Tensor)):
                continue
            attrs[f"{name}.{k}"] = _describe(v)
    return state, attrs


# aot_eager, not eager: AOTAutograd is where compiled code first differs from eager (operators receive
# tensors without autograd history, in-place writes are functionalised), and the eager backend hides it.
BACKEND = os.environ.get("GRAPHMEND_DIFFERENTIAL_BACKEND", "aot_eager")


def _compiled(fn):
    if is_driver(fn):
        return fn
    return torch.compile(fn, backend=BACKEND)


def _tensors(value: Any) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def _aliases(result: Any, args: Any, fn) -> tuple:
    """Which returned tensors, and tensors the module keeps in plain attributes, are an argument or a
    parameter/buffer itself ("is"), or share its storage (a view), and which of them are one another: a select
    returns a new tensor where the original may return its input (docs/fix-safety.md, aliasing)."""
    owners = [("arg", i, t) for i, t in enumerate(_tensors(args))]
    kept = [("out", i, t) for i, t in enumerate(_tensors(result))]
    if isinstance(fn, nn.Module):
        owners += [("state", name, t) for name, t in fn.state_dict(keep_vars=True).items()]
        for prefix, sub in fn.named_modules():
            for k, v in vars(sub).items():
                if isinstance(v, torch.Tensor) and not k.startswith("_"):
                    kept.append(("attr", f"{prefix}.{k}", v))

    def storage(t: torch.Tensor):
        try:
            return t.untyped_storage().data_ptr() if t.numel() else None
        except (RuntimeError, NotImplementedError):
            return None

    out = []
    for i, (kind, key, t) in enumerate(kept):
        same = [(k, n) for k, n, o in owners if o is t]
        shared = [(k, n) for k, n, o in owners if o is not t and storage(t) is not None and storage(t) == storage(o)]
        twins = [(k, n) for k, n, u in kept[:i] if u is t]
        if same or shared or twins:
            out.append((kind, key, tuple(same), tuple(shared), tuple(twins)))
    return tuple(out)


def observe(fn, args, seed: int, compiled: bool) -> dict:
    torch.set_grad_enabled(True)  # a run that leaks grad mode is caught below, then reset
    torch.manual_seed(10_000 + seed)
    target = _compiled(fn) if compiled else fn
    with transcript() as events:
        aliases = ()
        try:
            value = target(*args)
            outcome = ("ok", _describe(value))
            aliases = _aliases(value, args, fn)
        except Exception as exc:  # noqa: BLE001 - the exception is an observation
            outcome = _describe_exception(exc)
    observed = {"outcome": outcome, "aliases": aliases, "transcript": _normalise(events), "state": _state(fn),
                "arguments": _describe(args),  # arguments written in place
                "rng": torch.get_rng_state().tolist(), "grad_mode": torch.is_grad_enabled()}
    torch.set_grad_enabled(True)
    return observed


def observe_gradients(fn, args, seed: int) -> Any:
    """Gradients of the floating inputs and parameters, or None when nothing requires grad."""
    leaves = []

    def leaf(t: torch.Tensor) -> torch.Tensor:
        if t.is_floating_point() and t.numel() > 0:
            t = t.detach().clone().requires_grad_(True)
            leaves.append(t)
        return t

    torch.set_grad_enabled(True)
    grad_args = _map_tensors(args, leaf)
    params = list(fn.parameters()) if isinstance(fn, nn.Module) else []
    for p in params:
        p.grad = None
    torch.manual_seed(10_000 + seed)
    with transcript():
        try:
            out = fn(*grad_args)
        except Exception:  # noqa: BLE001 - the forward's exception is compared elsewhere
            return None
        outputs = []
        _map_tensors(out, lambda t: outputs.append(t) or t)
        loss = [t.sum() for t in outputs if t.is_floating_point() and t.requires_grad]
        if not loss:
            return None
        try:
            torch.stack(loss).sum().backward()
        except Exception as exc:  # noqa: BLE001
            return _describe_exception(exc)
    return ([_describe(t.grad) for t in leaves], [_describe(p.grad) for p in params])


# ---------------------------------------------------------------- comparison


_EPS = {"torch.float64": 2.220446049250313e-16, "torch.float32": 1.1920928955078125e-07,
        "torch.float16": 0.0009765625, "torch.bfloat16": 0.0078125}


def same_gradients_up_to_summation_order(a: Any, b: Any, ulps: int = 4) -> bool:
    """Gradient descriptions equal except for the rounding of how autograd sums a tensor's several uses.

    A select adds a node where the uses of the selected name meet, so their contributions are summed in
    another order than the original's (float addition does not associate): each element may then differ
    by a few units in the last place. Everything else stays exact: structure, shape, dtype, device,
    requires_grad, which elements are NaN, and infinities with their sign.
    """
    if isinstance(a, tuple) and isinstance(b, tuple) and a[:1] == ("tensor",) and b[:1] == ("tensor",):
        if a[:5] != b[:5] or a[2] not in _EPS:
            return a == b
        (va, na), (vb, nb) = a[5], b[5]
        if na != nb:
            return False
        eps = _EPS[a[2]]
        flat_a, flat_b = _flatten_numbers(va), _flatten_numbers(vb)
        return len(flat_a) == len(flat_b) and all(
            x == y or (math.isfinite(x) and math.isfinite(y) and abs(x - y) <= ulps * eps * max(abs(x), abs(y)))
            for x, y in zip(flat_a, flat_b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(same_gradients_up_to_summation_order(x, y, ulps) for x, y in zip(a, b)))
    return a == b


def _flatten_numbers(values: Any) -> list:
    if isinstance(values, list):
        return [x for v in values for x in _flatten_numbers(v)]
    return [values]


def _align(orig_fn, fixed_fn) -> None:
    if isinstance(orig_fn, nn.Module) and isinstance(fixed_fn, nn.Module):
        fixed_fn.load_state_dict(orig_fn.state_dict())
        fixed_fn.train(orig_fn.training)


def _same_outcome(a: tuple, b: tuple) -> bool:
    """Equal outcomes; under compile, an error Dynamo met while tracing (a meta kernel's check, marked
    "traced") may name another op than the eager kernel that raised in the original: removing a break
    lets Dynamo trace further before running anything, and meta kernels check in another order (torch
    2.13: fake `max()` of an empty tensor passes, fake `amax()` raises). There the class must agree."""
    if a == b:
        return True
    traced = (len(a) > 4 and a[4] == "traced") or (len(b) > 4 and b[4] == "traced")
    return traced and a[0] == b[0] == "raise" and a[1] == b[1]


def trace_time_messages(fixed: Path) -> set[str]:
    """Log messages the fixed file emits while Dynamo traces: emit-once-at-trace's
    `torch._dynamo.comptime.comptime(lambda ctx: logger.warning_once(<literals>), ...)`."""
    messages: set[str] = set()
    for node in ast.walk(ast.parse(fixed.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "comptime"
                and node.args and isinstance(node.args[0], ast.Lambda)):
            continue
        call = node.args[0].body
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr in ("warning_once", "info_once") and call.args):
            continue
        try:
            args = [ast.literal_eval(a) for a in call.args]
        except ValueError:
            continue
        messages.add(str(args[0]) % tuple(args[1:]) if len(args) > 1 else str(args[0]))
    return messages


def _without(events: list, messages: set[str]) -> list:
    return [e for e in events if not (e[0] == "log" and e[-1] in messages)]


def _first_difference(a: dict, b: dict, trace_time: set[str] = frozenset(), compiled: bool = False) -> str | None:
    if not _same_outcome(a["outcome"], b["outcome"]):
        return f"outcome: original {str(a['outcome'])[:300]} / fixed {str(b['outcome'])[:300]}"
    if compiled and trace_time and a["outcome"][0] == "raise" and a["transcript"] != b["transcript"]:
        # docs/fix-safety.md, "Trace-time emission": a once-per-process message emitted while Dynamo traces may
        # already be out when the graph then raises at run time. Nothing else may differ, and no message the
        # original emitted may be missing.
        kept = _without(a["transcript"], trace_time) == _without(b["transcript"], trace_time)
        lost = [e for e in a["transcript"] if e[0] == "log" and e[-1] in trace_time and e not in b["transcript"]]
        if not kept or lost:
            return f"transcript: original {str(a['transcript'])[:300]} / fixed {str(b['transcript'])[:300]}"
        a, b = dict(a, transcript=None), dict(b, transcript=None)
    for key in ("aliases", "transcript", "state", "arguments", "rng", "grad_mode"):
        if a.get(key) != b.get(key):
            return f"{key}: original {str(a[key])[:300]} / fixed {str(b[key])[:300]}"
    return None


@contextlib.contextmanager
def _dynamo_defaults():
    cfg = torch._dynamo.config
    saved = (set(cfg.reorderable_logging_functions), set(cfg.ignore_logging_functions))
    try:
        yield
    finally:
        cfg.reorderable_logging_functions = saved[0]
        cfg.ignore_logging_functions = saved[1]
        torch._dynamo.reset()


def compare_files(original: Path, fixed: Path, *, compiled: bool = True, gradients: bool = True,
                  seeds=SEEDS) -> Result:
    result = Result()
    with _dynamo_defaults():
        orig_mod = load_fixture(original)
        fixed_mod = load_fixture(fixed)  # may register deferred logging functions with Dynamo
        trace_time = trace_time_messages(fixed)
        for label, seed, args in input_battery(orig_mod, seeds):
            modes = [False, True] if compiled else [False]
            for mode in modes:
                torch._dynamo.reset()
                orig_fn, _ = build_example(orig_mod, seed)
                fixed_fn, _ = build_example(fixed_mod, seed)
                _align(orig_fn, fixed_fn)
                a = observe(orig_fn, _map_tensors(args, torch.clone), seed, mode)
                torch._dynamo.reset()
                b = observe(fixed_fn, _map_tensors(args, torch.clone), seed, mode)
                result.cases += 1
                diff = _first_difference(a, b, trace_time, mode)
                if diff:
                    result.differences.append(f"{label}, {'compiled' if mode else 'eager'}: {diff}")
            if gradients:
                orig_fn, _ = build_example(orig_mod, seed)
                fixed_fn, _ = build_example(fixed_mod, seed)
                _align(orig_fn, fixed_fn)
                ga = observe_gradients(orig_fn, args, seed)
                gb = observe_gradients(fixed_fn, args, seed)
                if ga is not None or gb is not None:
                    result.cases += 1
                    if ga != gb and not same_gradients_up_to_summation_order(ga, gb):
                        result.differences.append(f"{label}, gradients: original {str(ga)[:300]} / fixed {str(gb)[:300]}")
    return result


def graphmend_fix(path: Path, dest: Path, unsafe: bool = False) -> bool:
    """Copies `path` to `dest` and applies graphmend's fixes there; True when the file changed."""
    import shutil
    import subprocess

    from fixture_support import require_graphmend

    shutil.copyfile(path, dest)
    flags = ["--unsafe-fixes"] if unsafe else []
    proc = subprocess.run([str(require_graphmend()), "check", "--fix", "--exit-zero", *flags, str(dest)],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"graphmend check --fix exited {proc.returncode} on {path}: {proc.stderr}")
    return dest.read_bytes() != path.read_bytes()


def fixable_files() -> list[Path]:
    """Every file of the test suite whose safe fixes the differential oracle judges."""
    tests = Path(__file__).resolve().parents[1]
    files = sorted((tests / "fixtures" / "rules").glob("*.py"))
    files += sorted(p for p in (tests / "fixtures" / "transforms").glob("*/*.py") if ".expected" not in p.name)
    files += sorted((tests / "fixtures" / "hazards").glob("*.py"))
    files += sorted((tests.parent / "examples").glob("*.py"))
    return [p for p in files if not p.name.startswith("_")]


if __name__ == "__main__":  # pragma: no cover - a manual entry for one file
    import tempfile

    src = Path(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / src.name
        changed = graphmend_fix(src, dest)
        res = compare_files(src, dest) if changed else Result()
        print(f"{src}: changed={changed} cases={res.cases} differences={len(res.differences)}")
        for d in res.differences:
            print("  ", d)
    os._exit(0)
