"""GPT decoding with a KV cache gives what recomputing the whole prefix gives (chapter 7)."""

import pytest
import torch

from course_lib.models.gpt import GPT
from course_lib.scratch.masks import causal_mask
from hf_models import assert_close, make


@pytest.fixture
def gpt():
    torch.manual_seed(0)
    return GPT(vocab_size=40, d_model=32, num_heads=4, num_layers=3, d_ff=64, max_len=24,
               dropout=0.1).eval()


@pytest.fixture
def prompt():
    return torch.randint(0, 40, (2, 5), generator=torch.Generator().manual_seed(1))


def test_causal_mask_with_offset():
    expected = torch.tensor([[1, 1, 1, 0, 0],     # query at position 2 sees 0..2
                             [1, 1, 1, 1, 0],
                             [1, 1, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(torch.from_numpy(causal_mask(3, offset=2)), expected)


def test_causal_model_ignores_the_future(gpt, prompt):
    changed = prompt.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 40
    with torch.no_grad():
        a, b = gpt(prompt), gpt(changed)
    torch.testing.assert_close(a[:, :-1], b[:, :-1], atol=1e-6, rtol=0)
    assert (a[:, -1] - b[:, -1]).abs().max() > 1e-3


@pytest.mark.parametrize("chunks", [[1] * 12, [5, 1, 1, 3, 2], [12]])
def test_cached_logits_equal_full_forward(gpt, chunks):
    ids = torch.randint(0, 40, (2, sum(chunks)), generator=torch.Generator().manual_seed(2))
    cache = gpt.new_cache()
    pieces, start = [], 0
    with torch.no_grad():
        full = gpt(ids)
        for n in chunks:
            pieces.append(gpt(ids[:, start:start + n], cache=cache))
            start += n
    assert len(cache[0]) == ids.shape[1]
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=1e-5, rtol=0)


@pytest.mark.parametrize("temperature, top_k", [(1.0, None), (0.7, 5), (1.5, 3)])
def test_generation_with_and_without_cache_agree(gpt, prompt, temperature, top_k):
    out = [gpt.generate(prompt, 12, temperature=temperature, top_k=top_k, use_cache=use,
                        generator=torch.Generator().manual_seed(7))
           for use in (True, False)]
    assert out[0].shape == (2, 17)
    assert torch.equal(out[0][:, :5], prompt)
    assert torch.equal(out[0], out[1])


def test_top_k_1_is_greedy(gpt, prompt):
    ids = prompt
    with torch.no_grad():
        for _ in range(8):
            ids = torch.cat([ids, gpt(ids)[:, -1].argmax(-1, keepdim=True)], dim=1)
    sampled = gpt.generate(prompt, 8, temperature=0.5, top_k=1,
                           generator=torch.Generator().manual_seed(3))
    assert torch.equal(sampled, ids)


def test_samples_stay_in_the_top_k(gpt, prompt):
    ids = gpt.generate(prompt, 10, top_k=3, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        logits = gpt(ids[:, :-1])[:, prompt.shape[1] - 1:]       # the logits each sample came from
    top3 = logits.topk(3, dim=-1).indices
    assert (top3 == ids[:, prompt.shape[1]:, None]).any(-1).all()


@pytest.fixture
def peaked_gpt(gpt):
    """The fixture GPT with logits spread over several units, so the temperature matters."""
    with torch.no_grad():
        gpt.lm_head.weight.mul_(10.0)
    return gpt


@pytest.mark.parametrize("temperature", [0.5, 2.0])
def test_sampling_draws_from_softmax_of_logits_over_temperature(peaked_gpt, temperature):
    """One step of sampling is torch.multinomial on softmax(logits / T), draw for draw."""
    prompt = torch.tensor([[3, 1, 4]]).repeat(2000, 1)
    drawn = peaked_gpt.generate(prompt, 1, temperature=temperature,
                                generator=torch.Generator().manual_seed(5))[:, -1]
    with torch.no_grad():
        logits = peaked_gpt(prompt[:1])[0, -1]
    p = torch.softmax(logits / temperature, dim=-1).repeat(2000, 1)
    expected = torch.multinomial(p, 1, generator=torch.Generator().manual_seed(5))[:, 0]
    assert torch.equal(drawn, expected)


def test_sampling_frequencies_follow_the_softmax(peaked_gpt):
    """Statistically: 8,000 draws at T = 2 match softmax(logits / 2), not softmax(logits · 2)."""
    n, T = 8_000, 2.0
    prompt = torch.tensor([[3, 1, 4]]).repeat(n, 1)
    draws = peaked_gpt.generate(prompt, 1, temperature=T, generator=torch.Generator().manual_seed(5))[:, -1]
    with torch.no_grad():
        logits = peaked_gpt(prompt[:1])[0, -1]
    freq = torch.bincount(draws, minlength=40).double() / n
    right, wrong = torch.softmax(logits / T, -1).double(), torch.softmax(logits * T, -1).double()
    tv = lambda a, b: 0.5 * (a - b).abs().sum().item()                 # total variation distance
    assert tv(right, wrong) > 0.5            # the two hypotheses are far apart, so the test has power
    assert tv(freq, right) < 0.06            # sampling noise at n = 8000: about 0.03, never above 0.04 in 300 trials


def test_generate_uses_eval_mode_and_restores_training(gpt, prompt):
    gpt.train()
    a = gpt.generate(prompt, 6, generator=torch.Generator().manual_seed(6), use_cache=True)
    b = gpt.generate(prompt, 6, generator=torch.Generator().manual_seed(6), use_cache=False)
    assert torch.equal(a, b)          # dropout would make these differ
    assert gpt.training


@pytest.mark.parametrize("temperature, exc", [(0, ValueError), (-1.0, ValueError),
                                              (float("nan"), ValueError), ("hot", TypeError)])
def test_temperature_is_validated(gpt, prompt, temperature, exc):
    with pytest.raises(exc, match="temperature must be a positive number"):
        gpt.generate(prompt, 3, temperature=temperature)


def test_cache_cannot_grow_past_max_len(gpt):
    cache = gpt.new_cache()
    with torch.no_grad():
        gpt(torch.zeros(1, 20, dtype=torch.long), cache=cache)
        with pytest.raises(ValueError, match="20 cached positions.*max_len = 24"):
            gpt(torch.zeros(1, 5, dtype=torch.long), cache=cache)


# ------------------------------------------ GPT.from_hf against transformers' GPT-2 (random weights)
# transformers is imported by these tests only: the mutation runs fork a worker per mutant, and most
# of this module's tests need none of it.

def _hf():
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers

    transformers.logging.set_verbosity_error()
    return transformers


def gpt_config(**extra):
    return _hf().GPT2Config(vocab_size=60, n_positions=20, n_embd=32, n_layer=2, n_head=4,
                                   bos_token_id=0, eos_token_id=0, **extra)


@pytest.mark.parametrize("tied", [True, False])
def test_gpt_logits(tied):
    hf = make(_hf().GPT2LMHeadModel, gpt_config(tie_word_embeddings=tied))
    ours = GPT.from_hf(hf)
    assert (ours.lm_head.weight is ours.tok_emb.weight) == tied
    ids = torch.randint(0, 60, (2, 12), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        assert_close(ours(ids), hf(ids).logits)


def test_gpt_from_bare_model_ties_head():
    hf = make(_hf().GPT2Model, gpt_config())
    ours = GPT.from_hf(hf)
    ids = torch.randint(0, 60, (2, 7), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        h = hf(ids).last_hidden_state
        assert_close(ours(ids), h @ hf.wte.weight.T)


def test_gpt_right_padding_leaves_real_positions_unchanged():
    """Causal attention never looks right, so right padding cannot matter."""
    hf = make(_hf().GPT2LMHeadModel, gpt_config())
    ours = GPT.from_hf(hf)
    ids = torch.randint(1, 60, (2, 10), generator=torch.Generator().manual_seed(4))
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0
    ids[1, 5:] = 0
    with torch.no_grad():
        theirs = hf(ids, attention_mask=mask).logits
        logits = ours(ids)
    real = mask.bool()
    assert_close(logits[real], theirs[real])


def test_gpt_greedy_generation_matches_transformers():
    hf = make(_hf().GPT2LMHeadModel, gpt_config())
    ours = GPT.from_hf(hf)
    prompt = torch.tensor([[5, 17, 42]])
    expected = hf.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=8,
                           do_sample=False, pad_token_id=0)
    assert torch.equal(ours.generate(prompt, 8, top_k=1), expected)


# ---- mutation survivors: gpt ----
# Expected messages are written out by hand from the source's f-strings and the arguments passed.

@pytest.mark.parametrize("field", ["vocab_size", "d_model", "num_heads", "num_layers", "d_ff",
                                   "max_len"])
def test_gpt_config_checks_every_int_field(field):
    from course_lib.models.gpt import GPTConfig

    with pytest.raises(ValueError) as e:
        GPTConfig(**{field: 0})
    assert str(e.value) == f"GPTConfig.{field} must be an integer >= 1, got 0"


def test_gpt_unknown_setting_names_the_model():
    with pytest.raises(TypeError) as e:
        GPT(vocab_size=40, widht=8)
    assert str(e.value) == ("GPT got unknown setting(s) ['widht']; the fields of GPTConfig are "
                            "['vocab_size', 'd_model', 'num_heads', 'num_layers', 'd_ff', "
                            "'max_len', 'dropout', 'tie_weights', 'layer_norm_eps']")


def test_gpt_embedding_dropout_uses_the_config():
    model = GPT(vocab_size=40, d_model=32, num_heads=4, num_layers=1, d_ff=64, max_len=24,
                dropout=0.3)
    assert model.pos_emb.dropout.p == 0.3


@pytest.mark.parametrize("make_cache", [
    lambda g: tuple(g.new_cache()),                   # not a list
    lambda g: g.new_cache()[:1],                      # a list of the wrong length
    lambda g: [None, None, None],                     # right length, not KVCache objects
])
def test_gpt_bad_cache_is_rejected(gpt, prompt, make_cache):
    cache = make_cache(gpt)
    with pytest.raises(TypeError) as e:
        gpt(prompt, cache=cache)
    assert str(e.value) == ("cache must be a list of 3 KVCache objects (one per layer, from "
                            f"GPT.new_cache()), got {type(cache).__name__}")


def test_gpt_bad_token_id_names_input_ids(gpt):
    with pytest.raises(ValueError) as e:
        gpt(torch.tensor([[1, 40]]))
    assert str(e.value) == "input_ids must hold ids in [0, vocab_size) = [0, 40), got 40"


def test_gpt_cache_overflow_message(gpt):
    cache = gpt.new_cache()
    with torch.no_grad():
        gpt(torch.zeros(1, 20, dtype=torch.long), cache=cache)
        with pytest.raises(ValueError) as e:
            gpt(torch.zeros(1, 5, dtype=torch.long), cache=cache)
    assert str(e.value) == ("input_ids has length L = 5 after 20 cached positions; "
                            "offset + L = 25 exceeds max_len = 24")


@pytest.mark.parametrize("extra, shown", [
    ({"activation_function": "relu"}, "'relu'"),                 # only the activation is wrong
    ({"scale_attn_by_inverse_layer_idx": True}, "'gelu_new'"),   # only the layer-index scaling
    ({"scale_attn_weights": False}, "'gelu_new'"),               # only the missing 1/sqrt(d_k)
])
def test_gpt_from_hf_rejects_other_blocks(extra, shown):
    hf = make(_hf().GPT2LMHeadModel, gpt_config(**extra))
    with pytest.raises(ValueError) as e:
        GPT.from_hf(hf)
    assert str(e.value) == ("only GPT-2 blocks with tanh-GELU and 1/sqrt(d_k) scaling are "
                            f"supported, got activation_function={shown}")


@pytest.mark.parametrize("extra", [{"activation_function": "gelu_pytorch_tanh"},
                                   {"layer_norm_epsilon": 0.5}])
def test_gpt_from_hf_other_accepted_settings(extra):
    """PyTorch's tanh-GELU is accepted; a large LayerNorm eps reaches every LayerNorm."""
    hf = make(_hf().GPT2LMHeadModel, gpt_config(**extra))
    ours = GPT.from_hf(hf)
    ids = torch.randint(0, 60, (2, 9), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        assert_close(ours(ids), hf(ids).logits)
