"""The in-graph print fix (GM201; transforms/src/defer_side_effect.cpp) and why it is safe only for numbers,
sizes and strings in a compile entry followed by pure, total statements.

The original prints at its break: the text is out before anything after the print is traced or run. The fix
(`torch._higher_order_ops.print`) prints when the graph runs. Two facts make it unsafe elsewhere, pinned
here: a graph that fails after the print (tracing a later operation) never prints, and under aot_eager and
inductor the operator receives tensors without autograd history, so a tensor that requires grad prints
without its `grad_fn=`. The safe case is checked end to end: same text on eager, aot_eager and inductor,
static and dynamic shapes, in one graph.
"""
import contextlib
import io
import shutil
from pathlib import Path

import pytest
import torch
import torch._dynamo
from torch import nn

from fixture_support import load_fixture, run_graphmend

SNAPSHOTS = Path(__file__).resolve().parents[1] / "fixtures" / "transforms" / "defer_side_effect"


def _stdout(fn, *args) -> tuple[str, object]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            result = fn(*args)
        except Exception as exc:  # noqa: BLE001 - the exception is part of what is compared
            result = type(exc)
    return out.getvalue(), result


def test_fact_in_graph_print_loses_grad_fn_under_aot_eager():
    """Why a tensor argument makes the fix unsafe: eager prints `grad_fn=...`, the compiled operator does not."""
    lin = nn.Linear(2, 2)

    def fn(x):
        y = lin(x).sum()
        torch._higher_order_ops.print("y {!s}", y)
        return y * 2

    x = torch.ones(1, 2)
    eager, _ = _stdout(fn, x)
    torch._dynamo.reset()
    compiled, _ = _stdout(torch.compile(fn, backend="aot_eager"), x)
    torch._dynamo.reset()
    assert "grad_fn=" in eager and "grad_fn=" not in compiled, (eager, compiled)


def test_fact_a_graph_that_fails_after_the_print_loses_the_text(tmp_path):
    """Why a statement after the print that may fail makes the fix unsafe (hazards/print_before_trace_error.py,
    fixed with --unsafe-fixes): LayerNorm on an integer tensor fails while Dynamo traces it. The original
    printed at its break, before; in one graph nothing has run."""
    hazard = SNAPSHOTS.parents[1] / "hazards" / "print_before_trace_error.py"
    fixed = tmp_path / "fixed.py"
    shutil.copyfile(hazard, fixed)
    proc = run_graphmend("check", "--fix", "--unsafe-fixes", "--exit-zero", "-q", str(fixed))
    assert proc.returncode == 0 and "_higher_order_ops.print(" in fixed.read_text(), proc.stderr
    x = torch.ones(2, 4, dtype=torch.int64)
    seen = {}
    for name, path in (("original", hazard), ("fixed", fixed)):
        torch._dynamo.reset()
        seen[name] = _stdout(torch.compile(load_fixture(path).Model(), backend="aot_eager"), x)
    torch._dynamo.reset()
    assert seen["original"][1] is seen["fixed"][1] and isinstance(seen["original"][1], type)
    assert (seen["original"][0], seen["fixed"][0]) == ("rows 2\n", ""), seen


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
@pytest.mark.parametrize("dynamic", [False, True])
def test_safe_print_of_sizes_in_a_compile_entry(backend, dynamic, tmp_path):
    """The safe case, from its snapshot: same text as the original's eager run, in one graph, every backend."""
    source = SNAPSHOTS / "print_sizes_compile_entry.py"
    fixed = tmp_path / "fixed.py"
    shutil.copyfile(source, fixed)
    proc = run_graphmend("check", "--fix", "--exit-zero", "-q", str(fixed))
    assert proc.returncode == 0 and "_higher_order_ops.print(" in fixed.read_text(), proc.stderr
    original, fixed_mod = load_fixture(source), load_fixture(fixed)
    plain_original, plain_fixed = original.scale, fixed_mod.scale  # compiled here with the backend under test
    for shape in ((3, 4), (5, 4), (5, 6)):
        x = torch.randn(*shape)
        want, want_out = _stdout(plain_original, x)
        torch._dynamo.reset()
        got, got_out = _stdout(torch.compile(plain_fixed, backend=backend, dynamic=dynamic, fullgraph=True), x)
        assert got == want == f"rows {shape[0]} cols {shape[1]}\n"
        torch.testing.assert_close(got_out, want_out, rtol=0, atol=0)
    torch._dynamo.reset()
