"""Trainable PyTorch versions of the book's models (batch-first).

``course_lib.scratch`` shows each formula in NumPy; the modules here compute
the same things on batches, with gradients, and copy weights from
``torch.nn`` where PyTorch has an equivalent.
"""

from .attention import KVCache, MultiHeadAttention
from .layers import DecoderLayer, EncoderLayer
from .positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding
from .seq2seq import AdditiveAttention, Seq2Seq
from .transformer import Transformer
from .vit import PatchEmbedding, ViT, patchify
from .bert import BERT, BertClassifier, BertForMLM, mask_tokens
from .gpt import GPT
