"""Chapter 6's worked examples: the source's ViT patch arithmetic and comparison table, recomputed.

Each ``*_steps`` function returns a dict whose keys match the ``claims`` of
its data in ``source.py`` (``VIT_PATCHES``, ``VIT_TABLE``), so
``course_lib.chapters.compare`` can set every printed number beside the
computed one. ``course_lib.chapters.EXAMPLES`` registers them.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import source
from ..._validate import check_positive_int
from ...models.resnet import conv_macs
from ...analysis.sizes import CONFIGS, build_on_meta, count_parameters, vit_flops

__all__ = ["patch_steps", "table_steps", "model_size", "EXAMPLES"]


def patch_steps(image_size: int | None = None, patch_size: int | None = None,
                in_channels: int | None = None) -> dict:
    """How many patches, and how long is each flattened patch?

    Args:
        image_size, patch_size, in_channels: default to the source's 224, 16, 3.

    Returns:
        dict with ``per_side (2,)`` (patches per row and per column),
        ``num_patches ()`` and ``patch_dim ()`` ``= P * P * C``. Chapter 6.
    """
    d = source.VIT_PATCHES
    H = check_positive_int(d["image_size"] if image_size is None else image_size, "image_size")
    P = check_positive_int(d["patch_size"] if patch_size is None else patch_size, "patch_size")
    C = check_positive_int(d["in_channels"] if in_channels is None else in_channels, "in_channels")
    if H % P:
        raise ValueError(f"image_size = {H} must be divisible by patch_size = {P}")
    per_side = np.array([H // P, H // P])
    return {"per_side": per_side, "num_patches": int(per_side.prod()), "patch_dim": P * P * C}


@lru_cache(maxsize=None)
def model_size(name: str) -> tuple[int, int]:
    """``(parameters, multiply-adds per 224 x 224 image)`` of a ``sizes.CONFIGS`` model.

    ViTs: :func:`course_lib.analysis.sizes.vit_flops`; ResNet-50:
    :func:`course_lib.models.resnet.conv_macs` on the ``meta`` device. Chapter 6.
    """
    family, kwargs = CONFIGS[name]
    model = build_on_meta(name)
    macs = vit_flops(**kwargs)["total"] if family == "vit" else conv_macs(model)
    return count_parameters(model), macs


def table_steps() -> dict:
    """The source's comparison table, recomputed for its three models.

    Returns:
        dict with ``params_m (3,)`` (millions of parameters) and ``gflops (3,)``
        (billions of multiply-adds per 224 x 224 image), in the order
        ResNet-50, ViT-B/16, ViT-L/16. Chapter 6.
    """
    sizes = [model_size(name) for name in source.VIT_TABLE["models"]]
    return {"params_m": np.array([p for p, _ in sizes]) / 1e6,
            "gflops": np.array([m for _, m in sizes]) / 1e9}


#: name -> (steps function, source data), merged into ``course_lib.chapters.EXAMPLES``.
EXAMPLES = {
    "vit_patches": (patch_steps, source.VIT_PATCHES),
    "vit_table": (table_steps, source.VIT_TABLE),
}
