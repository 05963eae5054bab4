"""Chapter 7's BERT lab (``ch07_bert``): the tokenised bilingual sentences, and one BERT layer in full.

- :func:`load_data`: the bilingual sentences of ``data/sentiment_bilingual.tsv``
  as chapter 7 tokenises them (words for English, characters for Chinese;
  :func:`course_lib.labs.sentiment.load_sentiment`). The chapter shows its
  tokens and BERT's masking rule on them; no model is trained on them.
- :func:`bert_layer`: one post-LN BERT encoder layer written out step by step,
  exactly as the chapter prints it, with the weights of a
  :class:`course_lib.models.layers.EncoderLayer`::

      q, k, v = x W_Q, x W_K, x W_V            split into num_heads heads of d_k = d_model / num_heads
      y = softmax(q k^T / sqrt(d_k) + M) v     every token attends to every real token
      x = LayerNorm(x + y W_O)                 add & norm
      x = LayerNorm(x + GELU(x W_1) W_2)       feed-forward, add & norm

  The chapter checks it against the library's layer and against
  ``transformers``' ``BertLayer`` holding a real all-MiniLM-L6-v2 layer
  (:func:`hf_minilm`, :func:`hf_layer`).

The fine-tuning of the real pretrained MiniLM is :mod:`course_lib.labs.finetune`.
"""

from __future__ import annotations

import math
import warnings

import torch
from torch.nn import functional as F

from .._validate import check_tensor
from ..models.layers import EncoderLayer
from .sentiment import SentimentData, load_sentiment

__all__ = ["MAX_LEN", "MIN_FREQ", "load_data", "bert_layer", "hf_minilm", "hf_layer"]

MAX_LEN = 24
"""Every sentence is padded or truncated to this many ids, ``<cls>`` and ``<sep>`` included."""
MIN_FREQ = 2
"""Training tokens seen fewer times become ``<unk>``."""


def load_data() -> SentimentData:
    """The bilingual sentences as chapter 7 encodes them (``max_len`` 24, ``min_freq`` 2)."""
    return load_sentiment(max_len=MAX_LEN, min_freq=MIN_FREQ)


def bert_layer(x, mask, layer):
    B, T, d_model = x.shape
    attn = layer.self_attn
    nh, hs = attn.num_heads, d_model // attn.num_heads                 # heads, head size d_k
    q = attn.q_proj(x).view(B, T, nh, hs).transpose(1, 2)              # (B, nh, T, hs)
    k = attn.k_proj(x).view(B, T, nh, hs).transpose(1, 2)              # (B, nh, T, hs)
    v = attn.v_proj(x).view(B, T, nh, hs).transpose(1, 2)              # (B, nh, T, hs)
    scores = q @ k.transpose(-2, -1) / math.sqrt(hs)                   # (B, nh, T, T)
    scores = scores.masked_fill(~mask.view(B, 1, 1, T), -math.inf)     # (B, nh, T, T): no padding key
    y = scores.softmax(dim=-1) @ v                                     # (B, nh, T, hs)
    y = y.transpose(1, 2).reshape(B, T, d_model)                       # (B, T, d_model): heads side by side
    x = layer.norm1(x + attn.out_proj(y))                              # add & norm
    h = F.gelu(layer.linear1(x))                                       # (B, T, d_ff)
    return layer.norm2(x + layer.linear2(h))                           # add & norm: (B, T, d_model)


_bert_layer_doc = """One post-LN BERT layer, step by step (chapter 7), in eval mode (no dropout).

    Args:
        x: ``(B, T, d_model)`` floating-point input vectors.
        mask: ``(B, T)`` boolean, True for real tokens, False for padding.
        layer: a post-LN :class:`~course_lib.models.layers.EncoderLayer` with
            GELU (a BERT layer, e.g. ``load_minilm()[0].layers[0]``); its weights are used.

    Returns:
        ``(B, T, d_model)``: what ``layer(x, mask=mask[:, None, None, :])[0]`` returns in eval mode.

    Raises:
        TypeError: ``layer`` is not an EncoderLayer, or ``x`` / ``mask`` of the wrong kind.
        ValueError: a pre-LN or non-GELU layer, or shapes that do not fit.
    """


def _checked(fn):
    """Keep :func:`bert_layer`'s body exactly as the chapter prints it; check its inputs here."""
    def wrapper(x, mask, layer):
        if not isinstance(layer, EncoderLayer):
            raise TypeError(f"layer must be a course_lib EncoderLayer, got {type(layer).__name__}")
        if layer.norm_first or layer.activation != "gelu":
            raise ValueError("layer must be a post-LN GELU layer (norm_first=False, activation='gelu'), as in BERT")
        check_tensor(x, "x", ndim=3, last_dim=layer.d_model, layout=f"(B, T, d_model={layer.d_model})")
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or tuple(mask.shape) != tuple(x.shape[:2]):
            raise TypeError(f"mask must be a boolean tensor of shape (B, T) = {tuple(x.shape[:2])}, "
                            f"got {getattr(mask, 'dtype', type(mask).__name__)} {tuple(getattr(mask, 'shape', ()))}")
        return fn(x, mask, layer)
    wrapper.__wrapped__ = fn
    wrapper.__name__, wrapper.__doc__ = fn.__name__, _bert_layer_doc
    return wrapper


bert_layer = _checked(bert_layer)


def hf_minilm(dtype=torch.float64):
    """all-MiniLM-L6-v2 as ``transformers.BertModel`` (eager attention), from the installed package, offline.

    Chapter 7 compares :func:`bert_layer` with its layers. ``dtype``: ``torch.float64`` or ``torch.float32``.
    """
    from ..models.pretrained import minilm_dir

    if dtype not in (torch.float32, torch.float64):
        raise TypeError(f"dtype must be torch.float32 or torch.float64, got {dtype!r}")
    with warnings.catch_warnings():                                 # nothing on stderr: tqdm's notebook
        warnings.simplefilter("ignore")                             # warning, the progress bar
        import transformers

        transformers.logging.set_verbosity_error()
        transformers.utils.logging.disable_progress_bar()
        model = transformers.BertModel.from_pretrained(minilm_dir(), attn_implementation="eager",
                                                       local_files_only=True)
    return model.to(dtype).eval()


@torch.no_grad()
def hf_layer(hf_model, index: int, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Run ``transformers``' ``BertLayer`` number ``index`` of ``hf_model`` on ``x (B, T, d_model)``.

    ``mask (B, T)`` (True = real token) becomes Hugging Face's additive mask
    ``(B, 1, 1, T)``: 0 for real tokens, the dtype's minimum for padding.
    """
    layers = hf_model.encoder.layer
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(layers):
        raise ValueError(f"index must be a layer number in [0, {len(layers)}), got {index!r}")
    check_tensor(x, "x", ndim=3, last_dim=hf_model.config.hidden_size, layout="(B, T, d_model)")
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or tuple(mask.shape) != tuple(x.shape[:2]):
        raise TypeError(f"mask must be a boolean tensor of shape (B, T) = {tuple(x.shape[:2])}")
    additive = torch.zeros(mask.shape, dtype=x.dtype).masked_fill(~mask, torch.finfo(x.dtype).min)
    out = layers[index](x, attention_mask=additive[:, None, None, :])
    return out[0] if isinstance(out, tuple) else out
