"""Two more ways to read chapter 12's Speech Transformer: its CTC head alone, and CTC and decoder together.

:func:`ctc_transcribe` reads the encoder's CTC head (trained by the joint loss, unused by greedy
decoding) greedily: the most likely symbol per encoder position, repeats merged, blanks
(``<pad>``) dropped::

    per-position argmax  <pad> 3 3 <pad> 1 <pad> <pad> 4 4   -->   3 1 4

:func:`joint_transcribe` rescores two candidates per utterance, the decoder's greedy transcript
and the CTC head's, with the training loss's mixture of the two models' log-probabilities,
``(1 - λ) log P_att(y | x) + λ log P_ctc(y | x)`` (λ = ``TRAINING["ctc_weight"]``, fixed before
looking at held-out data), and keeps the higher: joint CTC-attention decoding cut down to an
n-best list of two.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from .._validate import check_positive_int
from .speech import LANG_TOKEN, TRAINING, VOCAB, SpeechData, batch, transcribe

__all__ = ["ctc_collapse", "ctc_transcribe", "joint_scores", "joint_transcribe"]


def ctc_collapse(ids) -> list[int]:
    """CTC's many-to-one map on one row of per-position ids: merge repeats, then drop blanks (``<pad>``, 0)."""
    out, prev = [], None
    for i in ids:
        i = int(i)
        if i != prev and i != VOCAB.pad_id:
            out.append(i)
        prev = i
    return out


@torch.no_grad()
def ctc_transcribe(model, data: SpeechData, index=None, batch_size: int = 100) -> list[tuple[str, str]]:
    """Greedy CTC transcripts ``(language, digits)`` of ``data[index]`` (all by default) from the encoder alone."""
    index = np.arange(len(data)) if index is None else np.asarray(index)
    batch_size = check_positive_int(batch_size, "batch_size")
    dtype = next(model.parameters()).dtype
    model.eval()
    out = []
    for start in range(0, len(index), batch_size):
        frames, lengths, _, _ = batch(data, index[start:start + batch_size], dtype=dtype)
        memory, mask, _ = model.encode(frames, lengths)                       # (B, T', d_model)
        best = model.ctc_logits(memory).argmax(-1)                           # (B, T')
        for row, n in zip(best.tolist(), mask[:, 0, 0].sum(1).tolist()):
            toks = [VOCAB.itos[i] for i in ctc_collapse(row[:n])]
            lang = {"<en>": "en", "<zh>": "zh"}.get(toks[0], "?") if toks else "?"
            out.append((lang, "".join(t for t in toks if t.isdigit())))
    return out


def _ids(lang: str, digits: str) -> list[int]:
    """``<lang> d_1 … d_n`` as ids; an unknown language (``"?"``) becomes ``<en>`` so it can be scored."""
    return [VOCAB.stoi[LANG_TOKEN.get(lang, "<en>")]] + [VOCAB.stoi[c] for c in digits]


@torch.no_grad()
def joint_scores(model, data: SpeechData, index, candidates) -> tuple[np.ndarray, np.ndarray]:
    """``(log P_att, log P_ctc)``, each ``(len(index),)``, of one candidate ``(language, digits)`` per utterance.

    ``log P_att`` is the decoder's teacher-forced log-probability of ``<lang> d_1 … d_n <eos>``;
    ``log P_ctc`` is minus the CTC loss of ``<lang> d_1 … d_n`` (the labels the joint loss trains on).
    A candidate longer than the decoder can write (``max_tokens``) gets ``log P_att = -inf``, and
    one too long for its utterance's encoder positions ``log P_ctc = -inf``.
    """
    index = np.asarray(index)
    if len(candidates) != len(index):
        raise ValueError(f"candidates must hold one (language, digits) per index, got {len(candidates)} "
                         f"for {len(index)}")
    dtype = next(model.parameters()).dtype
    model.eval()
    frames, lengths, _, _ = batch(data, index, dtype=dtype)
    memory, mask, _ = model.encode(frames, lengths)                           # (B, T', d_model)
    cap = model.config.max_tokens - 2                                         # <sos> + labels + <eos> fit
    seqs = [_ids(l, d) for l, d in candidates]
    too_long = torch.tensor([len(s) > cap for s in seqs])
    seqs = [s[:cap] for s in seqs]
    L = max(len(s) for s in seqs) + 1
    tgt = torch.full((len(seqs), L + 1), VOCAB.pad_id, dtype=torch.long)
    for row, s in enumerate(seqs):
        tgt[row, :len(s) + 2] = torch.tensor([VOCAB.sos_id] + s + [VOCAB.eos_id])
    logp = model.decode(tgt[:, :-1], memory, mask)[0].log_softmax(-1)       # (B, L, vocab)
    gold = tgt[:, 1:]                                                        # (B, L)
    att = (logp.gather(2, gold[..., None])[..., 0] * (gold != VOCAB.pad_id)).sum(1)
    att = att.masked_fill(too_long, -float("inf"))                            # the decoder cannot write it
    labels = torch.full((len(seqs), L - 1), VOCAB.pad_id, dtype=torch.long)
    for row, s in enumerate(seqs):
        labels[row, :len(s)] = torch.tensor(s)
    log_probs = model.ctc_logits(memory).log_softmax(-1).transpose(0, 1)      # (T', B, vocab)
    ctc = -F.ctc_loss(log_probs, labels, mask[:, 0, 0].sum(1), torch.tensor([len(s) for s in seqs]),
                      blank=VOCAB.pad_id, reduction="none", zero_infinity=False)
    return att.numpy(), ctc.numpy()


def _mix(att: np.ndarray, ctc: np.ndarray, lam: float) -> np.ndarray:
    """``(1 - λ) att + λ ctc``, a side with weight 0 left out (so its ``-inf`` cannot make ``nan``)."""
    total = np.zeros_like(att)
    if lam < 1:
        total = total + (1 - lam) * att
    if lam > 0:
        total = total + lam * ctc
    return total


def joint_transcribe(model, data: SpeechData, index=None, ctc_weight: float | None = None,
                     batch_size: int = 100, att_hyps=None, ctc_hyps=None) -> list[tuple[str, str]]:
    """Of the decoder's and the CTC head's greedy transcripts, the one with the higher joint score, per utterance.

    ``att_hyps`` and ``ctc_hyps`` (:func:`~course_lib.labs.speech.transcribe`, :func:`ctc_transcribe`
    of the same ``index``) may be passed when already computed."""
    lam = TRAINING["ctc_weight"] if ctc_weight is None else float(ctc_weight)
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"ctc_weight must lie in [0, 1], got {ctc_weight}")
    index = np.arange(len(data)) if index is None else np.asarray(index)
    batch_size = check_positive_int(batch_size, "batch_size")
    att_hyps = transcribe(model, data, index) if att_hyps is None else list(att_hyps)
    ctc_hyps = ctc_transcribe(model, data, index) if ctc_hyps is None else list(ctc_hyps)
    if not len(att_hyps) == len(ctc_hyps) == len(index):
        raise ValueError(f"att_hyps and ctc_hyps must hold one transcript per index ({len(index)}), "
                         f"got {len(att_hyps)} and {len(ctc_hyps)}")
    out = []
    for start in range(0, len(index), batch_size):
        part = slice(start, start + batch_size)
        totals = [_mix(a, c, lam)
                  for a, c in (joint_scores(model, data, index[part], hyps[part]) for hyps in (att_hyps, ctc_hyps))]
        out += [ah if ta >= tc else ch
                for ah, ch, ta, tc in zip(att_hyps[part], ctc_hyps[part], totals[0], totals[1])]
    return out
