"""Chapter 8's GPT written out in the page (``book/ch08_gpt.md``, "One block, in code"):
the code as printed computes what course_lib.models.GPT and PyTorch's own layers compute,
its parameters carry the library's names (so the chapter's checkpoints load into it), and
its KV cache ("The KV cache") changes no logit.

The classes are taken from the chapter's code cells themselves, so an edit of the page that
breaks them fails here (and not only in nbval's comparison of a printed ✓).
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
from course_lib.models import GPTConfig

PAGE = Path(__file__).resolve().parents[2] / "book" / "ch08_gpt.md"


def _cells():
    return re.findall(r"```\{code-cell\} ipython3\n(.*?)\n```", PAGE.read_text(encoding="utf-8"), re.S)


@pytest.fixture(scope="module")
def page():
    source = [c for c in _cells() if "class CausalSelfAttention" in c]
    assert len(source) == 1, "the chapter must define CausalSelfAttention in exactly one cell"
    namespace = {"torch": torch, "nn": nn, "F": F, "lm": lm, "math": math, "GPTConfig": GPTConfig,
                 "print": lambda *a, **k: None}
    exec(source[0], namespace)
    cache_cell = [c for c in _cells() if "class KVCache" in c]
    assert len(cache_cell) == 1, "the chapter must define KVCache in exactly one cell"
    exec(re.search(r"class KVCache:.*?(?=\n\n\n)", cache_cell[0], re.S).group(0), namespace)
    return namespace


def _randomised(model, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return model


def _page_gpt(page, vocab_size):
    return page["GPT"](GPTConfig(vocab_size=vocab_size, **lm.GPT_SIZE))


def test_page_gpt_loads_the_library_weights_strictly_and_equals_it(page):
    library = _randomised(lm.build_gpt(13).double().eval())
    inline = _page_gpt(page, 13).double().eval()
    inline.load_state_dict(library.state_dict(), strict=True)
    ids = torch.randint(13, (2, 20), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert torch.allclose(inline(ids), library(ids), rtol=0, atol=1e-12)


def test_page_gpt_starts_from_build_gpts_weights(page):
    torch.manual_seed(0)
    inline = _page_gpt(page, 13)
    library = lm.build_gpt(13)
    assert list(inline.state_dict()) == list(library.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(inline.state_dict().values(), library.state_dict().values()))
    assert inline.lm_head.weight is inline.tok_emb.weight                      # tied


def test_inline_block_equals_torch_encoder_layer_with_a_causal_mask(page):
    block = _randomised(page["Block"](64, 4, 256).double().eval(), seed=2)
    layer = nn.TransformerEncoderLayer(64, 4, 256, dropout=0.0, activation=partial(F.gelu, approximate="tanh"),
                                       batch_first=True, norm_first=True).double().eval()
    a = block.self_attn
    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]))
        layer.self_attn.in_proj_bias.copy_(torch.cat([a.q_proj.bias, a.k_proj.bias, a.v_proj.bias]))
        layer.self_attn.out_proj.load_state_dict(a.out_proj.state_dict())
        for name in ("linear1", "linear2", "norm1", "norm2"):
            getattr(layer, name).load_state_dict(getattr(block, name).state_dict())
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
        q, k, v = (W(x).view(2, 9, 4, 16).transpose(1, 2) for W in (attn.q_proj, attn.k_proj, attn.v_proj))
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(2, 9, 64)
        assert torch.allclose(out, attn.out_proj(ref), rtol=0, atol=1e-12)


def test_page_kv_cache_changes_no_logit(page):
    gpt = _randomised(_page_gpt(page, 13).double().eval(), seed=6)
    ids = torch.randint(13, (2, 30), generator=torch.Generator().manual_seed(7))
    cache = [page["KVCache"]() for _ in gpt.layers]
    with torch.no_grad():
        full = gpt(ids)
        steps = [gpt(ids[:, :5], cache)] + [gpt(ids[:, t:t + 1], cache) for t in range(5, 30)]
    assert [len(c) for c in cache] == [30] * len(gpt.layers)
    assert torch.allclose(torch.cat(steps, dim=1), full, rtol=0, atol=1e-12)
