"""Decoding an encoder-decoder: greedy search and beam search (chapter 5).

Chapter 5 (*The full Transformer*, ``ch05_transformer``) writes both on the
page and checks them here. A decoder gives, for every prefix
``<sos> y_1 … y_t``, log-probabilities of the next token. The score of an
output is the sum of its tokens' log-probabilities,

    log p(y | x) = sum_t log p(y_t | x, y_<t),

up to and including ``<eos>``.

- **Greedy search** takes the single most likely token at every step. It is
  fast, but a likely first token can lead into an unlikely continuation.
- **Beam search** keeps the ``beam_width`` best-scoring prefixes at every
  step, extends each by every token, and keeps the best ``beam_width`` of
  all extensions. A prefix that has produced ``<eos>`` is *finished*: it is
  carried along with its score unchanged (extended by ``<pad>`` at cost 0),
  and the search stops once the best prefix of every row is finished (any
  other prefix can only lose score). With ``beam_width = 1`` it is greedy
  search. Beam search is not guaranteed to beat greedy search (the greedy
  prefix can fall out of the beam), but on trained models it usually scores
  at least as well, and never worse in chapter 5's printed examples.

Both take a function ``log_prob_fn(prefixes)`` so that they work for any
decoder: :func:`transformer_log_probs` makes one from a
:class:`~course_lib.models.Transformer`, and the tests use a hand-built toy
decoder on which greedy search is known to be suboptimal.
"""

from __future__ import annotations

from typing import Callable

import torch

from .._validate import check_index, check_positive_int

__all__ = ["beam_search", "greedy_search", "transformer_log_probs", "sequence_log_prob"]


def _check_common(batch_size, sos_id, eos_id, pad_id, max_len, vocab=None):
    batch_size = check_positive_int(batch_size, "batch_size")
    max_len = check_positive_int(max_len, "max_len")
    ids = {}
    for name, value in (("sos_id", sos_id), ("eos_id", eos_id), ("pad_id", pad_id)):
        ids[name] = check_index(value, name, vocab, what="vocab") if vocab else \
            check_positive_int(value, name, minimum=0)
    if len(set(ids.values())) != 3:
        raise ValueError(f"sos_id, eos_id and pad_id must be three different ids, got {tuple(ids.values())}")
    return batch_size, ids["sos_id"], ids["eos_id"], ids["pad_id"], max_len


def _next_log_probs(log_prob_fn, prefixes, B, K):
    out = log_prob_fn(prefixes)                                        # (B, K, V)
    if not isinstance(out, torch.Tensor) or out.ndim != 3 or tuple(out.shape[:2]) != (B, K):
        got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(f"log_prob_fn must return log-probabilities of shape (B, K, V) = ({B}, {K}, V), "
                         f"got {got}")
    return out


def beam_search(log_prob_fn: Callable[[torch.Tensor], torch.Tensor], batch_size: int, sos_id: int,
                eos_id: int, pad_id: int, max_len: int, beam_width: int = 4):
    """The ``beam_width`` best prefixes at every step; the best finished one at the end (chapter 5).

    Args:
        log_prob_fn: ``prefixes (B, K, t) -> (B, K, V)``: log-probabilities of
            the next token after each of the ``K`` prefixes of each of the
            ``B`` rows (``t`` tokens, the first ``<sos>``).
        batch_size: ``B``, the number of inputs decoded together.
        sos_id, eos_id, pad_id: three different token ids.
        max_len: most tokens generated per row (``<eos>`` included).
        beam_width: ``K``; 1 gives greedy search.

    Returns:
        ``(tokens, scores)``: ``tokens`` ``(B, T)`` long, ``T <= max_len``,
        the best output of each row without ``<sos>``, ``<pad>`` after its
        ``<eos>``; ``scores`` ``(B,)``, its total log-probability.
    """
    B, sos_id, eos_id, pad_id, max_len = _check_common(batch_size, sos_id, eos_id, pad_id, max_len)
    beam_width = check_positive_int(beam_width, "beam_width")
    seqs = torch.full((B, 1, 1), sos_id, dtype=torch.long)              # (B, K=1, t=1)
    scores = torch.zeros(B, 1, dtype=torch.float64)                     # (B, K)
    finished = torch.zeros(B, 1, dtype=torch.bool)                      # (B, K)
    for _ in range(max_len):
        logp = _next_log_probs(log_prob_fn, seqs, B, seqs.shape[1]).to(torch.float64)  # (B, K, V)
        V = logp.shape[-1]
        if not 0 <= pad_id < V or not 0 <= eos_id < V:
            raise ValueError(f"pad_id and eos_id must be ids in [0, V) = [0, {V})")
        done_row = torch.full((V,), float("-inf"), dtype=torch.float64)
        done_row[pad_id] = 0.0                                          # a finished prefix only pads, free
        logp = torch.where(finished[..., None], done_row, logp)         # (B, K, V)
        cand = (scores[..., None] + logp).reshape(B, -1)                # (B, K * V)
        scores, flat = cand.topk(min(beam_width, cand.shape[1]), dim=1)  # (B, K')
        beam, token = flat // V, flat % V                               # which prefix, which token
        seqs = torch.cat([seqs.gather(1, beam[..., None].expand(-1, -1, seqs.shape[2])),
                          token[..., None]], dim=2)                     # (B, K', t + 1)
        finished = finished.gather(1, beam) | (token == eos_id)         # (B, K')
        if finished[:, 0].all():                                        # the best of every row is done
            break
    tokens = seqs[:, 0, 1:]                                             # (B, T), drop <sos>
    keep = int((tokens != pad_id).any(0).nonzero().max()) + 1 if (tokens != pad_id).any() else 1
    return tokens[:, :keep], scores[:, 0]


def greedy_search(log_prob_fn: Callable[[torch.Tensor], torch.Tensor], batch_size: int, sos_id: int,
                  eos_id: int, pad_id: int, max_len: int):
    """The most likely token at every step (chapter 5); same arguments and results as :func:`beam_search`.

    Written as its own loop (not ``beam_search(..., beam_width=1)``) so that
    the two can be checked against each other.
    """
    B, sos_id, eos_id, pad_id, max_len = _check_common(batch_size, sos_id, eos_id, pad_id, max_len)
    seqs = torch.full((B, 1), sos_id, dtype=torch.long)                 # (B, t)
    scores = torch.zeros(B, dtype=torch.float64)
    done = torch.zeros(B, dtype=torch.bool)
    out = []
    for _ in range(max_len):
        logp = _next_log_probs(log_prob_fn, seqs[:, None], B, 1)[:, 0].to(torch.float64)  # (B, V)
        best, token = logp.max(dim=-1)                                  # (B,), (B,)
        scores = scores + torch.where(done, 0.0, best)
        token = token.masked_fill(done, pad_id)
        out.append(token)
        seqs = torch.cat([seqs, token[:, None]], dim=1)
        done |= token == eos_id
        if done.all():
            break
    return torch.stack(out, dim=1), scores                              # (B, T), (B,)


def transformer_log_probs(model, src) -> Callable[[torch.Tensor], torch.Tensor]:
    """A ``log_prob_fn`` for :func:`beam_search` from a :class:`~course_lib.models.Transformer` (chapter 5).

    Args:
        model: the Transformer, in ``eval()`` mode.
        src: ``(B, L_s)`` source ids.

    Returns:
        ``prefixes (B, K, t) -> (B, K, tgt_vocab)`` log-probabilities; the
        source is encoded once, and each call re-runs the decoder on the
        whole prefix (no KV cache: a beam's prefixes change from step to step).
    """
    from .transformer import Transformer

    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a course_lib Transformer, got {type(model).__name__}")
    with torch.no_grad():
        memory, src_mask = model.encode(src), model.source_mask(src)     # (B, L_s, d_model), (B, 1, 1, L_s)

    def log_prob_fn(prefixes):
        B, K, t = prefixes.shape
        mem = memory[:, None].expand(-1, K, -1, -1).reshape(B * K, *memory.shape[1:])    # (B K, L_s, d_model)
        mask = src_mask[:, None].expand(-1, K, -1, -1, -1).reshape(B * K, *src_mask.shape[1:])  # (B K, 1, 1, L_s)
        with torch.no_grad():
            logits, _ = model.decode(prefixes.reshape(B * K, t), mem, mask)   # (B K, t, tgt_vocab)
        return logits[:, -1].log_softmax(-1).reshape(B, K, -1)               # (B, K, tgt_vocab)

    return log_prob_fn


@torch.no_grad()
def sequence_log_prob(model, src, tokens, sos_id: int, eos_id: int) -> torch.Tensor:
    """``log p(tokens | src)`` under a Transformer, summed up to and including the first ``<eos>`` (chapter 5).

    Args:
        model: a :class:`~course_lib.models.Transformer` in ``eval()`` mode.
        src: ``(B, L_s)`` source ids.
        tokens: ``(B, T)`` outputs without ``<sos>`` (as :func:`beam_search`
            returns them); positions after the first ``<eos>`` do not count.
        sos_id, eos_id: ids in the target vocabulary.

    Returns:
        ``(B,)`` float64 log-probabilities.
    """
    if not isinstance(tokens, torch.Tensor) or tokens.ndim != 2 or tokens.dtype != torch.long:
        raise TypeError("tokens must be a (B, T) long tensor")
    if tokens.shape[0] != src.shape[0]:
        raise ValueError(f"tokens and src must have the same batch size, got {tokens.shape[0]} and {src.shape[0]}")
    check_index(sos_id, "sos_id", model.tgt_vocab, what="tgt_vocab")
    check_index(eos_id, "eos_id", model.tgt_vocab, what="tgt_vocab")
    tgt_in = torch.cat([torch.full_like(tokens[:, :1], sos_id), tokens[:, :-1]], dim=1)   # (B, T)
    logp = model(src, tgt_in).log_softmax(-1).to(torch.float64)                          # (B, T, V)
    picked = logp.gather(-1, tokens[..., None])[..., 0]                                  # (B, T)
    is_eos = (tokens == eos_id).long()
    counts = (is_eos.cumsum(1) - is_eos) == 0                           # up to and including the first <eos>
    return (picked * counts).sum(1)
