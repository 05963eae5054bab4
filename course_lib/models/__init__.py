"""Trainable PyTorch versions of the book's models (batch-first).

``course_lib.scratch`` shows each formula in NumPy; the modules here compute
the same things on batches, with gradients, and copy weights from
``torch.nn`` where PyTorch has an equivalent.

The four whole models take a frozen config dataclass, as nanoGPT does:
``GPT(GPTConfig(...))`` (chapter 8), ``BERT(BERTConfig(...))`` (chapter 7),
``Transformer(TransformerConfig(...))`` (chapter 5) and
``ViT(ViTConfig(...))`` (chapter 6). Keyword settings
(``GPT(vocab_size=65, ...)``) build the same config; positional settings are
refused.

Two more models live in their own modules, imported as such:
``course_lib.models.clip`` (``CLIP(CLIPConfig(...))``, the contrastive
image-text model of chapter 6) and ``course_lib.models.speech``
(``SpeechTransformer(SpeechTransformerConfig(...))``, chapter 12).
"""

from .attention import KVCache, MultiHeadAttention
from .layers import DecoderLayer, EncoderLayer
from .positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding
from .seq2seq import AdditiveAttention, Seq2Seq
from .transformer import Transformer, TransformerConfig
from .vit import PatchEmbedding, ViT, ViTConfig, patchify
from .bert import BERT, BERTConfig, BertClassifier, BertForMLM, init_bert_weights, mask_tokens
from .gpt import GPT, GPTConfig
from .rope import RotaryEmbedding  # chapter 11
from .gqa import GroupedQueryAttention, kv_cache_bytes_per_token  # chapter 11
from .norms import LlamaBlock, RMSNorm, SwiGLU  # chapter 11
from .tiled_attention import peak_memory_bytes  # chapter 11 (the function stays course_lib.models.tiled_attention.tiled_attention)
