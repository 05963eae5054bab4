"""Chapter 7's GPT written out in the page (``book/ch07_bert_gpt.md``, "One block, in code"):
the code as printed computes what course_lib.models.GPT and PyTorch's own layers compute.

The classes are taken from the chapter's code cell itself, so an edit of the page that
breaks them fails here (and not only in nbval's comparison of a printed True).
"""

import math
import re
from functools import partial
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from course_lib.labs import language_model as lm

PAGE = Path(__file__).resolve().parents[2] / "book" / "ch07_bert_gpt.md"


@pytest.fixture(scope="module")
def page():
    cells = re.findall(r"```\{code-cell\} ipython3\n(.*?)\n```", PAGE.read_text(encoding="utf-8"), re.S)
    source = [c for c in cells if "class CausalSelfAttention" in c]
    assert len(source) == 1, "the chapter must define CausalSelfAttention in exactly one cell"
    namespace = {"torch": torch, "nn": nn, "F": F, "lm": lm, "math": math, "print": lambda *a, **k: None}
    exec(source[0], namespace)
    return namespace


def _randomised(model, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return model


def _copy_into(inline, library):
    """The library GPT's weights under the page's names (the map the page uses)."""
    rename = {"pos_emb.embedding.": "pos_emb.", "layers.": "blocks.", "self_attn.q_proj.": "attn.W_Q.",
              "self_attn.k_proj.": "attn.W_K.", "self_attn.v_proj.": "attn.W_V.", "self_attn.out_proj.": "attn.W_O.",
              "linear1.": "mlp.up.", "linear2.": "mlp.down.", "norm1.": "ln_1.", "norm2.": "ln_2.", "norm.": "ln_f."}
    state = {}
    for name, t in library.state_dict().items():
        if name == "lm_head.weight":
            continue
        for old, new in rename.items():
            name = name.replace(old, new)
        state[name] = t
    inline.load_state_dict(state)
    return inline


def test_inline_gpt_equals_the_library_gpt(page):
    library = _randomised(lm.build_gpt(13).double().eval())
    inline = _copy_into(page["TinyGPT"](13, lm.CTX, 64, 4, 256, 2).double().eval(), library)
    ids = torch.randint(13, (2, 20), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert torch.allclose(inline(ids), library(ids), rtol=0, atol=1e-12)


def test_inline_block_equals_torch_encoder_layer_with_a_causal_mask(page):
    block = _randomised(page["Block"](64, 4, 256).double().eval(), seed=2)
    layer = nn.TransformerEncoderLayer(64, 4, 256, dropout=0.0, activation=partial(F.gelu, approximate="tanh"),
                                       batch_first=True, norm_first=True).double().eval()
    a = block.attn
    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(torch.cat([a.W_Q.weight, a.W_K.weight, a.W_V.weight]))
        layer.self_attn.in_proj_bias.copy_(torch.cat([a.W_Q.bias, a.W_K.bias, a.W_V.bias]))
        layer.self_attn.out_proj.load_state_dict(a.W_O.state_dict())
        for theirs, ours in ((layer.linear1, block.mlp.up), (layer.linear2, block.mlp.down),
                             (layer.norm1, block.ln_1), (layer.norm2, block.ln_2)):
            theirs.load_state_dict(ours.state_dict())
        x = torch.randn(2, 9, 64, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
        mask = nn.Transformer.generate_square_subsequent_mask(9, dtype=torch.float64)
        assert torch.allclose(block(x), layer(x, src_mask=mask, is_causal=True), rtol=0, atol=1e-12)


def test_inline_attention_is_causal_and_equals_sdpa(page):
    attn = _randomised(page["CausalSelfAttention"](64, 4).double().eval(), seed=4)
    x = torch.randn(2, 9, 64, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    changed = x.clone()
    changed[:, -1] += 1.0
    with torch.no_grad():
        out = attn(x)
        assert torch.allclose(out[:, :-1], attn(changed)[:, :-1], rtol=0, atol=1e-12)   # the past ignores the future
        q, k, v = (W(x).view(2, 9, 4, 16).transpose(1, 2) for W in (attn.W_Q, attn.W_K, attn.W_V))
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(2, 9, 64)
        assert torch.allclose(out, attn.W_O(ref), rtol=0, atol=1e-12)
