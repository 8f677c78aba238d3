"""Every safe fix in the test suite keeps every observation, eager and compiled, on the input battery of
differential.py (the example's inputs, other branches, failing guards, NaN, inf, zeros, empty tensors,
other dtypes). Hazard fixtures (tests/fixtures/hazards/, one per row of docs/fix-safety.md's table) must
be refused or made total: they run through the same comparison, and each states how many safe fixes it
expects (`EXPECTED_SAFE_FIXES`), so a fix that starts or stops applying is noticed.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import differential
from differential import compare_files, fixable_files, graphmend_fix

FILES = fixable_files()
HAZARD_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "hazards"


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


@pytest.mark.parametrize("path", FILES, ids=[_id(p) for p in FILES])
def test_safe_fix_keeps_every_observation(path, tmp_path):
    fixed = tmp_path / path.name
    if not graphmend_fix(path, fixed):
        pytest.skip("no safe fix applies")
    result = compare_files(path, fixed)
    assert result.cases > 0
    assert not result.differences, (f"{path.name}: {len(result.differences)} of {result.cases} cases differ\n" +
                                    "\n".join(result.differences[:10]) + "\n--- fixed file:\n" + fixed.read_text())


def _safe_fix_count(path: Path, tmp_path: Path) -> int:
    import json
    import subprocess

    from fixture_support import require_graphmend

    proc = subprocess.run([str(require_graphmend()), "check", "--output-format", "json", "--exit-zero", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return sum(1 for f in json.loads(proc.stdout) if (f.get("fix") or {}).get("applicability") == "safe")


HAZARDS = sorted(HAZARD_DIR.glob("*.py"))


@pytest.mark.parametrize("path", HAZARDS, ids=[p.stem for p in HAZARDS])
def test_hazard_is_refused_or_made_total(path, tmp_path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    declared = {t.id: ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                for t in n.targets if isinstance(t, ast.Name) and t.id in ("HAZARD", "EXPECTED_SAFE_FIXES")}
    assert "HAZARD" in declared and "EXPECTED_SAFE_FIXES" in declared, f"{path.name}: declare HAZARD and EXPECTED_SAFE_FIXES"
    assert _safe_fix_count(path, tmp_path) == declared["EXPECTED_SAFE_FIXES"]
    assert "def inputs" in path.read_text(encoding="utf-8"), f"{path.name}: give inputs() that exercise the hazard"


def test_every_observation_of_the_contract_has_a_hazard_fixture():
    """docs/fix-safety.md's table rows each name the hazard fixtures that cover them."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "fix-safety.md").read_text(encoding="utf-8")
    table = [line for line in doc.splitlines() if line.startswith("| ") and "hazards/" in line]
    assert len(table) >= 9, "the observation table lost rows"
    for row in table:
        for name in re.findall(r"hazards/(\w+)\.py", row):
            assert (HAZARD_DIR / f"{name}.py").is_file(), f"docs/fix-safety.md names a missing hazard {name}"
    named = set(re.findall(r"hazards/(\w+)\.py", doc))
    assert {p.stem for p in HAZARDS} <= named, "every hazard fixture is named in docs/fix-safety.md"


def _observed(outcome, transcript):
    return {"outcome": outcome, "transcript": transcript, "state": None, "arguments": None, "rng": None,
            "grad_mode": True}


def test_trace_time_clause_allows_only_extra_once_messages_in_a_raising_compiled_call():
    from differential import _first_difference

    raised = ("raise", "RuntimeError", "bad dtype")
    once = ("log", "WARNING", "warning_once", "deprecated")
    other = ("log", "WARNING", "warning", "something else")
    allowed = {"deprecated"}
    # the clause: the once-message is already out when the graph raises
    assert _first_difference(_observed(raised, []), _observed(raised, [once]), allowed, True) is None
    # nowhere else: eager runs, returning calls, messages the fix does not emit at trace time
    assert _first_difference(_observed(raised, []), _observed(raised, [once]), allowed, False)
    assert _first_difference(_observed(("ok", 1), []), _observed(("ok", 1), [once]), allowed, True)
    assert _first_difference(_observed(raised, []), _observed(raised, [other]), allowed, True)
    assert _first_difference(_observed(raised, []), _observed(raised, [once]), set(), True)
    # and a message the original emitted may not be lost
    assert _first_difference(_observed(raised, [once]), _observed(raised, []), allowed, True)


def test_the_trace_time_hazard_needs_the_clause(tmp_path):
    """hazards/log_once_before_runtime_error.py differs without the clause: the oracle sees the difference."""
    import differential

    path = HAZARD_DIR / "log_once_before_runtime_error.py"
    fixed = tmp_path / path.name
    assert graphmend_fix(path, fixed)
    assert differential.trace_time_messages(fixed) == {"layer: first call", "model: after the layer"}
    saved = differential.trace_time_messages
    differential.trace_time_messages = lambda _: set()
    try:
        result = compare_files(path, fixed, gradients=False)
    finally:
        differential.trace_time_messages = saved
    assert any("compiled: transcript" in d for d in result.differences), result.differences


def test_gradients_compare_exactly_but_for_the_rounding_of_summation_order():
    def grad(values, dtype="torch.float32", nan=None):
        return ([("tensor", (len(values),), dtype, "cpu", False, (values, nan or [False] * len(values)))], [])

    base = grad([0.28847062587738037, 1.0])
    # one unit in the last place of a float32: two contributions summed in another order
    assert differential.same_gradients_up_to_summation_order(base, grad([0.28847065567970276, 1.0]))
    # a real change, a NaN where there was none, another dtype: all differences
    assert not differential.same_gradients_up_to_summation_order(base, grad([0.2885, 1.0]))
    assert not differential.same_gradients_up_to_summation_order(base, grad([0.0, 1.0], nan=[True, False]))
    assert not differential.same_gradients_up_to_summation_order(base, grad([0.28847062587738037, 1.0], "torch.float64"))
    assert not differential.same_gradients_up_to_summation_order(grad([float("inf"), 1.0]), grad([-float("inf"), 1.0]))
    assert not differential.same_gradients_up_to_summation_order(base, None)


def test_torch_diagnostics_stay_out_of_the_stderr_transcript():
    # From torch 2.14 the "torch" logger's handler writes to the current sys.stderr: Dynamo's timestamped
    # records (recompiles, graph-break warnings) would show up as differences in the user's stderr.
    import logging
    import sys

    from fixture_support import transcript

    with transcript() as events:
        logging.getLogger("torch._dynamo").warning("torch diagnostic")
        logging.getLogger("user.model").warning("user record")
        print("user text", file=sys.stderr)
    assert [e for e in events if e[0] == "stderr"] == [("stderr", "user text"), ("stderr", "\n")]
    assert [e for e in events if e[0] == "log"] == [
        ("log", "WARNING", "test_torch_diagnostics_stay_out_of_the_stderr_transcript", "user record")]


def test_the_print_hazard_is_seen_with_the_unsafe_fix(tmp_path):
    """hazards/print_before_trace_error.py: with the in-graph print applied (--unsafe-fixes), the compiled run on
    the integer input raises without printing; the oracle sees the lost text."""
    path = HAZARD_DIR / "print_before_trace_error.py"
    fixed = tmp_path / path.name
    assert graphmend_fix(path, fixed, unsafe=True)
    assert "_higher_order_ops.print(" in fixed.read_text(encoding="utf-8")
    result = compare_files(path, fixed, gradients=False, seeds=(0,))
    assert any("compiled: transcript" in d for d in result.differences), result.differences


def test_an_unused_draw_would_be_seen(tmp_path):
    """hazards/rng_layerdrop_bound.py fixed, then with the assertion that reads the draw taken out (the fix as it
    was before 2026-12-07): under aot_eager the draw, unused, is removed as dead code, and the oracle sees
    another RNG state after the call. The fix as it is keeps it (the hazard's safe fix is compared equal)."""
    path = HAZARD_DIR / "rng_layerdrop_bound.py"
    fixed = tmp_path / path.name
    assert graphmend_fix(path, fixed, unsafe=False)
    text = fixed.read_text(encoding="utf-8")
    keep = ' or torch._assert_async(dropout_probability >= 0, "torch.rand draws from [0, 1)") is not None'
    assert keep in text
    fixed.write_text(text.replace(keep, ""), encoding="utf-8")
    result = compare_files(path, fixed, gradients=False, seeds=(0,))
    assert any("compiled: rng" in d for d in result.differences), result.differences


@pytest.mark.parametrize("name", ["alias_input_returned", "alias_view_stored", "alias_fresh_shared",
                                  "alias_fresh_shared_in_loop"])
def test_aliasing_is_seen_with_the_unsafe_fix(name, tmp_path):
    """#28 technique 6: the select's new tensor, where the original returned its input itself or kept a view of
    it on the module, is seen by the oracle's aliasing observation: the fix is unsafe for that reason only."""
    path = HAZARD_DIR / f"{name}.py"
    fixed = tmp_path / path.name
    assert not graphmend_fix(path, fixed, unsafe=False)
    assert graphmend_fix(path, fixed, unsafe=True)
    result = compare_files(path, fixed, gradients=False, seeds=(0,))
    assert result.differences and all("aliases" in d for d in result.differences), result.differences
