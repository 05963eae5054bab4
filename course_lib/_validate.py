"""Argument checks shared by every public function of ``course_lib``.

Every public function validates its inputs with these helpers so that a
learner who passes the wrong thing gets one clear sentence that names the
argument and what was expected, never a NaN or a traceback from deep inside
NumPy or PyTorch.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "as_real_array",
    "check_finite",
    "check_positive_int",
    "check_probability",
    "check_choice",
    "shape_str",
    "check_positive_number",
    "check_index",
    "check_tensor",
    "check_bool_mask",
]


def shape_str(shape) -> str:
    """Format a shape tuple the way the book writes it: ``(2, 3, 4)``."""
    return "(" + ", ".join(str(s) for s in shape) + ")"


def as_real_array(x, name: str, *, min_ndim: int = 0, dtype=None) -> np.ndarray:
    """Return ``x`` as a floating NumPy array, or raise a clear error.

    Integers and booleans are promoted to ``float64``; ``float16/32/64`` keep
    their dtype unless ``dtype`` is given. Strings, objects, complex numbers
    and ``None`` raise ``TypeError``; too few dimensions raise ``ValueError``.
    """
    if x is None:
        raise TypeError(f"{name} must be an array of real numbers, got None")
    if hasattr(x, "detach") and hasattr(x, "numpy"):  # a torch.Tensor
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be an array of real numbers; "
                        f"could not convert it ({exc})") from None
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be an array of real numbers, "
                        f"got dtype {arr.dtype}")
    if dtype is not None:
        arr = arr.astype(dtype)
    elif arr.dtype.kind != "f":
        arr = arr.astype(np.float64)
    if arr.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s), "
                         f"got shape {shape_str(arr.shape)}")
    return arr


def check_finite(arr: np.ndarray, name: str, *, allow_neg_inf: bool = False) -> None:
    """Raise ``ValueError`` if ``arr`` holds NaN or infinities.

    With ``allow_neg_inf=True``, ``-inf`` is accepted (it is how a masked
    logit is often written) but NaN and ``+inf`` are not.
    """
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN at index "
                         f"{tuple(int(i) for i in np.argwhere(np.isnan(arr))[0])}")
    bad = np.isposinf(arr) if allow_neg_inf else np.isinf(arr)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} contains an infinite value at index {where}")


def check_positive_int(value, name: str, *, minimum: int = 1) -> int:
    """Return ``value`` as ``int`` if it is an integer ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, "
                        f"got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def check_probability(value, name: str) -> float:
    """Return ``value`` as ``float`` if it lies in ``[0, 1)``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number in [0, 1), got {type(value).__name__}")
    if not 0.0 <= float(value) < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value}")
    return float(value)


def check_index(value, name: str, size: int, *, what: str = "") -> int:
    """Return ``value`` as ``int`` if it is an integer in ``[0, size)`` (a token id, say).

    ``what`` names the range for the message, e.g. ``"tgt_vocab"``.
    """
    label = f"[0, {what}) = [0, {size})" if what else f"[0, {size})"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer in {label}, got {type(value).__name__} {value!r}")
    if not 0 <= value < size:
        raise ValueError(f"{name} must be an integer in {label}, got {value}")
    return int(value)


def check_positive_number(value, name: str) -> float:
    """Return ``value`` as ``float`` if it is a real number ``> 0`` (an eps, a scale)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive number, got {type(value).__name__} {value!r}")
    if not float(value) > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def check_choice(value, name: str, choices) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value


def check_tensor(x, name: str, *, ndim: int | None = None, last_dim: int | None = None,
                 floating: bool = True, layout: str = ""):
    """Return ``x`` if it is a ``torch.Tensor`` of the expected kind and shape.

    Args:
        x: the value to check.
        name: the argument's name, used in the message.
        ndim: the required number of dimensions, or None for any.
        last_dim: the required size of the last dimension, or None for any.
        floating: require a floating-point dtype (otherwise an integer one).
        layout: how the book writes the expected shape, e.g. ``"(B, L, d_model)"``.

    Raises:
        TypeError: not a tensor, or the wrong kind of dtype.
        ValueError: the wrong number of dimensions or last dimension.
    """
    import torch  # lazily, so that course_lib.scratch works without PyTorch

    expected = f" of shape {layout}" if layout else ""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor{expected}, got {type(x).__name__}")
    if floating and not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor{expected}, got dtype {x.dtype}")
    if not floating and (x.is_floating_point() or x.is_complex() or x.dtype == torch.bool):
        raise TypeError(f"{name} must be an integer tensor{expected} (token ids), "
                        f"got dtype {x.dtype}")
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions{expected}, "
                         f"got shape {shape_str(x.shape)}")
    if last_dim is not None and x.shape[-1] != last_dim:
        raise ValueError(f"{name} must have last dimension {last_dim}{expected}, "
                         f"got shape {shape_str(x.shape)}")
    return x


def check_bool_mask(mask, name: str, target_shape, *, layout: str = "(B, num_heads, L_q, L_k)"):
    """Return ``mask`` if it is a boolean tensor broadcastable to ``target_shape``.

    True means "may attend", the convention of the whole book (and of the
    boolean ``attn_mask`` of ``torch.nn.functional.scaled_dot_product_attention``;
    ``torch.nn.MultiheadAttention`` uses the opposite one).
    """
    import torch

    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"{name} must be a boolean torch.Tensor (True = may attend), "
                        f"got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise TypeError(f"{name} must be boolean with True meaning 'may attend', "
                        f"got dtype {mask.dtype}")
    target = tuple(target_shape)
    try:
        ok = torch.broadcast_shapes(mask.shape, target) == target
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(f"{name} must be broadcastable to {layout} = {shape_str(target)}, "
                         f"got {shape_str(mask.shape)}")
    return mask
