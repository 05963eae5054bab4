"""The RNN encoder-decoder, with and without attention.

Chapter 1 (*Why attention*, ``ch01_why_attention``) starts from it.

A GRU reads the source into states ``h_1 .. h_L``; a GRU decoder writes the
output one token at a time from its state ``s_t``, the previous token and a
context vector ``c_t``:

- without attention (Cho et al., 2014), ``c_t = h_L`` at every step: the
  whole sentence must squeeze through one fixed vector;
- with additive attention (Bahdanau et al., 2015), ``c_t = sum_j alpha_tj h_j``
  with ``alpha_t = softmax_j(v^T tanh(W_s s_{t-1} + W_h h_j))``, so each
  step looks back at the states it needs.

Chapter 1 trains both on the same task, plots an alignment ``alpha`` and
compares their accuracy as sentences get longer.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from .._validate import check_index, check_positive_int
from .attention import masked_softmax
from ._inputs import check_token_ids

__all__ = ["AdditiveAttention", "Seq2Seq"]


class AdditiveAttention(nn.Module):
    """``score(s, h) = v^T tanh(W_s s + W_h h)`` (chapter 1).

    The PyTorch twin of :func:`course_lib.scratch.additive_attention`, whose
    ``W_s``, ``W_h`` and ``v`` are ``W_s.weight.T``, ``W_h.weight.T`` and
    ``v.weight[0]`` here.

    Args:
        d_s: width of the decoder state.
        d_h: width of the encoder states.
        d_a: width of the hidden scoring layer.

    Attributes:
        W_s (``nn.Linear(d_s, d_a)``), W_h (``nn.Linear(d_h, d_a)``),
        v (``nn.Linear(d_a, 1)``), all without bias.
    """

    def __init__(self, d_s: int, d_h: int, d_a: int):
        super().__init__()
        self.W_s = nn.Linear(d_s, d_a, bias=False)
        self.W_h = nn.Linear(d_h, d_a, bias=False)
        self.v = nn.Linear(d_a, 1, bias=False)

    def forward(self, s, H, mask=None):
        """Attend from one decoder state per sequence over the encoder states (chapter 1).

        Args:
            s: ``(B, d_s)`` decoder states.
            H: ``(B, L, d_h)`` encoder states.
            mask: optional boolean ``(B, L)``, True on real source tokens.

        Returns:
            ``(context, weights)``: ``(B, d_h)`` and ``(B, L)``.
        """
        # (B, 1, d_a) + (B, L, d_a) -> tanh -> v: (B, L, 1) -> squeeze: (B, L)
        e = self.v(torch.tanh(self.W_s(s)[:, None, :] + self.W_h(H))).squeeze(-1)
        weights = masked_softmax(e, mask)                                 # (B, L)
        context = (weights[:, None, :] @ H).squeeze(1)    # (B, 1, L) @ (B, L, d_h) -> (B, d_h)
        return context, weights


class Seq2Seq(nn.Module):
    """GRU encoder-decoder, with a fixed context or with additive attention (chapter 1).

    Args:
        vocab_in, vocab_out: source and target vocabulary sizes.
        emb: embedding width.
        hidden: GRU state width (encoder and decoder).
        attention: True for Bahdanau attention, False for the fixed context
            vector ``h_L`` (the encoder's final state).
        pad_id: id of ``<pad>``; sources must be right-padded with it.

    Attributes:
        src_embed, tgt_embed, encoder (``nn.GRU``), decoder (``nn.GRUCell``),
        attention (:class:`AdditiveAttention` or None), out (``nn.Linear``
        from ``[s_t; c_t]`` to ``vocab_out``).
    """

    def __init__(self, vocab_in: int, vocab_out: int, emb: int, hidden: int,
                 attention: bool, pad_id: int = 0):
        super().__init__()
        self.vocab_in = check_positive_int(vocab_in, "vocab_in")
        self.vocab_out = check_positive_int(vocab_out, "vocab_out")
        emb, hidden = check_positive_int(emb, "emb"), check_positive_int(hidden, "hidden")
        self.pad_id = check_index(pad_id, "pad_id", min(vocab_in, vocab_out),
                                  what="min(vocab_in, vocab_out)")
        self.src_embed = nn.Embedding(vocab_in, emb, padding_idx=pad_id)
        self.tgt_embed = nn.Embedding(vocab_out, emb, padding_idx=pad_id)
        self.encoder = nn.GRU(emb, hidden, batch_first=True)
        self.attention = AdditiveAttention(hidden, hidden, hidden) if attention else None
        self.decoder = nn.GRUCell(emb + hidden, hidden)
        self.out = nn.Linear(2 * hidden, vocab_out)

    def encode(self, src):
        """Encode source ids (chapter 1).

        Args:
            src: ``(B, L_in)`` source ids, right-padded with ``pad_id``.

        Returns:
            ``(H, h_last, mask)``: all states ``(B, L_in, hidden)``, each
            sequence's state at its last real token ``(B, hidden)``, and the
            padding mask ``(B, L_in)``.
        """
        check_token_ids(src, "src", vocab_size=self.vocab_in)
        mask = src != self.pad_id                                          # (B, L_in)
        if not mask[:, 0].all():
            raise ValueError("src must have at least one real token per row, right-padded "
                             f"with pad_id={self.pad_id}")
        H, _ = self.encoder(self.src_embed(src))                           # (B, L_in, hidden)
        # A unidirectional GRU's state at position j has not seen the padding after j.
        h_last = H[torch.arange(src.shape[0]), mask.sum(dim=1) - 1]        # (B, hidden)
        return H, h_last, mask

    def _step(self, y_prev, s, H, h_last, mask):
        """One decoder step: context, new state, logits (and the attention weights)."""
        if self.attention is None:
            c, weights = h_last, None                                      # (B, hidden)
        else:
            c, weights = self.attention(s, H, mask)                        # (B, hidden), (B, L_in)
        x = torch.cat([self.tgt_embed(y_prev), c], dim=-1)                 # (B, emb + hidden)
        s = self.decoder(x, s)                                             # (B, hidden)
        logits = self.out(torch.cat([s, c], dim=-1))                       # (B, 2 hidden) -> (B, vocab_out)
        return logits, s, weights

    def _stack(self, weights: list):
        """Per-step attention weights ``(B, L_in)`` -> ``(B, steps, L_in)``, or None."""
        return None if self.attention is None else torch.stack(weights, dim=1)  # (B, steps, L_in)

    def forward(self, src, tgt_in):
        """Teacher-forced decoding: step ``t`` reads the true token ``tgt_in[:, t]`` (chapter 1).

        Args:
            src: ``(B, L_in)`` source ids, right-padded.
            tgt_in: ``(B, L_out)`` target ids shifted right (``<sos> y_1 ...``).

        Returns:
            ``(logits, weights)``: ``(B, L_out, vocab_out)`` and, with
            attention, ``(B, L_out, L_in)`` (each row sums to 1), else None.
        """
        check_token_ids(tgt_in, "tgt_in", vocab_size=self.vocab_out)
        H, s, mask = self.encode(src)
        h_last, logits, weights = s, [], []
        for t in range(tgt_in.shape[1]):
            step_logits, s, w = self._step(tgt_in[:, t], s, H, h_last, mask)
            logits.append(step_logits)
            weights.append(w)
        return torch.stack(logits, dim=1), self._stack(weights)            # (B, L_out, vocab_out)

    @torch.no_grad()
    def greedy_decode(self, src, sos_id: int, eos_id: int, max_len: int):
        """Decode by always feeding back the most likely token (chapter 1).

        Args:
            src: ``(B, L_in)`` source ids.
            sos_id, eos_id: ids of ``<sos>`` and ``<eos>`` in the target vocabulary.
            max_len: most tokens to generate.

        Returns:
            ``(tokens, weights)``: ``(B, T)`` ids with ``T <= max_len``,
            without ``<sos>``, ``pad_id`` after each row's ``<eos>``; and
            ``(B, T, L_in)`` attention weights (None without attention).
            Decoding ends once every row has produced ``<eos>``.
        """
        check_index(sos_id, "sos_id", self.vocab_out, what="vocab_out")
        check_index(eos_id, "eos_id", self.vocab_out, what="vocab_out")
        max_len = check_positive_int(max_len, "max_len")
        H, s, mask = self.encode(src)
        h_last, tokens, weights = s, [], []
        token = torch.full((src.shape[0],), sos_id, dtype=torch.long, device=src.device)
        done = torch.zeros_like(token, dtype=torch.bool)
        for _ in range(max_len):
            logits, s, w = self._step(token, s, H, h_last, mask)
            token = logits.argmax(-1).masked_fill(done, self.pad_id)
            tokens.append(token)
            weights.append(w)
            done |= token == eos_id
            if done.all():
                break
        return torch.stack(tokens, dim=1), self._stack(weights)            # (B, T), (B, T, L_in)
