"""Inputs the fuzzer (tests/fuzz/fuzz_check_fix.cpp, scripts/fuzz.sh) once failed on, kept fixed.

Every tests/fuzz/regressions/*.input (raw bytes, saved from build-fuzz/artifacts/) goes through
`graphmend check --fix --exit-zero` (and again with --unsafe-fixes) on a copy: the command must not crash
(exit 0; exit 2 only for bytes that are not UTF-8 Python source, left untouched), a file that parsed must
still parse, and a second --fix must change nothing.
Binary: $GRAPHMEND_BIN, default build/graphmend.
"""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REGRESSIONS = REPO / "tests" / "fuzz" / "regressions"
BIN = os.environ.get("GRAPHMEND_BIN", str(REPO / "build" / "graphmend"))
FILES = sorted(p for p in REGRESSIONS.glob("*.input")) if REGRESSIONS.is_dir() else []


def _parses(data: bytes) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like
            ast.parse(data)
        return True
    except (SyntaxError, ValueError):
        return False


def _fix(path: Path, unsafe: bool) -> subprocess.CompletedProcess:
    args = [BIN, "check", "--fix", "--exit-zero", "--no-config", *(["--unsafe-fixes"] if unsafe else []), str(path)]
    return subprocess.run(args, capture_output=True, timeout=60)


@pytest.mark.skipif(not FILES, reason="no fuzz regressions recorded")
@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_fix_twice_is_stable(path, unsafe, tmp_path):
    # graphmend checks only .py files: keep the name's stem, give it the suffix.
    copy = tmp_path / (path.stem + ".py")
    shutil.copyfile(path, copy)
    original = path.read_bytes()
    proc = _fix(copy, unsafe)
    if proc.returncode == 2 and (b"invalid UTF-8 byte" in proc.stderr or b"contains a NUL byte" in proc.stderr):
        assert copy.read_bytes() == original  # not Python source: refused (exit 2, as in ruff), left as it was
        return
    assert proc.returncode == 0, f"check --fix exited {proc.returncode}\n{proc.stderr.decode(errors='replace')}"
    once = copy.read_bytes()
    if _parses(original):
        assert _parses(once), f"{path.name}: the fixed file does not parse:\n{once.decode(errors='replace')}"
    proc = _fix(copy, unsafe)
    assert proc.returncode == 0, f"second check --fix exited {proc.returncode}\n{proc.stderr.decode(errors='replace')}"
    twice = copy.read_bytes()
    assert twice == once, (f"{path.name}: a second --fix changed the file\n-- after one:\n{once.decode(errors='replace')}"
                           f"\n-- after two:\n{twice.decode(errors='replace')}")
