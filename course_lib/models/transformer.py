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
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from .._validate import check_index, check_positive_int
from ..scratch.masks import causal_mask
from ._inputs import check_token_ids
from .attention import KVCache
from .layers import DecoderLayer, EncoderLayer
from .positional import SinusoidalPositionalEncoding

__all__ = ["Transformer"]


class Transformer(nn.Module):
    """Encoder-decoder Transformer (chapter 5).

    Args:
        src_vocab, tgt_vocab: vocabulary sizes of source and target.
        d_model: width of every sequence vector.
        num_heads: attention heads per layer; must divide ``d_model``.
        num_encoder_layers, num_decoder_layers: depth of the two stacks.
        d_ff: hidden width of the feed-forward networks.
        dropout: dropout everywhere (embeddings + positions, attention,
            sublayers), training only.
        max_len: longest sequence the positional table covers.
        pad_id: id of ``<pad>`` in both vocabularies.
        norm_first: pre-LN layers (and a final layer norm on each stack)
            instead of the paper's post-LN.

    Attributes:
        src_embed, tgt_embed (``nn.Embedding``), positional
        (:class:`SinusoidalPositionalEncoding`), encoder, decoder
        (``nn.ModuleList`` of layers), encoder_norm, decoder_norm (LayerNorm
        or Identity), generator (``nn.Linear(d_model, tgt_vocab)``).
    """

    def __init__(self, src_vocab: int, tgt_vocab: int, d_model: int, num_heads: int,
                 num_encoder_layers: int, num_decoder_layers: int, d_ff: int,
                 dropout: float = 0.1, max_len: int = 512, pad_id: int = 0,
                 norm_first: bool = False):
        super().__init__()
        self.d_model = check_positive_int(d_model, "d_model")
        self.src_vocab = check_positive_int(src_vocab, "src_vocab")
        self.tgt_vocab = check_positive_int(tgt_vocab, "tgt_vocab")
        self.pad_id = check_index(pad_id, "pad_id", min(src_vocab, tgt_vocab),
                                  what="min(src_vocab, tgt_vocab)")
        layer_args = dict(d_model=d_model, num_heads=num_heads, d_ff=d_ff, dropout=dropout,
                          norm_first=norm_first)
        self.src_embed = nn.Embedding(src_vocab, d_model, padding_idx=pad_id)
        self.tgt_embed = nn.Embedding(tgt_vocab, d_model, padding_idx=pad_id)
        self.positional = SinusoidalPositionalEncoding(d_model, max_len, dropout)
        num_encoder_layers = check_positive_int(num_encoder_layers, "num_encoder_layers")
        num_decoder_layers = check_positive_int(num_decoder_layers, "num_decoder_layers")
        self.encoder = nn.ModuleList(EncoderLayer(**layer_args) for _ in range(num_encoder_layers))
        self.decoder = nn.ModuleList(DecoderLayer(**layer_args) for _ in range(num_decoder_layers))
        self.encoder_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.decoder_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.generator = nn.Linear(d_model, tgt_vocab)

    def _embed(self, embedding: nn.Embedding, ids, offset: int = 0):
        return self.positional(embedding(ids) * math.sqrt(self.d_model), offset)

    def source_mask(self, src) -> torch.Tensor:
        """Source padding mask ``(B, 1, 1, L_s)``, True on real tokens (see
        :func:`course_lib.scratch.padding_mask_from_ids`)."""
        return (src != self.pad_id)[:, None, None, :]

    def encode(self, src) -> torch.Tensor:
        """Encode source ids ``(B, L_s)`` into ``memory`` ``(B, L_s, d_model)``."""
        check_token_ids(src, "src", vocab_size=self.src_vocab)
        x, mask = self._embed(self.src_embed, src), self.source_mask(src)
        for layer in self.encoder:
            x, _ = layer(x, mask)
        return self.encoder_norm(x)

    def decode(self, tgt_in, memory, src_mask, need_weights: bool = False,
               caches: list[KVCache] | None = None, offset: int = 0):
        """Decoder stack and output projection.

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
        L = tgt_in.shape[1]
        self_mask = torch.from_numpy(causal_mask(L, offset)).to(tgt_in.device)
        y, weights = self._embed(self.tgt_embed, tgt_in, offset), []
        for layer, cache in zip(self.decoder, caches):
            y, w = layer(y, memory, self_mask, src_mask, need_weights, cache)
            weights.append(w)
        return self.generator(self.decoder_norm(y)), (weights if need_weights else None)

    def forward(self, src, tgt_in) -> torch.Tensor:
        """Teacher-forced logits.

        Args:
            src: ``(B, L_s)`` source ids, right-padded with ``pad_id``.
            tgt_in: ``(B, L_t)`` target ids shifted right (``<sos> y_1 ...``).

        Returns:
            ``(B, L_t, tgt_vocab)`` logits; position ``t`` predicts ``y_{t+1}``.
        """
        return self.decode(tgt_in, self.encode(src), self.source_mask(src))[0]

    @torch.no_grad()
    def greedy_decode(self, src, sos_id: int, eos_id: int, max_len: int) -> torch.LongTensor:
        """Translate by always taking the most likely next token (KV-cached).

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
        memory, src_mask = self.encode(src), self.source_mask(src)
        caches = [KVCache() for _ in self.decoder]
        token = torch.full((src.shape[0], 1), sos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        out = []
        for t in range(max_len):
            logits, _ = self.decode(token, memory, src_mask, caches=caches, offset=t)
            token = logits[:, -1:].argmax(-1).masked_fill(done[:, None], self.pad_id)
            out.append(token)
            done |= token[:, 0] == eos_id
            if done.all():
                break
        return torch.cat(out, dim=1)

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
        return torch.stack([cross for _, cross in weights])
