"""bench/effect_fixes.py counts a package's GM301 and GM202 findings by the fix offered, from graphmend's JSON."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("GRAPHMEND_BIN", str(ROOT / "build" / "graphmend"))


def test_counts_each_fix_kind_of_the_transform_cases(tmp_path):
    cases = ROOT / "tests" / "fixtures" / "transforms" / "raise_in_graph"
    for case in cases.glob("*.py"):
        if not case.name.endswith(".expected.py"):
            (tmp_path / case.name).write_bytes(case.read_bytes())
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "effect_fixes.py"), "--select", "GM301", str(tmp_path)],
                          capture_output=True,
                          text=True, env=dict(os.environ, GRAPHMEND_BIN=BIN), timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # Seven cases: one guard each, two in two_guards_custom_class, and two guards each in the fallback case
    # (both graph-native) and the f-string case (one operator, one graph-native).
    assert lines[0] == f"{tmp_path}: 10 GM301 findings", done.stdout
    counts = {line.split(None, 1)[1]: int(line.split()[0]) for line in lines[1:]}
    assert counts == {"raise-in-graph": 7, "graph-native": 3}, done.stdout


def test_a_failing_graphmend_is_an_error(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "effect_fixes.py"), str(tmp_path / "missing")],
                          capture_output=True, text=True, env=dict(os.environ, GRAPHMEND_BIN=BIN), timeout=60)
    assert done.returncode == 2 and "graphmend exited 2" in done.stderr


def test_counts_logging_fixes_by_kind(tmp_path):
    """The log-in-graph cases: every call an operator; the defer-side-effect cases add the entry deferral and
    the unsafe skip (tensor arguments)."""
    fixtures = ROOT / "tests" / "fixtures" / "transforms"
    for case in [*(fixtures / "log_in_graph").glob("*.py"), fixtures / "defer_side_effect" / "logger_compile_entry.py",
                 fixtures / "defer_side_effect" / "logger_module_forward.py"]:
        if not case.name.endswith(".expected.py"):
            (tmp_path / case.name).write_bytes(case.read_bytes())
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "effect_fixes.py"), "--select", "GM202", str(tmp_path)],
                          capture_output=True, text=True, env=dict(os.environ, GRAPHMEND_BIN=BIN), timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    counts = {line.split(None, 1)[1]: int(line.split()[0]) for line in lines[1:]}
    # log_in_graph: 3 calls in literal_size_and_fstring, 2 in same_call_twice, 1 each in the other two.
    assert counts == {"log-in-graph": 7, "deferred": 1, "skip while compiling": 1}, done.stdout
    assert lines[0] == f"{tmp_path}: 9 GM202 findings", done.stdout
