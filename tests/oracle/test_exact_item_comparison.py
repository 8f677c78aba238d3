"""#28 technique 4, exact comparisons of `.item()` (predicate-if on a GM401 finding; transforms/src/predicate.cpp
item_comparison): `if x.max().item() >= bound:` becomes a select on
`torch.as_tensor((x.max().double() >= bound) if <x floating and bound a float or an int within 2^53> else
(x.max().item() >= bound))`. Pinned here against Dynamo and eager torch:

- the facts the proof rests on: a floating value converted by `.double()` compares with a Python float or a small
  int exactly as `.item()` does in Python, where the tensor's own dtype would not (bfloat16, float16), and a big
  int would not either;
- the fixed hazard fixture (tests/fixtures/hazards/item_bound_exactness.py) compiles to one graph with no break
  where the checks hold, and falls back to the original comparison (its break included) where they do not,
  with the original's results.
"""
import shutil
from pathlib import Path

import pytest
import torch
import torch._dynamo

from fixture_support import load_fixture, run_graphmend

HAZARD = Path(__file__).resolve().parents[1] / "fixtures" / "hazards" / "item_bound_exactness.py"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("bound", [0.1, 2047, 2049, 1e-8, -3.5, 65504.0, float("inf"), float("nan"), 2**53])
def test_double_comparison_is_pythons(dtype, bound):
    values = torch.tensor([0.1, 2048.0, 1e-8, -3.5, 65504.0, float("inf"), float("nan"), 0.0], dtype=dtype)
    for v in values:
        for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
            python = getattr(v.item(), op)(bound)
            exact = bool(getattr(v.double(), op)(bound))
            assert exact == python, (dtype, v, op, bound)


def test_the_tensors_own_dtype_and_a_big_int_would_not_be():
    """Why the fix compares in double and checks the bound: both simpler forms differ from Python."""
    v = torch.tensor(2048.0, dtype=torch.bfloat16)
    assert (v.item() >= 2049) is False and bool(v >= 2049) is True  # 2049 rounds to 2048 in bfloat16
    big = torch.tensor(2.0**60)
    assert (big.item() >= 2**60 + 1) is False and bool(big.double() >= 2**60 + 1) is True  # double rounds the int


@pytest.fixture(scope="module")
def fixed_hazard(tmp_path_factory):
    fixed = tmp_path_factory.mktemp("exact-item") / HAZARD.name
    shutil.copyfile(HAZARD, fixed)
    proc = run_graphmend("check", "--fix", "--exit-zero", str(fixed))
    assert proc.returncode == 0, proc.stderr
    assert ".double() >= bound" in fixed.read_text(), fixed.read_text()
    return fixed


CASES = [
    ("float bound", (torch.tensor([0.3, 0.7]), 0.5), 0),
    ("small int bound", (torch.tensor([0.3, 7.0]), 3), 0),
    ("bool bound", (torch.tensor([1.0]), True), 0),
    ("float16 next to the bound", (torch.tensor([0.1], dtype=torch.float16), 0.1), 0),
    ("bfloat16 next to the bound", (torch.tensor([2048.0], dtype=torch.bfloat16), 2049), 0),
    ("int beyond 2^53", (torch.tensor([2.0**60]), 2**60 + 1), 1),
    ("integer tensor", (torch.tensor([3, 1]), 2.5), 1),
]


@pytest.mark.parametrize("label,args,breaks", CASES, ids=[c[0] for c in CASES])
def test_fixed_hazard_one_graph_where_the_checks_hold(fixed_hazard, label, args, breaks):
    original = load_fixture(HAZARD).Model()
    fixed = load_fixture(fixed_hazard).Model()
    torch._dynamo.reset()
    report = torch._dynamo.explain(fixed)(*args)
    assert report.graph_break_count == breaks, (label, [str(b.reason) for b in report.break_reasons])
    expected = original(*args)
    torch._dynamo.reset()
    compiled = torch.compile(fixed, backend="aot_eager")(*args)
    for got in (fixed(*args), compiled):
        assert got.dtype == expected.dtype and torch.equal(got, expected), (label, got, expected)
