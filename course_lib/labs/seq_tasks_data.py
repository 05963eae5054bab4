"""Chapter 1's lab, its data (*Why attention*, ``ch01_why_attention``): seeded sequence tasks and a
tiny parallel corpus.

The models, their training and the recipes are in :mod:`course_lib.labs.seq_tasks`.

Token ids follow the book's convention (:mod:`course_lib.text`): ``0 = <pad>``,
``1 = <sos>``, ``2 = <eos>``, then the real tokens. A batch for an
encoder-decoder is the triple ``(src, tgt_in, tgt_out)``:

- ``src``: ``(B, L_in)`` source ids, right-padded with ``<pad>``;
- ``tgt_in``: ``(B, L_out + 1)`` = ``<sos> y_1 … y_L`` (what the decoder reads
  under teacher forcing), right-padded;
- ``tgt_out``: ``(B, L_out + 1)`` = ``y_1 … y_L <eos>`` (what it must
  predict), right-padded; the loss ignores ``<pad>``.

Every random choice goes through a seeded ``torch.Generator``, so a batch
depends only on its seed and step number, never on what ran before.
"""

from __future__ import annotations

import numbers
from typing import Callable, Sequence

import numpy as np
import torch

from .._validate import check_choice, check_positive_int
from ..text import EOS_ID, PAD_ID, SOS_ID, Vocab

__all__ = ["TASKS", "TOY_CORPUS", "symbol_vocab", "seq2seq_batch", "sequence_batch", "length_sampler",
           "toy_corpus_pairs"]

TASKS = ("copy", "reverse")



def symbol_vocab(n_symbols: int) -> Vocab:
    """The vocabulary of the copy/reverse tasks: ``n_symbols`` letters ``a, b, …``.

    Beyond 52 letters (a–z, A–Z) the symbols are named ``s52, s53, …``.
    Symbol ``k`` (from 0) has id ``3 + k``.
    """
    n_symbols = check_positive_int(n_symbols, "n_symbols")
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + \
              [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    return Vocab([letters[k] if k < len(letters) else f"s{k}" for k in range(n_symbols)])


def _check_id_rows(rows, name: str) -> list[list[int]]:
    if isinstance(rows, torch.Tensor):
        rows = rows.tolist()
    if not isinstance(rows, Sequence) or len(rows) == 0:
        raise TypeError(f"{name} must be a non-empty list of token-id lists")
    out = []
    for i, r in enumerate(rows):
        r = r.tolist() if hasattr(r, "tolist") else r
        if not isinstance(r, Sequence) or len(r) == 0:
            raise ValueError(f"{name}[{i}] must be a non-empty list of token ids")
        if not all(isinstance(t, numbers.Integral) and not isinstance(t, bool) for t in r):
            raise TypeError(f"{name}[{i}] must hold integer token ids")
        if min(r) <= EOS_ID:
            raise ValueError(f"{name}[{i}] must hold real token ids >= 3 "
                             f"(0, 1, 2 are <pad>, <sos>, <eos>), got {min(r)}")
        out.append(list(r))
    return out


def seq2seq_batch(src_rows, tgt_rows):
    """Pad lists of token ids into an encoder-decoder batch (chapter 1).

    Args:
        src_rows: ``B`` lists of source ids (each id ``>= 3``).
        tgt_rows: ``B`` lists of target ids, without ``<sos>``/``<eos>``.

    Returns:
        ``(src, tgt_in, tgt_out)``: int64 tensors ``(B, L_in)``,
        ``(B, L_out + 1)``, ``(B, L_out + 1)``, with ``L_in`` and ``L_out``
        the longest source and target; see the module docstring.
    """
    src_rows, tgt_rows = _check_id_rows(src_rows, "src_rows"), _check_id_rows(tgt_rows, "tgt_rows")
    if len(src_rows) != len(tgt_rows):
        raise ValueError(f"src_rows and tgt_rows must have the same length, "
                         f"got {len(src_rows)} and {len(tgt_rows)}")
    B, L_in, L_out = len(src_rows), max(map(len, src_rows)), max(map(len, tgt_rows))
    src = torch.full((B, L_in), PAD_ID, dtype=torch.long)
    tgt_in = torch.full((B, L_out + 1), PAD_ID, dtype=torch.long)
    tgt_out = torch.full((B, L_out + 1), PAD_ID, dtype=torch.long)
    for b, (s, t) in enumerate(zip(src_rows, tgt_rows)):
        src[b, :len(s)] = torch.tensor(s)
        tgt_in[b, 0] = SOS_ID
        tgt_in[b, 1:len(t) + 1] = torch.tensor(t)
        tgt_out[b, :len(t)] = torch.tensor(t)
        tgt_out[b, len(t)] = EOS_ID
    return src, tgt_in, tgt_out


def _generator(seed) -> torch.Generator:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise TypeError(f"seed must be a non-negative integer, got {seed!r}")
    return torch.Generator().manual_seed(int(seed))


def sequence_batch(task: str, lengths, n_symbols: int, seed: int = 0):
    """A batch of the copy or reverse task (chapter 1).

    Each source is a uniformly random string of symbols; the target is the
    same string (``"copy"``) or the string backwards (``"reverse"``).

    Args:
        task: ``"copy"`` or ``"reverse"``.
        lengths: ``B`` source lengths, one per row (each ``>= 1``).
        n_symbols: size of the alphabet (ids ``3 … 2 + n_symbols``; see
            :func:`symbol_vocab`).
        seed: seed of the batch's own generator.

    Returns:
        ``(src, tgt_in, tgt_out)`` as in :func:`seq2seq_batch`.
    """
    check_choice(task, "task", TASKS)
    n_symbols = check_positive_int(n_symbols, "n_symbols")
    if isinstance(lengths, numbers.Integral) or not isinstance(lengths, (Sequence, np.ndarray)) \
            or len(lengths) == 0:
        raise TypeError("lengths must be a non-empty list of sequence lengths, one per row")
    lengths = [check_positive_int(int(L) if isinstance(L, np.integer) else L, "lengths[i]")
               for L in lengths]
    g = _generator(seed)
    ids = torch.randint(3, 3 + n_symbols, (len(lengths), max(lengths)), generator=g)
    src = [ids[b, :L].tolist() for b, L in enumerate(lengths)]
    tgt = src if task == "copy" else [s[::-1] for s in src]
    return seq2seq_batch(src, tgt)


def length_sampler(task: str, batch_size: int, min_len: int, max_len: int,
                   n_symbols: int, seed: int = 0) -> Callable[[int], tuple]:
    """Training batches of the copy/reverse task with lengths in ``[min_len, max_len]``.

    Each batch draws one length uniformly and gives it to all its rows
    (no padding, so no wasted steps). Batch ``step`` depends only on
    ``seed`` and ``step``.

    Returns:
        ``batches_fn(step) -> (src, tgt_in, tgt_out)``, the argument
        :func:`course_lib.training.train` expects.
    """
    check_choice(task, "task", TASKS)
    batch_size = check_positive_int(batch_size, "batch_size")
    min_len = check_positive_int(min_len, "min_len")
    max_len = check_positive_int(max_len, "max_len")
    if max_len < min_len:
        raise ValueError(f"max_len must be >= min_len, got min_len={min_len}, max_len={max_len}")
    n_symbols = check_positive_int(n_symbols, "n_symbols")
    _generator(seed)

    def batches_fn(step: int):
        step_seed = 1_000_003 * seed + check_positive_int(step, "step", minimum=0)
        L = int(torch.randint(min_len, max_len + 1, (1,), generator=_generator(step_seed)))
        return sequence_batch(task, [L] * batch_size, n_symbols, seed=step_seed)

    return batches_fn


# A parallel corpus written for chapter 1: English -> French, word level.
# Pattern: subject verb [adjective] noun -> sujet verbe article nom [adjectif].
# French puts most adjectives after the noun, so "deep learning" becomes
# "l' apprentissage profond": the alignment must cross.
_SUBJECTS = [("I", "j'", "je"), ("you", "tu", "tu"), ("we", "nous", "nous"), ("they", "ils", "ils")]
_VERBS = {  # English verb -> French form for I / you / we / they
    "love": ("aime", "aimes", "aimons", "aiment"),
    "study": ("étudie", "étudies", "étudions", "étudient"),
    "like": ("apprécie", "apprécies", "apprécions", "apprécient"),
    "see": ("vois", "vois", "voyons", "voient"),
}
_OBJECTS = [  # (English words, French words)
    ("deep learning", "l' apprentissage profond"),
    ("machine learning", "l' apprentissage automatique"),
    ("learning", "l' apprentissage"),
    ("deep networks", "les réseaux profonds"),
    ("neural networks", "les réseaux neuronaux"),
    ("networks", "les réseaux"),
    ("machine translation", "la traduction automatique"),
    ("translation", "la traduction"),
    ("long sentences", "les phrases longues"),
    ("short sentences", "les phrases courtes"),
    ("sentences", "les phrases"),
    ("simple models", "les modèles simples"),
    ("models", "les modèles"),
]


def _toy_corpus() -> tuple:
    pairs = []
    for k, (en_subj, fr_vowel, fr_cons) in enumerate(_SUBJECTS):
        for en_verb, forms in _VERBS.items():
            fr_verb = forms[k]
            fr_subj = fr_vowel if fr_verb[0] in "aeiouéè" else fr_cons
            for en_obj, fr_obj in _OBJECTS:
                pairs.append((f"{en_subj} {en_verb} {en_obj}", f"{fr_subj} {fr_verb} {fr_obj}"))
    return tuple(pairs)


TOY_CORPUS = _toy_corpus()
"""``(english, french)`` sentence pairs, words separated by spaces (chapter 1)."""


def toy_corpus_pairs(pairs=TOY_CORPUS):
    """Vocabularies and id lists of a word-level parallel corpus (chapter 1).

    Args:
        pairs: ``(source sentence, target sentence)`` strings, words
            separated by spaces; default :data:`TOY_CORPUS`.

    Returns:
        ``(src_vocab, tgt_vocab, src_rows, tgt_rows)``: two :class:`~course_lib.text.Vocab`
        and the id lists ready for :func:`seq2seq_batch`.
    """
    if isinstance(pairs, str) or not all(isinstance(p, (tuple, list)) and len(p) == 2
                                         and all(isinstance(s, str) and s.split() for s in p)
                                         for p in pairs) or len(pairs) == 0:
        raise TypeError("pairs must be a non-empty list of (source, target) sentence strings")
    src_words = [p[0].split() for p in pairs]
    tgt_words = [p[1].split() for p in pairs]
    src_vocab = Vocab([w for s in src_words for w in s])
    tgt_vocab = Vocab([w for s in tgt_words for w in s])
    return (src_vocab, tgt_vocab, [src_vocab.encode(s, add_special=False) for s in src_words],
            [tgt_vocab.encode(s, add_special=False) for s in tgt_words])

