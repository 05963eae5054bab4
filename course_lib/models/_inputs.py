"""Input checks shared by the book's BERT and GPT (chapter 7, ``ch07_bert_gpt``).

A wrong token id inside ``nn.Embedding`` surfaces as an ``IndexError`` deep in
PyTorch; a too-long sequence as a shape mismatch. These checks say instead
which argument is wrong and what was expected.
"""

from __future__ import annotations

import torch

from .._validate import check_tensor, shape_str

__all__ = ["check_token_ids", "check_padding_mask"]


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
    return mask[:, None, None, :]
