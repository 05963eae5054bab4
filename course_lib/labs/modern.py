"""Chapter 11's lab (``ch11_attention_today``): rotary and ALiBi positions on chapter 4's
previous-token task, and pre-LN against post-LN.

**Extrapolation.** Chapter 4 (:mod:`course_lib.labs.extrapolation`) trains
:class:`~course_lib.labs.extrapolation.PositionProbe` on previous-token
sequences of length 16 and measures the accuracy at every position up to
64, for sinusoidal and learned positions. This module adds two variants to
the *same* experiment, :class:`RelativeProbe`: no position vector is added
to the input; instead the layer's attention rotates queries and keys
(``"rope"``, :class:`~course_lib.models.rope.RotaryEmbedding`) or adds
ALiBi's distance penalty to the scores (``"alibi"``,
:func:`~course_lib.scratch.alibi.alibi_bias`). Everything else is chapter
4's: the encoder layer's sizes, the data, the training function
(:func:`~course_lib.labs.extrapolation.train_probe`) and the evaluation
(:func:`~course_lib.labs.extrapolation.accuracy_by_position`). One recipe per
variant, ``ch09-probe-<kind>``, trains all four with the same seed.

**Normalisation placement.** :func:`train_norm_stack` trains a stack of
:class:`~course_lib.models.layers.EncoderLayer` s with ``norm_first`` True
(pre-LN) or False (post-LN) at a constant learning rate, no warm-up, on the
same task; recipes ``ch09-preln`` and ``ch09-postln``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .. import repro
from .._validate import check_choice, check_positive_int
from ..models import EncoderLayer, LearnedPositionalEncoding, SinusoidalPositionalEncoding
from ..models.attention import MultiHeadAttention, masked_softmax
from ..models.rope import RotaryEmbedding
from ..scratch.alibi import alibi_slopes
from ..training import logged_curve, train
from .extrapolation import PositionProbe, accuracy_by_position, previous_token_batch, train_probe

__all__ = ["KINDS", "PROBE", "RelativeAttention", "RelativeProbe", "make_probe", "probe_spans",
           "train_probe_live", "load_probe", "make_norm_stack", "held_out_loss",
           "NormStack", "NORM", "norm_batches", "train_norm_stack", "norm_loss"]

#: The four positional schemes, in the chapter's order.
KINDS = ("sinusoidal", "learned", "rope", "alibi")

#: Chapter 4's probe settings, shared by every variant.
PROBE = dict(vocab_size=16, d_model=32, num_heads=2, d_ff=64, max_len=128, L_train=16, L_test=64,
             steps=200, batch_size=32, lr=1e-2, seed=0, eval_n=1000, eval_seed=1)

#: Position ranges the metrics average over: (name, first, end).
_SPANS = (("seen", 1, 16), ("next", 16, 18), ("mid", 18, 32), ("far", 32, 64))


class RelativeAttention(MultiHeadAttention):
    """Multi-head self-attention with the position inside the scores: RoPE or ALiBi.

    Same parameters as :class:`~course_lib.models.attention.MultiHeadAttention`;
    ``"rope"`` rotates each head's queries and keys by their positions before
    ``Q Kᵀ``; ``"alibi"`` adds ``−m_h · (i − j)`` to head ``h``'s scaled
    scores. Nothing is added to the input. Chapter 11.
    """

    def __init__(self, d_model: int, num_heads: int, positional: str):
        super().__init__(d_model, num_heads, dropout=0.0, bias=True)
        self.positional = check_choice(positional, "positional", ("rope", "alibi"))
        if positional == "rope":
            self.rope = RotaryEmbedding(self.d_k, max_len=128)
        else:
            self.register_buffer("slopes", torch.from_numpy(alibi_slopes(num_heads)), persistent=False)

    def forward(self, query, key, value, mask=None, need_weights: bool = False, cache=None):
        """Self-attention of ``query`` (``key`` and ``value`` must be the same tensor)."""
        self._check_inputs(query, key, value)
        Q = self.split_heads(self.q_proj(query))           # (B, nh, L, d_k)
        K = self.split_heads(self.k_proj(key))             # (B, nh, L, d_k)
        V = self.split_heads(self.v_proj(value))           # (B, nh, L, d_k)
        L = Q.shape[-2]
        if self.positional == "rope":
            Q, K = self.rope(Q), self.rope(K)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)   # (B, nh, L, L)
        if self.positional == "alibi":
            pos = torch.arange(L, device=Q.device)
            distance = (pos[:, None] - pos[None, :]).to(scores.dtype)     # (L, L): i − j
            scores = scores - self.slopes.to(scores.dtype)[:, None, None] * distance.abs()
        weights = masked_softmax(scores, mask)              # (B, nh, L, L)
        out = self.out_proj(self.merge_heads(weights @ V))  # (B, L, d_model)
        return out, (weights if need_weights else None)


class RelativeProbe(PositionProbe):
    """Chapter 4's :class:`~course_lib.labs.extrapolation.PositionProbe` with RoPE or ALiBi.

    The token embedding goes in without a position vector; the encoder
    layer's self-attention is a :class:`RelativeAttention`. Sizes, causal
    mask, head and the training and evaluation functions are chapter 4's.

    Args:
        positional: ``"rope"`` or ``"alibi"``; the other arguments as for
            ``PositionProbe``. Chapter 11.
    """

    def __init__(self, positional: str, vocab_size: int = 16, d_model: int = 32,
                 num_heads: int = 2, d_ff: int = 64, max_len: int = 128, causal: bool = True):
        nn.Module.__init__(self)
        self.causal = bool(causal)
        self.positional = check_choice(positional, "positional", ("rope", "alibi"))
        vocab_size = check_positive_int(vocab_size, "vocab_size")
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pe = nn.Identity()                              # no position vector is added
        self.layer = EncoderLayer(d_model, num_heads, d_ff, dropout=0.0)
        self.layer.self_attn = RelativeAttention(d_model, num_heads, positional)
        self.head = nn.Linear(d_model, vocab_size)


def make_probe(kind: str) -> PositionProbe:
    """A fresh probe of one of :data:`KINDS` with chapter 4's sizes (seeded by the caller). Chapter 11."""
    check_choice(kind, "kind", KINDS)
    sizes = {k: PROBE[k] for k in ("vocab_size", "d_model", "num_heads", "d_ff", "max_len")}
    return (PositionProbe if kind in ("sinusoidal", "learned") else RelativeProbe)(kind, **sizes)


def probe_spans(acc: np.ndarray) -> dict:
    """Mean accuracy over position ranges: ``seen`` 1–15, ``next`` 16–17, ``mid`` 18–31, ``far`` 32–63. Chapter 11."""
    return {name: float(np.mean(acc[lo:hi])) for name, lo, hi in _SPANS}


def train_probe_live(kind: str, steps: int, reference: dict | None = None, log_every: int = 50):
    """The first ``steps`` steps of recipe ``ch09-probe-<kind>``, with progress lines.

    Same seed, model and batches as :func:`~course_lib.labs.extrapolation.train_probe`
    (the batches are drawn in order from one generator, so the first
    ``steps`` are the recipe's first ``steps``); ``reference`` is the
    recipe's stored curve, against which each progress line is banded.
    Returns ``(model, losses)``. Chapter 11.
    """
    steps = check_positive_int(steps, "steps")
    torch.manual_seed(PROBE["seed"])
    model = make_probe(kind)
    V = PROBE["vocab_size"]
    g = torch.Generator().manual_seed(PROBE["seed"])
    batches = [previous_token_batch(PROBE["batch_size"], PROBE["L_train"], V, g) for _ in range(steps)]

    def loss_fn(model, batch):
        ids, targets = batch
        return F.cross_entropy(model(ids)[:, 1:].reshape(-1, V), targets[:, 1:].reshape(-1))

    losses = train(model, batches.__getitem__, loss_fn, steps, PROBE["lr"], seed=None, clip=None,
                   log_every=log_every, reference=reference, name=kind)
    return model, losses


def load_probe(kind: str) -> PositionProbe:
    """The trained probe of checkpoint ``ch09-probe-<kind>``, in float64, for evaluation. Chapter 11."""
    model = make_probe(kind)
    repro.load_checkpoint(f"ch09-probe-{kind}", model, dtype=torch.float64)
    return model


def _probe_recipe(kind: str):
    def fn():
        torch.manual_seed(PROBE["seed"])
        model = make_probe(kind)
        losses = train_probe(model, L=PROBE["L_train"], steps=PROBE["steps"], batch_size=PROBE["batch_size"],
                             lr=PROBE["lr"], seed=PROBE["seed"])
        eval_model = make_probe(kind)
        eval_model.load_state_dict(model.state_dict())
        eval_model.double().eval()
        acc = accuracy_by_position(eval_model, PROBE["L_test"], n=PROBE["eval_n"], seed=PROBE["eval_seed"])
        return {"model": model, "metrics": probe_spans(acc), "curve": logged_curve(losses, 50),
                "config": {"kind": kind, **PROBE}}
    fn.__name__ = f"probe_{kind}"
    return fn


for _kind in KINDS:
    repro.recipe(f"ch09-probe-{_kind}", chapter="ch09",
                 tolerance={"seen": 0.02, "next": 0.15, "mid": 0.1, "far": 0.1},
                 data="chapter 4's previous-token task: random sequences of 16 tokens, length 16 "
                      "(train), 1000 sequences of length 64 (test) · 第 4 章的前一词元任务")(_probe_recipe(_kind))


# --------------------------------------------------------------------------- pre-LN vs post-LN

#: The normalisation experiment's settings.
NORM = dict(vocab_size=16, d_model=32, num_heads=2, d_ff=64, num_layers=6, L=16, steps=300,
            batch_size=32, lr=3e-2, seed=0, log_every=25)


class NormStack(nn.Module):
    """Embedding + sinusoidal positions -> ``num_layers`` causal encoder layers -> head.

    Args:
        norm_first: True for pre-LN (GPT-2, LLaMA), False for post-LN (2017).

    Input ``(B, L)`` token ids, output ``(B, L, vocab_size)``. Chapter 11.
    """

    def __init__(self, norm_first: bool, vocab_size: int = 16, d_model: int = 32, num_heads: int = 2,
                 d_ff: int = 64, num_layers: int = 6, max_len: int = 128):
        super().__init__()
        self.norm_first = bool(norm_first)
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pe = SinusoidalPositionalEncoding(d_model, max_len)
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, dropout=0.0, norm_first=norm_first)
                                    for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()   # pre-LN needs a final norm
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        L = ids.shape[1]
        mask = torch.ones(L, L, dtype=torch.bool).tril()
        h = self.pe(self.embed(ids))
        for layer in self.layers:
            h, _ = layer(h, mask)
        return self.head(self.norm(h))


def norm_batches(steps: int, seed: int = 0):
    """``steps`` previous-token batches of :data:`NORM`'s size, drawn from ``seed``. Chapter 11."""
    g = torch.Generator().manual_seed(seed)
    return [previous_token_batch(NORM["batch_size"], NORM["L"], NORM["vocab_size"], g) for _ in range(steps)]


def norm_loss(model, batch):
    """Cross-entropy of the previous-token targets (position 0 has none). Chapter 11."""
    ids, targets = batch
    V = NORM["vocab_size"]
    return F.cross_entropy(model(ids)[:, 1:].reshape(-1, V), targets[:, 1:].reshape(-1))


def make_norm_stack(norm_first: bool) -> NormStack:
    """A fresh :class:`NormStack` with :data:`NORM`'s sizes (seeded by the caller). Chapter 11."""
    return NormStack(norm_first, NORM["vocab_size"], NORM["d_model"], NORM["num_heads"], NORM["d_ff"],
                     NORM["num_layers"])


def train_norm_stack(norm_first: bool, steps: int | None = None, reference: dict | None = None,
                     log_every: int | None = None, name: str = ""):
    """Train a :class:`NormStack` from seed :data:`NORM` ``["seed"]`` with Adam, no warm-up.

    Returns ``(model, losses)``. Chapter 11.
    """
    steps = NORM["steps"] if steps is None else steps
    torch.manual_seed(NORM["seed"])
    model = make_norm_stack(norm_first)
    batches = norm_batches(steps, NORM["seed"])
    losses = train(model, batches.__getitem__, norm_loss, steps, NORM["lr"], seed=None, clip=None,
                   log_every=log_every, reference=reference, name=name)
    return model, losses


@torch.no_grad()
def held_out_loss(model) -> float:
    """Mean previous-token loss of ``model`` on 500 fresh sequences (seed 99). Chapter 11."""
    g = torch.Generator().manual_seed(99)
    batch = previous_token_batch(500, NORM["L"], NORM["vocab_size"], g)
    return float(norm_loss(model, batch))


def _norm_recipe(norm_first: bool):
    def fn():
        model, losses = train_norm_stack(norm_first)
        eval_model = make_norm_stack(norm_first)
        eval_model.load_state_dict(model.state_dict())
        eval_model.double().eval()
        return {"model": model, "metrics": {"held_out_loss": held_out_loss(eval_model)},
                "curve": logged_curve(losses, NORM["log_every"]),
                "config": {"norm_first": norm_first, **NORM}}
    return fn


repro.recipe("ch09-preln", chapter="ch09", tolerance={"held_out_loss": 0.1},
             data="previous-token task, length 16, 6 pre-LN layers, no warm-up · 前一词元任务，6 层 pre-LN")(
    _norm_recipe(True))
repro.recipe("ch09-postln", chapter="ch09", tolerance={"held_out_loss": 0.1},
             data="previous-token task, length 16, 6 post-LN layers, no warm-up · 前一词元任务，6 层 post-LN")(
    _norm_recipe(False))
