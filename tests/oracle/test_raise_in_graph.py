"""The raise-in-graph fix (GM301; transforms/src/raise_in_graph.cpp), end to end on the installed torch.

graphmend writes the fixed file (`check --fix --unsafe-fixes`); the guards it turned into operators must
compile in one graph (fullgraph=True) and, when they fail, raise the original class, message, arguments and
suppressed context from inside the graph: on the eager, aot_eager and inductor backends, static and dynamic
shapes, eval and train (backward run), with Inductor's on-disk caches on (a second process reads them) and
off, under torch.export, and when the fixed module is imported twice. State the graph wrote before a failing
guard (BatchNorm statistics in training, in-place writes to inputs and buffers, Python attributes and lists)
must survive the raise as it did in the original, which broke the graph there: `@_graphmend_keep_state`
breaks the graph at the call when that is so. The facts behind the fix's shape are pinned here too
(docs/fix-safety.md, "Runtime effects in the graph").
"""
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import torch._dynamo
from torch import nn

from fixture_support import load_fixture, run_graphmend

SOURCE = textwrap.dedent('''\
    import torch
    from torch import nn


    class GuardError(ValueError):
        pass


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.limit = 10000  # an int: a float attribute is symbolic under dynamic=True (see below)

        def forward(self, x):
            y = self.lin(x)
            if not torch.isfinite(y).all():
                raise GuardError("non-finite activations", 4) from None
            if (y.abs() > self.limit).any():  # the message is formatted at the call: the test reads self.limit
                raise ValueError(f"activation above {self.limit}")
            return y.relu()


    def example():
        return Model(), (torch.randn(3, 4),)
''')

# A guard after state writes, one kind per mode (a BatchNorm's statistics in training, Python attributes and
# lists, an input and a buffer written in place): the original's break writes each back before it raises.
STATEFUL_SOURCE = textwrap.dedent('''\
    import torch
    from torch import nn


    class Model(nn.Module):
        def __init__(self, mode="eval"):
            super().__init__()
            self.bn = nn.BatchNorm1d(4)
            self.mode = mode
            self.calls = 0
            self.seen = []
            self.register_buffer("steps", torch.zeros((), dtype=torch.long))

        def forward(self, x):
            if self.mode == "attribute":
                self.calls += 1
            if self.mode == "list":
                self.seen.append("called")
            if self.mode == "input":
                x.mul_(2)
            if self.mode == "buffer":
                self.steps.add_(1)
            y = self.bn(x)
            if (x.abs() > 10).any():
                raise ValueError("outlier")
            return y


    def example():
        return Model().train(), (torch.randn(8, 4),)
''')
STATE_MODES = ["train", "attribute", "list", "input", "buffer"]


def _write_and_fix(tmp_path, name, source):
    path = tmp_path / name
    path.write_text(source)
    proc = run_graphmend("check", "--fix", "--exit-zero", "-q", str(path))  # a safe fix
    assert proc.returncode == 0, proc.stderr
    fixed = path.read_text()
    assert "_graphmend_runtime_op(" in fixed and "@_graphmend_keep_state" in fixed and "raise " in fixed, fixed
    return path


@pytest.fixture(scope="module")
def fixed_path(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("raise-in-graph")
    path = _write_and_fix(tmp, "guarded.py", SOURCE)
    text = path.read_text()
    assert "if not torch.isfinite" not in text and text.count("@_graphmend_runtime_op(") == 2, text
    proc = run_graphmend("check", "--exit-zero", "--output-format", "concise", str(path))
    assert "GM301" not in proc.stdout, proc.stdout  # the operators' bodies are not traced code
    return path


@pytest.fixture(scope="module")
def original_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("raise-in-graph-original") / "guarded.py"
    path.write_text(SOURCE)
    return path


def _inputs():
    good = torch.randn(3, 4)
    nan = good.clone()
    nan[1, 2] = float("nan")
    return good, nan, good * 1e6


def _outcome(fn, x):
    try:
        return "ok", fn(x)
    except Exception as e:  # noqa: BLE001 - the exception itself is what is compared
        return "raise", (type(e).__name__, e.args, e.__suppress_context__, e.__cause__)


def _pair(original_path, fixed_path, train):
    torch.manual_seed(0)
    original = load_fixture(original_path).Model().train(train)
    fixed = load_fixture(fixed_path).Model().train(train)
    fixed.load_state_dict(original.state_dict())
    return original, fixed


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_one_graph_and_the_original_exception(original_path, fixed_path, backend, dynamic, train):
    original, fixed = _pair(original_path, fixed_path, train)
    torch._dynamo.reset()
    compiled = torch.compile(fixed, backend=backend, dynamic=dynamic, fullgraph=True)
    for x in _inputs():
        want = _outcome(original, x)
        got = _outcome(compiled, x)
        assert got[0] == want[0], (got, want)
        if want[0] == "raise":
            assert got[1] == want[1]
            continue
        if backend == "inductor":  # Inductor may fuse the linear layer differently: last bits
            torch.testing.assert_close(got[1], want[1])
        else:
            assert torch.equal(got[1], want[1])
        if train:
            got[1].sum().backward()
            assert fixed.lin.weight.grad is not None
    torch._dynamo.reset()


def test_eager_runs_raise_exactly_as_the_original(original_path, fixed_path):
    original, fixed = _pair(original_path, fixed_path, False)
    for x in _inputs():
        want, got = _outcome(original, x), _outcome(fixed, x)
        assert got[0] == want[0] and (got[1] == want[1] if want[0] == "raise" else torch.equal(got[1], want[1]))


def test_a_module_imported_twice_reuses_its_operators(fixed_path):
    import importlib.util

    first = load_fixture(fixed_path)
    # What importlib.reload does: run the file again in the same module (same name, so same namespace):
    # the operators exist and are reused, not defined again.
    importlib.util.spec_from_file_location(first.__name__, fixed_path).loader.exec_module(first)
    second = load_fixture(fixed_path)  # another name: operators in another namespace
    spec = importlib.util.spec_from_file_location("run-path módulo.guarded", fixed_path)  # not an identifier
    third = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(third)
    for module in (first, second, third):
        with pytest.raises(ValueError, match="activation above 10000"):
            torch.compile(module.Model(), backend="aot_eager", fullgraph=True)(torch.full((2, 4), 1e6))
    torch._dynamo.reset()


def test_torch_export_keeps_the_operator(fixed_path):
    module = load_fixture(fixed_path)
    ep = torch.export.export(module.Model().eval(), (torch.randn(3, 4),))
    targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    assert sum("graphmend_" in t and "raise_if_" in t for t in targets) == 2, targets
    with pytest.raises(ValueError, match="activation above 10000"):
        ep.module()(torch.full((3, 4), 1e6))


_CACHE_PROBE = textwrap.dedent('''\
    import sys, torch
    from torch._dynamo.utils import counters
    sys.path.insert(0, sys.argv[1])
    import guarded
    torch._inductor.config.force_disable_caches = sys.argv[2] == "off"
    model = torch.compile(guarded.Model(), backend="inductor", fullgraph=True)
    model(torch.randn(3, 4))
    try:
        model(torch.full((2, 4), 1e6))
        print("no raise")
    except ValueError as e:
        print("raised", e, counters["inductor"]["fxgraph_cache_hit"])
''')


@pytest.mark.parametrize("caches", ["on", "off"])
def test_inductor_caches_never_drop_the_guard(fixed_path, tmp_path, caches):
    """A second process compiles from the on-disk caches (as users run): the guard still raises."""
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor-cache"))
    probe = tmp_path / "probe.py"
    probe.write_text(_CACHE_PROBE)
    runs = [subprocess.run([sys.executable, str(probe), str(fixed_path.parent), caches], capture_output=True,
                           text=True, env=env, timeout=300) for _ in range(2 if caches == "on" else 1)]
    for run in runs:
        assert run.stdout.startswith("raised activation above 10000"), run.stdout + run.stderr
    if caches == "on":
        assert runs[1].stdout.split()[-1] != "0", "the second process did not read the cache: " + runs[1].stdout


_STATE_CACHE_PROBE = textwrap.dedent('''\
    import sys, torch
    from torch._dynamo.utils import counters
    sys.path.insert(0, sys.argv[1])
    import stateful
    torch._inductor.config.force_disable_caches = sys.argv[2] == "off"
    torch.manual_seed(0)
    model = stateful.Model().train()
    x = torch.randn(8, 4)
    x[0, 0] = 50.0
    try:
        torch.compile(model, backend="inductor")(x)
        print("no raise")
    except ValueError as e:
        print("raised", e, int(model.bn.num_batches_tracked), counters["inductor"]["fxgraph_cache_hit"])
''')


@pytest.mark.parametrize("caches", ["on", "off"])
def test_inductor_caches_keep_the_state_check(tmp_path, caches):
    """The check runs while Dynamo traces, in every process; the graph before the break is what the caches
    hold: a second process compiling from them keeps a BatchNorm's counter through the raise."""
    _, fixed = _stateful_pair(tmp_path)
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor-cache"))
    probe = tmp_path / "probe.py"
    probe.write_text(_STATE_CACHE_PROBE)
    runs = [subprocess.run([sys.executable, str(probe), str(fixed.parent), caches], capture_output=True,
                           text=True, env=env, timeout=300) for _ in range(2 if caches == "on" else 1)]
    for run in runs:
        assert run.stdout.startswith("raised outlier 1 "), run.stdout + run.stderr
    if caches == "on":
        assert runs[1].stdout.split()[-1] != "0", "the second process did not read the cache: " + runs[1].stdout


# ---------------------------------------------------------------- the facts behind the fix's shape


def test_fact_an_operator_without_output_and_effect_is_dropped():
    """Why the helper registers an ordered effect: without it AOTAutograd removes the call as dead code."""
    name = "graphmend_facts::guard_without_effect"
    if not hasattr(torch.ops.graphmend_facts, "guard_without_effect"):
        @torch.library.custom_op(name, mutates_args=(), schema="(Tensor test) -> ()")
        def guard(test):
            if test:
                raise ValueError("bad")

        guard.register_fake(lambda test: None)
    op = torch.ops.graphmend_facts.guard_without_effect.default
    outcomes = {}
    for backend in ("eager", "aot_eager"):
        torch._dynamo.reset()
        f = torch.compile(lambda x: (op(x.sum() > 0), x * 2)[1], backend=backend, fullgraph=True)
        outcomes[backend] = _outcome(f, torch.ones(3))[0]
    assert outcomes == {"eager": "raise", "aot_eager": "ok"}
    torch._dynamo.reset()


def _stateful_pair(tmp_path):
    original = tmp_path / "stateful.py"
    original.write_text(STATEFUL_SOURCE)
    (tmp_path / "fixed").mkdir()
    return original, _write_and_fix(tmp_path / "fixed", "stateful.py", STATEFUL_SOURCE)


def _stateful_inputs():
    torch.manual_seed(0)
    good = torch.randn(8, 4)
    bad = good.clone()
    bad[0, 0] = 50.0  # an outlier: the guard raises
    return good, bad


def _state(model, x):
    return [model.bn.running_mean, model.bn.running_var, model.bn.num_batches_tracked, model.calls,
            list(model.seen), x, model.steps]


def _same_state(got, want, exact):
    for g, w in zip(got, want):
        if isinstance(w, torch.Tensor):
            if exact:
                assert torch.equal(g, w), (g, w)
            else:  # Inductor computes the statistics with its own kernels: last bits
                torch.testing.assert_close(g, w)
        else:
            assert g == w, (g, w)


@pytest.mark.parametrize("mode", STATE_MODES)
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_state_written_before_a_failing_guard_survives_the_raise(tmp_path, backend, dynamic, mode):
    """Fixed and compiled, every state the original (eager) wrote before the guard is there after the raise,
    and after a call that passes: the graph breaks at the call, as the original's did."""
    original, fixed = _stateful_pair(tmp_path)
    for x in _stateful_inputs():
        torch.manual_seed(0)
        want_model = load_fixture(original).Model(mode).train(mode == "train")
        torch.manual_seed(0)
        got_model = load_fixture(fixed).Model(mode).train(mode == "train")
        want_x, got_x = x.clone(), x.clone()
        want = _outcome(want_model, want_x)
        torch._dynamo.reset()
        got = _outcome(torch.compile(got_model, backend=backend, dynamic=dynamic), got_x)
        assert got[0] == want[0] and (got[1] == want[1] if want[0] == "raise" else True), (got, want)
        _same_state(_state(got_model, got_x), _state(want_model, want_x), exact=backend != "inductor")
    torch._dynamo.reset()


def test_the_graph_breaks_only_where_state_was_written(tmp_path):
    """Eval mode writes nothing before the guard: one graph, fullgraph=True compiles. Each state write
    breaks the graph at the call (two graphs), as the original broke at its test. Inputs and parameters
    written before the call (an optimizer step) do not count: their fake tensors start a trace unwritten."""
    from torch._dynamo.testing import CompileCounterWithBackend

    _, fixed = _stateful_pair(tmp_path)
    module = load_fixture(fixed)
    good, _ = _stateful_inputs()
    model = module.Model().eval()
    with torch.no_grad():
        model.bn.weight.add_(1)  # written before the compiled call: version counters above 0
    x = good.clone()
    x.add_(0)
    torch._dynamo.reset()
    torch.compile(model, backend="aot_eager", fullgraph=True)(x)
    for mode in STATE_MODES:
        torch._dynamo.reset()
        counter = CompileCounterWithBackend("aot_eager")
        torch.compile(module.Model(mode).train(mode == "train"), backend=counter)(good.clone())
        assert counter.frame_count == 2, mode
    torch._dynamo.reset()


def test_a_check_that_cannot_be_made_breaks_the_graph(tmp_path):
    """The side-effect check reads Dynamo internals: where they moved, the helper reports a reason (so the
    graph breaks, as the original's did) instead of letting the guard into the graph unchecked."""
    _, fixed = _stateful_pair(tmp_path)
    module = load_fixture(fixed)

    class EmptyGraph:
        nodes = ()

    class Context:  # a ComptimeContext without the tracer behind it
        def graph(self):
            return EmptyGraph()

    assert "cannot be inspected (AttributeError)" in module._graphmend_state_written(Context())


def test_fact_state_changed_before_a_raising_operator_is_lost_without_the_check(tmp_path):
    """Why `@_graphmend_keep_state` exists: in one graph, AOTAutograd's runtime wrapper writes input
    mutations back after the graph returns, so a raise inside it loses a BatchNorm's statistics on
    aot_eager (Inductor keeps the statistics its kernel writes, and loses `num_batches_tracked`)."""
    _, fixed = _stateful_pair(tmp_path)
    module = load_fixture(fixed)
    operators = [v for k, v in vars(module).items() if k.startswith("_graphmend_raise_if_")]
    assert len(operators) == 1
    op = operators[0].__closure__[0].cell_contents  # the bare operator, without the state check
    assert isinstance(op, torch._ops.OpOverload)

    class Unchecked(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = torch.nn.BatchNorm1d(4)

        def forward(self, x):
            y = self.bn(x)
            op((x.abs() > 10).any())
            return y

    _, bad = _stateful_inputs()
    lost = {}
    for backend in ("aot_eager", "inductor"):
        model = Unchecked().train()
        torch._dynamo.reset()
        with pytest.raises(ValueError, match="outlier"):
            torch.compile(model, backend=backend)(bad)
        lost[backend] = int(model.bn.num_batches_tracked) == 0
    assert lost == {"aot_eager": True, "inductor": True}
    torch._dynamo.reset()


def test_torch_export_of_the_fixed_file_writes_state_in_its_graph(tmp_path):
    """torch.export (non-strict: plain Python traces the call, the check is not run) keeps the operator; the
    exported module writes the statistics inside its graph, before the operator raises."""
    _, fixed = _stateful_pair(tmp_path)
    torch.manual_seed(0)
    exported = torch.export.export(load_fixture(fixed).Model().train(), (torch.randn(8, 4),)).module()
    before = exported.bn.running_mean.clone()
    _, bad = _stateful_inputs()
    with pytest.raises(ValueError, match="outlier"):
        exported(bad)
    assert not torch.equal(before, exported.bn.running_mean)


FLOAT_SOURCE = textwrap.dedent('''\
    import torch
    from torch import nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.limit = 2.5

        def forward(self, x):
            if (x > self.limit).any():
                raise ValueError(f"above {self.limit}")
            return x * 2


    def example():
        return Model(), (torch.randn(3),)
''')


def test_fact_a_float_attribute_in_the_message_is_symbolic_under_dynamic_shapes(tmp_path):
    """Under dynamic=True a float attribute of a module is a SymFloat, and Dynamo 2.13 cannot format one into
    the message at the call (BUILD_STRING): the break stays there, the behaviour is the original's."""
    fixed = load_fixture(_write_and_fix(tmp_path, "floaty.py", FLOAT_SOURCE))
    assert "_graphmend_raise_if_" in (tmp_path / "floaty.py").read_text()
    model = fixed.Model()
    for dynamic in (False, True):
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="eager", dynamic=dynamic)
        assert torch.equal(compiled(torch.ones(3)), torch.full((3,), 2.0))
        with pytest.raises(ValueError, match=r"^above 2\.5$"):
            compiled(torch.full((3,), 3.0))
        torch._dynamo.reset()
        full = torch.compile(model, backend="eager", dynamic=dynamic, fullgraph=True)
        if dynamic and torch.__version__.startswith("2.13."):
            with pytest.raises(torch._dynamo.exc.Unsupported, match="BUILD_STRING"):
                full(torch.ones(3))
        else:  # static shapes; and torch 2.15 formats the SymFloat (checked there)
            assert torch.equal(full(torch.ones(3)), torch.full((3,), 2.0))
            with pytest.raises(ValueError, match=r"^above 2\.5$"):
                full(torch.full((3,), 3.0))
    torch._dynamo.reset()
