"""#28 techniques 1 and 2, checked against torch (transforms/src/total_untaken_side.cpp, shared_test_value.cpp).

Technique 1 (total untaken side): a value whose derivative is not constant is selected with its tensor inputs
replaced by `torch.where(c, x, torch.ones_like(x))`; the proof evaluates the value on ones by interval
arithmetic in bfloat16's rounding. Technique 2 (shared test value): a part of the test the values repeat is
bound once before the test.

Pinned here:
- the proof's table: every expression it accepts is finite, with finite gradients, on ones in float16, bfloat16
  and float32; each it refuses for a singularity, an overflow or rounding does produce inf or NaN in some
  floating dtype (so the refusals are not idle);
- the guards are what makes the fix sound: the fixed hazard fixtures keep every observation (the differential
  oracle), and with the guards (or the sharing) taken out again the oracle sees the difference;
- the untaken side is finite, not just masked: under torch.autograd.detect_anomaly the fixed code runs its
  backward without a NaN where the plain select raises;
- the fixed fixtures compile to one graph with no break.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import torch
import torch._dynamo

from differential import compare_files
from fixture_support import load_fixture, run_graphmend

HAZARDS = Path(__file__).resolve().parents[1] / "fixtures" / "hazards"

# Expressions of one tensor `x` that the proof accepts (each appears in a fixture below, checked to be safe).
ACCEPTED = [
    "torch.log(x) * torch.sigmoid(x)",
    "torch.log(x + 2.0)",
    "x / (x + 1)",
    "torch.sqrt(x) * x",
    "torch.rsqrt(x + 0.5)",
    "torch.exp(x * 2) * x",
    "x ** -1",
    "x ** 0.5",
    "torch.tanh(x) * x",
    "torch.reciprocal(x)",
    "torch.log1p(x) * 3",
    "x.clamp(min=0.5).log()",
    "torch.nn.functional.softplus(x) * 3",
]
# Refused: the reason, and a floating dtype where ones do produce inf or NaN in the value or the gradient.
REFUSED = [
    ("torch.log(x - 1) * 3", "singularity", torch.float32),
    ("torch.exp(x * 20) * 3", "may exceed", torch.float16),
    ("torch.log(x * 1000 + -999.0) * 3", "singularity", torch.bfloat16),
    ("x / (x - 1)", "may be 0", torch.float32),
    ("torch.sqrt(x - 1) * x", "singularity", torch.float32),
]


def _module_source(expr: str) -> str:
    return f'''import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        if x.amin() > 0.5:
            z = {expr}
        else:
            z = x * 2
        return z
'''


def _fix_title(tmp_path: Path, expr: str) -> str:
    source = tmp_path / "case.py"
    source.write_text(_module_source(expr))
    proc = run_graphmend("check", "--output-format", "json", "--exit-zero", str(source))
    assert proc.returncode == 0, proc.stderr
    import json

    findings = [f for f in json.loads(proc.stdout) if f["code"] == "GM101"]
    assert len(findings) == 1, proc.stdout
    fix = findings[0].get("fix") or {}
    return f"{fix.get('applicability')}: {fix.get('message') or fix.get('title')}"


def _on_ones(expr: str, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.ones(4, dtype=dtype, requires_grad=True)
    value = eval(expr, {"torch": torch, "x": x})  # noqa: S307 - the table's own expressions
    # The zero gradient torch.where sends into the untaken side.
    value.backward(torch.zeros_like(value))
    return value.detach(), x.grad


@pytest.mark.parametrize("expr", ACCEPTED)
def test_accepted_expression_is_finite_on_ones(expr, tmp_path):
    assert _fix_title(tmp_path, expr).startswith("safe"), expr
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        value, grad = _on_ones(expr, dtype)
        assert torch.isfinite(value).all(), (expr, dtype, value)
        assert torch.equal(grad, torch.zeros_like(grad)), (expr, dtype, grad)


@pytest.mark.parametrize("expr,reason,dtype", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_expression_breaks_on_ones(expr, reason, dtype, tmp_path):
    title = _fix_title(tmp_path, expr)
    assert title.startswith("unsafe") and "total untaken side" in title and reason in title, title
    value, grad = _on_ones(expr, dtype)
    assert not (torch.isfinite(value).all() and torch.isfinite(grad).all()), (expr, dtype, value, grad)


# Each hazard fixture the techniques make safe, and how to take the technique out of the fixed file again.
UNDONE = {
    "untaken_side_nan_gradient": [(r"torch\.log\(graphmend_then_x\) \* torch\.sigmoid\(graphmend_then_x\)",
                                   "torch.log(x) * torch.sigmoid(x)")],
    "shared_test_value_linear": [(r"graphmend_then_h / graphmend_then_shared", "h / graphmend_shared")],
    "shared_test_value_warning": [(r"h / graphmend_shared", "h / h.std()")],
}


@pytest.fixture(scope="module")
def fixed_hazards(tmp_path_factory):
    out = {}
    root = tmp_path_factory.mktemp("techniques")
    for name in UNDONE:
        fixed = root / f"{name}.py"
        shutil.copyfile(HAZARDS / f"{name}.py", fixed)
        proc = run_graphmend("check", "--fix", "--exit-zero", str(fixed))
        assert proc.returncode == 0, proc.stderr
        out[name] = fixed
    return out


@pytest.mark.parametrize("name", sorted(UNDONE))
def test_without_the_technique_the_oracle_sees_the_difference(fixed_hazards, name, tmp_path):
    fixed = fixed_hazards[name]
    assert not compare_files(HAZARDS / f"{name}.py", fixed).differences
    undone_text = fixed.read_text()
    for pattern, replacement in UNDONE[name]:
        undone_text, n = re.subn(pattern, replacement, undone_text)
        assert n == 1, (pattern, fixed.read_text())
    undone = tmp_path / f"{name}.py"
    undone.write_text(undone_text)
    assert compare_files(HAZARDS / f"{name}.py", undone).differences, undone_text


def test_untaken_side_is_finite_under_anomaly_detection(fixed_hazards, tmp_path):
    name = "untaken_side_nan_gradient"
    fixed = load_fixture(fixed_hazards[name]).Model()
    undone_path = tmp_path / f"{name}.py"
    pattern, replacement = UNDONE[name][0]
    undone_path.write_text(re.sub(pattern, replacement, fixed_hazards[name].read_text()))
    undone = load_fixture(undone_path).Model()
    x = torch.tensor([0.0, 1.0, 2.0])  # untaken: log(0)
    with torch.autograd.detect_anomaly(check_nan=True):
        leaf = x.clone().requires_grad_(True)
        fixed(leaf).sum().backward()
        assert torch.equal(leaf.grad, torch.full((3,), 2.0))
        leaf = x.clone().requires_grad_(True)
        with pytest.raises(RuntimeError, match="nan"):
            undone(leaf).sum().backward()


@pytest.mark.parametrize("name", sorted(UNDONE))
def test_fixed_hazard_is_one_graph(fixed_hazards, name):
    module = load_fixture(fixed_hazards[name])
    model, args = module.example()
    torch._dynamo.reset()
    report = torch._dynamo.explain(model)(*args)
    assert report.graph_count == 1 and report.graph_break_count == 0, [str(b.reason) for b in report.break_reasons]
