"""Boolean attention masks: True means "may attend".

Two masks appear in the book:

- a **padding mask** hides the ``<pad>`` positions that make sentences of
  different lengths fit in one batch (chapter 5, ``ch05_transformer``);
- a **causal mask** hides the future, so that position ``i`` only sees
  positions ``0..i`` (chapter 5, and GPT in chapter 8, ``ch08_gpt``).

Shapes are chosen to broadcast against multi-head scores of shape
``(B, num_heads, L_q, L_k)``: a padding mask is ``(B, 1, 1, L_k)`` (the same
for every head and every query) and a causal mask is ``(L, L)``. Combine them
with ``&``: ``padding_mask(...) & causal_mask(L)`` is ``(B, 1, L, L)``. For a
single head, whose scores are ``(B, L_q, L_k)``, take ``mask[:, 0]``.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_positive_int, shape_str

__all__ = ["padding_mask", "padding_mask_from_ids", "causal_mask"]


def padding_mask(lengths, max_len: int) -> np.ndarray:
    """Key padding mask from sequence lengths.

    Args:
        lengths: ``(B,)`` integers in ``[1, max_len]``, the number of real
            tokens of each sequence (the padding comes after them).
        max_len: ``L_k``, the padded length.

    Returns:
        Boolean ``(B, 1, 1, L_k)``: ``[b, 0, 0, j]`` is True when ``j <
        lengths[b]``.

    Chapter 5 pads a batch of sentences and masks the padding.
    """
    max_len = check_positive_int(max_len, "max_len")
    lengths = np.asarray(lengths)
    if lengths.dtype.kind not in "iu" or lengths.ndim != 1:
        raise TypeError(f"lengths must be a 1-D array of integers (B,), got dtype "
                        f"{lengths.dtype} and shape {shape_str(lengths.shape)}")
    if lengths.size and (lengths.min() < 1 or lengths.max() > max_len):
        raise ValueError(f"lengths must lie in [1, max_len={max_len}], got "
                         f"min {lengths.min()} and max {lengths.max()}")
    real = np.arange(max_len) < lengths[:, None]      # (L_k,) < (B, 1) -> (B, L_k)
    return real[:, None, None, :]                     # (B, 1, 1, L_k)


def padding_mask_from_ids(ids, pad_id: int) -> np.ndarray:
    """Key padding mask from token ids: True wherever ``ids != pad_id``.

    Args:
        ids: ``(B, L_k)`` integer token ids.
        pad_id: the id of the ``<pad>`` token.

    Returns:
        Boolean ``(B, 1, 1, L_k)``.

    Chapter 5 builds the source padding mask of a batch with it.
    """
    pad_id = check_positive_int(pad_id, "pad_id", minimum=0)
    ids = np.asarray(ids)
    if ids.dtype.kind not in "iu" or ids.ndim != 2:
        raise TypeError(f"ids must be a 2-D array of integer token ids (B, L_k), got dtype "
                        f"{ids.dtype} and shape {shape_str(ids.shape)}")
    return (ids != pad_id)[:, None, None, :]          # (B, L_k) -> (B, 1, 1, L_k)


def causal_mask(L: int, offset: int = 0) -> np.ndarray:
    """Causal ("look-ahead") mask: a query may attend to keys not in its future.

    Args:
        L: number of queries (new positions).
        offset: number of earlier positions already decoded (and cached),
            which every query may see; 0 for a whole sequence at once.

    Returns:
        Boolean ``(L, offset + L)``: ``[i, j]`` is True when ``j <= offset +
        i``. With ``offset=0`` it is the square lower-triangular mask.

    Chapter 5 uses it in the decoder; chapter 7 in GPT, with a KV cache.
    """
    L = check_positive_int(L, "L")
    offset = check_positive_int(offset, "offset", minimum=0)
    return np.tril(np.ones((L, offset + L), dtype=bool), k=offset)   # (L, offset + L)
