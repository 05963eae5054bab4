"""The encoder-decoder Transformer of "Attention Is All You Need".

Chapter 5 (*The full Transformer*, ``ch05_transformer``) builds and trains it.

Source tokens are embedded, scaled by ``sqrt(d_model)`` and given sinusoidal
positions, then pass through a stack of :class:`EncoderLayer`; the decoder
stack reads the target so far (shifted right, starting with ``<sos>``) and
the encoder output ``memory``; a linear layer turns each position into
logits over the target vocabulary. Three masks, all True = may attend:

- source padding ``(B, 1, 1, L_s)``, in encoder self-attention and in the
  decoder's cross-attention;
- causal ``(L_t, L_t)``, in decoder self-attention. Right padding of the
  target needs no mask of its own: the causal mask already hides every later
  position from a real token, and the loss ignores padded positions.

As in nanoGPT, the settings live in a frozen dataclass,
:class:`TransformerConfig`, and the model takes it:
``Transformer(TransformerConfig(src_vocab=6, tgt_vocab=8, d_model=32, ...))``.
``Transformer(src_vocab=6, tgt_vocab=8, ...)`` builds the same config.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn

from .._validate import check_index, check_positive_int
from ..scratch.masks import causal_mask
from ._inputs import ConfigChecks, check_token_ids, resolve_config
from .attention import KVCache
from .layers import DecoderLayer, EncoderLayer
from .positional import SinusoidalPositionalEncoding

__all__ = ["Transformer", "TransformerConfig"]


@dataclass(frozen=True)
class TransformerConfig(ConfigChecks):
    """The settings of a :class:`Transformer` (chapter 5).

    Defaults: the base model of "Attention Is All You Need" (table 3), with
    its shared source-target vocabulary of about 37000 tokens (section 5.1).

    Args:
        src_vocab: source vocabulary size.
        tgt_vocab: target vocabulary size.
        d_model: width of every sequence vector (512).
        num_heads: attention heads per layer (8); must divide ``d_model``;
            each head has width ``d_k = d_model / num_heads``.
        num_encoder_layers: depth of the encoder stack (6).
        num_decoder_layers: depth of the decoder stack (6).
        d_ff: hidden width of the feed-forward networks (2048).
        dropout: dropout probability in ``[0, 1)`` everywhere (embeddings +
            positions, attention, sublayers), training only.
        max_len: longest sequence the positional table covers.
        pad_id: id of ``<pad>`` in both vocabularies, in
            ``[0, min(src_vocab, tgt_vocab))``.
        norm_first: pre-LN layers (and a final layer norm on each stack)
            instead of the paper's post-LN.

    Raises:
        TypeError: a field of the wrong type (e.g. ``norm_first=1``).
        ValueError: a value out of range, or ``d_model`` not divisible by
            ``num_heads``; the message names the field.
    """

    src_vocab: int = 37000
    tgt_vocab: int = 37000
    d_model: int = 512
    num_heads: int = 8
    num_encoder_layers: int = 6
    num_decoder_layers: int = 6
    d_ff: int = 2048
    dropout: float = 0.1
    max_len: int = 512
    pad_id: int = 0
    norm_first: bool = False

    def __post_init__(self):
        self._check_ints("src_vocab", "tgt_vocab", "d_model", "num_heads", "num_encoder_layers",
                         "num_decoder_layers", "d_ff", "max_len")
        self._check_heads()
        self._check_probability("dropout")
        self._check_index("pad_id", min(self.src_vocab, self.tgt_vocab),
                          what="min(src_vocab, tgt_vocab)")
        self._check_bool("norm_first")


class Transformer(nn.Module):
    """Encoder-decoder Transformer (chapter 5).

    Args:
        config: a :class:`TransformerConfig`. Instead of it, its fields may
            be given as keyword arguments (``Transformer(src_vocab=6,
            tgt_vocab=8, ...)``), never by position.

    Attributes:
        config: the :class:`TransformerConfig`.
        src_embed, tgt_embed (``nn.Embedding``), positional
        (:class:`SinusoidalPositionalEncoding`), encoder, decoder
        (``nn.ModuleList`` of layers), encoder_norm, decoder_norm (LayerNorm
        or Identity), generator (``nn.Linear(d_model, tgt_vocab)``);
        d_model, src_vocab, tgt_vocab, pad_id (copied from ``config``).

    ``forward(src (B, L_s), tgt_in (B, L_t))`` returns logits ``(B, L_t, tgt_vocab)``.
    """

    def __init__(self, config: TransformerConfig | None = None, **settings):
        super().__init__()
        self.config = c = resolve_config(TransformerConfig, "Transformer", config, settings)
        self.d_model, self.src_vocab, self.tgt_vocab = c.d_model, c.src_vocab, c.tgt_vocab
        self.pad_id = c.pad_id
        layer_args = dict(d_model=c.d_model, num_heads=c.num_heads, d_ff=c.d_ff,
                          dropout=c.dropout, norm_first=c.norm_first)
        self.src_embed = nn.Embedding(c.src_vocab, c.d_model, padding_idx=c.pad_id)
        self.tgt_embed = nn.Embedding(c.tgt_vocab, c.d_model, padding_idx=c.pad_id)
        self.positional = SinusoidalPositionalEncoding(c.d_model, c.max_len, c.dropout)
        self.encoder = nn.ModuleList(EncoderLayer(**layer_args)
                                     for _ in range(c.num_encoder_layers))
        self.decoder = nn.ModuleList(DecoderLayer(**layer_args)
                                     for _ in range(c.num_decoder_layers))
        self.encoder_norm = nn.LayerNorm(c.d_model) if c.norm_first else nn.Identity()
        self.decoder_norm = nn.LayerNorm(c.d_model) if c.norm_first else nn.Identity()
        self.generator = nn.Linear(c.d_model, c.tgt_vocab)

    def _embed(self, embedding: nn.Embedding, ids, offset: int = 0):
        """``(B, L)`` ids -> ``(B, L, d_model)``: ``sqrt(d_model) E[ids] + PE``."""
        return self.positional(embedding(ids) * math.sqrt(self.d_model), offset)

    def source_mask(self, src) -> torch.Tensor:
        """Source padding mask (chapter 5).

        Args:
            src: ``(B, L_s)`` source ids.

        Returns:
            Boolean ``(B, 1, 1, L_s)``, True on real tokens (see
            :func:`course_lib.scratch.padding_mask_from_ids`).
        """
        return (src != self.pad_id)[:, None, None, :]                  # (B, 1, 1, L_s)

    def encode(self, src) -> torch.Tensor:
        """Run the encoder stack (chapter 5).

        Args:
            src: ``(B, L_s)`` source ids, right-padded with ``pad_id``.

        Returns:
            ``memory`` ``(B, L_s, d_model)``.
        """
        check_token_ids(src, "src", vocab_size=self.src_vocab)
        x, mask = self._embed(self.src_embed, src), self.source_mask(src)  # (B, L_s, d_model), (B, 1, 1, L_s)
        for layer in self.encoder:
            x, _ = layer(x, mask)                                          # (B, L_s, d_model)
        return self.encoder_norm(x)

    def decode(self, tgt_in, memory, src_mask, need_weights: bool = False,
               caches: list[KVCache] | None = None, offset: int = 0):
        """Decoder stack and output projection (chapter 5).

        Args:
            tgt_in: ``(B, L_t)`` target ids, starting with ``<sos>``. With
                ``caches``, only the new ids (positions ``offset ..``).
            memory: ``(B, L_s, d_model)`` from :meth:`encode`.
            src_mask: ``(B, 1, 1, L_s)`` from :meth:`source_mask`.
            need_weights: also return every layer's attention weights.
            caches: optional list of one :class:`KVCache` per decoder layer,
                for incremental decoding.
            offset: number of target positions already in ``caches``.

        Returns:
            ``(logits, weights)``: ``logits`` is ``(B, L_t, tgt_vocab)``;
            ``weights`` is a list, per layer, of ``(self_weights,
            cross_weights)``, or None.
        """
        check_token_ids(tgt_in, "tgt_in", vocab_size=self.tgt_vocab)
        caches = caches if caches is not None else [None] * len(self.decoder)
        if len(caches) != len(self.decoder):
            raise ValueError(f"caches must hold one KVCache per decoder layer "
                             f"({len(self.decoder)}), got {len(caches)}")
        L_t = tgt_in.shape[1]
        self_mask = torch.from_numpy(causal_mask(L_t, offset)).to(tgt_in.device)  # (L_t, offset + L_t)
        y, weights = self._embed(self.tgt_embed, tgt_in, offset), []              # (B, L_t, d_model)
        for layer, cache in zip(self.decoder, caches):
            y, w = layer(y, memory, self_mask, src_mask, need_weights, cache)      # (B, L_t, d_model)
            weights.append(w)
        logits = self.generator(self.decoder_norm(y))                             # (B, L_t, tgt_vocab)
        return logits, (weights if need_weights else None)

    def forward(self, src, tgt_in) -> torch.Tensor:
        """Teacher-forced logits (chapter 5).

        Args:
            src: ``(B, L_s)`` source ids, right-padded with ``pad_id``.
            tgt_in: ``(B, L_t)`` target ids shifted right (``<sos> y_1 ...``).

        Returns:
            ``(B, L_t, tgt_vocab)`` logits; position ``t`` predicts ``y_{t+1}``.
        """
        memory = self.encode(src)                                            # (B, L_s, d_model)
        return self.decode(tgt_in, memory, self.source_mask(src))[0]         # (B, L_t, tgt_vocab)

    @torch.no_grad()
    def greedy_decode(self, src, sos_id: int, eos_id: int, max_len: int) -> torch.LongTensor:
        """Translate by always taking the most likely next token, KV-cached (chapter 5).

        Args:
            src: ``(B, L_s)`` source ids.
            sos_id, eos_id: ids of ``<sos>`` and ``<eos>`` in the target vocabulary.
            max_len: most tokens to generate per sequence.

        Returns:
            ``(B, T)`` generated ids, ``T <= max_len``, without the ``<sos>``;
            each row stops at its ``<eos>`` and is ``pad_id`` afterwards.
            Decoding ends once every row has produced ``<eos>``.
        """
        check_index(sos_id, "sos_id", self.tgt_vocab, what="tgt_vocab")
        check_index(eos_id, "eos_id", self.tgt_vocab, what="tgt_vocab")
        max_len = check_positive_int(max_len, "max_len")
        if max_len > self.positional.max_len:
            raise ValueError(f"max_len={max_len} exceeds the positional table's "
                             f"max_len={self.positional.max_len}")
        memory, src_mask = self.encode(src), self.source_mask(src)  # (B, L_s, d_model), (B, 1, 1, L_s)
        caches = [KVCache() for _ in self.decoder]
        token = torch.full((src.shape[0], 1), sos_id, dtype=torch.long, device=src.device)  # (B, 1)
        done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)             # (B,)
        out = []
        for t in range(max_len):
            logits, _ = self.decode(token, memory, src_mask, caches=caches, offset=t)  # (B, 1, tgt_vocab)
            token = logits[:, -1:].argmax(-1).masked_fill(done[:, None], self.pad_id)  # (B, 1)
            out.append(token)
            done |= token[:, 0] == eos_id
            if done.all():
                break
        return torch.cat(out, dim=1)                                                   # (B, T)

    @torch.no_grad()
    def cross_attention_weights(self, src, tgt_in) -> torch.Tensor:
        """Cross-attention maps of every decoder layer, for a heatmap.

        Args:
            src: ``(B, L_s)`` source ids.
            tgt_in: ``(B, L_t)`` target ids (e.g. ``<sos>`` followed by the
                output of :meth:`greedy_decode`).

        Returns:
            ``(num_decoder_layers, B, num_heads, L_t, L_s)``; entry
            ``[l, b, h, t, s]`` is how much target position ``t`` looks at
            source position ``s`` in head ``h`` of layer ``l``. Chapter 5
            plots the last layer averaged over heads.
        """
        _, weights = self.decode(tgt_in, self.encode(src), self.source_mask(src), need_weights=True)
        # num_decoder_layers x (B, num_heads, L_t, L_s) -> (num_decoder_layers, B, num_heads, L_t, L_s)
        return torch.stack([cross for _, cross in weights])
