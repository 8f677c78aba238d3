"""The HF harness's Dynamo hook (bench/hf/worker.py Recorder) on a toy model laid out like a
transformers modeling file: real torch.compile runs, real graph breaks."""
import importlib.util
import os
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench", "hf"))

torch = pytest.importorskip("torch")

TOY = textwrap.dedent('''\
    import torch


    def check_finite(x):
        if not torch.isfinite(x).all():
            raise ValueError("non-finite")
        return x


    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return check_finite(self.lin(x))


    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([Layer(), Layer()])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            n = x.sum().item()
            return x * 2
    ''')


@pytest.fixture()
def toy(tmp_path):
    d = tmp_path / "transformers" / "models" / "toy"
    d.mkdir(parents=True)
    p = d / "modeling_toy.py"
    p.write_text(TOY)
    spec = importlib.util.spec_from_file_location("gm_bench_modeling_toy", p)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, str(tmp_path / "transformers")


def test_recorder_sites_kinds_loop_and_traced_lines(toy):
    import sites as S
    import worker

    mod, root = toy
    torch.manual_seed(0)
    model = mod.Model()
    rec = worker.Recorder((root,))
    try:
        torch._dynamo.reset()
        rec.mode = "eval"
        graphs = []

        def backend(gm, ex):
            graphs.append(gm)
            return gm.forward

        with torch.no_grad():
            out = torch.compile(model, backend=backend)(torch.randn(2, 4))
    finally:
        rec.uninstall()
        torch._dynamo.reset()
    assert out.shape == (2, 4)
    evs = rec.events
    assert evs, "the toy breaks: Dynamo must have logged breaks"
    assert all(e["file"] == "models/toy/modeling_toy.py" for e in evs)
    sites = S.distinct_sites(evs)
    by_stmt = {s["stmt"]: s for s in sites}
    # the finiteness guard breaks (data-dependent branch), inside the layer loop: the frame is skipped
    guard = by_stmt["if not torch.isfinite(x).all():"]
    assert guard["kind"] == "Data-dependent branching" and guard["gb_id"] == "GB0170"
    assert guard["function"] == "check_finite"
    assert guard["in_loop"]
    # the caller frames are on the chain, outermost first
    chain_funcs = [f["function"] for f in guard["chain"]]
    assert "Layer.forward" in chain_funcs
    # `.item()` after the loop is never traced: the loop break skipped Model.forward entirely
    assert not any("item()" in s for s in by_stmt)
    traced = rec.traced["models/toy/modeling_toy.py"]
    assert 5 in traced and 16 in traced  # the guard and Layer.forward's return were traced
    assert 27 not in traced  # the .item() line was not
