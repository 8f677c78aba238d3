"""The HF corpus: recipes cover the paper's architectures, and tiny models build and run."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench", "hf"))

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import recipes  # noqa: E402

PAPER = {"t5", "mt5", "umt5", "longt5", "switch_transformers", "whisper", "bart", "marian", "biogpt", "blenderbot",
         "blenderbot_small", "pegasus", "pegasus_x", "layoutlmv3", "phi3", "longformer", "clap", "grounding_dino",
         "qwen2_audio", "florence2"}


def test_corpus_covers_paper_and_twenty_more():
    names = [r.name for r in recipes.RECIPES]
    assert len(names) == len(set(names))
    paper = {r.name for r in recipes.RECIPES if r.paper}
    assert paper == PAPER
    assert len(names) - len(paper) >= 20
    import transformers

    for r in recipes.RECIPES:  # every class a recipe names exists in the installed transformers
        assert hasattr(transformers, r.model_class), r.model_class
        assert hasattr(transformers, r.config_class), r.config_class


@pytest.mark.parametrize("name", ["bert", "gpt2", "vit"])
def test_tiny_model_builds_and_runs(name):
    r = recipes.BY_NAME[name]
    model, cfg = recipes.build(r)
    assert sum(p.numel() for p in model.parameters()) < 200_000  # tiny
    # same seed, same weights: the fixed arm relies on this only through state_dict, but it must hold
    model2, _ = recipes.build(r)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), model2.state_dict().values()))
    ev = recipes.make_inputs(r, cfg, train=False)
    tr = recipes.make_inputs(r, cfg, train=True)
    assert "labels" not in ev and "labels" in tr
    if "attention_mask" in ev:
        m = ev["attention_mask"]
        assert m[0].all() and not m[1].all()  # a ragged batch: the second row is padded
    assert torch.equal(recipes.make_inputs(r, cfg, False)[next(iter(ev))], ev[next(iter(ev))])  # seeded
    model.eval()
    with torch.no_grad():
        out = model(**ev)
    assert torch.isfinite(out.logits).all()
    model.train()
    out = model(**tr)
    assert out.loss is not None and out.loss.requires_grad
    out.loss.backward()


def test_recipe_modules_name_the_modeling_files():
    assert recipes.recipe_modules(recipes.BY_NAME["bart"]) == ["transformers.models.bart.modeling_bart"]
    mods = recipes.recipe_modules(recipes.BY_NAME["clip"])
    assert mods == ["transformers.models.clip.modeling_clip"]
    mods = recipes.recipe_modules(recipes.BY_NAME["grounding_dino"])
    assert "transformers.models.swin.modeling_swin" in mods and "transformers.models.bert.modeling_bert" in mods


def test_train_outputs_reproducible_with_numpy_rng():
    """wav2vec2's SpecAugment draws mask positions from numpy's RNG: the harness seeds it, so two
    train-mode forwards of the same weights give the same loss (the fixed arm compares them)."""
    import worker

    r = recipes.BY_NAME["wav2vec2"]
    model, cfg = recipes.build(r)
    a = worker._eager_outputs(model, r, cfg, train=True)
    b = worker._eager_outputs(model, r, cfg, train=True)
    assert worker._compare(a, b)["equal"]
