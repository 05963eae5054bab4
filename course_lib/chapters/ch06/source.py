"""Chapter 6's data from the source documents: ViT's patch arithmetic, its comparison
table, and its ``VisionTransformer`` code (source ``"attention"``, §4.2)."""

from __future__ import annotations

import torch
from torch import nn

from .._claims import Claim

__all__ = ["VIT_PATCHES", "VIT_TABLE", "PUBLISHED_TOP1", "SourceVisionTransformer"]

# §4.2 "Patch Embedding Process": a 224 x 224 RGB image cut into 16 x 16 patches.
VIT_PATCHES = {
    "image_size": 224,
    "patch_size": 16,
    "in_channels": 3,
    "d_model": 512,          # the text's example width ("768 -> d_model (e.g., 512)")
    "claims": {
        "per_side": Claim("attention", "§4.2 step 1: 224/16 × 224/16", ("14", "14")),
        "num_patches": Claim("attention", "§4.2 step 1: number of patches", ("196",)),
        "patch_dim": Claim("attention", "§4.2 step 2: 16 × 16 × 3", ("768",)),
    },
}

# §4.2 "Performance Comparison", rows ResNet-50, ViT-Base, ViT-Large. The book
# recomputes the Parameters and FLOPs columns for the configurations of
# ``course_lib.analysis.sizes.CONFIGS`` (millions of parameters, GFLOPs = 1e9 multiply-adds
# per 224 x 224 image). The accuracy column cannot be recomputed; it is kept as
# printed and set beside the published figures in chapter 6.
VIT_TABLE = {
    "models": ["ResNet-50", "ViT-B/16", "ViT-L/16"],
    "names": ["ResNet-50", "ViT-Base", "ViT-Large"],
    "top1": ("76.5%", "77.9%", "76.5%"),
    "claims": {
        "params_m": Claim("attention", "§4.2 table: Parameters (M)", ("25", "86", "307")),
        "gflops": Claim("attention", "§4.2 table: FLOPs (G)", ("4.1", "17.6", "61.6")),
    },
}


class SourceVisionTransformer(nn.Module):
    """The source's ``VisionTransformer`` (§4.2), verbatim apart from comments.

    Kept as printed so that chapter 6 can run it: its encoder layers are
    built with PyTorch's defaults (``batch_first=False``, a 2048-wide ReLU
    MLP, post-LN), and constructing it makes PyTorch warn about nested
    tensors, so build it inside ``warnings.catch_warnings()``.
    """

    def __init__(self, img_size=224, patch_size=16, num_classes=1000,
                 d_model=768, nhead=12, num_layers=12):
        super().__init__()
        self.patch_size = patch_size
        self.num_patches = (img_size // patch_size) ** 2
        self.patch_embed = nn.Conv2d(3, d_model, kernel_size=patch_size, stride=patch_size)
        self.cls_token = nn.Parameter(torch.randn(1, 1, d_model))
        self.pos_embed = nn.Parameter(torch.randn(1, self.num_patches + 1, d_model))
        self.transformer = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d_model, nhead),
            num_layers
        )
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, x):
        B = x.shape[0]
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        cls_tokens = self.cls_token.expand(B, -1, -1)
        x = torch.cat((cls_tokens, x), dim=1)
        x = x + self.pos_embed
        x = self.transformer(x)
        cls_token_final = x[:, 0]
        return self.head(cls_token_final)


#: ImageNet top-1 accuracy (%) as published, for models trained on ImageNet-1k only
#: (no larger pre-training data set); chapter 6 sets them beside the source's column.
PUBLISHED_TOP1 = {
    "ResNet-50": ("76.13", "torchvision resnet50 IMAGENET1K_V1 model card (224 × 224, one crop)"),
    "ViT-B/16": ("77.91", "Dosovitskiy et al. 2021, Table 5, pre-trained on ImageNet, "
                          "fine-tuned at 384 × 384"),
    "ViT-L/16": ("76.53", "Dosovitskiy et al. 2021, Table 5, pre-trained on ImageNet, "
                          "fine-tuned at 384 × 384"),
}
