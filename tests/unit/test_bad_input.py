"""Bad input gets a clear error that names the argument and what was expected.

Each row: a call that must fail, the exception type, and a regular
expression the message must match (the argument's name and the expectation).
"""

import numpy as np
import pytest
import torch
from torch import nn

from course_lib import scratch
from course_lib.models import to_numpy
from course_lib.models import (EncoderLayer, KVCache, LearnedPositionalEncoding, MultiHeadAttention,
                               Seq2Seq, SinusoidalPositionalEncoding, Transformer)

D, H = 8, 2
x = torch.zeros(2, 3, D)
X = np.zeros((2, 3, D))
W = np.eye(D)
mha_weights = dict(W_Q=W, W_K=W, W_V=W, W_O=W)


def mha(*args, **kwargs):
    return MultiHeadAttention(D, H)(*args, **kwargs)


def transformer():
    return Transformer(src_vocab=11, tgt_vocab=13, d_model=D, num_heads=H, num_encoder_layers=1,
                       num_decoder_layers=1, d_ff=16, max_len=20)


def layer_params(**changes):
    params = to_numpy.layer_params(EncoderLayer(D, H, 16))
    params.update(changes)
    return params


def full_cache():
    cache = KVCache()
    cache.update(torch.zeros(2, H, 3, D // H), torch.zeros(2, H, 3, D // H))
    return cache


CASES = {
    # multi-head attention: construction
    "mha d_model not divisible": (lambda: MultiHeadAttention(10, 3), ValueError,
                                  r"d_model=10 must be divisible by num_heads=3"),
    "mha zero heads": (lambda: MultiHeadAttention(D, 0), ValueError, r"num_heads must be an integer >= 1, got 0"),
    "mha negative dropout": (lambda: MultiHeadAttention(D, H, dropout=-0.1), ValueError,
                             r"dropout must be in \[0, 1\), got -0.1"),
    "split_heads not divisible": (lambda: scratch.split_heads(np.zeros((3, 10)), 3), ValueError,
                                  r"d_model=10 must be divisible by num_heads=3"),
    # multi-head attention: inputs
    "mha int tensor": (lambda: mha(x.long(), x, x), TypeError, r"query must be a floating-point tensor"),
    "mha wrong ndim": (lambda: mha(x[0], x, x), ValueError,
                       r"query must have 3 dimensions of shape \(B, L_q, d_model=8\), got shape \(3, 8\)"),
    "mha wrong last dim": (lambda: mha(x, x[..., :4], x), ValueError, r"key must have last dimension 8"),
    "mha key/value lengths": (lambda: mha(x, x, x[:, :2]), ValueError, r"key and value must share L_k"),
    "mha wrong dtype": (lambda: mha(x.double(), x, x), TypeError,
                        r"query must have the module's dtype torch.float32, got torch.float64"),
    "mha non-bool mask": (lambda: mha(x, x, x, mask=torch.ones(3, 3)), TypeError,
                          r"mask must be boolean with True meaning 'may attend'"),
    "mha mask shape": (lambda: mha(x, x, x, mask=torch.ones(2, 1, 3, 4, dtype=torch.bool)), ValueError,
                       r"mask must be broadcastable to \(B, num_heads, L_q, L_k\) = \(2, 2, 3, 3\), "
                       r"got \(2, 1, 3, 4\)"),
    "mha cache batch": (lambda: mha(x[:1], x[:1], x[:1], cache=full_cache()), ValueError,
                        r"new keys must match B, num_heads and d_k"),
    "scratch mha non-bool mask": (lambda: scratch.multi_head_attention(X, X, num_heads=H, mask=np.ones((3, 3)),
                                                                       **mha_weights),
                                  TypeError, r"mask must be boolean"),
    "scratch mha mask shape": (lambda: scratch.multi_head_attention(X, X, num_heads=H,
                                                                    mask=np.ones((4, 3), dtype=bool),
                                                                    **mha_weights),
                               ValueError, r"mask must be broadcastable to .*\(2, 2, 3, 3\).*got \(4, 3\)"),
    "scratch mha W_K shape": (lambda: scratch.multi_head_attention(X, X, W, np.eye(4), W, W, num_heads=H),
                              ValueError, r"W_K must have shape \(d_in, d_out\) with d_in=8"),
    "scratch mha NaN input": (lambda: scratch.multi_head_attention(X + np.nan, X, num_heads=H, **mha_weights),
                              ValueError, r"X_q contains NaN"),
    "from_torch wrong type": (lambda: MultiHeadAttention.from_torch(nn.Linear(D, D)), TypeError,
                              r"m must be a torch.nn.MultiheadAttention, got Linear"),
    "from_torch kdim": (lambda: MultiHeadAttention.from_torch(nn.MultiheadAttention(D, H, kdim=4)), ValueError,
                        r"m must have kdim == vdim == embed_dim"),
    # positional encoding
    "sinusoidal too long": (lambda: SinusoidalPositionalEncoding(D, max_len=2)(x), ValueError,
                            r"offset \+ L = 0 \+ 3 = 3 .*max_len=2"),
    "learned too long at offset": (lambda: LearnedPositionalEncoding(D, max_len=4)(x, offset=2), ValueError,
                                   r"offset \+ L = 2 \+ 3 = 5 .*max_len=4"),
    "pe wrong width": (lambda: SinusoidalPositionalEncoding(4)(x), ValueError,
                       r"x must have last dimension 4 of shape \(B, L, d_model=4\)"),
    "pe table zero length": (lambda: scratch.sinusoidal_positional_encoding(0, D), ValueError,
                             r"max_len must be an integer >= 1, got 0"),
    "pe float d_model": (lambda: scratch.sinusoidal_positional_encoding(4, 2.5), TypeError,
                         r"d_model must be an integer >= 1, got float 2.5"),
    "pe bad base": (lambda: scratch.sinusoidal_positional_encoding(4, D, base=1), ValueError,
                    r"base must be a number > 1, got 1"),
    # masks
    "causal negative L": (lambda: scratch.causal_mask(-1), ValueError, r"L must be an integer >= 1, got -1"),
    "padding too long": (lambda: scratch.padding_mask([3, 6], 4), ValueError,
                         r"lengths must lie in \[1, max_len=4\], got min 3 and max 6"),
    "padding float lengths": (lambda: scratch.padding_mask([1.5], 4), TypeError,
                              r"lengths must be a 1-D array of integers \(B,\)"),
    # layers
    "unknown activation (torch)": (lambda: EncoderLayer(D, H, 16, activation="tanh"), ValueError,
                                   r"activation must be one of \['gelu', 'gelu_tanh', 'relu'\], got 'tanh'"),
    "unknown activation (numpy)": (lambda: scratch.feed_forward(X, np.eye(D), None, np.eye(D), None, "swish"),
                                   ValueError, r"activation must be one of .*got 'swish'"),
    "layer dropout too big": (lambda: EncoderLayer(D, H, 16, dropout=1.5), ValueError,
                              r"dropout must be in \[0, 1\), got 1.5"),
    "layer negative eps": (lambda: EncoderLayer(D, H, 16, layer_norm_eps=-1.0), ValueError,
                           r"layer_norm_eps must be a positive number, got -1.0"),
    "layer wrong input": (lambda: EncoderLayer(D, H, 16)(x[..., :4]), ValueError,
                          r"x must have last dimension 8 of shape \(B, L, d_model=8\)"),
    "from_torch wrong layer": (lambda: EncoderLayer.from_torch(nn.TransformerDecoderLayer(D, H)), TypeError,
                               r"layer must be a torch.nn.TransformerEncoderLayer, got TransformerDecoderLayer"),
    "layer_norm gamma": (lambda: scratch.layer_norm(X, np.ones(4), np.zeros(D)), ValueError,
                         r"gamma must have shape \(d_model,\) = \(8,\), got \(4\)"),
    "layer_norm eps": (lambda: scratch.layer_norm(X, np.ones(D), np.zeros(D), eps=0), ValueError,
                       r"eps must be a positive number, got 0"),
    "params missing key": (lambda: scratch.encoder_layer(X, {k: v for k, v in layer_params().items()
                                                             if k != "norm2"}),
                           ValueError, r"params is missing the key\(s\) \['norm2'\]"),
    "params not a dict": (lambda: scratch.encoder_layer(X, [1, 2]), TypeError,
                          r"params must be a dict \(see layer_params\), got list"),
    "layer_params wrong type": (lambda: to_numpy.layer_params(nn.Linear(2, 2)), TypeError,
                                r"layer must be an EncoderLayer, DecoderLayer.*got Linear"),
    # additive attention
    "additive W_h rows": (lambda: scratch.additive_attention(np.zeros(3), np.zeros((5, 4)), np.zeros((3, 2)),
                                                             np.zeros((3, 2)), np.zeros(2)),
                          ValueError, r"W_h must have shape \(d_h=4, d_a\), got \(3, 2\)"),
    "additive v shape": (lambda: scratch.additive_attention(np.zeros(3), np.zeros((5, 4)), np.zeros((3, 2)),
                                                            np.zeros((4, 2)), np.zeros(3)),
                         ValueError, r"W_s, W_h and v must share d_a.*expected v of shape \(d_a,\)"),
    # whole models
    "transformer float ids": (lambda: transformer()(torch.zeros(2, 3), torch.zeros(2, 3).long()), TypeError,
                              r"src must be an integer tensor of shape \(B, L\)"),
    "transformer id out of vocab": (lambda: transformer()(torch.full((2, 3), 11), torch.ones(2, 3).long()),
                                    ValueError, r"src must hold ids in \[0, vocab_size\) = \[0, 11\)"),
    "transformer decode too long": (lambda: transformer().greedy_decode(torch.ones(2, 3).long(), 1, 2, 100),
                                    ValueError, r"max_len=100 exceeds the positional table's max_len=20"),
    "transformer bad pad_id": (lambda: Transformer(src_vocab=11, tgt_vocab=5, d_model=D, num_heads=H,
                                                   num_encoder_layers=1, num_decoder_layers=1, d_ff=16,
                                                   pad_id=7), ValueError,
                               r"pad_id must be an integer in \[0, min\(src_vocab, tgt_vocab\)\) = \[0, 5\), got 7"),
    "seq2seq eos out of vocab": (lambda: Seq2Seq(11, 13, 4, 6, False).greedy_decode(torch.ones(2, 3).long(),
                                                                                   1, 13, 5),
                                 ValueError, r"eos_id must be an integer in \[0, vocab_out\) = \[0, 13\), got 13"),
    "seq2seq leading pad": (lambda: Seq2Seq(11, 13, 4, 6, True)(torch.zeros(2, 3).long(),
                                                                torch.ones(2, 3).long()),
                            ValueError, r"src must have at least one real token per row"),
}


@pytest.mark.parametrize("call, error, message", CASES.values(), ids=CASES.keys())
def test_bad_input_is_rejected_clearly(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_the_table_is_long_enough():
    assert len(CASES) >= 25
