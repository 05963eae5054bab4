"""The config dataclasses of GPT, BERT, the Transformer and ViT (nanoGPT style).

Each config rejects bad values with a message that names the field; a model
built from a config and one built from the same keyword settings are the same
model; positional settings are refused.
"""

import dataclasses

import pytest
import torch

from course_lib.models import (BERT, GPT, BERTConfig, GPTConfig, Transformer, TransformerConfig, ViT,
                               ViTConfig)

SMALL = {
    GPT: (GPTConfig, dict(vocab_size=30, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=8)),
    BERT: (BERTConfig, dict(vocab_size=30, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=8)),
    Transformer: (TransformerConfig, dict(src_vocab=11, tgt_vocab=13, d_model=16, num_heads=2,
                                          num_encoder_layers=1, num_decoder_layers=1, d_ff=32,
                                          max_len=10)),
    ViT: (ViTConfig, dict(image_size=8, patch_size=2, in_channels=1, num_classes=10, d_model=16,
                          num_heads=2, num_layers=1, d_ff=32)),
}

# (config class, bad settings, exception, fragments the message must contain)
BAD = [
    (GPTConfig, dict(vocab_size=0), ValueError, ["GPTConfig.vocab_size", ">= 1", "0"]),
    (GPTConfig, dict(num_layers=2.0), TypeError, ["GPTConfig.num_layers", "integer"]),
    (GPTConfig, dict(d_model=64, num_heads=5), ValueError, ["d_model=64", "num_heads=5", "divisible"]),
    (GPTConfig, dict(dropout=1.0), ValueError, ["GPTConfig.dropout", "[0, 1)"]),
    (GPTConfig, dict(tie_weights="yes"), TypeError, ["GPTConfig.tie_weights", "True or False"]),
    (GPTConfig, dict(layer_norm_eps=0.0), ValueError, ["GPTConfig.layer_norm_eps", "positive"]),
    (BERTConfig, dict(vocab_size=50, pad_id=50), ValueError, ["BERTConfig.pad_id", "[0, 50)"]),
    (BERTConfig, dict(type_vocab_size=0), ValueError, ["BERTConfig.type_vocab_size", ">= 1"]),
    (BERTConfig, dict(max_len=-3), ValueError, ["BERTConfig.max_len", "-3"]),
    (BERTConfig, dict(d_ff="3072"), TypeError, ["BERTConfig.d_ff", "integer", "str"]),
    (TransformerConfig, dict(src_vocab=11, tgt_vocab=5, pad_id=7), ValueError,
     ["TransformerConfig.pad_id", "min(src_vocab, tgt_vocab)", "[0, 5)", "7"]),
    (TransformerConfig, dict(norm_first=1), TypeError, ["TransformerConfig.norm_first", "True or False"]),
    (TransformerConfig, dict(num_decoder_layers=0), ValueError,
     ["TransformerConfig.num_decoder_layers", ">= 1"]),
    (TransformerConfig, dict(dropout=-0.1), ValueError, ["TransformerConfig.dropout", "[0, 1)"]),
    (ViTConfig, dict(image_size=30, patch_size=8), ValueError,
     ["ViTConfig.image_size = 30", "ViTConfig.patch_size = 8", "divisible"]),
    (ViTConfig, dict(num_classes=-1), ValueError, ["ViTConfig.num_classes", ">= 0"]),
    (ViTConfig, dict(in_channels=None), TypeError, ["ViTConfig.in_channels", "NoneType"]),
    (ViTConfig, dict(d_model=48, num_heads=5), ValueError, ["d_model=48", "num_heads=5"]),
]


@pytest.mark.parametrize("config_cls, settings, exc, fragments", BAD,
                         ids=[f"{c.__name__}-{next(iter(s))}" for c, s, _, _ in BAD])
def test_config_rejects_bad_value_naming_the_field(config_cls, settings, exc, fragments):
    with pytest.raises(exc) as info:
        config_cls(**settings)
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))


@pytest.mark.parametrize("config_cls", [GPTConfig, BERTConfig, TransformerConfig, ViTConfig])
def test_configs_are_frozen_and_have_valid_defaults(config_cls):
    config = config_cls()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.d_model = 1
    assert config.d_model % config.num_heads == 0


def test_integer_like_settings_are_stored_as_int():
    import numpy as np

    config = GPTConfig(vocab_size=np.int64(30), d_model=16, num_heads=2)
    assert type(config.vocab_size) is int and config.vocab_size == 30


@pytest.mark.parametrize("model_cls", list(SMALL), ids=lambda m: m.__name__)
def test_keyword_and_config_build_identical_models(model_cls):
    config_cls, settings = SMALL[model_cls]
    torch.manual_seed(0)
    from_config = model_cls(config_cls(**settings))
    torch.manual_seed(0)
    from_keywords = model_cls(**settings)
    assert from_config.config == from_keywords.config == config_cls(**settings)
    a, b = from_config.state_dict(), from_keywords.state_dict()
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name


@pytest.mark.parametrize("model_cls", list(SMALL), ids=lambda m: m.__name__)
def test_positional_settings_raise_type_error(model_cls):
    _, settings = SMALL[model_cls]
    values = list(settings.values())
    with pytest.raises(TypeError):
        model_cls(*values)
    with pytest.raises(TypeError, match=f"{model_cls.__name__} takes a {model_cls.__name__}"):
        model_cls(values[0])                  # one positional setting: the message says what to do


@pytest.mark.parametrize("model_cls", list(SMALL), ids=lambda m: m.__name__)
def test_config_and_settings_together_or_unknown_settings_raise(model_cls):
    config_cls, settings = SMALL[model_cls]
    with pytest.raises(TypeError, match="not both"):
        model_cls(config_cls(**settings), d_model=32)
    with pytest.raises(TypeError, match=r"unknown setting\(s\) \['n_embd'\]"):
        model_cls(n_embd=16)


def test_models_keep_their_config_and_use_it():
    gpt = GPT(GPTConfig(vocab_size=30, d_model=16, num_heads=2, num_layers=3, d_ff=32, max_len=8,
                        tie_weights=False))
    assert len(gpt.layers) == 3 and gpt.lm_head.weight is not gpt.tok_emb.weight
    assert gpt(torch.zeros(2, 5, dtype=torch.long)).shape == (2, 5, 30)
    vit = ViT(ViTConfig(image_size=8, patch_size=4, in_channels=1, num_classes=0, d_model=16,
                        num_heads=2, num_layers=1, d_ff=32))
    assert vit.patch_embed.num_patches == 4 and vit(torch.zeros(3, 1, 8, 8)).shape == (3, 16)
