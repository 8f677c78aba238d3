"""Per-architecture recipes: a tiny random config and realistic inputs for one model.

Each recipe names a transformers model class, the config class that builds it, the overrides that
make it tiny (dimensions, layers and vocabulary only: training-path flags such as layer drop, SpecAugment
and dropout keep the library's defaults, which mirror the published checkpoints), and a function that
builds inputs for the model's task: token ids with a padded attention mask, decoder inputs, pixel
values, audio features, boxes. `paper` marks the architectures of the GraphMend paper's Table 2.

A recipe is data plus small functions: building the model is `build(recipe)`, building the inputs is
`recipe.inputs(config, generator, train)`. Nothing here runs Dynamo.

A corpus (bench/hf/corpora.py) may change a recipe: config overrides on top of the recipe's, fp16
weights and floating inputs, and the text sequence length (`s`, and `t` for decoder inputs) of the
builders that take them. `build(recipe, corpus=...)` and `make_inputs(..., corpus=...)` apply it; without
a corpus everything is as the recipe says.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch

B = 2  # batch
S = 16  # text sequence length

# Common tiny text-transformer dimensions, spelled the ways configs spell them.
TINY_BERT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                 max_position_embeddings=128)
TINY_LLM = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                intermediate_size=64, max_position_embeddings=128, vocab_size=256)
TINY_BART = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                 decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                 max_position_embeddings=128, vocab_size=256)
TINY_T5 = dict(vocab_size=256, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
               num_heads=4, decoder_start_token_id=0)


@dataclasses.dataclass
class Recipe:
    name: str
    model_class: str  # attribute of the transformers package
    config_class: str
    overrides: dict[str, Any]
    inputs: Callable[[Any, torch.Generator, bool], dict[str, Any]]
    paper: bool = False
    category: str = "text"
    # modeling modules (transformers.models.X.modeling_X) the model is defined in
    modules: tuple[str, ...] = ()
    # config sub-objects built from their own config class: attr -> (class name, overrides)
    sub_configs: dict[str, tuple[str, dict[str, Any]]] = dataclasses.field(default_factory=dict)
    note: str = ""


# ---------------------------------------------------------------------------------------------
# input builders


def _ids(g, vocab, b=B, s=S, low=3):
    return torch.randint(low, vocab, (b, s), generator=g)


def _padded_mask(b=B, s=S, pad=None, left=False):
    """Second row padded (a quarter of it by default: 4 of 16): real batches are ragged, and masks with
    zeros reach code that all-ones skips."""
    pad = max(1, s // 4) if pad is None else pad
    m = torch.ones(b, s, dtype=torch.long)
    if b > 1 and pad:
        if left:
            m[1, :pad] = 0
        else:
            m[1, s - pad:] = 0
    return m


def text_lm(cfg, g, train, s=S, t=None):
    ids = _ids(g, cfg.vocab_size, s=s)
    d = {"input_ids": ids, "attention_mask": _padded_mask(s=s, left=True)}
    if train:
        d["labels"] = ids.clone()
    return d


def text_cls(cfg, g, train, s=S, t=None):
    ids = _ids(g, cfg.vocab_size, s=s)
    d = {"input_ids": ids, "attention_mask": _padded_mask(s=s)}
    if getattr(cfg, "type_vocab_size", 0) and getattr(cfg, "type_vocab_size", 0) > 1:
        tt = torch.zeros_like(ids)
        tt[:, s // 2:] = 1
        d["token_type_ids"] = tt
    if train:
        d["labels"] = torch.randint(0, cfg.num_labels, (B,), generator=g)
    return d


def seq2seq(cfg, g, train, s=S, t=None):
    ids = _ids(g, cfg.vocab_size, s=s)
    d = {"input_ids": ids, "attention_mask": _padded_mask(s=s)}
    tgt = _ids(g, cfg.vocab_size, s=t or S // 2)
    if train:
        d["labels"] = tgt
    else:
        d["decoder_input_ids"] = tgt
    return d


def longformer_inputs(cfg, g, train, s=S, t=None):
    d = text_cls(cfg, g, train, s=s)
    glob = torch.zeros_like(d["input_ids"])
    glob[:, 0] = 1  # global attention on the CLS token, as the model card does
    d["global_attention_mask"] = glob
    return d


def layoutlmv3_inputs(cfg, g, train, s=S, t=None):
    ids = _ids(g, cfg.vocab_size, s=s)
    x0 = torch.randint(0, 500, (B, s), generator=g)
    y0 = torch.randint(0, 500, (B, s), generator=g)
    w = torch.randint(1, 400, (B, s), generator=g)
    h = torch.randint(1, 100, (B, s), generator=g)
    bbox = torch.stack([x0, y0, x0 + w, y0 + h], dim=-1)
    d = {"input_ids": ids, "attention_mask": _padded_mask(s=s), "bbox": bbox,
         "pixel_values": torch.randn(B, 3, cfg.input_size, cfg.input_size, generator=g)}
    if train:
        d["labels"] = torch.randint(0, cfg.num_labels, (B,), generator=g)
    return d


def image_cls(cfg, g, train):
    size = cfg.image_size if isinstance(cfg.image_size, int) else cfg.image_size[0]
    d = {"pixel_values": torch.randn(B, getattr(cfg, "num_channels", 3), size, size, generator=g)}
    if train:
        d["labels"] = torch.randint(0, cfg.num_labels, (B,), generator=g)
    return d


def clip_inputs(cfg, g, train, s=S, t=None):
    tc, vc = cfg.text_config, cfg.vision_config
    d = {"input_ids": _ids(g, tc.vocab_size, s=s), "attention_mask": _padded_mask(s=s),
         "pixel_values": torch.randn(B, 3, vc.image_size, vc.image_size, generator=g)}
    if train:
        d["return_loss"] = True
    return d


def wav2vec2_inputs(cfg, g, train):
    n = 4000
    d = {"input_values": torch.randn(B, n, generator=g), "attention_mask": _padded_mask(s=n, pad=800)}
    if train:
        d["labels"] = torch.randint(3, cfg.vocab_size, (B, 5), generator=g)
    return d


def whisper_inputs(cfg, g, train, s=None, t=None):
    n = cfg.max_source_positions * 2
    d = {"input_features": torch.randn(B, cfg.num_mel_bins, n, generator=g)}
    tgt = _ids(g, cfg.vocab_size, s=t or 6)
    if train:
        d["labels"] = tgt
    else:
        d["decoder_input_ids"] = tgt
    return d


def clap_inputs(cfg, g, train, s=S, t=None):
    ac, tc = cfg.audio_config, cfg.text_config
    fusion = bool(getattr(ac, "enable_fusion", False))
    # with enable_fusion the feature extractor gives 4 mel channels (global + 3 local crops) and
    # `is_longer`; every clip is longer here: the fusion block's BatchNorm needs more than one sample in
    # train mode (the extractor itself marks one clip at random when none is longer)
    d = {"input_ids": _ids(g, tc.vocab_size, s=s), "attention_mask": _padded_mask(s=s),
         "input_features": torch.randn(B, 4 if fusion else 1, 250, ac.num_mel_bins, generator=g)}
    if fusion:
        d["is_longer"] = torch.ones(B, 1, dtype=torch.bool)
    if train:
        d["return_loss"] = True
    return d


def grounding_dino_inputs(cfg, g, train, s=8, t=None):
    tc = cfg.text_config
    ids = _ids(g, tc.vocab_size, s=s)
    ids[:, 0] = 101
    ids[:, 3] = 1012  # "." separates phrases in Grounding DINO prompts
    ids[:, -1] = 102
    d = {"pixel_values": torch.randn(B, 3, 64, 64, generator=g), "input_ids": ids,
         "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids),
         "pixel_mask": torch.ones(B, 64, 64, dtype=torch.long)}
    # No labels in train mode: the detection loss needs scipy's Hungarian matcher, which runs on the
    # host anyway; train mode still runs the forward with gradients, dropout and drop-path on.
    return d


def qwen2_audio_inputs(cfg, g, train):
    ac, tc = cfg.audio_config, cfg.text_config
    mel_len = ac.max_source_positions * 2
    # encoder output length after the conv (stride 2) and the pool (stride 2)
    n_audio = ((mel_len - 1) // 2 + 1 - 2) // 2 + 1
    s = n_audio + 6
    ids = _ids(g, tc.vocab_size - 8, s=s)
    ids[:, 2:2 + n_audio] = cfg.audio_token_id
    d = {"input_ids": ids, "attention_mask": torch.ones_like(ids),
         "input_features": torch.randn(B, ac.num_mel_bins, mel_len, generator=g),
         "feature_attention_mask": torch.ones(B, mel_len, dtype=torch.long)}
    if train:
        d["labels"] = ids.clone()
    return d


def florence2_inputs(cfg, g, train):
    tc = cfg.text_config
    n_img = 1 + 4  # one pooled token + a 2x2 grid for a 64x64 image with the tiny DaViT below
    s = n_img + 8
    ids = _ids(g, tc.vocab_size - 8, s=s)
    ids[:, :n_img] = cfg.image_token_id
    d = {"input_ids": ids, "attention_mask": torch.ones_like(ids),
         "pixel_values": torch.randn(B, 3, 64, 64, generator=g)}
    tgt = _ids(g, tc.vocab_size - 8, s=6)
    if train:
        d["labels"] = tgt
    else:
        d["decoder_input_ids"] = tgt
    return d


# ---------------------------------------------------------------------------------------------
# the corpus


def _r(name, model_class, config_class, overrides, inputs, **kw):
    return Recipe(name, model_class, config_class, overrides, inputs, **kw)


RECIPES: list[Recipe] = [
    # --- the GraphMend paper's architectures that transformers ships ---
    _r("t5", "T5ForConditionalGeneration", "T5Config", TINY_T5, seq2seq, paper=True, category="seq2seq"),
    _r("mt5", "MT5ForConditionalGeneration", "MT5Config", TINY_T5, seq2seq, paper=True, category="seq2seq"),
    _r("umt5", "UMT5ForConditionalGeneration", "UMT5Config", TINY_T5, seq2seq, paper=True, category="seq2seq"),
    _r("longt5", "LongT5ForConditionalGeneration", "LongT5Config",
       {**TINY_T5, "local_radius": 4, "global_block_size": 4, "encoder_attention_type": "transient-global"},
       seq2seq, paper=True, category="seq2seq"),
    _r("switch_transformers", "SwitchTransformersForConditionalGeneration", "SwitchTransformersConfig",
       {**TINY_T5, "num_sparse_encoder_layers": 1, "num_sparse_decoder_layers": 1, "num_experts": 4,
        "expert_capacity": 8}, seq2seq, paper=True, category="moe"),
    _r("whisper", "WhisperForConditionalGeneration", "WhisperConfig",
       dict(vocab_size=256, num_mel_bins=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
            decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, d_model=32,
            max_source_positions=32, max_target_positions=64, decoder_start_token_id=1, pad_token_id=0,
            bos_token_id=1, eos_token_id=2, begin_suppress_tokens=None), whisper_inputs,
       paper=True, category="speech"),
    _r("bart", "BartForConditionalGeneration", "BartConfig", TINY_BART, seq2seq, paper=True, category="seq2seq"),
    _r("marian", "MarianMTModel", "MarianConfig", {**TINY_BART, "decoder_vocab_size": 256, "pad_token_id": 1,
                                                    "decoder_start_token_id": 1}, seq2seq,
       paper=True, category="seq2seq"),
    _r("biogpt", "BioGptForCausalLM", "BioGptConfig", {**TINY_BERT, "vocab_size": 256}, text_lm, paper=True),
    _r("blenderbot", "BlenderbotForConditionalGeneration", "BlenderbotConfig", TINY_BART, seq2seq,
       paper=True, category="seq2seq"),
    _r("blenderbot_small", "BlenderbotSmallForConditionalGeneration", "BlenderbotSmallConfig", TINY_BART,
       seq2seq, paper=True, category="seq2seq"),
    _r("pegasus", "PegasusForConditionalGeneration", "PegasusConfig", TINY_BART, seq2seq, paper=True,
       category="seq2seq"),
    _r("pegasus_x", "PegasusXForConditionalGeneration", "PegasusXConfig",
       {**TINY_BART, "num_global_tokens": 4, "block_size": 8, "stagger_local_blocks": True}, seq2seq,
       paper=True, category="seq2seq"),
    _r("layoutlmv3", "LayoutLMv3ForSequenceClassification", "LayoutLMv3Config",
       {**TINY_BERT, "vocab_size": 256, "coordinate_size": 4, "shape_size": 8, "input_size": 32,
        "patch_size": 8, "rel_pos_bins": 16, "max_rel_pos": 32, "max_2d_position_embeddings": 1024},
       layoutlmv3_inputs, paper=True, category="multimodal"),
    _r("phi3", "Phi3ForCausalLM", "Phi3Config", {**TINY_LLM, "pad_token_id": 0}, text_lm, paper=True,
       note="Phi-4-mini's architecture"),
    _r("longformer", "LongformerForSequenceClassification", "LongformerConfig",
       {**TINY_BERT, "vocab_size": 256, "attention_window": 8, "max_position_embeddings": 130},
       longformer_inputs, paper=True),
    _r("clap", "ClapModel", "ClapConfig", {"projection_dim": 16}, clap_inputs, paper=True, category="audio",
       sub_configs={"text_config": ("ClapTextConfig", {**TINY_BERT, "vocab_size": 256, "projection_dim": 16}),
                    "audio_config": ("ClapAudioConfig", dict(
                        hidden_size=16, patch_embeds_hidden_size=8, depths=[1, 1], num_attention_heads=[2, 4],
                        spec_size=64, num_mel_bins=16, window_size=4, projection_dim=16, num_hidden_layers=2))},
       note="audio hidden_size = patch_embeds_hidden_size * 2**(stages-1)"),
    _r("grounding_dino", "GroundingDinoForObjectDetection", "GroundingDinoConfig",
       dict(d_model=32, encoder_layers=1, decoder_layers=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
            encoder_attention_heads=4, decoder_attention_heads=4, num_queries=16, num_feature_levels=2,
            encoder_n_points=2, decoder_n_points=2, max_text_len=16), grounding_dino_inputs,
       paper=True, category="vision",
       sub_configs={"backbone_config": ("SwinConfig", dict(
           image_size=64, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 4], window_size=4,
           out_indices=[1, 2], out_features=["stage1", "stage2"])),
           "text_config": ("BertConfig", {**TINY_BERT, "vocab_size": 2048})}),
    _r("qwen2_audio", "Qwen2AudioForConditionalGeneration", "Qwen2AudioConfig", {"audio_token_id": 250},
       qwen2_audio_inputs, paper=True, category="audio",
       sub_configs={"audio_config": ("Qwen2AudioEncoderConfig", dict(
           num_mel_bins=16, encoder_layers=2, encoder_attention_heads=4, encoder_ffn_dim=64, d_model=32,
           max_source_positions=16)),
           "text_config": ("Qwen2Config", TINY_LLM)}),
    _r("florence2", "Florence2ForConditionalGeneration", "Florence2Config", {"image_token_id": 250},
       florence2_inputs, paper=True, category="multimodal",
       sub_configs={"vision_config": ("Florence2VisionConfig", dict(
           depths=[1, 1, 1, 1], embed_dim=[16, 16, 32, 32], num_heads=[2, 2, 4, 4], num_groups=[2, 2, 4, 4],
           window_size=2, projection_dim=32, max_position_embeddings=8)),
           "text_config": ("BartConfig", TINY_BART)}),
    # --- popular architectures users compile ---
    _r("llama", "LlamaForCausalLM", "LlamaConfig", TINY_LLM, text_lm, category="llm"),
    _r("mistral", "MistralForCausalLM", "MistralConfig", {**TINY_LLM, "sliding_window": 8}, text_lm,
       category="llm"),
    _r("qwen2", "Qwen2ForCausalLM", "Qwen2Config", TINY_LLM, text_lm, category="llm"),
    _r("qwen3", "Qwen3ForCausalLM", "Qwen3Config", {**TINY_LLM, "head_dim": 8}, text_lm, category="llm"),
    _r("gemma", "GemmaForCausalLM", "GemmaConfig", {**TINY_LLM, "head_dim": 8}, text_lm, category="llm"),
    _r("gemma2", "Gemma2ForCausalLM", "Gemma2Config", {**TINY_LLM, "head_dim": 8, "sliding_window": 8},
       text_lm, category="llm"),
    _r("phi", "PhiForCausalLM", "PhiConfig", TINY_LLM, text_lm, category="llm"),
    _r("gpt2", "GPT2LMHeadModel", "GPT2Config", dict(n_embd=32, n_layer=2, n_head=4, n_positions=128,
                                                     vocab_size=256), text_lm, category="llm"),
    _r("gpt_neox", "GPTNeoXForCausalLM", "GPTNeoXConfig", {**TINY_BERT, "vocab_size": 256}, text_lm,
       category="llm"),
    _r("gptj", "GPTJForCausalLM", "GPTJConfig", dict(n_embd=32, n_layer=2, n_head=4, n_positions=128,
                                                     rotary_dim=4, vocab_size=256), text_lm, category="llm"),
    _r("opt", "OPTForCausalLM", "OPTConfig", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                                  ffn_dim=64, word_embed_proj_dim=32, max_position_embeddings=128,
                                                  vocab_size=256), text_lm, category="llm"),
    _r("falcon", "FalconForCausalLM", "FalconConfig", dict(hidden_size=32, num_hidden_layers=2,
                                                           num_attention_heads=4, vocab_size=256), text_lm,
       category="llm"),
    _r("bloom", "BloomForCausalLM", "BloomConfig", dict(hidden_size=32, n_layer=2, n_head=4, vocab_size=256),
       text_lm, category="llm"),
    _r("mixtral", "MixtralForCausalLM", "MixtralConfig", {**TINY_LLM, "num_local_experts": 4,
                                                         "num_experts_per_tok": 2}, text_lm, category="moe"),
    _r("qwen2_moe", "Qwen2MoeForCausalLM", "Qwen2MoeConfig",
       {**TINY_LLM, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
        "shared_expert_intermediate_size": 32}, text_lm, category="moe"),
    _r("mbart", "MBartForConditionalGeneration", "MBartConfig", TINY_BART, seq2seq, category="seq2seq"),
    _r("bert", "BertForSequenceClassification", "BertConfig", {**TINY_BERT, "vocab_size": 256}, text_cls,
       category="encoder"),
    _r("roberta", "RobertaForSequenceClassification", "RobertaConfig", {**TINY_BERT, "vocab_size": 256},
       text_cls, category="encoder"),
    _r("distilbert", "DistilBertForSequenceClassification", "DistilBertConfig",
       dict(dim=32, n_layers=2, n_heads=4, hidden_dim=64, vocab_size=256, max_position_embeddings=128),
       text_cls, category="encoder"),
    _r("albert", "AlbertForSequenceClassification", "AlbertConfig",
       {**TINY_BERT, "vocab_size": 256, "embedding_size": 16}, text_cls, category="encoder"),
    _r("electra", "ElectraForSequenceClassification", "ElectraConfig",
       {**TINY_BERT, "vocab_size": 256, "embedding_size": 16}, text_cls, category="encoder"),
    _r("deberta_v2", "DebertaV2ForSequenceClassification", "DebertaV2Config",
       {**TINY_BERT, "vocab_size": 256, "position_buckets": 16, "max_relative_positions": 32}, text_cls,
       category="encoder"),
    _r("modernbert", "ModernBertForSequenceClassification", "ModernBertConfig",
       dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, vocab_size=256,
            max_position_embeddings=128, local_attention=8, pad_token_id=0, bos_token_id=1, eos_token_id=2,
            sep_token_id=2, cls_token_id=1), text_cls, category="encoder"),
    _r("vit", "ViTForImageClassification", "ViTConfig", {**TINY_BERT, "image_size": 32, "patch_size": 8},
       image_cls, category="vision"),
    _r("deit", "DeiTForImageClassification", "DeiTConfig", {**TINY_BERT, "image_size": 32, "patch_size": 8},
       image_cls, category="vision"),
    _r("beit", "BeitForImageClassification", "BeitConfig", {**TINY_BERT, "image_size": 32, "patch_size": 8},
       image_cls, category="vision"),
    _r("swin", "SwinForImageClassification", "SwinConfig",
       dict(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 4], window_size=4),
       image_cls, category="vision"),
    _r("convnext", "ConvNextForImageClassification", "ConvNextConfig",
       dict(image_size=32, hidden_sizes=[8, 16], depths=[1, 1], num_stages=2), image_cls, category="vision"),
    _r("clip", "CLIPModel", "CLIPConfig", {"projection_dim": 16}, clip_inputs, category="multimodal",
       sub_configs={"text_config": ("CLIPTextConfig", {**TINY_BERT, "vocab_size": 256, "projection_dim": 16}),
                    "vision_config": ("CLIPVisionConfig", {**TINY_BERT, "image_size": 32, "patch_size": 8,
                                                           "projection_dim": 16})}),
    _r("wav2vec2", "Wav2Vec2ForCTC", "Wav2Vec2Config",
       {**TINY_BERT, "vocab_size": 32, "conv_dim": (16,) * 7, "num_conv_pos_embeddings": 16,
        "num_conv_pos_embedding_groups": 4, "pad_token_id": 0}, wav2vec2_inputs, category="speech"),
    _r("hubert", "HubertForCTC", "HubertConfig",
       {**TINY_BERT, "vocab_size": 32, "conv_dim": (16,) * 7, "num_conv_pos_embeddings": 16,
        "num_conv_pos_embedding_groups": 4, "pad_token_id": 0}, wav2vec2_inputs, category="speech"),
]

BY_NAME = {r.name: r for r in RECIPES}


def recipe_modules(recipe: Recipe) -> list[str]:
    """The transformers modules (dotted names) that define the recipe's model classes."""
    import transformers

    mods = {getattr(transformers, recipe.model_class).__module__}
    for cls_name, _ in recipe.sub_configs.values():
        cfg_mod = getattr(transformers, cls_name).__module__
        mods.add(cfg_mod.replace(".configuration_", ".modeling_"))
    return sorted(mods)


def _corpus(corpus):
    import corpora

    return corpus if isinstance(corpus, corpora.Corpus) else corpora.get(corpus)


def build_config(recipe: Recipe, corpus=None):
    import corpora
    import transformers

    c = _corpus(corpus)
    kwargs = corpora.merged_overrides(c, recipe.name, recipe.overrides)
    subs = {attr: getattr(transformers, cls_name)(**corpora.merged_sub_overrides(c, recipe.name, attr, ov))
            for attr, (cls_name, ov) in recipe.sub_configs.items()}
    cls = getattr(transformers, recipe.config_class)
    try:
        return cls(**kwargs, **subs)
    except TypeError as e:
        # transformers 4.x: some composite configs (ClapConfig) take their sub-configs as dicts only
        if "must be a mapping" not in str(e):
            raise
        return cls(**kwargs, **{attr: sub.to_dict() for attr, sub in subs.items()})


def build(recipe: Recipe, seed: int = 0, corpus=None):
    """Build the model with random weights (seeded) and return (model, config); in fp16 where the
    corpus says so."""
    import transformers

    c = _corpus(corpus)
    cfg = build_config(recipe, c)
    torch.manual_seed(seed)
    cls = getattr(transformers, recipe.model_class)
    model = cls(cfg)
    if recipe.name in c.fp16:
        model = model.half()
    return model, cfg


def make_inputs(recipe: Recipe, cfg, train: bool, seed: int = 1, corpus=None) -> dict[str, Any]:
    import inspect

    c = _corpus(corpus)
    g = torch.Generator().manual_seed(seed)
    kw = {}
    if c.seq_len is not None:
        params = inspect.signature(recipe.inputs).parameters
        kw = {k: c.seq_len for k in ("s", "t") if k in params}
    d = recipe.inputs(cfg, g, train, **kw)
    if recipe.name in c.fp16:
        d = {k: v.half() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for k, v in d.items()}
    return d
