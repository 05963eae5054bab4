"""Parameter counts and FLOPs of the published models (chapters 6 and 7).

The expected numbers are the published ones, written here by hand: the
papers' rounded sizes, torchvision's exact ViT counts and GFLOPS, and
parameter formulas derived independently of ``course_lib``.
"""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from course_lib.models.vit import ViT
from course_lib.analysis.sizes import (CONFIGS, build_on_meta, count_parameters, parameter_breakdown,
                              vit_flops)

# name: (size printed in the paper, relative tolerance)
PAPER_SIZES = {
    "ViT-B/16": (86e6, 0.01),      # Dosovitskiy et al. 2021, Table 1
    "ViT-L/16": (307e6, 0.01),     # idem (with a 1000-class head: 304.3M, within 1%)
    "BERT-base": (110e6, 0.015),   # Devlin et al. 2019, section 3 (pooler excluded: 108.9M)
    "GPT-2 small": (124e6, 0.005),  # openai/gpt-2 README (the paper's "117M" model)
}


@pytest.mark.parametrize("name", PAPER_SIZES)
def test_parameter_count_matches_paper(name):
    published, tol = PAPER_SIZES[name]
    model = build_on_meta(name)
    assert all(p.is_meta for p in model.parameters())      # nothing was allocated
    assert abs(count_parameters(model) - published) <= tol * published


@pytest.mark.parametrize("name, exact", [("ViT-B/16", 86_567_656),    # torchvision vit_b_16 card
                                         ("ViT-L/16", 304_326_632)])  # torchvision vit_l_16 card
def test_vit_counts_match_torchvision_exactly(name, exact):
    assert count_parameters(build_on_meta(name)) == exact


def test_gpt2_and_bert_counts_match_hand_formula():
    """Per block: 4 d^2 + 4 d (attention) + 8 d^2 + 5 d (MLP) + 4 d (two LayerNorms)."""
    d, L = 768, 12
    block = 12 * d * d + 13 * d
    gpt2 = 50257 * d + 1024 * d + L * block + 2 * d              # tied head adds nothing
    bert = (30522 + 512 + 2) * d + 2 * d + L * block
    assert count_parameters(build_on_meta("GPT-2 small")) == gpt2 == 124_439_808
    assert count_parameters(build_on_meta("BERT-base")) == bert


def test_breakdown_of_vit_b16():
    d, L, N = 768, 12, 196
    parts = parameter_breakdown(build_on_meta("ViT-B/16"))
    assert list(parts) == ["embeddings", "attention", "FFN", "norms", "head"]
    assert parts["attention"] == L * (4 * d * d + 4 * d)
    assert parts["FFN"] == L * (2 * d * 4 * d + 4 * d + d)
    assert parts["norms"] == (2 * L + 1) * 2 * d
    assert parts["embeddings"] == (16 * 16 * 3 * d + d) + d + (N + 1) * d
    assert parts["head"] == d * 1000 + 1000
    assert sum(parts.values()) == 86_567_656


def test_gpt2_breakdown_counts_the_tied_head_once():
    parts = parameter_breakdown(build_on_meta("GPT-2 small"))
    assert parts["head"] == 0
    assert parts["embeddings"] == (50257 + 1024) * 768


@pytest.mark.parametrize("name, gflops", [("ViT-B/16", 17.56),    # torchvision vit_b_16 card
                                          ("ViT-L/16", 61.55)])   # torchvision vit_l_16 card
def test_vit_flops_match_published(name, gflops):
    total = vit_flops(**CONFIGS[name][1])["total"]
    assert abs(total / 1e9 - gflops) < 0.01


def test_vit_flops_formula_agrees_with_pytorch_flop_counter():
    """PyTorch counts 2 FLOPs per multiply-add of every matmul and convolution.

    need_weights=True makes attention two explicit matmuls (Q K^T, A V) that
    the counter sees; it does not count the fused CPU attention kernel.
    """
    config = dict(image_size=32, patch_size=8, in_channels=3, num_classes=10,
                  d_model=48, num_heads=4, num_layers=2, d_ff=96)
    model = ViT(**config).eval()
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(torch.randn(1, 3, 32, 32), need_weights=True)
    assert counter.get_total_flops() == 2 * vit_flops(**config)["total"]


def test_flops_terms_add_up():
    terms = vit_flops(**CONFIGS["ViT-B/16"][1])
    assert terms["total"] == sum(v for k, v in terms.items() if k != "total")
    # 197 tokens, d = 768: the MLP is two thirds of a layer's projections
    assert terms["MLP"] == 12 * 2 * 197 * 768 * 3072
