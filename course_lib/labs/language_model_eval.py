"""Chapter 8's GPT lab, its scores (``ch08_gpt``): held-out text scored, baselines, sampling.

:func:`evaluate` scores the held-out text of a :class:`~course_lib.labs.language_model_data.TokenCorpus`
(the targets of non-overlapping windows, each held-out token predicted once),
:func:`evaluate_sliding` the same targets from overlapping windows (each with more context),
:func:`baselines` the unigram and bigram models of :mod:`course_lib.analysis.ngram`
on the same targets; :func:`sample` generates text with the KV cache and
:func:`positions_processed` counts what the cache saves. The data is in
:mod:`course_lib.labs.language_model_data`, the GPT and its recipes in
:mod:`course_lib.labs.language_model`.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

from .._validate import check_positive_int, check_positive_number
from ..analysis.ngram import bits_per_char, ngram_nll, perplexity
from .language_model_data import CTX, TokenCorpus, windows

__all__ = ["evaluate", "evaluate_sliding", "baselines", "sample", "positions_processed"]


@torch.no_grad()
def evaluate(model, corpus: TokenCorpus, ctx: int = CTX) -> dict:
    """Score every held-out token once: non-overlapping windows of ``ctx`` tokens (eval mode).

    Window ``k`` reads ``val_ids[k ctx : (k+1) ctx]`` and predicts the next
    token at each position, so every token of ``val_ids[1:]`` is a target
    exactly once (the first of a window sees no context from the window before).
    ``ctx`` is the model's context: :data:`CTX` for the small GPT, 128 for the long run's.

    Returns:
        ``{"val_loss": mean nats per token, "perplexity": exp(val_loss),
        "bits_per_char": bits per held-out character, "nll": summed nats,
        "tokens": scored tokens, "chars": characters they cover}``.
    """
    ids = corpus.val_ids
    if len(ids) < 2:
        raise ValueError(f"corpus.val_ids must hold at least 2 tokens to score one, got {len(ids)}")
    ctx = check_positive_int(ctx, "ctx")
    was_training = model.training
    model.eval()
    nll, n = 0.0, 0
    full = (len(ids) - 1) // ctx
    if full:
        x, y = windows(ids, range(0, full * ctx, ctx), ctx)                # (full, ctx) each
        nll += float(F.cross_entropy(model(x).transpose(1, 2), y, reduction="sum"))
        n += y.numel()
    rest = len(ids) - 1 - full * ctx
    if rest:
        x, y = ids[full * ctx:-1][None], ids[full * ctx + 1:][None]        # (1, rest)
        nll += float(F.cross_entropy(model(x).transpose(1, 2), y, reduction="sum"))
        n += y.numel()
    model.train(was_training)
    return _scores(nll, n, corpus)


def _scores(nll: float, n: int, corpus: TokenCorpus) -> dict:
    """The dict of :func:`evaluate` from the summed nats ``nll`` of ``n`` scored tokens."""
    return {"val_loss": nll / n, "perplexity": perplexity(nll, n),
            "bits_per_char": bits_per_char(nll, corpus.val_chars), "nll": nll, "tokens": n,
            "chars": corpus.val_chars}


@torch.no_grad()
def evaluate_sliding(model, corpus: TokenCorpus, ctx: int, stride: int, batch: int = 32) -> dict:
    """Score every held-out token once, from windows that overlap (chapter 9, eval mode).

    Window ``k`` reads ``val_ids[k stride : k stride + ctx]``. The first window scores
    all its targets; each later one only its last ``stride``, the targets no window
    before it reached. Every token of ``val_ids[1:]`` is a target exactly once, as in
    :func:`evaluate`, but after the first window each is predicted from between
    ``ctx - stride + 1`` and ``ctx`` tokens before it, where :func:`evaluate` predicts
    the first target of every window from one token. ``stride = ctx`` is
    :func:`evaluate`'s windows; ``batch`` windows go through the model at once.

    Returns:
        The dict of :func:`evaluate` (``val_loss``, ``perplexity``, ``bits_per_char``,
        ``nll``, ``tokens``, ``chars``) and ``"min_context"``, ``ctx - stride + 1``.
    """
    ids = corpus.val_ids
    if len(ids) < 2:
        raise ValueError(f"corpus.val_ids must hold at least 2 tokens to score one, got {len(ids)}")
    ctx = check_positive_int(ctx, "ctx")
    stride = check_positive_int(stride, "stride")
    batch = check_positive_int(batch, "batch")
    if stride > ctx:
        raise ValueError(f"stride must be at most ctx = {ctx} (a larger one would skip targets), got {stride}")
    targets = len(ids) - 1
    full, last, covered = [], None, 0          # windows (start, first scored position), targets ids[1..covered] done
    for start in range(0, targets, stride):
        if covered >= targets:
            break
        if start + ctx <= targets:
            full.append((start, covered - start))
            covered = start + ctx
        else:
            last, covered = (start, covered - start), targets
    was_training = model.training
    model.eval()
    nll, n = 0.0, 0
    for i in range(0, len(full), batch):
        chunk = full[i:i + batch]
        x, y = windows(ids, [s for s, _ in chunk], ctx)                   # (W, ctx) each
        losses = F.cross_entropy(model(x).transpose(1, 2), y, reduction="none")   # (W, ctx)
        for row, (_, first) in zip(losses, chunk):
            nll += float(row[first:].sum())
            n += ctx - first
    if last is not None:
        start, first = last
        x, y = ids[start:-1][None], ids[start + 1:][None]                 # (1, targets - start)
        losses = F.cross_entropy(model(x).transpose(1, 2), y, reduction="none")[0]
        nll += float(losses[first:].sum())
        n += len(losses) - first
    model.train(was_training)
    return {**_scores(nll, n, corpus), "min_context": ctx - stride + 1}


def baselines(corpus: TokenCorpus, alpha: float = 1.0) -> dict:
    """Add-``alpha`` unigram and bigram models on the same targets as :func:`evaluate`.

    Returns:
        ``{"unigram": {...}, "bigram": {...}}``, each with ``val_loss``,
        ``perplexity``, ``bits_per_char``, ``nll`` and ``tokens``.
    """
    out = {}
    for name, order in (("unigram", 1), ("bigram", 2)):
        nll, n = ngram_nll(corpus.train_ids, corpus.val_ids, corpus.vocab_size, order, alpha)
        out[name] = {"val_loss": nll / n, "perplexity": perplexity(nll, n),
                     "bits_per_char": bits_per_char(nll, corpus.val_chars), "nll": nll, "tokens": n}
    return out


@torch.no_grad()
def sample(model, prompt_ids, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
           generator: torch.Generator | None = None) -> list[int]:
    """Sample, also beyond the context: with a KV cache while the text fits in ``max_len``
    tokens, then each step reads the last ``max_len`` tokens afresh.

    Args:
        model: a GPT (float64 for the same samples on every CPU).
        prompt_ids: the prompt's ids, a non-empty list or 1-d tensor.
        max_new_tokens: tokens to append, positive.
        temperature: positive; the logits are divided by it.
        top_k: None, or sample only among the ``top_k`` likeliest tokens.
        generator: a seeded ``torch.Generator``.

    Returns:
        The prompt's ids followed by the sampled ones.
    """
    ids = prompt_ids.tolist() if hasattr(prompt_ids, "tolist") else list(prompt_ids)
    if not ids or not all(isinstance(i, int) for i in ids):
        raise TypeError("prompt_ids must be a non-empty sequence of integer token ids")
    max_new_tokens = check_positive_int(max_new_tokens, "max_new_tokens")
    temperature = check_positive_number(temperature, "temperature")
    if top_k is not None:
        top_k = check_positive_int(top_k, "top_k")
    was_training = model.training
    model.eval()
    cache, new = model.new_cache(), ids
    for _ in range(max_new_tokens):
        if cache is not None and len(ids) <= model.max_len:                # still fits: reuse keys and values
            logits = model(torch.tensor([new]), cache)[0, -1] / temperature   # (V,)
        else:                                                              # slide: the last max_len tokens
            cache = None
            logits = model(torch.tensor([ids[-model.max_len:]]))[0, -1] / temperature
        if top_k is not None and top_k < len(logits):
            logits = logits.masked_fill(logits < torch.topk(logits, top_k).values[-1], float("-inf"))
        ids.append(int(torch.multinomial(F.softmax(logits, dim=-1), 1, generator=generator)))
        new = ids[-1:]
    model.train(was_training)
    return ids


def positions_processed(prompt_len: int, max_new_tokens: int, use_cache: bool) -> int:
    """Token positions the model's forward passes process while generating (chapter 8's KV cache).

    Without a cache, step ``i`` re-reads the whole prefix of ``prompt_len + i``
    tokens; with one, the first step reads the prompt and every later step
    one new token. :func:`GPT.generate` calls the model once per new token.
    """
    prompt_len = check_positive_int(prompt_len, "prompt_len")
    max_new_tokens = check_positive_int(max_new_tokens, "max_new_tokens")
    if use_cache:
        return prompt_len + max_new_tokens - 1
    return sum(prompt_len + i for i in range(max_new_tokens))
