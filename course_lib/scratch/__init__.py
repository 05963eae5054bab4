"""NumPy, forward-only implementations that mirror the book's formulas.

Each function is the code version of an equation in the book; the chapter
that derives it is named in its docstring. ``course_lib.models`` holds the
trainable PyTorch versions of the same ideas.
"""

from .additive import additive_attention
from .attention import attention_scores, masked_softmax, scaled_dot_product_attention, softmax
from .layers import decoder_layer, encoder_layer, feed_forward, layer_norm
from .linear import linear
from .masks import causal_mask, padding_mask, padding_mask_from_ids
from .multihead import merge_heads, multi_head_attention, split_heads
from .positional import sinusoidal_positional_encoding
from .rope import apply_rope, rope_angles  # chapter 11
from .alibi import alibi_bias, alibi_slopes  # chapter 11
from .online_softmax import tiled_attention  # chapter 11
from .norms import rms_norm, swiglu  # chapter 11

__all__ = [
    "softmax", "masked_softmax", "attention_scores", "scaled_dot_product_attention",
    "additive_attention",
    "linear", "split_heads", "merge_heads", "multi_head_attention",
    "padding_mask", "padding_mask_from_ids", "causal_mask",
    "sinusoidal_positional_encoding",
    "layer_norm", "feed_forward", "encoder_layer", "decoder_layer",
    "apply_rope", "rope_angles", "alibi_slopes", "alibi_bias", "tiled_attention", "rms_norm", "swiglu",
]
