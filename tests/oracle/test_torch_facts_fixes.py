"""What the candidate fixes do in torch 2.13 (docs/dynamo-facts.md "Candidate fixes", docs/fix-safety.md
"Torch facts this relies on"): predication with torch.where, torch._assert_async and the is_compiling()
split guard, torch._check, the dense forms of mask reductions and torch.equal, and keeping `.item()`
values as 0-d tensors.
"""
import pytest
import torch

from torch_facts import line_of, module, observe


def predicated(self, x):
    y = x * 2
    return torch.where(x.sum() > 0, y + 1, y - 1)


def predicated_and_or_not(self, a, b):
    c = (a.sum() > 0) & (b.sum() > 0) | ~(a.max() < 10)
    return torch.where(c, a + 1, a)


def test_where_predication_compiles_in_one_graph():
    x = torch.randn(4, 3)
    for fn, args in ((predicated, (x,)), (predicated_and_or_not, (x, x))):
        obs = observe(module(fn), *args)
        assert obs.error is None and obs.events == [] and obs.graphs == 1
        torch._dynamo.reset()
        full = torch.compile(module(fn), backend="eager", fullgraph=True)(*args)
        assert torch.equal(full, module(fn)(*args))
    torch._dynamo.reset()


def test_where_gives_nan_gradients_through_an_untaken_nan_or_inf_branch():
    t = torch.tensor([0.0], requires_grad=True)
    torch.where(t > 1, torch.sqrt(t - 1), t).sum().backward()  # untaken: sqrt(-1) = nan
    assert torch.isnan(t.grad).all()
    t = torch.tensor([0.0], requires_grad=True)
    (torch.sqrt(t - 1) if t > 1 else t).sum().backward()  # the eager `if` it replaces
    assert torch.equal(t.grad, torch.ones(1))
    t = torch.tensor([0.0], requires_grad=True)
    torch.where(t > 0, 1 / t, t).sum().backward()  # untaken: 1 / 0 = inf
    assert torch.isnan(t.grad).all()


def assert_async(self, x):
    torch._assert_async(~(x < -100).any(), "too small")
    return x + 1


def split_guard(self, x):
    y = x * 2
    if torch.compiler.is_compiling():
        torch._assert_async(~(y < -100).any(), "too small")
    elif (y < -100).any():
        raise ValueError("too small")
    return y + 1


def _raised(fn, *args):
    with pytest.raises(Exception) as info:
        fn(*args)
    return type(info.value), str(info.value).splitlines()[0]


BAD = torch.full((2, 2), -1000.0)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_assert_async_raises_runtime_error_eager_and_compiled(backend):
    assert _raised(module(assert_async), BAD) == (RuntimeError, "too small")
    torch._dynamo.reset()
    compiled = torch.compile(module(assert_async), backend=backend, fullgraph=True)
    assert torch.equal(compiled(torch.ones(2)), torch.full((2,), 2.0))  # no break: fullgraph compiles
    assert _raised(compiled, BAD) == (RuntimeError, "too small")
    torch._dynamo.reset()


def test_assert_async_raises_runtime_error_under_inductor():
    torch._dynamo.reset()
    compiled = torch.compile(module(assert_async), backend="inductor", fullgraph=True)
    assert _raised(compiled, BAD) == (RuntimeError, "too small")
    torch._dynamo.reset()


def test_is_compiling_split_guard_is_one_graph_and_changes_the_exception_class():
    obs = observe(module(split_guard), torch.randn(4, 3))
    assert obs.events == [] and obs.graphs == 1
    assert _raised(module(split_guard), BAD) == (ValueError, "too small")
    torch._dynamo.reset()
    assert _raised(torch.compile(module(split_guard), backend="eager", fullgraph=True), BAD) == (
        RuntimeError, "too small")
    torch._dynamo.reset()


def check_bool(self, x):
    torch._check(bool((x > -100).all()), lambda: "too small")  # <- break
    return x + 1


def test_torch_check_of_bool_breaks_on_the_bool():
    obs = observe(module(check_bool), torch.randn(4, 3))
    assert obs.ids_by_line(__file__) == {line_of(check_bool): {"GB0124"}}


# ---------------------------------------------------------------- dense forms (eager)

CASES = {
    "random": (torch.randn(5, generator=torch.Generator().manual_seed(0)),
               torch.randn(5, generator=torch.Generator().manual_seed(1)) > 0),
    "empty mask": (torch.randn(5), torch.zeros(5, dtype=torch.bool)),
    "full mask": (torch.randn(5), torch.ones(5, dtype=torch.bool)),
    "nan outside mask": (torch.tensor([1.0, float("nan"), 3.0]), torch.tensor([True, False, True])),
    "int tensor": (torch.arange(5), torch.arange(5) % 2 == 0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_masked_sum_and_mean_equal_their_where_forms(case):
    x, m = CASES[case]
    a, b = x[m].sum(), torch.where(m, x, 0).sum()
    assert a.dtype == b.dtype and torch.allclose(a.float(), b.float(), equal_nan=True)
    if x.is_floating_point():
        a, b = x[m].mean(), torch.where(m, x, 0).sum() / m.sum()
        assert a.dtype == b.dtype and torch.allclose(a, b, equal_nan=True)
        if case == "empty mask":
            assert a.item() != a.item() and b.item() != b.item()  # nan on both sides
            assert x[m].sum().item() == 0 == torch.where(m, x, 0).sum().item()


def test_masked_amax_differs_from_its_where_form_on_an_empty_mask():
    x, m = CASES["empty mask"]
    with pytest.raises(RuntimeError):
        x[m].amax()
    assert torch.where(m, x, torch.finfo(x.dtype).min).amax().item() == torch.finfo(x.dtype).min
    x, m = CASES["random"]
    assert torch.equal(x[m].amax(), torch.where(m, x, torch.finfo(x.dtype).min).amax())


def test_mask_counts_are_python_ints_where_the_dense_count_is_a_tensor():
    x, m = CASES["random"]
    assert type(x[m].numel()) is int and type(int(m.sum())) is int
    dense = m.sum()
    assert dense.dim() == 0 and dense.dtype == torch.int64 and dense.item() == x[m].numel()


@pytest.mark.parametrize("a, b, equal", [
    (torch.ones(3), torch.ones(3), True),
    (torch.tensor([float("nan")]), torch.tensor([float("nan")]), False),
    (torch.ones(3, dtype=torch.int64), torch.ones(3), True),
    (torch.ones(3), torch.ones(1), False),
], ids=["same", "nan", "int_vs_float", "shape_differs"])
def test_torch_equal_equals_its_dense_form(a, b, equal):
    assert torch.equal(a, b) is equal
    assert bool(a.shape == b.shape and (a == b).all()) is equal


def dense_equal_bool(self, a, b):
    if a.shape != b.shape or not bool((a == b).all()):  # <- break
        return a + 1
    return a


def dense_equal_where(self, a, b):
    same = (a == b).all() if a.shape == b.shape else torch.tensor(False)
    return torch.where(same, a, a + 1)


def test_dense_equal_breaks_on_bool_but_not_in_where():
    args = (torch.ones(3), torch.ones(3))
    obs = observe(module(dense_equal_bool), *args)
    assert obs.ids_by_line(__file__) == {line_of(dense_equal_bool): {"GB0124"}}
    obs = observe(module(dense_equal_where), *args)
    assert obs.events == [] and obs.graphs == 1


# ---------------------------------------------------------------- .item() kept as a 0-d tensor (eager)

def test_direct_use_of_an_item_value_equals_the_0d_tensor():
    torch.manual_seed(0)
    y32, yint = torch.randn(4), torch.arange(4)
    t32, tint = torch.randn(()) * 3, torch.tensor(3)
    rows = [
        (y32 * t32.item(), y32 * t32),
        (y32 / (1 + t32.abs().item()), y32 / (1 + t32.abs())),
        (yint * float(t32), yint * t32),
        (y32 * int(tint), y32 * tint),
        (yint + int(tint), yint + tint),
        (yint // int(tint), yint // tint),
        (y32 > t32.item(), y32 > t32),
    ]
    for i, (scalar, tensor) in enumerate(rows):
        assert scalar.dtype == tensor.dtype and torch.equal(scalar, tensor), i


def test_python_arithmetic_on_the_scalar_runs_in_double():
    torch.manual_seed(1)
    differ = {"y + s * 0.1": 0, "y / (1 + |s|)": 0, "y * s": 0, "y * (s * s)": 0}
    close = True
    for _ in range(2000):
        y = torch.randn(8)
        t = torch.randn(()) * 3
        s = t.item()
        differ["y + s * 0.1"] += not torch.equal(y + s * 0.1, y + t * 0.1)
        close &= torch.allclose(y + s * 0.1, y + t * 0.1, rtol=1e-6, atol=1e-6)
        differ["y / (1 + |s|)"] += not torch.equal(y / (1 + abs(s)), y / (1 + t.abs()))
        differ["y * s"] += not torch.equal(y * s, y * t)
        differ["y * (s * s)"] += not torch.equal(y * (s * s), y * (t * t))
    assert differ == {"y + s * 0.1": 383, "y / (1 + |s|)": 0, "y * s": 0, "y * (s * s)": 0}
    assert close  # by an ulp, not more


def test_a_float64_0d_tensor_changes_the_result_dtype():
    yint, t64 = torch.arange(4), torch.randn((), dtype=torch.float64)
    assert (yint * t64.item()).dtype == torch.float32
    assert (yint * t64).dtype == torch.float64
