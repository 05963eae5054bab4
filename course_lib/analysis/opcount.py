"""The work and the memory of a PyTorch call, counted rather than timed (chapter 10).

Wall-clock time depends on the machine, on the kernels PyTorch picks for it
and on whatever else runs beside it; what a call computes does not.
:func:`count_work` runs a function once and watches every operation it
dispatches, with two of PyTorch's dispatch modes:

- ``torch.utils.flop_counter.FlopCounterMode`` counts the FLOPs of matrix
  products and convolutions, 2 per multiply-add; elementwise operations,
  ``exp``, softmax and sums are not counted (as in the "FLOPs" of papers);
- a mode of this module looks at each tensor an operation returns and keeps
  the largest floating-point one that does not share storage with an input
  (a view of an input is not memory the call allocates; a view of a tensor
  the call created counts as that tensor).

Both depend on shapes and dtypes only, so they are the same on every CPU,
kernel path and thread count. Chapter 10 (*Attention for long sequences*)
counts the attention variants of
:mod:`course_lib.models.efficient_attention` with it.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import FlopCounterMode

__all__ = ["count_work"]


def _tensors(tree):
    return [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]


class _LargestCreated(TorchDispatchMode):
    """Records the largest floating-point tensor an operation returns, inputs' storage excluded."""

    def __init__(self, inputs):
        super().__init__()
        self.inputs = {StorageWeakRef(t.untyped_storage()) for t in inputs}
        self.nbytes, self.shape, self.op = 0, None, None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in _tensors(out):
            if not (t.is_floating_point() or t.is_complex()):
                continue
            storage = t.untyped_storage()
            if StorageWeakRef(storage) in self.inputs:
                continue
            if storage.nbytes() > self.nbytes:
                self.nbytes, self.shape, self.op = storage.nbytes(), tuple(t.shape), str(func)
        return out


def count_work(fn: Callable, *args, **kwargs) -> dict:
    """Multiply-adds and the largest floating-point tensor of one call ``fn(*args, **kwargs)`` (chapter 10).

    The call runs once, under ``torch.no_grad()``. Only tensors among
    ``args`` and ``kwargs`` (at any depth of lists, tuples and dicts) count
    as inputs; a tensor ``fn`` reaches otherwise (a module's weights, a
    global) is counted when an operation returns it.

    Args:
        fn: a callable that runs PyTorch operations, e.g.
            ``lambda Q, K, V: full_attention(Q, K, V)``.
        *args, **kwargs: passed to ``fn``.

    Returns:
        ``{"multiply_adds": int, "largest_bytes": int, "largest_shape": tuple,
        "largest_op": str}``: the multiply-adds of every matrix product and
        convolution (``FlopCounterMode``'s FLOPs / 2), and the bytes, shape
        and creating operation of the largest floating-point tensor the call
        created (its result included), or ``0, None, None`` if it created none.

    Raises:
        TypeError: ``fn`` is not callable.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable (the function to count), got {type(fn).__name__}")
    largest = _LargestCreated(_tensors((args, kwargs)))
    with torch.no_grad(), FlopCounterMode(display=False) as flops, largest:
        fn(*args, **kwargs)
    return {"multiply_adds": flops.get_total_flops() // 2, "largest_bytes": largest.nbytes,
            "largest_shape": largest.shape, "largest_op": largest.op}
