"""GPT, the causal decoder-only language model of chapter 8 (``ch08_gpt``).

A GPT-2 block is an encoder layer (pre-LN, tanh-GELU) whose self-attention
is *causal*: position ``t`` may attend to positions ``0 .. t`` only, so the
model can be trained to predict token ``t + 1`` at every position at once
(Radford et al., 2019). Token and learned position embeddings go in; a final
LayerNorm and the language-model head, usually tied to the token embedding
matrix, give the next-token logits.

Generation appends one token at a time. Chapter 8 shows that the keys and
values of earlier positions never change, so a :class:`KVCache` per layer
keeps them and each step only processes the newest token; the result is the
same as recomputing everything (``tests/unit/test_gpt_cache.py`` checks it).
Chapter 8 also trains small GPTs on Shakespeare (characters and byte-level
BPE) and on People's Daily (characters), in :mod:`course_lib.labs.language_model`,
and copies a Hugging Face GPT-2 with :meth:`GPT.from_hf`.

As in nanoGPT, the settings live in a frozen dataclass, :class:`GPTConfig`,
and the model takes it: ``GPT(GPTConfig(vocab_size=65, d_model=48, ...))``.
``GPT(vocab_size=65, d_model=48, ...)`` builds the same config.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from ..scratch.masks import causal_mask
from .._validate import check_positive_int, check_positive_number
from ._hf import encoder_layer_names, gather, hf_state, load_parameters, only_parameter
from ._inputs import ConfigChecks, check_token_ids, resolve_config
from .attention import KVCache
from .layers import EncoderLayer
from .positional import LearnedPositionalEncoding

__all__ = ["GPT", "GPTConfig"]

# Our GPT-2 layer's parts, after :func:`_conv1d_to_linear`, in the order of
# ``_hf.encoder_layer_names``.
_HF_GPT2_LAYER = ("attn.q", "attn.k", "attn.v", "attn.c_proj",
                  "ln_1", "mlp.c_fc", "mlp.c_proj", "ln_2")


@dataclass(frozen=True)
class GPTConfig(ConfigChecks):
    """The settings of a :class:`GPT` (chapter 8). Defaults: GPT-2 small.

    Args:
        vocab_size: number of token ids ``V`` (50257 for GPT-2).
        d_model: width of every token vector (768 for GPT-2 small).
        num_heads: attention heads; must divide ``d_model``; each head has
            width ``d_k = d_model / num_heads``.
        num_layers: number of blocks.
        d_ff: hidden width of the MLP (``4 * d_model`` in GPT-2).
        max_len: context length, the number of learned positions (1024).
        dropout: dropout probability in ``[0, 1)`` on embeddings, attention
            weights and sub-layers.
        tie_weights: use the token embedding matrix as the LM head.
        layer_norm_eps: ``eps`` of every LayerNorm, positive.

    Raises:
        TypeError: a field of the wrong type (e.g. ``num_layers=2.0``).
        ValueError: a value out of range, or ``d_model`` not divisible by
            ``num_heads``; the message names the field.
    """

    vocab_size: int = 50257
    d_model: int = 768
    num_heads: int = 12
    num_layers: int = 12
    d_ff: int = 3072
    max_len: int = 1024
    dropout: float = 0.1
    tie_weights: bool = True
    layer_norm_eps: float = 1e-5

    def __post_init__(self):
        self._check_ints("vocab_size", "d_model", "num_heads", "num_layers", "d_ff", "max_len")
        self._check_heads()
        self._check_probability("dropout")
        self._check_bool("tie_weights")
        self._check_positive_number("layer_norm_eps")


class GPT(nn.Module):
    """A GPT-2-style language model (chapter 8).

    Args:
        config: a :class:`GPTConfig`. Instead of it, its fields may be given
            as keyword arguments (``GPT(vocab_size=65, d_model=48, ...)``),
            never by position.

    Attributes:
        config: the :class:`GPTConfig`.
        tok_emb (``nn.Embedding(vocab_size, d_model)``), pos_emb
        (:class:`LearnedPositionalEncoding`), layers (``num_layers`` pre-LN
        :class:`EncoderLayer` with causal masks), norm (final LayerNorm),
        lm_head (``nn.Linear(d_model, vocab_size)``, tied to ``tok_emb``
        when ``config.tie_weights``); vocab_size, max_len.

    ``forward(input_ids (B, L), cache=None)`` returns logits ``(B, L, vocab_size)``.
    """

    def __init__(self, config: GPTConfig | None = None, **settings):
        super().__init__()
        self.config = c = resolve_config(GPTConfig, "GPT", config, settings)
        self.vocab_size, self.max_len = c.vocab_size, c.max_len
        self.tok_emb = nn.Embedding(c.vocab_size, c.d_model)
        self.pos_emb = LearnedPositionalEncoding(c.d_model, c.max_len, c.dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(c.d_model, c.num_heads, c.d_ff, dropout=c.dropout, activation="gelu_tanh",
                         norm_first=True, layer_norm_eps=c.layer_norm_eps)
            for _ in range(c.num_layers))
        self.norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        self.apply(_init_weights)
        if c.tie_weights:
            self.lm_head.weight = self.tok_emb.weight

    def new_cache(self) -> list[KVCache]:
        """An empty cache for :meth:`forward`: one :class:`KVCache` per layer (chapter 8).

        Returns:
            A list of ``num_layers`` empty caches; after a forward pass over
            ``L`` tokens each holds keys and values ``(B, num_heads, L, d_k)``.
        """
        return [KVCache() for _ in self.layers]

    def _cache_length(self, cache) -> int:
        if not isinstance(cache, list) or len(cache) != len(self.layers) or \
                not all(isinstance(c, KVCache) for c in cache):
            raise TypeError(f"cache must be a list of {len(self.layers)} KVCache objects "
                            f"(one per layer, from GPT.new_cache()), got {type(cache).__name__}")
        return len(cache[0])

    def forward(self, input_ids: torch.Tensor, cache: list[KVCache] | None = None) -> torch.Tensor:
        """Next-token logits at every position (chapter 8).

        Args:
            input_ids: token ids ``(B, L)``, ``offset + L <= max_len``. With a
                cache, these are the new tokens that follow the ``offset``
                cached ones.
            cache: None, or the list from :meth:`new_cache`; each layer's
                cache is extended with the new positions' keys and values
                ``(B, num_heads, L, d_k)``.

        Returns:
            Logits ``(B, L, vocab_size)``; ``logits[:, t]`` scores the token
            after position ``offset + t``.
        """
        offset = 0 if cache is None else self._cache_length(cache)
        check_token_ids(input_ids, "input_ids", vocab_size=self.vocab_size)
        L = input_ids.shape[1]
        if offset + L > self.max_len:
            raise ValueError(f"input_ids has length L = {L} after {offset} cached positions; "
                             f"offset + L = {offset + L} exceeds max_len = {self.max_len}")
        x = self.pos_emb(self.tok_emb(input_ids), offset=offset)             # (B, L, d_model)
        mask = torch.from_numpy(causal_mask(L, offset)).to(input_ids.device)  # (L, offset + L)
        for i, layer in enumerate(self.layers):
            x, _ = layer(x, mask=mask, cache=None if cache is None else cache[i])  # (B, L, d_model)
        return self.lm_head(self.norm(x))                                   # (B, L, vocab_size)

    @torch.no_grad()
    def generate(self, input_ids: torch.Tensor, max_new_tokens: int, temperature: float = 1.0,
                 top_k: int | None = None, generator: torch.Generator | None = None,
                 use_cache: bool = True) -> torch.Tensor:
        """Sample a continuation token by token (chapter 8).

        The model runs in eval mode (no dropout) during generation and its
        previous mode is restored afterwards.

        Args:
            input_ids: the prompt, token ids ``(B, L)``.
            max_new_tokens: number of tokens to append; ``L + max_new_tokens``
                must not exceed ``max_len``.
            temperature: positive; logits are divided by it (below 1 sharpens
                the distribution, above 1 flattens it).
            top_k: None, or keep only the ``top_k`` most likely tokens before
                sampling (``top_k = 1`` is greedy decoding); values above
                ``vocab_size`` keep every token.
            generator: ``torch.Generator`` for reproducible sampling, or None.
            use_cache: reuse keys and values with a :class:`KVCache` (same
                tokens, less work) or recompute the whole prefix every step.

        Returns:
            Token ids ``(B, L + max_new_tokens)``: the prompt, then the samples.
        """
        check_token_ids(input_ids, "input_ids", vocab_size=self.vocab_size)
        max_new_tokens = check_positive_int(max_new_tokens, "max_new_tokens")
        temperature = check_positive_number(temperature, "temperature")
        if top_k is not None:
            top_k = min(check_positive_int(top_k, "top_k"), self.vocab_size)
        if input_ids.shape[1] + max_new_tokens > self.max_len:
            raise ValueError(f"max_new_tokens = {max_new_tokens} plus the prompt length "
                             f"{input_ids.shape[1]} exceeds max_len = {self.max_len}")
        was_training = self.training
        self.eval()
        cache = self.new_cache() if use_cache else None
        ids, new = input_ids, input_ids
        for _ in range(max_new_tokens):
            logits = self(new if use_cache else ids, cache)[:, -1] / temperature  # (B, vocab_size)
            if top_k is not None:
                kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]               # (B, 1)
                logits = logits.masked_fill(logits < kth, float("-inf"))
            new = torch.multinomial(F.softmax(logits, dim=-1), 1, generator=generator)  # (B, 1)
            ids = torch.cat([ids, new], dim=1)                                     # (B, L + 1)
        self.train(was_training)
        return ids

    @classmethod
    def from_hf(cls, hf_model) -> "GPT":
        """Copy a ``transformers`` ``GPT2Model`` or ``GPT2LMHeadModel``.

        GPT-2 stores its linear layers as ``Conv1D`` with the weight
        transposed, ``(in, out)``, and fuses the three projections into one
        ``c_attn`` of width ``3 * d_model``; both are undone here.

        Args:
            hf_model: the Hugging Face model. A bare ``GPT2Model`` has no
                head, so the copy ties the head to the token embeddings, as
                GPT-2 does.

        Returns:
            A :class:`GPT` in eval mode with the same weights (chapter 8
            compares the two models' outputs).
        """
        c = hf_model.config
        if c.activation_function not in ("gelu_new", "gelu_pytorch_tanh") or \
                c.scale_attn_by_inverse_layer_idx or not c.scale_attn_weights:
            raise ValueError("only GPT-2 blocks with tanh-GELU and 1/sqrt(d_k) scaling are "
                             f"supported, got activation_function={c.activation_function!r}")
        untied = hasattr(hf_model, "lm_head") and not c.tie_word_embeddings
        model = cls(GPTConfig(vocab_size=c.vocab_size, d_model=c.n_embd, num_heads=c.n_head,
                              num_layers=c.n_layer, d_ff=c.n_inner or 4 * c.n_embd,
                              max_len=c.n_positions, tie_weights=not untied,
                              layer_norm_eps=c.layer_norm_epsilon))
        state = _conv1d_to_linear(hf_state(hf_model, "transformer."), c.n_layer)
        names = {"tok_emb": "wte", "norm": "ln_f"}
        if untied:
            names["lm_head"] = "lm_head"
        for i in range(c.n_layer):
            names.update(encoder_layer_names(f"layers.{i}", f"h.{i}", _HF_GPT2_LAYER))
        tensors = gather(state, names)
        tensors[only_parameter(model.pos_emb, "pos_emb")] = state["wpe.weight"]
        return load_parameters(model, tensors).eval()


def _conv1d_to_linear(state: dict[str, torch.Tensor], num_layers: int) -> dict[str, torch.Tensor]:
    """GPT-2 tensors with ``Conv1D`` weights transposed to ``nn.Linear``'s
    ``(out, in)`` and ``c_attn`` split into ``attn.q``, ``attn.k``, ``attn.v``."""
    state = dict(state)
    for i in range(num_layers):
        for part in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"):
            state[f"h.{i}.{part}.weight"] = state[f"h.{i}.{part}.weight"].T  # (in, out) -> (out, in)
        for suffix in ("weight", "bias"):
            # (3 d_model, d_model) -> 3 x (d_model, d_model); biases (3 d_model,) -> 3 x (d_model,)
            q, k, v = state.pop(f"h.{i}.attn.c_attn.{suffix}").chunk(3, dim=0)
            state.update({f"h.{i}.attn.{n}.{suffix}": t for n, t in zip("qkv", (q, k, v))})
    return state


def _init_weights(module: nn.Module) -> None:
    """GPT-2's initialisation: N(0, 0.02) weights, zero biases (as nanoGPT)."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
