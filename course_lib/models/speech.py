"""A small Speech Transformer: log-mel frames in, characters out (chapter 12, ``ch12_speech``).

The source documents' ``SpeechTransformer`` listing with its three bugs fixed
(chapter 12's errata ``ch10-speech-missing-methods``, ``ch10-speech-no-mask``,
``ch10-speech-no-positions``)::

    frames (B, T, n_mels) --two Conv1d, stride 2 each, ReLU-->   (B, T', d_model), T' = ceil(ceil(T/2)/2)
      ·sqrt(d_model) + sinusoidal positions (chapter 4)          (the fix of ch10-speech-no-positions)
      --encoder: self-attention over frames, padding masked-->   memory (B, T', d_model)
    tokens <sos> y_1 … (B, L) --embed_text: E·sqrt(d_model) + PE-->  (B, L, d_model)
      --decoder: causal self-attention (ch10-speech-no-mask), cross-attention to memory, FFN-->
      --linear-->                                                logits (B, L, vocab_size)

Padded frames are zeroed before and between the convolutions and masked in
attention, so an utterance gets the same output alone or padded in a batch.
The layers are chapter 5's :class:`~course_lib.models.layers.EncoderLayer` and
:class:`~course_lib.models.layers.DecoderLayer`; masks are True where a query
may attend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn

from .._validate import check_index, check_positive_int, check_tensor
from ..scratch.masks import causal_mask
from ._inputs import ConfigChecks, check_token_ids, resolve_config
from .layers import DecoderLayer, EncoderLayer
from .positional import SinusoidalPositionalEncoding

__all__ = ["SpeechTransformerConfig", "SpeechTransformer", "subsampled_lengths"]


@dataclass(frozen=True)
class SpeechTransformerConfig(ConfigChecks):
    """The settings of a :class:`SpeechTransformer` (chapter 12).

    Args:
        n_mels: features per input frame (log-mel bands).
        vocab_size: output vocabulary (specials, language tokens, digits).
        d_model, num_heads, d_ff, dropout, norm_first: as in chapter 5's
            :class:`~course_lib.models.transformer.TransformerConfig`.
        num_encoder_layers, num_decoder_layers: depth of each stack.
        max_frames: longest input, in frames before subsampling.
        max_tokens: longest decoder input, ``<sos>`` included.
        pad_id: id of ``<pad>``.
    """

    n_mels: int = 40
    vocab_size: int = 16
    d_model: int = 64
    num_heads: int = 4
    num_encoder_layers: int = 2
    num_decoder_layers: int = 2
    d_ff: int = 128
    dropout: float = 0.1
    max_frames: int = 512
    max_tokens: int = 16
    pad_id: int = 0
    norm_first: bool = True

    def __post_init__(self):
        self._check_ints("n_mels", "vocab_size", "d_model", "num_heads", "num_encoder_layers",
                         "num_decoder_layers", "d_ff", "max_frames", "max_tokens")
        self._check_heads()
        self._check_probability("dropout")
        self._check_index("pad_id", self.vocab_size, what="vocab_size")
        self._check_bool("norm_first")


def subsampled_lengths(lengths: torch.Tensor) -> torch.Tensor:
    """Frames left after the two stride-2 convolutions (kernel 3, padding 1): ``ceil(ceil(T/2)/2)``."""
    check_tensor(lengths, "lengths", ndim=1, floating=False, layout="(B,)")
    once = (lengths - 1) // 2 + 1
    return (once - 1) // 2 + 1


def _keep(lengths, T: int) -> torch.Tensor:
    """``(B, T)`` boolean, True on the first ``lengths[b]`` positions of row ``b``."""
    return torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]


class SpeechTransformer(nn.Module):
    """Encoder-decoder Transformer from log-mel frames to tokens (chapter 12).

    Args:
        config: a :class:`SpeechTransformerConfig`, or its fields as keyword arguments.

    Attributes:
        subsample (two ``Conv1d``, stride 2), positional
        (:class:`SinusoidalPositionalEncoding`), encoder, decoder
        (``nn.ModuleList`` of chapter 5's layers), encoder_norm,
        decoder_norm, text_embed (``nn.Embedding``), output_proj.

    ``forward(frames (B, T, n_mels), lengths (B,), tgt_in (B, L))`` returns
    logits ``(B, L, vocab_size)``; position ``t`` predicts token ``t + 1``
    and sees only tokens ``0 … t``.
    """

    def __init__(self, config: SpeechTransformerConfig | None = None, **settings):
        super().__init__()
        self.config = c = resolve_config(SpeechTransformerConfig, "SpeechTransformer", config, settings)
        self.d_model, self.pad_id = c.d_model, c.pad_id
        self.subsample = nn.Sequential(
            nn.Conv1d(c.n_mels, c.d_model, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv1d(c.d_model, c.d_model, 3, stride=2, padding=1), nn.ReLU())
        self.positional = SinusoidalPositionalEncoding(c.d_model, max(c.max_frames, c.max_tokens), c.dropout)
        layer_args = dict(d_model=c.d_model, num_heads=c.num_heads, d_ff=c.d_ff, dropout=c.dropout,
                          norm_first=c.norm_first)
        self.encoder = nn.ModuleList(EncoderLayer(**layer_args) for _ in range(c.num_encoder_layers))
        self.decoder = nn.ModuleList(DecoderLayer(**layer_args) for _ in range(c.num_decoder_layers))
        self.encoder_norm = nn.LayerNorm(c.d_model) if c.norm_first else nn.Identity()
        self.decoder_norm = nn.LayerNorm(c.d_model) if c.norm_first else nn.Identity()
        self.text_embed = nn.Embedding(c.vocab_size, c.d_model, padding_idx=c.pad_id)
        self.output_proj = nn.Linear(c.d_model, c.vocab_size)
        self.ctc_proj = nn.Linear(c.d_model, c.vocab_size)       # per-frame logits for the CTC loss (blank = pad_id)

    def _check_frames(self, frames, lengths):
        c = self.config
        check_tensor(frames, "frames", ndim=3, last_dim=c.n_mels, layout=f"(B, T, n_mels={c.n_mels})")
        check_tensor(lengths, "lengths", ndim=1, floating=False, layout="(B,)")
        B, T, _ = frames.shape
        if lengths.shape[0] != B:
            raise ValueError(f"lengths must hold one length per utterance (B = {B}), got {lengths.shape[0]}")
        if T > c.max_frames:
            raise ValueError(f"frames has T = {T} frames, more than max_frames = {c.max_frames}")
        if B and (int(lengths.min()) < 1 or int(lengths.max()) > T):
            raise ValueError(f"lengths must lie in [1, T = {T}], got {lengths.tolist()}")

    def subsample_frames(self, frames, lengths):
        """The convolutional front end: two ``Conv1d`` (kernel 3, stride 2, padding 1), each with ReLU (chapter 12).

        Args:
            frames: ``(B, T, n_mels)`` normalised log-mels, right-padded.
            lengths: ``(B,)`` integer count of real frames per utterance.

        Returns:
            ``(x (B, T', d_model), lengths' (B,))`` with ``T' = ceil(ceil(T/2)/2)`` and
            ``lengths' = subsampled_lengths(lengths)``. Padded frames are zeroed before and
            between the convolutions, so row ``b``'s first ``lengths'[b]`` positions are what
            the utterance gives alone; positions after them are padding (masked in attention).
        """
        self._check_frames(frames, lengths)
        conv1, relu1, conv2, relu2 = self.subsample
        x = frames * _keep(lengths, frames.shape[1])[:, :, None]                 # (B, T, n_mels), padding zeroed
        x = relu1(conv1(x.transpose(1, 2)))                                      # (B, d_model, ceil(T/2))
        x = x * _keep((lengths - 1) // 2 + 1, x.shape[2])[:, None, :]            # padding stays zero
        x = relu2(conv2(x)).transpose(1, 2)                                      # (B, T', d_model)
        return x, subsampled_lengths(lengths)

    def encode(self, frames, lengths, need_weights: bool = False):
        """Subsample (:meth:`subsample_frames`), add positions, run the encoder (chapter 12).

        Args:
            frames: ``(B, T, n_mels)`` normalised log-mels, right-padded.
            lengths: ``(B,)`` integer count of real frames per utterance.
            need_weights: also return each encoder layer's self-attention weights.

        Returns:
            ``(memory (B, T', d_model), mask (B, 1, 1, T'), weights)``; the mask
            is True on real (subsampled) frames; weights is a list or None.
        """
        x, sub_lengths = self.subsample_frames(frames, lengths)                 # (B, T', d_model), (B,)
        mask = _keep(sub_lengths, x.shape[1])[:, None, None, :]                  # (B, 1, 1, T')
        x, weights = self.positional(x * math.sqrt(self.d_model)), []       # (B, T', d_model)
        for layer in self.encoder:
            x, w = layer(x, mask, need_weights)                              # (B, T', d_model)
            weights.append(w)
        return self.encoder_norm(x), mask, (weights if need_weights else None)

    def embed_text(self, tokens):
        """``(B, L)`` ids -> ``(B, L, d_model)``: ``sqrt(d_model) E[ids] + PE`` (the method the source calls)."""
        check_token_ids(tokens, "tokens", vocab_size=self.config.vocab_size, max_len=self.config.max_tokens)
        return self.positional(self.text_embed(tokens) * math.sqrt(self.d_model))

    def decode(self, tgt_in, memory, memory_mask, need_weights: bool = False):
        """Causal decoder over the tokens, cross-attending to ``memory`` (chapter 12).

        Returns:
            ``(logits (B, L, vocab_size), weights)``; weights is, per layer,
            ``(self (B, nh, L, L), cross (B, nh, L, T'))``, or None.
        """
        y = self.embed_text(tgt_in)                                                    # (B, L, d_model)
        L = tgt_in.shape[1]
        self_mask = torch.from_numpy(causal_mask(L)).to(y.device)                      # (L, L)
        weights = []
        for layer in self.decoder:
            y, w = layer(y, memory, self_mask, memory_mask, need_weights)              # (B, L, d_model)
            weights.append(w)
        return self.output_proj(self.decoder_norm(y)), (weights if need_weights else None)

    def forward(self, frames, lengths, tgt_in) -> torch.Tensor:
        """Teacher-forced logits ``(B, L, vocab_size)`` (chapter 12)."""
        memory, mask, _ = self.encode(frames, lengths)                       # (B, T', d_model)
        return self.decode(tgt_in, memory, mask)[0]                          # (B, L, vocab_size)

    def ctc_logits(self, memory) -> torch.Tensor:
        """Per-frame logits ``(B, T', vocab_size)`` for the auxiliary CTC loss; ``pad_id`` is the blank (chapter 12)."""
        return self.ctc_proj(memory)

    @torch.no_grad()
    def generate_text(self, frames, lengths, sos_id: int, eos_id: int, max_len: int | None = None):
        """Greedy decoding, the method the source calls (chapter 12).

        Returns:
            ``(B, n)`` ids without ``<sos>``, ``n <= max_len`` (default
            ``max_tokens - 1``); after its ``<eos>`` a row holds ``pad_id``.
        """
        check_index(sos_id, "sos_id", self.config.vocab_size, what="vocab_size")
        check_index(eos_id, "eos_id", self.config.vocab_size, what="vocab_size")
        max_len = self.config.max_tokens - 1 if max_len is None else check_positive_int(max_len, "max_len")
        if max_len >= self.config.max_tokens:
            raise ValueError(f"max_len must be < max_tokens = {self.config.max_tokens}, got {max_len}")
        memory, mask, _ = self.encode(frames, lengths)
        B = frames.shape[0]
        ids = torch.full((B, 1), sos_id, dtype=torch.long, device=frames.device)     # (B, 1)
        done = torch.zeros(B, dtype=torch.bool, device=frames.device)
        for _ in range(max_len):
            logits, _ = self.decode(ids, memory, mask)                               # (B, t, vocab)
            nxt = logits[:, -1].argmax(-1).masked_fill(done, self.pad_id)            # (B,)
            ids = torch.cat([ids, nxt[:, None]], dim=1)
            done |= nxt == eos_id
            if bool(done.all()):
                break
        return ids[:, 1:]
