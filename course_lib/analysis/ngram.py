"""N-gram baselines for a language model, and fair units to compare tokenisations (chapter 7).

A trained GPT's held-out loss means little alone: chapter 7 sets it against
the two oldest language models, counted from the same training tokens and
scored on the same held-out targets.

- **unigram**: ``p(w) = (c(w) + alpha) / (N + alpha V)``, the frequency of the
  token, ignoring all context;
- **bigram**: ``p(w | u) = (c(u, w) + alpha) / (c(u) + alpha V)``, the
  frequency of ``w`` right after ``u``, where ``c(u)`` counts ``u`` as a
  history (every training token but the last).

``alpha = 1`` is add-one (Laplace) smoothing: every one of the ``V`` tokens
keeps some probability, so an unseen pair costs a finite loss.

A loss per *token* depends on what a token is: a byte-pair token covers
about two characters of English, a character one. Chapter 7 therefore also
reports **bits per character**, the held-out text's total negative
log-likelihood in bits divided by its number of characters, which does not
depend on the tokenisation (:func:`bits_per_char`).
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_positive_int, check_positive_number

__all__ = ["ngram_nll", "perplexity", "bits_per_char"]


def _ids(x, name: str, vocab_size: int, minimum: int) -> np.ndarray:
    if hasattr(x, "numpy") and hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be a 1-D sequence of integer token ids, got dtype {arr.dtype} "
                        f"and {arr.ndim} dimension(s)")
    if len(arr) < minimum:
        raise ValueError(f"{name} must hold at least {minimum} tokens, got {len(arr)}")
    if len(arr) and (arr.min() < 0 or arr.max() >= vocab_size):
        raise ValueError(f"{name} must hold ids in [0, vocab_size={vocab_size}), "
                         f"got min {arr.min()} and max {arr.max()}")
    return arr.astype(np.int64)


def ngram_nll(train_ids, eval_ids, vocab_size: int, order: int, alpha: float = 1.0) -> tuple[float, int]:
    """Held-out negative log-likelihood of an add-``alpha`` unigram or bigram model (chapter 7).

    Args:
        train_ids: the training token ids ``(N,)`` the counts come from.
        eval_ids: the held-out token ids ``(M,)``. The targets are
            ``eval_ids[1:]``, the tokens a language model predicts from a
            preceding one, so the unigram and the bigram score the same
            ``M - 1`` tokens as the GPT does.
        vocab_size: ``V``, the number of token ids the models may output.
        order: 1 (unigram) or 2 (bigram).
        alpha: the smoothing count added to every token (1: add-one), positive.

    Returns:
        ``(nll, n)``: the summed negative log-likelihood in nats and the
        number ``n = M - 1`` of scored tokens.
    """
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    if order not in (1, 2) or isinstance(order, bool):
        raise ValueError(f"order must be 1 (unigram) or 2 (bigram), got {order!r}")
    alpha = check_positive_number(alpha, "alpha")
    train = _ids(train_ids, "train_ids", vocab_size, 2)
    held = _ids(eval_ids, "eval_ids", vocab_size, 2)
    targets = held[1:]
    if order == 1:
        counts = np.bincount(train, minlength=vocab_size).astype(np.float64)     # (V,)
        logp = np.log(counts[targets] + alpha) - math.log(len(train) + alpha * vocab_size)
    else:
        pairs = train[:-1] * vocab_size + train[1:]                              # (N - 1,) pair codes
        codes, pair_counts = np.unique(pairs, return_counts=True)
        history = np.bincount(train[:-1], minlength=vocab_size).astype(np.float64)  # c(u), (V,)
        wanted = held[:-1] * vocab_size + targets                                # (M - 1,)
        at = np.clip(np.searchsorted(codes, wanted), 0, len(codes) - 1)
        c_uw = np.where(codes[at] == wanted, pair_counts[at], 0).astype(np.float64)
        logp = np.log(c_uw + alpha) - np.log(history[held[:-1]] + alpha * vocab_size)
    return float(-logp.sum()), len(targets)


def perplexity(nll: float, n: int) -> float:
    """``exp(nll / n)``: the perplexity of ``n`` tokens whose summed NLL (nats) is ``nll``."""
    n = check_positive_int(n, "n")
    if isinstance(nll, bool) or not isinstance(nll, (int, float)) or not math.isfinite(nll) or nll < 0:
        raise ValueError(f"nll must be a finite number >= 0 (nats), got {nll!r}")
    return math.exp(nll / n)


def bits_per_char(nll: float, n_chars: int) -> float:
    """``nll / ln 2 / n_chars``: a summed NLL in nats, spread over the characters it covers (chapter 7)."""
    n_chars = check_positive_int(n_chars, "n_chars")
    if isinstance(nll, bool) or not isinstance(nll, (int, float)) or not math.isfinite(nll) or nll < 0:
        raise ValueError(f"nll must be a finite number >= 0 (nats), got {nll!r}")
    return nll / math.log(2) / n_chars
