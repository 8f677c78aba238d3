"""Snapshot tests of the transforms: tests/fixtures/transforms/<transform>/<case>.py.

Each case has the exact file `graphmend check --fix` must produce, `<case>.expected.py` (identical to the
case for a refusal), and optionally `<case>.unsafe.expected.py`, the file `--fix --unsafe-fixes` must
produce (without it, `--unsafe-fixes` must give `<case>.expected.py` too). A marker comment in the first
lines of a case states what the finding's JSON must say:
    # refusal: <phrase>   a finding's graphmend.no_fix_reason contains <phrase> (and --fix changes nothing)
    # unsafe: <phrase>    a finding's fix is "unsafe" and its title contains <phrase>
A case without a marker must be changed by --fix.

For every case and mode (safe; unsafe), on a copy in a temporary folder:
  * `check --fix --exit-zero [--unsafe-fixes]` gives the expected bytes, and a second run changes nothing;
  * semantics: the original and the fixed file, imported side by side, give the same eager results for
    `example()` on seeds 0, 1, 2 (exactly equal outputs, NaN == NaN, or the same exception type and
    message) and the same side effects (stdout, log records, warnings, in order). Compiled functions run
    their Python (`__wrapped__`, Dynamo disabled): no inductor, fast.

Binary: $GRAPHMEND_BIN, default build/graphmend.
"""
from __future__ import annotations

import contextlib
import difflib
import importlib.util
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
import torch._dynamo
from torch import nn

REPO = Path(__file__).resolve().parents[2]
CASE_DIR = REPO / "tests" / "fixtures" / "transforms"
BIN = os.environ.get("GRAPHMEND_BIN", str(REPO / "build" / "graphmend"))
SEEDS = (0, 1, 2)
MARKER_RE = re.compile(r"^#\s*(refusal|unsafe):\s*(.+?)\s*$")


def _cases() -> list[Path]:
    return sorted(p for p in CASE_DIR.glob("*/*.py") if not p.name.endswith(".expected.py"))


def _case_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _expected(path: Path, mode: str) -> Path:
    unsafe = path.with_name(path.stem + ".unsafe.expected.py")
    if mode == "unsafe" and unsafe.exists():
        return unsafe
    return path.with_name(path.stem + ".expected.py")


def _marker(path: Path) -> tuple[str, str] | None:
    """(kind, phrase) from a `# refusal:` / `# unsafe:` comment among the first lines."""
    for line in path.read_text(encoding="utf-8").splitlines()[:5]:
        m = MARKER_RE.match(line)
        if m:
            return m.group(1), m.group(2)
    return None


CASES = _cases()
PARAMS = [pytest.param(p, mode, id=f"{_case_id(p)}[{mode}]") for p in CASES for mode in ("safe", "unsafe")]


def _graphmend(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([BIN, *args], capture_output=True, timeout=120)


def _flags(mode: str) -> list[str]:
    return ["--unsafe-fixes"] if mode == "unsafe" else []


@pytest.fixture(scope="session")
def fixed_files(tmp_path_factory):
    """(case, mode) -> the case fixed by the binary in a temporary folder (one run per pair)."""
    cache: dict[tuple[Path, str], Path] = {}
    base = tmp_path_factory.mktemp("transform-snapshots")

    def get(path: Path, mode: str) -> Path:
        key = (path, mode)
        if key not in cache:
            folder = base / f"{path.parent.name}-{path.stem}-{mode}"
            folder.mkdir()
            copy = folder / path.name
            shutil.copyfile(path, copy)
            proc = _graphmend("check", "--fix", "--exit-zero", *_flags(mode), str(copy))
            assert proc.returncode == 0, f"check --fix exited {proc.returncode}\n{proc.stderr.decode(errors='replace')}"
            cache[key] = copy
        return cache[key]

    return get


def _diff(expected: bytes, actual: bytes, name: str) -> str:
    lines = difflib.unified_diff(expected.decode("utf-8", "replace").splitlines(keepends=True),
                                 actual.decode("utf-8", "replace").splitlines(keepends=True),
                                 f"{name} (expected)", f"{name} (graphmend)")
    return "".join(lines)


def test_cases_are_complete():
    assert CASES, f"no cases under {CASE_DIR}"
    for path in CASES:
        assert _expected(path, "safe").exists(), f"{_case_id(path)}: {path.stem}.expected.py is missing"
    for extra in CASE_DIR.glob("*/*.expected.py"):
        stem = extra.name.removesuffix(".unsafe.expected.py").removesuffix(".expected.py")
        assert extra.with_name(stem + ".py").exists(), f"{extra}: no case {stem}.py"


@pytest.mark.parametrize("path,mode", PARAMS)
def test_fix_matches_snapshot_and_is_idempotent(path, mode, fixed_files):
    fixed = fixed_files(path, mode)
    expected = _expected(path, mode).read_bytes()
    actual = fixed.read_bytes()
    assert actual == expected, f"{_case_id(path)} [{mode}] differs from {_expected(path, mode).name}:\n" + _diff(
        expected, actual, path.name)
    again = fixed.parent / ("again-" + path.name)
    shutil.copyfile(fixed, again)
    proc = _graphmend("check", "--fix", "--exit-zero", *_flags(mode), str(again))
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert again.read_bytes() == actual, f"{_case_id(path)} [{mode}]: a second --fix changed the file:\n" + _diff(
        actual, again.read_bytes(), path.name)


@pytest.mark.parametrize("path", CASES, ids=[_case_id(p) for p in CASES])
def test_finding_states_refusal_or_unsafety(path):
    marker = _marker(path)
    original = path.read_bytes()
    safe_expected = _expected(path, "safe").read_bytes()
    if marker is None:
        assert safe_expected != original, f"{_case_id(path)}: no refusal/unsafe marker, yet --fix is expected to change nothing"
        return
    kind, phrase = marker
    assert safe_expected == original, f"{_case_id(path)}: a `# {kind}:` case must be left unchanged by --fix"
    proc = _graphmend("check", "--output-format", "json", "--exit-zero", str(path))
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    findings = json.loads(proc.stdout)
    if kind == "refusal":
        reasons = [f["graphmend"]["no_fix_reason"] or "" for f in findings]
        assert any(phrase in r for r in reasons), f"{_case_id(path)}: no finding refuses with {phrase!r}; reasons: {reasons}"
    else:
        titles = [f["fix"]["message"] for f in findings if f["fix"] and f["fix"]["applicability"] == "unsafe"]
        assert any(phrase in t for t in titles), f"{_case_id(path)}: no unsafe fix titled with {phrase!r}; unsafe fixes: {titles}"


# --- semantics ---------------------------------------------------------------------------------------

_loaded = 0


def _load(path: Path, tag: str):
    global _loaded
    _loaded += 1
    name = f"graphmend_snapshot_{tag}_{_loaded}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses, pickling and logging.getLogger(__name__) expect it
    spec.loader.exec_module(module)
    return module


def _here(filename: str, home: str) -> bool:
    return os.path.realpath(filename) == home


class _Records(logging.Handler):
    def __init__(self, sink: list, home: str, module: str):
        super().__init__(logging.DEBUG)
        self.sink = sink
        self.home = home
        self.module = module

    def emit(self, record):
        # A logger named after the module (`__name__`) differs by import: it reads "<module>". Other
        # loggers, the caller's file and function must be the same (a wrapper passes stacklevel so that the
        # record still points at the call site).
        name = "<module>" if record.name == self.module else record.name
        self.sink.append(("log", name, record.levelname, record.getMessage(), _here(record.pathname, self.home),
                          record.funcName))


def _run(fn, args, seed: int, home: str, module: str):
    """(kind, value, side effects): kind "return" or "raise" (type name, message). `home`: the module's file,
    `module`: its name."""
    effects: list = []
    root = logging.getLogger()
    handler = _Records(effects, home, module)
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    out = io.StringIO()
    try:
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out), \
                torch._dynamo.config.patch(disable=True):
            warnings.simplefilter("always")
            torch.manual_seed(10_000 + seed)
            try:
                result = ("return", fn(*args))
            except Exception as exc:  # noqa: BLE001 - the exception is the result being compared
                result = ("raise", (type(exc).__name__, str(exc)))
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    effects.append(("stdout", out.getvalue()))
    effects.extend(("warning", w.category.__name__, str(w.message), _here(w.filename, home)) for w in caught)
    return result[0], result[1], effects


def _example(module, seed: int):
    torch.manual_seed(seed)
    fn, args = module.example()
    fn = getattr(fn, "__wrapped__", fn) if not isinstance(fn, nn.Module) else fn  # torch.compile'd function
    return fn, args


@pytest.fixture
def _restore_dynamo_config():
    """A fixed file registers its wrappers in reorderable_logging_functions at import: undo it."""
    cfg = torch._dynamo.config
    saved = set(cfg.reorderable_logging_functions)
    yield
    cfg.reorderable_logging_functions = saved


@pytest.mark.parametrize("path,mode", PARAMS)
def test_fix_keeps_eager_semantics(path, mode, fixed_files, _restore_dynamo_config):
    """What graphmend wrote, and the expected file too where they differ (a snapshot must be right)."""
    fixed_path = fixed_files(path, mode)
    expected_path = _expected(path, mode)
    _assert_same_behaviour(path, fixed_path, f"{_case_id(path)} [{mode}]")
    if expected_path.read_bytes() != fixed_path.read_bytes():
        _assert_same_behaviour(path, expected_path, f"{_case_id(path)} [{mode}] {expected_path.name}")


def _assert_same_behaviour(path: Path, fixed_path: Path, label: str):
    original = _load(path, "original")
    fixed = _load(fixed_path, "fixed")
    for seed in SEEDS:
        where = f"{label} seed {seed}"
        orig_fn, orig_args = _example(original, seed)
        fixed_fn, fixed_args = _example(fixed, seed)
        if isinstance(orig_fn, nn.Module):
            assert isinstance(fixed_fn, nn.Module), f"{where}: the fix turned the module into something else"
            fixed_fn.load_state_dict(orig_fn.state_dict())
            fixed_fn.train(orig_fn.training)
        kind_o, value_o, effects_o = _run(orig_fn, orig_args, seed, os.path.realpath(path), original.__name__)
        kind_f, value_f, effects_f = _run(fixed_fn, fixed_args, seed, os.path.realpath(fixed_path), fixed.__name__)
        assert kind_o == kind_f, f"{where}: original {kind_o}s {value_o!r}, fixed {kind_f}s {value_f!r}"
        if kind_o == "raise":
            assert value_o == value_f, f"{where}: original raised {value_o}, fixed raised {value_f}"
        else:
            torch.testing.assert_close(value_f, value_o, rtol=0, atol=0, equal_nan=True,
                                       msg=lambda m: f"{where}: outputs differ: {m}")
        assert effects_o == effects_f, f"{where}: side effects differ\noriginal: {effects_o}\nfixed:    {effects_f}"
        if isinstance(orig_fn, nn.Module):
            for (name, a), (_, b) in zip(orig_fn.state_dict().items(), fixed_fn.state_dict().items()):
                torch.testing.assert_close(b, a, rtol=0, atol=0, equal_nan=True,
                                           msg=lambda m, name=name: f"{where}: state {name} differs: {m}")
