"""A compact ResNet, to count the convolutional baseline of chapter 6 (``ch06_vit``).

The source documents compare ViT with ResNet-50 (He et al., 2016, "Deep
Residual Learning for Image Recognition", Table 1: stages of 3, 4, 6 and 3
bottleneck blocks). :class:`ResNet` rebuilds that architecture in a few lines
so that :func:`course_lib.analysis.sizes.build_on_meta` can count its parameters and
:func:`conv_macs` its multiply-adds on PyTorch's ``meta`` device, where
tensors have shapes but no storage: nothing is downloaded, trained or run.

Two variants differ only in where a stage's first block halves the
resolution: in its first 1x1 convolution (the paper's original design,
``stride_in_3x3=False``) or in its 3x3 convolution ("ResNet v1.5", the design
of torchvision's ``resnet50`` and the default here). The parameters are the
same; the multiply-adds are not (chapter 6 prints both).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from .._validate import check_positive_int

__all__ = ["Bottleneck", "ResNet", "conv_macs"]

EXPANSION = 4
"""A bottleneck block's output has ``4 * width`` channels."""


def _conv_bn(c_in: int, c_out: int, kernel: int, stride: int = 1) -> list[nn.Module]:
    return [nn.Conv2d(c_in, c_out, kernel, stride, padding=kernel // 2, bias=False),
            nn.BatchNorm2d(c_out)]


class Bottleneck(nn.Module):
    """1x1 (reduce to ``width``) -> 3x3 -> 1x1 (expand to ``4 * width``), plus a shortcut.

    Args:
        c_in: input channels.
        width: channels of the 3x3 convolution.
        stride: 1, or 2 to halve height and width.
        stride_in_3x3: put the stride in the 3x3 convolution (v1.5) rather
            than the first 1x1.

    ``forward`` maps ``(B, c_in, H, W)`` to ``(B, 4 * width, H / stride, W / stride)``.
    The shortcut is the identity, or a strided 1x1 convolution with batch
    norm when the shape changes. Chapter 6.
    """

    def __init__(self, c_in: int, width: int, stride: int = 1, stride_in_3x3: bool = True):
        super().__init__()
        s1, s3 = (1, stride) if stride_in_3x3 else (stride, 1)
        c_out = EXPANSION * width
        self.body = nn.Sequential(*_conv_bn(c_in, width, 1, s1), nn.ReLU(),
                                  *_conv_bn(width, width, 3, s3), nn.ReLU(),
                                  *_conv_bn(width, c_out, 1))
        self.shortcut = (nn.Identity() if stride == 1 and c_in == c_out
                         else nn.Sequential(*_conv_bn(c_in, c_out, 1, stride)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.shortcut(x))


class ResNet(nn.Module):
    """ResNet with bottleneck blocks (He et al., 2016), for counting (chapter 6).

    Args:
        blocks: bottleneck blocks per stage; ``(3, 4, 6, 3)`` is ResNet-50,
            ``(3, 4, 23, 3)`` ResNet-101.
        num_classes: logits of the final linear layer.
        in_channels: 3 for RGB.
        stride_in_3x3: see :class:`Bottleneck` (True: torchvision's v1.5).

    ``forward`` maps ``(B, in_channels, H, W)`` to ``(B, num_classes)``: a 7x7
    stride-2 convolution and a stride-2 max-pool, four stages of widths 64,
    128, 256, 512 (every stage after the first halves the resolution),
    global average pooling and a linear layer.
    """

    def __init__(self, blocks=(3, 4, 6, 3), num_classes: int = 1000, in_channels: int = 3,
                 stride_in_3x3: bool = True):
        super().__init__()
        if not isinstance(blocks, (tuple, list)) or len(blocks) != 4:
            raise ValueError(f"blocks must be 4 block counts, one per stage, got {blocks!r}")
        blocks = [check_positive_int(n, "blocks") for n in blocks]
        self.stem = nn.Sequential(*_conv_bn(check_positive_int(in_channels, "in_channels"), 64, 7, 2),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, padding=1))
        layers, c_in = [], 64
        for stage, (n, width) in enumerate(zip(blocks, (64, 128, 256, 512))):
            for i in range(n):
                stride = 2 if stage > 0 and i == 0 else 1
                layers.append(Bottleneck(c_in, width, stride, stride_in_3x3))
                c_in = EXPANSION * width
        self.stages = nn.Sequential(*layers)
        self.head = nn.Linear(c_in, check_positive_int(num_classes, "num_classes"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.stages(self.stem(x)).mean(dim=(2, 3)))


def conv_macs(model: nn.Module, image_size: int = 224, in_channels: int = 3) -> int:
    """Multiply-adds of one forward pass on one image, counted by PyTorch (chapter 6).

    The model runs on a ``meta`` tensor (no storage, no arithmetic) under
    ``torch.utils.flop_counter.FlopCounterMode``, which counts 2 FLOPs per
    multiply-add of every convolution and matrix product; batch norm,
    ReLU, pooling and additions are left out, as in the "GFLOPS" of
    torchvision and the papers.

    Args:
        model: a module on the ``meta`` device taking ``(1, in_channels,
            image_size, image_size)`` (e.g. ``sizes.build_on_meta("ResNet-50")``).
        image_size: side of the square image.
        in_channels: channels of the image.

    Returns:
        The number of multiply-adds (an ``int``).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    x = torch.empty(1, check_positive_int(in_channels, "in_channels"),
                    check_positive_int(image_size, "image_size"),
                    check_positive_int(image_size, "image_size"), device="meta")
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(x)
    return counter.get_total_flops() // 2
