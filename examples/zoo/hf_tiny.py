"""Tiny Hugging Face transformers models with random weights (no download), as bench/hf builds them:
the zoo validates the library's own modeling files, fixed through `fixed-module`."""
import torch


def _ids(vocab=99, batch=2, seq=12):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, vocab, (batch, seq), generator=g)
    mask = torch.ones(batch, seq, dtype=torch.long)
    mask[1, -3:] = 0  # a padded row: real batches are ragged
    return ids, mask


def _small(config_class, **extra):
    base = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37)
    base.update(extra)
    return config_class(**base)


def bert():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    ids, mask = _ids()
    return BertModel(_small(BertConfig)).eval(), (), {"input_ids": ids, "attention_mask": mask}


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    ids, mask = _ids()
    config = GPT2Config(vocab_size=99, n_embd=32, n_layer=2, n_head=4, n_positions=64)
    return GPT2LMHeadModel(config).eval(), (), {"input_ids": ids, "attention_mask": mask}


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    ids, mask = _ids()
    config = _small(LlamaConfig, num_key_value_heads=2, max_position_embeddings=64)
    return LlamaForCausalLM(config).eval(), (), {"input_ids": ids, "attention_mask": mask}


def t5():
    from transformers import T5Config, T5Model

    torch.manual_seed(0)
    ids, mask = _ids()
    config = T5Config(vocab_size=99, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4, decoder_start_token_id=0)
    return T5Model(config).eval(), (), {"input_ids": ids, "attention_mask": mask, "decoder_input_ids": ids[:, :5]}


def distilbert():
    from transformers import DistilBertConfig, DistilBertModel

    torch.manual_seed(0)
    ids, mask = _ids()
    config = DistilBertConfig(vocab_size=99, dim=32, n_layers=2, n_heads=4, hidden_dim=37)
    return DistilBertModel(config).eval(), (), {"input_ids": ids, "attention_mask": mask}


def vit():
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(0)
    config = ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
                       num_attention_heads=4, intermediate_size=37)
    pixels = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    return ViTModel(config).eval(), (), {"pixel_values": pixels}
