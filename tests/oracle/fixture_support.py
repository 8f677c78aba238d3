"""Shared helpers for the oracle tests: fixture discovery, `# expect:` markers, loading, comparison."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import math
import os
import re
import subprocess
import sys
import tokenize
import warnings
from pathlib import Path
from typing import Any

import torch

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURE_DIR = REPO_ROOT / "tests" / "fixtures" / "rules"
MARKER_RE = re.compile(r"#\s*expect(?:\[torch\s*(<|>=)\s*(\d+\.\d+)\])?:\s*(GM\d{3}(?:\s*,\s*GM\d{3})*)\s*$")
# The running torch's release: markers may hold only before one (`# expect[torch<2.15]: GM603`) or from one.
TORCH_RELEASE = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
SEEDS = (0, 1, 2)


def fixture_paths() -> list[Path]:
    return sorted(p for p in FIXTURE_DIR.glob("*.py") if not p.name.startswith("_"))


def fixture_ids() -> list[str]:
    return [p.stem for p in fixture_paths()]


def markers(path: Path) -> set[tuple[int, str]]:
    """(row, code) for every `# expect: GMxxx[, GMyyy]` comment (comments only, never strings) that applies to
    the running torch (`# expect[torch<2.15]: ...`, `# expect[torch>=2.15]: ...`)."""
    found: set[tuple[int, str]] = set()
    with open(path, "rb") as f:
        for tok in tokenize.tokenize(f.readline):
            if tok.type != tokenize.COMMENT:
                continue
            # one comment may hold a marker per release range: `# expect[torch<2.14]: GM611 # expect[torch>=2.14]: GM614`
            for part in ("#" + p for p in tok.string.split("#")[1:]):
                m = MARKER_RE.search(part)
                if m:
                    if m.group(1):
                        bound = tuple(int(p) for p in m.group(2).split("."))
                        if (TORCH_RELEASE < bound) != (m.group(1) == "<"):
                            continue
                    for code in m.group(3).split(","):
                        found.add((tok.start[0], code.strip()))
                elif "expect:" in part or "expect[" in part:
                    raise ValueError(f"{path}:{tok.start[0]}: malformed marker {part!r}")
    return found


def marker_rows(path: Path) -> set[int]:
    return {row for row, _ in markers(path)}


# Rules that predict no graph break (no Dynamo registry id: GM001 unused-noqa reports comments, GM205 deferred
# calls that torch.compile drops, checked by test_dropped_calls.py). Their fixtures run under Dynamo like the
# others, but their `# expect:` markers are compared with graphmend's output only, never with Dynamo's
# breaks. GM001 is opt-in (`GM` does not select it): the oracle selects them with CHECK_ARGS, so that every
# fixture is also checked for false positives of theirs.
NON_BREAK_RULES = {"GM001", "GM205"}
# graphmend applies the facts of the torch running the oracle, whatever is installed near the fixtures.
CHECK_ARGS = ("--extend-select", ",".join(sorted(NON_BREAK_RULES)), "--torch-version",
              "{}.{}".format(*TORCH_RELEASE))


def break_markers(path: Path) -> set[tuple[int, str]]:
    """The markers of graph-break rules: the lines where Dynamo must break."""
    return {(row, code) for row, code in markers(path) if code not in NON_BREAK_RULES}


def declared_breaks_after_fix(path: Path) -> int | None:
    with registrations_kept():
        value = getattr(load_fixture(path, fresh=False), "EXPECTED_BREAKS_AFTER_FIX", None)
    if value is not None and not isinstance(value, int):
        raise TypeError(f"{path}: EXPECTED_BREAKS_AFTER_FIX must be an int")
    return value


_counter = 0
_REGISTRATION_SETS = ("reorderable_logging_functions", "ignore_logging_functions")


@contextlib.contextmanager
def registrations_kept():
    """Undo what fixtures loaded inside register with Dynamo, for the tests that run after."""
    cfg = torch._dynamo.config
    saved = {key: set(getattr(cfg, key)) for key in _REGISTRATION_SETS}
    try:
        yield
    finally:
        for key, value in saved.items():
            setattr(cfg, key, value)


def own_config(module) -> dict:
    """Dynamo's defaults for the knobs that change which breaks happen, plus what `module` registers."""
    return {**DYNAMO_DEFAULTS, **getattr(module, "dynamo_registrations", {})}


def load_fixture(path: Path, *, fresh: bool = True):
    """Import a fixture file as a module under a unique name (fresh=True: a new module object)."""
    global _counter
    _counter += 1
    name = f"graphmend_fixture_{Path(path).stem}_{_counter}"
    spec = importlib.util.spec_from_file_location(name, str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses/pickling inside fixtures need the module registered
    # A fixture (or a fixed file) may register functions with Dynamo at import
    # (reorderable_logging_functions.add(print)): part of its program, noted on the module.
    # Read against empty sets, so that what another file registered before does not hide it.
    cfg = torch._dynamo.config
    saved = {key: set(getattr(cfg, key)) for key in _REGISTRATION_SETS}
    for key in _REGISTRATION_SETS:
        setattr(cfg, key, set())
    try:
        spec.loader.exec_module(module)
    finally:
        module.dynamo_registrations = {key: set(getattr(cfg, key)) for key in _REGISTRATION_SETS}
        for key in _REGISTRATION_SETS:
            setattr(cfg, key, saved[key] | module.dynamo_registrations[key])
    if not hasattr(module, "example"):
        raise AttributeError(f"{path}: fixture lacks `def example():`")
    return module


def build_example(module, seed: int):
    torch.manual_seed(seed)
    fn, args = module.example()
    if not isinstance(args, tuple):
        raise TypeError(f"{module.__file__}: example() must return (callable, tuple_of_args)")
    return fn, args


def graphmend_bin() -> Path:
    value = os.environ.get("GRAPHMEND_BIN", "build/graphmend")
    path = Path(value)
    if not path.is_absolute():
        path = REPO_ROOT / path
    return path


def require_graphmend() -> Path:
    path = graphmend_bin()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise AssertionError(
            f"graphmend binary not found or not executable at {path} "
            "(build it with `make build`, or set GRAPHMEND_BIN)")
    return path


def run_graphmend(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    exe = require_graphmend()
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO_ROOT)


# ---------------------------------------------------------------- running and comparing


_RESUME_FN = re.compile(r"^torch_dynamo_resume_in_(.+)_at_\d+$")


class _ListHandler(logging.Handler):
    def __init__(self, sink: list):
        super().__init__(level=logging.NOTSET)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == "torch" or record.name.startswith("torch."):
            return  # torch's own diagnostics (Dynamo's graph-break warnings differ by design)
        # the logger's name may differ (it is often the module's __name__); the emitting function
        # may not (a deferral wrapper must log with stacklevel=2); line numbers move with any edit
        func = _RESUME_FN.sub(r"\1", record.funcName or "")  # code after a break runs in a resume fn
        self.sink.append(("log", record.levelname, func, record.getMessage()))


class _TorchRecordsToRealStderr(logging.Filter):
    """torch's own log handler (from 2.14, torch._logging's _StderrHandler) writes to whatever sys.stderr is
    when a record is emitted, so under redirect_stderr Dynamo's timestamped diagnostics would land in the
    user's stderr transcript. While recording, they go to the process's real stderr instead."""

    def __init__(self, handler: logging.Handler):
        super().__init__()
        self.handler = handler

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            sys.__stderr__.write(self.handler.format(record) + "\n")
        except Exception:  # noqa: BLE001 - a diagnostic that cannot be formatted is dropped
            pass
        return False


def _torch_log_handlers() -> list[logging.Handler]:
    loggers = [logging.getLogger("torch")] + [
        lg for name, lg in logging.root.manager.loggerDict.items()
        if name.startswith("torch.") and isinstance(lg, logging.Logger)]
    return [h for lg in loggers for h in lg.handlers if not isinstance(h, _ListHandler)]


@contextlib.contextmanager
def transcript():
    """Record stdout, stderr, log records (every logger) and warnings, in one ordered list."""
    events: list = []

    class _Stream(io.TextIOBase):
        def __init__(self, tag):
            self.tag = tag

        def write(self, s):
            if s:
                events.append((self.tag, s))
            return len(s)

    handler = _ListHandler(events)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.NOTSET)
    # transformers' loggers do not propagate to the root logger by default; attach to them too
    extra = [logging.getLogger(n) for n in list(logging.root.manager.loggerDict)
             if isinstance(logging.root.manager.loggerDict[n], logging.Logger)
             and not logging.getLogger(n).propagate]
    for lg in extra:
        lg.addHandler(handler)
    torch_filters = [(h, _TorchRecordsToRealStderr(h)) for h in _torch_log_handlers()]
    for h, f in torch_filters:
        h.addFilter(f)
    with warnings.catch_warnings(record=True) as caught, \
            contextlib.redirect_stdout(_Stream("stdout")), contextlib.redirect_stderr(_Stream("stderr")):
        warnings.simplefilter("always")
        try:
            yield events
        finally:
            for w in caught:
                if "torch/_dynamo" in w.filename.replace(os.sep, "/") or w.category is FutureWarning:
                    continue
                events.append(("warning", w.category.__name__, str(w.message)))
    root.removeHandler(handler)
    root.setLevel(old_level)
    for lg in extra:
        lg.removeHandler(handler)
    for h, f in torch_filters:
        h.removeFilter(f)


def call(fn, args) -> tuple[str, Any, list]:
    """('ok', output, transcript) or ('raise', (type name, message), transcript)."""
    with transcript() as events:
        try:
            out = fn(*args)
            result = ("ok", out)
        except Exception as exc:  # noqa: BLE001 - comparing exceptions is the point
            result = ("raise", (type(exc).__name__, str(exc)))
    return result[0], result[1], _normalise_transcript(events)


def _normalise_transcript(events: list) -> list:
    # merge adjacent writes to the same stream so print's separate writes compare as lines
    merged: list = []
    for ev in events:
        if merged and ev[0] in ("stdout", "stderr") and merged[-1][0] == ev[0]:
            merged[-1] = (ev[0], merged[-1][1] + ev[1])
        else:
            merged.append(ev)
    return merged


def assert_same_output(a: Any, b: Any, where: str = "output") -> None:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        assert isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor), f"{where}: tensor vs {type(b)}"
        assert a.shape == b.shape, f"{where}: shape {tuple(a.shape)} != {tuple(b.shape)}"
        assert a.dtype == b.dtype, f"{where}: dtype {a.dtype} != {b.dtype}"
        # dtype-aware default tolerances (exact for integer and bool tensors): a dense rewrite of a
        # masked reduction or a compiled NumPy op may reorder float arithmetic by an ulp
        torch.testing.assert_close(a.detach(), b.detach(), equal_nan=True,
                                   msg=lambda m: f"{where}: {m}")
        return
    if isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), f"{where}: {type(a)}[{len(a)}] vs {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_output(x, y, f"{where}[{i}]")
        return
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{where}: dict keys differ"
        for k in a:
            assert_same_output(a[k], b[k], f"{where}[{k!r}]")
        return
    if hasattr(a, "__dict__") and not isinstance(a, type) and type(a).__module__ != "builtins":
        assert type(a).__name__ == type(b).__name__, f"{where}: {type(a)} vs {type(b)}"
        assert_same_output(vars(a), vars(b), where)
        return
    if isinstance(a, float) and isinstance(b, float):
        assert (a != a and b != b) or math.isclose(a, b, rel_tol=1.3e-6, abs_tol=1e-5), f"{where}: {a!r} != {b!r}"
        return
    assert a == b, f"{where}: {a!r} != {b!r}"


# ---------------------------------------------------------------- Dynamo ground truth, cached per run

# gb registry ids each rule may legitimately correspond to in torch 2.13 (docs/dynamo-facts.md)
EXPECTED_GB_IDS = {
    "GM101": {"GB0170", "GB0124", "GB0033"},
    "GM102": {"GB0170"},
    "GM103": {"GB0170"},
    "GM104": {"GB0170", "GB0033"},
    "GM201": {"GB0059"},
    "GM202": {"GB0291", "GB4841"},
    "GM203": {"GB0291"},
    "GM204": {"GB0007"},
    "GM301": {"GB0170"},
    "GM302": {"GB0170"},
    "GM401": {"GB0124"},
    "GM402": {"GB0109", "GB0033"},
    "GM403": {"GB0124"},
    "GM404": {"GB0033"},
    "GM405": {"GB0033", "GB0124", "GB0059"},  # sizes and counts; slice bounds (item()); range()
    "GM406": {"GB0124"},
    "GM105": {"GB6622"},
    "GM608": {"GB0033", "GB0294"},  # data-dependent torch._numpy op; no torch._numpy counterpart
    "GM501": {"GB0036"},
    "GM502": {"GB0036"},
    "GM503": {"GB0036"},
    "GM504": {"GB0036"},
    "GM505": {"GB0036"},
    "GM506": {"GB0036"},
    "GM601": {"GB4198", "GB0264"},
    "GM602": {"GB0007", "GB9193"} if TORCH_RELEASE >= (2, 15) else {"GB0007"},
    "GM603": {"GB0206", "GB8985"},
    "GM604": {"GB0264"},
    "GM605": {"GB8977"},
    "GM606": {"GB0098"},
    # the call, then entering what it returned (from 2.14: a generator over a skipped function)
    "GM607": {"GB0208", "GB7151"} if TORCH_RELEASE >= (2, 14) else {"GB0208", "GB0142"},
    "GM609": {"GB0148", "GB4841"} if TORCH_RELEASE >= (2, 15) else {"GB0014"},  # a delayed call; methods
    "GM610": {"GB0007"},
    "GM611": {"GB0007"},
    # to_sparse*: wrapping the result, then the sparse value on the resumed line; sparse_coo_tensor is skipped;
    # sparse_csr/csc/bsr/bsc/compressed_tensor are refused.
    "GM612": {"GB0277", "GB0015", "GB0007", "GB0374"},
    "GM613": {"GB7312"},
    # branch, arithmetic, float()/int(), range() (GB4841 before 2.14), indexing a tensor
    "GM616": {"GB2736"},
    "GM615": {"GB5976", "GB9118"} if TORCH_RELEASE >= (2, 15) else {"GB5976"},  # comparison; truth (2.15)
    "GM614": {"GB0170", "GB0213", "GB0178", "GB0124" if TORCH_RELEASE >= (2, 14) else "GB4841", "GB0033"},
}

_DYNAMO_CACHE: dict[str, Any] = {}
DYNAMO_DEFAULTS = dict(  # torch 2.13 defaults (docs/dynamo-facts.md is measured under these)
    capture_scalar_outputs=False,
    capture_dynamic_output_shape_ops=False,
    nested_graph_breaks=False,
    suppress_errors=False,
    reorderable_logging_functions=set(),
    ignore_logging_functions=set(),
)


def dynamo_report(path: Path, seed: int = 0):
    """Dynamo's breaks for the original fixture's example() (cached: fixtures are read-only)."""
    from dynamo_breaks import find_breaks

    key = f"{Path(path).resolve()}::{seed}"
    if key not in _DYNAMO_CACHE:
        with registrations_kept():
            module = load_fixture(path)
            fn, args = build_example(module, seed)
            # originals run under Dynamo's defaults for every knob that changes which breaks happen,
            # whatever a fixed file (or another test in this process) set earlier, plus what the
            # fixture itself registers at import
            with transcript(), torch._dynamo.config.patch(**own_config(module)):
                _DYNAMO_CACHE[key] = find_breaks(fn, args, str(path))
    return _DYNAMO_CACHE[key]
