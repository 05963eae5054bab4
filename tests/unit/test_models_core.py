"""``course_lib.models`` against ``torch.nn`` (weights copied with ``from_torch``).

Our masks use True = may attend; ``torch.nn``'s use True = blocked, hence ``~``.
"""

import math

import numpy as np
import pytest
import torch
from torch import nn

from course_lib import scratch
from course_lib.models import (AdditiveAttention, DecoderLayer, EncoderLayer, LearnedPositionalEncoding,
                               MultiHeadAttention, Seq2Seq, SinusoidalPositionalEncoding, Transformer)

B, L_Q, L_K, D, H, D_FF = 2, 4, 5, 8, 2, 16
ATOL = 1e-5


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


MASKS = {
    "none": None,
    "padding": torch.tensor([[True] * L_K, [True] * 3 + [False] * 2])[:, None, None, :],  # (B, 1, 1, L_K)
    "per-query": (randn(L_Q, L_K, seed=9) > -0.3) | torch.eye(L_Q, L_K, dtype=torch.bool),
}


def torch_attn_mask(mask):
    """Our mask as ``nn.MultiheadAttention``'s ``(B*H, L_q, L_k)`` blocked-mask."""
    return None if mask is None else ~mask.expand(B, H, L_Q, L_K).reshape(B * H, L_Q, L_K)


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("mask_name", MASKS)
def test_multi_head_attention_matches_torch(mask_name, need_weights):
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(D, H, batch_first=True).eval()
    ours = MultiHeadAttention.from_torch(theirs).eval()
    q, kv = randn(B, L_Q, D, seed=1), randn(B, L_K, D, seed=2)
    mask = MASKS[mask_name]
    with torch.no_grad():
        expected, expected_w = theirs(q, kv, kv, attn_mask=torch_attn_mask(mask),
                                      average_attn_weights=False)
        out, w = ours(q, kv, kv, mask=mask, need_weights=need_weights)
    torch.testing.assert_close(out, expected, atol=ATOL, rtol=ATOL)
    if need_weights:
        torch.testing.assert_close(w, expected_w, atol=ATOL, rtol=ATOL)
    else:
        assert w is None


def test_from_torch_without_bias_matches_torch():
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(D, H, bias=False, batch_first=True).eval()
    ours = MultiHeadAttention.from_torch(theirs)
    assert ours.q_proj.bias is None
    x = randn(B, L_Q, D)
    with torch.no_grad():
        torch.testing.assert_close(ours(x, x, x)[0], theirs(x, x, x)[0], atol=ATOL, rtol=ATOL)


def test_fast_and_explicit_paths_agree_and_fully_masked_rows_are_zero():
    torch.manual_seed(0)
    mha = MultiHeadAttention(D, H, bias=False).eval()          # no bias: a blocked row outputs exactly 0
    q, kv = randn(B, L_Q, D, seed=1), randn(B, L_K, D, seed=2)
    mask = torch.ones(B, 1, L_Q, L_K, dtype=torch.bool)
    mask[0, 0, 1] = False                                       # query 1 of sequence 0 sees nothing
    fast, _ = mha(q, kv, kv, mask=mask)
    explicit, w = mha(q, kv, kv, mask=mask, need_weights=True)
    torch.testing.assert_close(fast, explicit, atol=ATOL, rtol=ATOL)
    assert torch.isfinite(fast).all()
    assert torch.equal(fast[0, 1], torch.zeros(D)) and torch.equal(w[0, :, 1], torch.zeros(H, L_K))
    torch.testing.assert_close(w.sum(-1)[1], torch.ones(H, L_Q))
    fast.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in mha.parameters())


def test_dropout_acts_in_training_only():
    mha = MultiHeadAttention(D, H, dropout=0.5)
    x = randn(B, L_Q, D)
    assert not torch.equal(mha(x, x, x)[0], mha(x, x, x)[0])
    mha.eval()
    assert torch.equal(mha(x, x, x)[0], mha(x, x, x)[0])


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_matches_torch(norm_first, activation):
    torch.manual_seed(0)
    theirs = nn.TransformerEncoderLayer(D, H, D_FF, dropout=0.1, activation=activation,
                                        batch_first=True, norm_first=norm_first, layer_norm_eps=1e-6).eval()
    ours = EncoderLayer.from_torch(theirs).eval()
    assert (ours.activation, ours.norm_first, ours.norm1.eps) == (activation, norm_first, 1e-6)
    x, padding = randn(B, L_K, D), MASKS["padding"]
    with torch.no_grad():
        expected = theirs(x, src_key_padding_mask=~padding[:, 0, 0])
        got, w = ours(x, mask=padding, need_weights=True)
    torch.testing.assert_close(got, expected, atol=ATOL, rtol=ATOL)
    assert w.shape == (B, H, L_K, L_K) and torch.all(w[1, :, :, 3:] == 0)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch(norm_first):
    torch.manual_seed(0)
    theirs = nn.TransformerDecoderLayer(D, H, D_FF, batch_first=True, norm_first=norm_first,
                                        activation=nn.GELU(approximate="tanh")).eval()
    ours = DecoderLayer.from_torch(theirs).eval()
    assert ours.activation == "gelu_tanh"
    y, memory, padding = randn(B, L_Q, D, seed=1), randn(B, L_K, D, seed=2), MASKS["padding"]
    causal = torch.ones(L_Q, L_Q, dtype=torch.bool).tril()
    with torch.no_grad():
        expected = theirs(y, memory, tgt_mask=~causal, memory_key_padding_mask=~padding[:, 0, 0])
        got, (w_self, w_cross) = ours(y, memory, self_mask=causal, cross_mask=padding, need_weights=True)
    torch.testing.assert_close(got, expected, atol=ATOL, rtol=ATOL)
    assert w_self.shape == (B, H, L_Q, L_Q) and w_cross.shape == (B, H, L_Q, L_K)


def test_positional_encodings_add_the_table_at_an_offset():
    pe = SinusoidalPositionalEncoding(6, max_len=10)
    out = pe(torch.zeros(1, 3, 6), offset=4)
    for pos in range(3):
        for i in range(0, 6, 2):
            angle = (pos + 4) / 10000 ** (i / 6)
            assert out[0, pos, i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert out[0, pos, i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    learned = LearnedPositionalEncoding(6, max_len=10)
    x = randn(2, 3, 6)
    torch.testing.assert_close(learned(x, offset=2), x + learned.embedding.weight[2:5])


def make_batch(vocab=11, L_s=7, L_t=6):
    src = torch.randint(3, vocab, (B, L_s), generator=torch.Generator().manual_seed(0))
    src[1, 4:] = 0                                        # pad_id = 0
    tgt_in = torch.randint(3, vocab, (B, L_t), generator=torch.Generator().manual_seed(1))
    return src, tgt_in


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_shapes_greedy_decode_and_cross_attention(norm_first):
    torch.manual_seed(0)
    model = Transformer(src_vocab=11, tgt_vocab=13, d_model=D, num_heads=H, num_encoder_layers=2,
                        num_decoder_layers=2, d_ff=D_FF, max_len=32, norm_first=norm_first).eval()
    src, tgt_in = make_batch()
    assert model(src, tgt_in).shape == (B, 6, 13)
    out = model.greedy_decode(src, sos_id=1, eos_id=2, max_len=9)
    assert out.dtype == torch.long and out.shape[0] == B and 1 <= out.shape[1] <= 9
    for row in out.tolist():                              # nothing but padding after <eos>
        if 2 in row:
            assert all(tok == 0 for tok in row[row.index(2) + 1:])
    w = model.cross_attention_weights(src, tgt_in)
    assert w.shape == (2, B, H, 6, 7)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, B, H, 6))
    assert torch.all(w[:, 1, ..., 4:] == 0)               # padded source positions get no attention


def test_transformer_trains_a_little():
    torch.manual_seed(0)
    model = Transformer(src_vocab=11, tgt_vocab=11, d_model=D, num_heads=H, num_encoder_layers=1,
                        num_decoder_layers=1, d_ff=D_FF, dropout=0.0, max_len=16)
    src, _ = make_batch()
    tgt = torch.cat([torch.ones(B, 1, dtype=torch.long), src], dim=1)     # learn to copy
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        loss = nn.functional.cross_entropy(model(src, tgt[:, :-1]).flatten(0, 1), tgt[:, 1:].flatten(),
                                           ignore_index=0)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.parametrize("attention", [False, True])
def test_seq2seq_shapes_and_weights(attention):
    torch.manual_seed(0)
    model = Seq2Seq(11, 13, emb=8, hidden=12, attention=attention)
    src, tgt_in = make_batch()
    logits, w = model(src, tgt_in)
    assert logits.shape == (B, 6, 13)
    tokens, w_greedy = model.greedy_decode(src, sos_id=1, eos_id=2, max_len=5)
    assert tokens.dtype == torch.long and tokens.shape[0] == B and tokens.shape[1] <= 5
    if not attention:
        assert w is None and w_greedy is None
        return
    assert w.shape == (B, 6, 7) and w_greedy.shape == (B, tokens.shape[1], 7)
    torch.testing.assert_close(w.sum(-1), torch.ones(B, 6))
    assert torch.all(w[1, :, 4:] == 0)


def test_seq2seq_fixed_context_is_the_state_at_the_last_real_token():
    """Without attention the context is h_L, taken before the padding."""
    torch.manual_seed(0)
    model = Seq2Seq(11, 13, emb=8, hidden=12, attention=False)
    src, tgt_in = make_batch()
    H_states, h_last, _ = model.encode(src)
    torch.testing.assert_close(h_last[1], H_states[1, 3])   # row 1 has 4 real tokens


def test_additive_attention_module_matches_scratch():
    torch.manual_seed(0)
    attn = AdditiveAttention(d_s=3, d_h=4, d_a=5)
    s, Hs = randn(B, 3, seed=1), randn(B, 6, 4, seed=2)
    mask = torch.ones(B, 6, dtype=torch.bool)
    mask[0, 5] = False
    context, w = attn(s, Hs, mask)
    c_np, w_np = scratch.additive_attention(s.numpy(), Hs.numpy(), attn.W_s.weight.detach().T.numpy(),
                                            attn.W_h.weight.detach().T.numpy(),
                                            attn.v.weight.detach()[0].numpy(), mask=mask.numpy())
    np.testing.assert_allclose(context.detach().numpy(), c_np, atol=ATOL)
    np.testing.assert_allclose(w.detach().numpy(), w_np, atol=ATOL)


# ---- mutation survivors: _activation_name ----

@pytest.mark.parametrize("activation,name", [(nn.GELU(), "gelu"), (nn.GELU(approximate="tanh"), "gelu_tanh"),
                                             (nn.ReLU(), "relu"), ("gelu", "gelu"), ("relu", "relu")])
def test_from_torch_reads_the_activation_module_or_function(activation, name):
    torch.manual_seed(0)
    theirs = nn.TransformerEncoderLayer(D, H, D_FF, activation=activation, batch_first=True).eval()
    ours = EncoderLayer.from_torch(theirs).eval()
    assert ours.activation == name
    x = randn(B, L_K, D)
    # with gradients on: torch's no-grad fast path runs a tanh GELU module as the exact GELU
    torch.testing.assert_close(ours(x)[0], theirs(x), atol=ATOL, rtol=ATOL)


def test_from_torch_names_an_activation_it_cannot_copy_whole():
    with pytest.raises(ValueError) as err:
        EncoderLayer.from_torch(nn.TransformerEncoderLayer(D, H, D_FF, activation=nn.Tanh()))
    assert str(err.value) == "layer.activation must be ReLU or GELU, got Tanh()"


# ---- mutation survivors: _Layer.from_torch ----

@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("ours_cls,theirs_cls", [(EncoderLayer, nn.TransformerEncoderLayer),
                                                 (DecoderLayer, nn.TransformerDecoderLayer)])
def test_from_torch_copies_dropout_bias_eps_and_dtype(ours_cls, theirs_cls, norm_first):
    """A float64 layer without biases, with dropout 0.25 and layer-norm eps 0.5: the copy has all four."""
    torch.manual_seed(0)
    theirs = theirs_cls(D, H, D_FF, dropout=0.25, bias=False, layer_norm_eps=0.5, norm_first=norm_first,
                        batch_first=True).double()
    ours = ours_cls.from_torch(theirs)
    decoder = ours_cls is DecoderLayer
    drops = [ours.dropout, ours.dropout1, ours.dropout2] + ([ours.dropout3] if decoder else [])
    norms = [ours.norm1, ours.norm2] + ([ours.norm3] if decoder else [])
    assert [d.p for d in drops] == [0.25] * len(drops)
    assert [n.eps for n in norms] == [0.5] * len(norms)
    assert all(p.dtype == torch.float64 for p in ours.parameters())
    assert ours.linear1.bias is None and ours.linear2.bias is None and ours.norm1.bias is None
    theirs.eval(), ours.eval()
    x, memory = randn(B, L_Q, D, seed=1).double(), randn(B, L_K, D, seed=2).double()
    with torch.no_grad():
        got, expected = (ours(x, memory)[0], theirs(x, memory)) if decoder else (ours(x)[0], theirs(x))
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, expected, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("cls,layer,message", [
    (EncoderLayer, nn.TransformerDecoderLayer(D, H),
     "layer must be a torch.nn.TransformerEncoderLayer, got TransformerDecoderLayer"),
    (DecoderLayer, nn.Linear(2, 2), "layer must be a torch.nn.TransformerDecoderLayer, got Linear"),
])
def test_from_torch_names_a_wrong_layer_whole(cls, layer, message):
    with pytest.raises(TypeError) as info:
        cls.from_torch(layer)
    assert str(info.value) == message


# ---- mutation survivors: _Layer.__init__, EncoderLayer.__init__, DecoderLayer.__init__ ----

def _settings(layer):
    decoder = isinstance(layer, DecoderLayer)
    attns = [layer.self_attn] + ([layer.cross_attn] if decoder else [])
    norms = [layer.norm1, layer.norm2] + ([layer.norm3] if decoder else [])
    drops = [layer.dropout, layer.dropout1, layer.dropout2] + ([layer.dropout3] if decoder else [])
    return {
        "layer": (layer.d_model, layer.activation, layer.norm_first),
        "attention": [(a.d_model, a.num_heads, a.dropout, a.q_proj.bias is None, a.out_proj.bias is None)
                      for a in attns],
        "linear": [tuple(layer.linear1.weight.shape), layer.linear1.bias is None,
                   tuple(layer.linear2.weight.shape), layer.linear2.bias is None],
        "norms": [(n.normalized_shape, n.eps, n.weight is None, n.bias is None) for n in norms],
        "dropout": [d.p for d in drops],
    }


@pytest.mark.parametrize("cls,n", [(EncoderLayer, 1), (DecoderLayer, 2)])
def test_a_layer_built_directly_has_every_setting_it_is_given(cls, n):
    """n attentions; n + 1 norms; n + 2 dropout modules."""
    layer = cls(D, H, D_FF, dropout=0.25, activation="gelu_tanh", norm_first=1, layer_norm_eps=0.5, bias=False)
    assert _settings(layer) == {"layer": (D, "gelu_tanh", True),
                                "attention": [(D, H, 0.25, True, True)] * n,
                                "linear": [(D_FF, D), True, (D, D_FF), True],
                                "norms": [((D,), 0.5, False, True)] * (n + 1),
                                "dropout": [0.25] * (n + 2)}
    assert layer.norm_first is True


@pytest.mark.parametrize("cls,n", [(EncoderLayer, 1), (DecoderLayer, 2)])
def test_a_layer_has_the_documented_defaults(cls, n):
    """dropout 0.1, ReLU, post-LN, eps 1e-5, biases (as in torch.nn.TransformerEncoderLayer)."""
    assert _settings(cls(D, H, D_FF)) == {"layer": (D, "relu", False),
                                          "attention": [(D, H, 0.1, False, False)] * n,
                                          "linear": [(D_FF, D), False, (D, D_FF), False],
                                          "norms": [((D,), 1e-5, False, False)] * (n + 1),
                                          "dropout": [0.1] * (n + 2)}


@pytest.mark.parametrize("cls", [EncoderLayer, DecoderLayer])
@pytest.mark.parametrize("kwargs,err,message", [
    ({"d_model": 0}, ValueError, "d_model must be an integer >= 1, got 0"),
    ({"d_model": 8.0}, TypeError, "d_model must be an integer >= 1, got float 8.0"),
    ({"d_ff": 0}, ValueError, "d_ff must be an integer >= 1, got 0"),
    ({"dropout": 1.5}, ValueError, "dropout must be in [0, 1), got 1.5"),
    ({"activation": "tanh"}, ValueError, "activation must be one of ['gelu', 'gelu_tanh', 'relu'], got 'tanh'"),
    ({"layer_norm_eps": -1.0}, ValueError, "layer_norm_eps must be a positive number, got -1.0"),
])
def test_a_layer_names_a_bad_setting_whole(cls, kwargs, err, message):
    with pytest.raises(err) as info:
        cls(**{"d_model": D, "num_heads": H, "d_ff": D_FF, **kwargs})
    assert str(info.value) == message


# ---- mutation survivors: _Layer._check_x, EncoderLayer.forward, DecoderLayer.forward ----

@pytest.mark.parametrize("call,err,message", [
    (lambda enc, dec: enc(randn(B, L_K, 4)), ValueError,
     "x must have last dimension 8 of shape (B, L, d_model=8), got shape (2, 5, 4)"),
    (lambda enc, dec: enc(randn(L_K, D)), ValueError,
     "x must have 3 dimensions of shape (B, L, d_model=8), got shape (5, 8)"),
    (lambda enc, dec: enc(torch.zeros(B, L_K, D, dtype=torch.long)), TypeError,
     "x must be a floating-point tensor of shape (B, L, d_model=8), got dtype torch.int64"),
    (lambda enc, dec: dec(randn(B, L_Q, 4), randn(B, L_K, D)), ValueError,
     "y must have last dimension 8 of shape (B, L_t, d_model=8), got shape (2, 4, 4)"),
    (lambda enc, dec: dec(randn(B, L_Q, D), randn(L_K, D)), ValueError,
     "memory must have 3 dimensions of shape (B, L_s, d_model=8), got shape (5, 8)"),
])
def test_layers_name_a_wrong_input_whole(call, err, message):
    with pytest.raises(err) as info:
        call(EncoderLayer(D, H, D_FF), DecoderLayer(D, H, D_FF))
    assert str(info.value) == message


def test_layers_return_no_weights_unless_asked():
    enc, dec = EncoderLayer(D, H, D_FF).eval(), DecoderLayer(D, H, D_FF).eval()
    y, memory = randn(B, L_Q, D, seed=1), randn(B, L_K, D, seed=2)
    assert enc(y)[1] is None and dec(y, memory)[1] is None


def test_decoder_layer_weights_follow_each_mask():
    """Self-attention weights are 0 above the diagonal (causal mask), cross-attention weights 0 on the
    padded source positions of sequence 1; each row of both sums to 1."""
    dec = DecoderLayer(D, H, D_FF).eval()
    y, memory, padding = randn(B, L_Q, D, seed=1), randn(B, L_K, D, seed=2), MASKS["padding"]
    causal = torch.ones(L_Q, L_Q, dtype=torch.bool).tril()
    with torch.no_grad():
        _, (w_self, w_cross) = dec(y, memory, self_mask=causal, cross_mask=padding, need_weights=True)
    assert torch.equal(w_self == 0, ~causal.expand(B, H, L_Q, L_Q))
    assert torch.all(w_cross[1, ..., 3:] == 0) and torch.all(w_cross[0] > 0) and torch.all(w_cross[1, ..., :3] > 0)
    torch.testing.assert_close(w_self.sum(-1), torch.ones(B, H, L_Q))
    torch.testing.assert_close(w_cross.sum(-1), torch.ones(B, H, L_Q))


@pytest.mark.parametrize("ours_cls,theirs_cls", [(EncoderLayer, nn.TransformerEncoderLayer),
                                                 (DecoderLayer, nn.TransformerDecoderLayer)])
def test_a_layer_fed_one_position_at_a_time_through_a_cache_is_torchs_causal_layer(ours_cls, theirs_cls):
    """Each new position attends to the cached earlier ones: torch's layer with a causal mask."""
    from course_lib.models import KVCache

    torch.manual_seed(0)
    theirs = theirs_cls(D, H, D_FF, batch_first=True).eval()
    ours = ours_cls.from_torch(theirs).eval()
    y, memory, padding = randn(B, L_Q, D, seed=1), randn(B, L_K, D, seed=2), MASKS["padding"]
    blocked = ~torch.ones(L_Q, L_Q, dtype=torch.bool).tril()
    cache, rows = KVCache(), []
    with torch.no_grad():
        for t in range(L_Q):
            if ours_cls is DecoderLayer:
                rows.append(ours(y[:, t:t + 1], memory, cross_mask=padding, cache=cache)[0])
            else:
                rows.append(ours(y[:, t:t + 1], cache=cache)[0])
        if ours_cls is DecoderLayer:
            expected = theirs(y, memory, tgt_mask=blocked, memory_key_padding_mask=~padding[:, 0, 0])
        else:
            expected = theirs(y, src_mask=blocked)
    assert len(cache) == L_Q
    torch.testing.assert_close(torch.cat(rows, dim=1), expected, atol=ATOL, rtol=ATOL)
