"""Small Hugging Face models with random weights (no download), for the tests that copy them with
``from_hf``: ``test_hf_equivalence.py`` (ViT, BERT) and ``test_gpt_cache.py`` (GPT)."""

import torch

ATOL = 1e-5
SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)


def assert_close(ours, theirs):
    assert ours.shape == theirs.shape
    assert theirs.abs().max() > 1e-2, "reference output is trivially small"
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=0)


@torch.no_grad()
def make(cls, config):
    """A Hugging Face model with weights large enough that every mistake shows.

    With the default N(0, 0.02) initialisation activations stay near zero,
    where GELU and its tanh approximation agree to 1e-6 and a LayerNorm
    with weight 1 and bias 0 could be skipped unnoticed.
    """
    torch.manual_seed(0)
    model = cls(config).eval()
    for p in model.parameters():
        if p.ndim >= 2:
            p.normal_(0.0, 0.2)
        else:
            p.uniform_(0.5, 1.5)
    return model
