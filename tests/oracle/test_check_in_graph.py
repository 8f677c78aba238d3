"""The check-in-graph fix (GM406; transforms/src/check_in_graph.cpp), end to end on the installed torch.

graphmend writes the fixed file (`check --fix`, a safe fix): `torch._check_tensor_all(...)` and
`torch._check_tensor_all_with(...)` move into operators whose bodies make the same calls. Compiled, the fixed
model must run in one graph (fullgraph=True) and raise exactly what the original raised, compiled and eager:
the same class and message, on the eager, aot_eager and inductor backends, static and dynamic shapes, for
inputs that pass and inputs that fail each check; a condition that is not a bool tensor must fail while
Dynamo traces, as the original did; state written before a check survives its raise; torch.export keeps the
operators; a module imported twice reuses them (docs/fix-safety.md, "Runtime effects in the graph").
"""
import textwrap

import pytest
import torch
import torch._dynamo

from fixture_support import load_fixture, run_graphmend

SOURCE = textwrap.dedent('''\
    import torch
    from torch import nn


    def compilable_check(cond, msg):
        """transformers 5's torch_compilable_check: under tracing, the check without its message."""
        if torch.compiler.is_compiling():
            if isinstance(cond, torch.Tensor):
                torch._check_tensor_all(cond)
            else:
                torch._check(cond)
            return
        torch._check_tensor_all_with(ValueError, cond, lambda: msg)


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm1d(4)

        def forward(self, x, lengths):
            torch._check_tensor_all(lengths.sum() == x.shape[0] * 2, lambda: "lengths must cover the batch")
            y = self.bn(x)
            torch._check_tensor_all_with(ValueError, (x > -100).all(), lambda: "too small")
            torch._check_tensor_all(x < 1e6)
            compilable_check(x.isfinite().all(), "non-finite input")
            return y + 1


    class FloatCondition(nn.Module):
        def forward(self, x):
            torch._check_tensor_all(x * 2)
            return x + 1


    def example():
        return Model().eval(), (torch.randn(3, 4), torch.tensor([3, 3]))
''')


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    folder = tmp_path_factory.mktemp("check-in-graph")
    original = folder / "original" / "checks.py"
    fixed = folder / "fixed" / "checks.py"
    for path in (original, fixed):
        path.parent.mkdir()
        path.write_text(SOURCE)
    proc = run_graphmend("check", "--fix", "--exit-zero", "-q", str(fixed))
    assert proc.returncode == 0, proc.stderr
    text = fixed.read_text()
    assert text.count("@_graphmend_check_op(") == 3 and "    torch._check_tensor_all(x < 1e6)" not in text, text
    proc = run_graphmend("check", "--exit-zero", "--output-format", "concise", str(fixed))
    assert "GM406" not in proc.stdout.replace("FloatCondition", ""), proc.stdout  # operator bodies are not traced
    return original, fixed


def _inputs():
    x = torch.randn(3, 4)
    nan = x.clone()
    nan[0, 0] = float("nan")
    return [
        (x, torch.tensor([3, 3])),  # every check passes
        (x, torch.tensor([1])),  # lengths: RuntimeError with the lambda's message
        (torch.full((3, 4), -1000.0), torch.tensor([6])),  # ValueError("too small")
        (torch.full((3, 4), 1e7), torch.tensor([6])),  # RuntimeError, torch's default message
        (nan, torch.tensor([6])),  # compilable_check: torch's default message under compile
    ]


def _outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except Exception as e:  # noqa: BLE001 - the exception itself is what is compared
        return "raise", (type(e).__name__, str(e))


def _same(got, want, exact):
    assert got[0] == want[0], (got, want)
    if want[0] == "raise":
        assert got[1] == want[1]
    elif exact:
        assert torch.equal(got[1], want[1])
    else:
        torch.testing.assert_close(got[1], want[1])


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_the_original_exception_and_state_from_inside_the_graph(paths, backend, dynamic, train):
    original_path, fixed_path = paths
    original_module, fixed_module = load_fixture(original_path), load_fixture(fixed_path)
    for x, lengths in _inputs():
        torch.manual_seed(0)
        original = original_module.Model().train(train)
        fixed = fixed_module.Model().train(train)
        fixed.load_state_dict(original.state_dict())
        torch._dynamo.reset()
        want = _outcome(torch.compile(original, backend=backend, dynamic=dynamic), x, lengths)
        torch._dynamo.reset()
        got = _outcome(torch.compile(fixed, backend=backend, dynamic=dynamic), x, lengths)
        _same(got, want, exact=backend != "inductor")
        for a, b in ((original.bn.running_mean, fixed.bn.running_mean),
                     (original.bn.num_batches_tracked, fixed.bn.num_batches_tracked)):
            torch.testing.assert_close(b, a, equal_nan=True)
    torch._dynamo.reset()


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_the_graph_breaks_only_where_state_was_written(paths, train):
    """In eval nothing is written before a check: no break. A BatchNorm in training writes its statistics
    before the later checks: the graph breaks at the first of them, as the original's did, so that a raise
    keeps them."""
    _, fixed_path = paths
    torch._dynamo.reset()
    x, lengths = _inputs()[0]
    explained = torch._dynamo.explain(load_fixture(fixed_path).Model().train(train))(x, lengths)
    reasons = [b.reason for b in explained.break_reasons]
    if train:
        assert reasons and all("graph break with message graphmend: " in r for r in reasons), reasons
    else:
        assert reasons == []
    torch._dynamo.reset()


def test_fullgraph_compiles_in_eval(paths):
    _, fixed_path = paths
    model = load_fixture(fixed_path).Model().eval()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    x, lengths = _inputs()[0]
    compiled(x, lengths)
    with pytest.raises(ValueError, match="^too small$"):
        compiled(torch.full((3, 4), -1000.0), torch.tensor([6]))
    torch._dynamo.reset()


def test_eager_runs_raise_exactly_as_the_original(paths):
    original_path, fixed_path = paths
    original_module, fixed_module = load_fixture(original_path), load_fixture(fixed_path)
    for x, lengths in _inputs():
        torch.manual_seed(0)
        original = original_module.Model().eval()
        fixed = fixed_module.Model().eval()
        fixed.load_state_dict(original.state_dict())
        _same(_outcome(fixed, x, lengths), _outcome(original, x, lengths), exact=True)
    for x in (torch.ones(3), torch.ones(3, dtype=torch.bool)):  # TypeError, eager: not a bool condition
        _same(_outcome(fixed_module.FloatCondition(), x), _outcome(original_module.FloatCondition(), x), exact=True)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_a_condition_that_is_not_bool_fails_while_tracing_as_the_original(paths, backend):
    """The operator's fake runs the check's dtype test, so Dynamo fails at the same point with the same class
    (torch 2.13: TorchRuntimeError; eager raises TypeError in both files)."""
    original_path, fixed_path = paths
    outcomes = []
    for path in (original_path, fixed_path):
        torch._dynamo.reset()
        outcomes.append(_outcome(torch.compile(load_fixture(path).FloatCondition(), backend=backend), torch.ones(3)))
    assert outcomes[0][0] == outcomes[1][0] == "raise"
    assert outcomes[0][1][0] == outcomes[1][1][0], outcomes
    torch._dynamo.reset()


def test_torch_export_keeps_the_operators_and_a_module_imported_twice_reuses_them(paths):
    import importlib.util

    _, fixed_path = paths
    first = load_fixture(fixed_path)
    importlib.util.spec_from_file_location(first.__name__, fixed_path).loader.exec_module(first)  # a reload
    x, lengths = _inputs()[0]
    ep = torch.export.export(first.Model().eval(), (x, lengths))
    targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    assert sum("check_tensor_all_" in t for t in targets) == 4, targets
    with pytest.raises(ValueError, match="^too small$"):
        ep.module()(torch.full((3, 4), -1000.0), torch.tensor([3, 3]))
