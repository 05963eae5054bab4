"""Input and settings checks shared by the book's models.

A wrong token id inside ``nn.Embedding`` surfaces as an ``IndexError`` deep in
PyTorch; a too-long sequence as a shape mismatch; a ``d_model`` that
``num_heads`` does not divide as a failed ``view`` at the first forward pass.
These checks say instead which argument (or config field) is wrong and what
was expected. The token checks serve BERT and GPT (chapter 7,
``ch07_bert``, ``ch08_gpt``) and the Transformer (chapter 5); :class:`ConfigChecks`
serves the frozen config dataclasses of GPT, BERT, the Transformer and ViT
(``GPTConfig``, ...), which are built nanoGPT-style: ``GPT(GPTConfig(...))``.
"""

from __future__ import annotations

import dataclasses

import torch

from .._validate import (check_index, check_positive_int, check_positive_number, check_probability,
                         check_tensor, shape_str)

__all__ = ["check_token_ids", "check_padding_mask", "ConfigChecks", "resolve_config"]


class ConfigChecks:
    """Checks for the ``__post_init__`` of a frozen config dataclass.

    Every message names the field as ``<Config>.<field>``, e.g.
    ``GPTConfig.num_heads must be an integer >= 1, got 0``. Valid values are
    stored normalised (a NumPy integer becomes an ``int``).
    """

    def _field(self, field: str) -> str:
        return f"{type(self).__name__}.{field}"

    def _set(self, field: str, value) -> None:
        object.__setattr__(self, field, value)        # the dataclass is frozen

    def _check_ints(self, *fields: str, minimum: int = 1) -> None:
        for f in fields:
            self._set(f, check_positive_int(getattr(self, f), self._field(f), minimum=minimum))

    def _check_probability(self, field: str) -> None:
        self._set(field, check_probability(getattr(self, field), self._field(field)))

    def _check_positive_number(self, field: str) -> None:
        self._set(field, check_positive_number(getattr(self, field), self._field(field)))

    def _check_bool(self, field: str) -> None:
        value = getattr(self, field)
        if not isinstance(value, bool):
            raise TypeError(f"{self._field(field)} must be True or False, "
                            f"got {type(value).__name__} {value!r}")

    def _check_index(self, field: str, size: int, what: str) -> None:
        self._set(field, check_index(getattr(self, field), self._field(field), size, what=what))

    def _check_heads(self) -> None:
        """``d_model`` must split into ``num_heads`` heads of width ``d_k`` (chapter 3)."""
        if self.d_model % self.num_heads:
            raise ValueError(f"{type(self).__name__}: d_model={self.d_model} must be divisible by "
                             f"num_heads={self.num_heads} (each head has d_k = d_model / "
                             "num_heads features)")


def resolve_config(config_cls: type, model: str, config, settings: dict):
    """The config a model was given: ``config`` itself, or one built from ``settings``.

    Args:
        config_cls: the model's config dataclass, e.g. ``GPTConfig``.
        model: the model's name, for messages, e.g. ``"GPT"``.
        config: None or an instance of ``config_cls`` (the model's first argument).
        settings: the keyword arguments the model got; with ``config=None``
            they are ``config_cls``'s fields (``GPT(vocab_size=65, ...)``).

    Raises:
        TypeError: ``config`` is not a ``config_cls`` (e.g. positional
            settings such as ``GPT(65, 64, ...)``), both ``config`` and
            settings were given, or a setting is not a field of ``config_cls``.
    """
    name = config_cls.__name__
    fields = [f.name for f in dataclasses.fields(config_cls)]
    if config is not None:
        if not isinstance(config, config_cls):
            raise TypeError(f"{model} takes a {name} or keyword settings, got "
                            f"{type(config).__name__} {config!r}; settings cannot be passed by "
                            f"position: write {model}({name}({fields[0]}=..., ...)) or "
                            f"{model}({fields[0]}=..., ...)")
        if settings:
            raise TypeError(f"{model} takes either a {name} or keyword settings, not both; got "
                            f"config and {sorted(settings)} (use dataclasses.replace(config, ...))")
        return config
    unknown = sorted(set(settings) - set(fields))
    if unknown:
        raise TypeError(f"{model} got unknown setting(s) {unknown}; the fields of {name} are "
                        f"{fields}")
    return config_cls(**settings)


def check_token_ids(ids, name: str, *, vocab_size: int, max_len: int | None = None) -> torch.Tensor:
    """Return ``ids`` if it is a ``(B, L)`` integer tensor of valid token ids.

    Args:
        ids: tensor of shape ``(B, L)``, dtype ``int64`` (or another integer
            type); every entry in ``[0, vocab_size)``.
        name: the argument's name, used in the error message.
        vocab_size: number of rows of the embedding table.
        max_len: longest allowed ``L`` (the position table's size), or None.
    """
    check_tensor(ids, name, ndim=2, floating=False, layout="(B, L)")
    if ids.shape[1] == 0:
        raise ValueError(f"{name} must hold at least one token, got shape {shape_str(ids.shape)}")
    if max_len is not None and ids.shape[1] > max_len:
        raise ValueError(f"{name} has length L = {ids.shape[1]}, longer than "
                         f"max_len = {max_len} (the number of learned positions)")
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0 or hi >= vocab_size:
        bad = lo if lo < 0 else hi
        raise ValueError(f"{name} must hold ids in [0, vocab_size) = [0, {vocab_size}), "
                         f"got {bad}")
    return ids


def check_padding_mask(mask, name: str, shape: torch.Size) -> torch.Tensor:
    """Turn a ``(B, L)`` padding mask (1 = real token, 0 = padding) into a boolean one.

    Args:
        mask: tensor of shape ``(B, L)``, boolean or holding only 0 and 1
            (the Hugging Face ``attention_mask`` convention).
        name: the argument's name, used in the error message.
        shape: the expected ``(B, L)``, i.e. ``input_ids.shape``.

    Returns:
        Boolean tensor ``(B, 1, 1, L)``: True = this key may be attended.
        It broadcasts over heads and queries.
    """
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape {shape_str(shape)}, "
                        f"got {type(mask).__name__}")
    if mask.shape != shape:
        raise ValueError(f"{name} must have the shape of input_ids {shape_str(shape)}, "
                         f"got {shape_str(mask.shape)}")
    if mask.dtype != torch.bool:
        if not ((mask == 0) | (mask == 1)).all():
            raise ValueError(f"{name} must hold only 0 (padding) and 1 (real token)")
        mask = mask != 0
    if not mask.any(dim=1).all():
        raise ValueError(f"{name} must keep at least one real token (a 1) in every row")
    return mask[:, None, None, :]                      # (B, L) -> (B, 1, 1, L)
