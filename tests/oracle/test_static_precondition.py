"""The LayerDrop fix (GM101, static-precondition; transforms/src/static_precondition.cpp) and why the draw is
read by an assertion.

`r = torch.rand([])`, `if r < p:` becomes `if (not isinstance(p, (int, float)) or p > 0 or
torch._assert_async(r >= 0, ...) is not None) and r < p:`. For a number `p <= 0` Dynamo prunes the test at
trace time. Without the assertion the draw is unused in the graph, and aot_eager and inductor remove it as
dead code: the RNG state after the call (every later dropout mask) is not the original's. Pinned here, with
the fixed snapshot checked end to end: same outputs and RNG state as the original, one graph, every backend.
"""
import shutil
from pathlib import Path

import pytest
import torch
import torch._dynamo
import torch._inductor.config

from fixture_support import load_fixture, run_graphmend

SNAPSHOTS = Path(__file__).resolve().parents[1] / "fixtures" / "transforms" / "static_precondition"


def _run(fn, *args):
    """Output and global RNG state after two calls from seed 0 (the second call sees the first's draws)."""
    torch.manual_seed(0)
    fn(*args)
    out = fn(*args)
    return out, torch.get_rng_state()


def _unused_draw(x, p):
    r = torch.rand([])
    if (not isinstance(p, (int, float)) or p > 0) and r < p:
        return x
    return torch.nn.functional.dropout(x * 2, 0.5, True)


def _original(x, p):
    r = torch.rand([])
    if r < p:
        return x
    return torch.nn.functional.dropout(x * 2, 0.5, True)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_fact_an_unused_draw_is_removed_as_dead_code(backend):
    """Why the fix must read the draw: pruned without it, the compiled draw is gone and the RNG state differs."""
    x = torch.ones(8)
    want_out, want_state = _run(_original, x, 0.0)
    torch._dynamo.reset()
    got_out, got_state = _run(torch.compile(_unused_draw, backend=backend), x, 0.0)
    torch._dynamo.reset()
    assert not torch.equal(got_state, want_state)
    assert not torch.equal(got_out, want_out)


@pytest.mark.parametrize("backend", [None, "eager", "aot_eager", "inductor"])
@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("layerdrop", [0.0, -1.0, 0])
def test_the_fixed_layerdrop_keeps_the_rng_stream(backend, dynamic, layerdrop, tmp_path, monkeypatch):
    """The fixed snapshot against the original, both run eagerly (None) or both compiled with the same backend:
    outputs (a dropout after the layers), gradients and the RNG state equal, train mode; the fixed model
    compiles with fullgraph=True."""
    source = SNAPSHOTS / "layerdrop_skip_layer.py"
    fixed = tmp_path / "fixed.py"
    shutil.copyfile(source, fixed)
    proc = run_graphmend("check", "--fix", "--exit-zero", "-q", str(fixed))
    assert proc.returncode == 0 and "_assert_async(" in fixed.read_text(), proc.stderr
    original, fixed_mod = load_fixture(source), load_fixture(fixed)
    torch.manual_seed(1)
    model_o, (x,) = original.example()
    model_f = fixed_mod.Encoder().train()
    model_f.load_state_dict(model_o.state_dict())
    model_o.layerdrop = model_f.layerdrop = layerdrop
    model_f.dropout = torch.nn.Dropout(0.5)  # a random op after the draw: its mask follows the stream
    model_o.dropout = torch.nn.Dropout(0.5)

    def step(model):
        def run(h):
            out = model.dropout(model(h))
            out.sum().backward()
            return out

        return run

    # Inductor's own random numbers are not eager's, and the original runs this frame eagerly (a break in a
    # loop): the numbers differ in every fix (test_fact_inductor_random_numbers_are_not_eager_ones).
    # With fallback_random Inductor draws as eager does.
    monkeypatch.setattr(torch._inductor.config, "fallback_random", True)
    seen = {}
    for name, model in (("original", model_o), ("fixed", model_f)):
        for p in model.parameters():
            p.grad = None
        torch._dynamo.reset()
        run = step(model) if backend is None else torch.compile(step(model), backend=backend, dynamic=dynamic)
        seen[name] = _run(run, x) + ({n: p.grad for n, p in model.named_parameters()},)
    (want_out, want_state, want_grads), (got_out, got_state, got_grads) = seen["original"], seen["fixed"]
    assert torch.equal(got_state, want_state)
    torch.testing.assert_close(got_out, want_out, rtol=0, atol=0)
    for name, grad in want_grads.items():
        torch.testing.assert_close(got_grads[name], grad, rtol=0, atol=0, msg=name)
    if backend is not None:
        torch._dynamo.reset()
        assert torch.compile(fixed_mod.Encoder().train(), backend=backend, fullgraph=True)(x) is not None
        torch._dynamo.reset()


def test_fact_inductor_random_numbers_are_not_eager_ones():
    """Why the RNG stream is compared on eager, aot_eager and inductor with fallback_random only: by default
    Inductor draws random numbers with its own generator (seeded from the global one), not as eager does. A
    break in a loop makes Dynamo run the whole frame eagerly (GB7000), so the original's dropout draws eager
    numbers there, and the same dropout in the fixed, compiled frame draws Inductor's: true of every fix that
    removes such a break, not of this one."""

    def drop(x):
        return torch.nn.functional.dropout(x, 0.5, True) * 2

    x = torch.ones(64)
    eager_out, eager_state = _run(drop, x)
    torch._dynamo.reset()
    compiled_out, compiled_state = _run(torch.compile(drop, backend="inductor"), x)
    torch._dynamo.reset()
    assert not torch.equal(eager_out, compiled_out)
    assert not torch.equal(eager_state, compiled_state)
