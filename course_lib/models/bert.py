"""BERT, the bidirectional encoder of chapter 7 (``ch07_bert``).

Each input token gets three embeddings, summed and normalised (Devlin et al.,
2019, figure 2): a token embedding, a learned position embedding and a
segment (token type) embedding that says whether it belongs to sentence A or
B. Post-LN encoder layers with GELU follow; every token sees every other
real token, which is what "bidirectional" means. Two heads sit on top:

- :class:`BertForMLM` predicts masked tokens (pre-training, :func:`mask_tokens`);
- :class:`BertClassifier` classifies a sequence from its [CLS] token.

Chapter 7 pre-trains a small BERT with :func:`mask_tokens` and fine-tunes it
as a :class:`BertClassifier`, and copies a Hugging Face BERT with
:meth:`BERT.from_hf`. Chapters 7 and 8 (``ch10_capstone``) load
all-MiniLM-L6-v2, a small BERT, through
:func:`course_lib.models.pretrained.load_minilm`, which calls
:meth:`BERT.from_pretrained_dir`.

As in nanoGPT, the settings live in a frozen dataclass, :class:`BERTConfig`,
and the model takes it: ``BERT(BERTConfig(vocab_size=30522, ...))``.
``BERT(vocab_size=30522, ...)`` builds the same config. (Hugging Face's
``transformers.BertConfig`` is a different class; :meth:`BERT.from_config`
translates it.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import torch
from torch import nn
from torch.nn import functional as F

from .._validate import check_positive_int, check_probability, shape_str
from ._hf import encoder_layer_names, gather, hf_state, load_parameters, only_parameter
from ._inputs import ConfigChecks, check_padding_mask, check_token_ids, resolve_config
from .layers import EncoderLayer
from .positional import LearnedPositionalEncoding

__all__ = ["BERT", "BERTConfig", "BertForMLM", "BertClassifier", "init_bert_weights", "mask_tokens"]

# Hugging Face names of one BERT layer's parts, in the order of
# ``_hf.encoder_layer_names``.
_HF_BERT_LAYER = ("attention.self.query", "attention.self.key", "attention.self.value",
                  "attention.output.dense", "attention.output.LayerNorm",
                  "intermediate.dense", "output.dense", "output.LayerNorm")


@dataclass(frozen=True)
class BERTConfig(ConfigChecks):
    """The settings of a :class:`BERT` encoder (chapter 7). Defaults: BERT-base.

    Args:
        vocab_size: number of token ids (30522 for BERT's WordPiece vocabulary).
        d_model: hidden width ``H`` (768 for BERT-base).
        num_heads: attention heads ``A``; must divide ``d_model``; each head
            has width ``d_k = d_model / num_heads``.
        num_layers: number of encoder layers ``L``.
        d_ff: FFN hidden width (``4 * H``).
        max_len: number of learned positions (512).
        type_vocab_size: number of segments (2: sentence A and B).
        dropout: dropout probability in ``[0, 1)`` on embeddings, attention
            and FFN.
        layer_norm_eps: ``eps`` of every LayerNorm, positive (1e-12 in BERT).
        pad_id: id of [PAD], in ``[0, vocab_size)``; its embedding row
            receives no gradient.

    Raises:
        TypeError: a field of the wrong type (e.g. ``num_layers=2.0``).
        ValueError: a value out of range, or ``d_model`` not divisible by
            ``num_heads``; the message names the field.
    """

    vocab_size: int = 30522
    d_model: int = 768
    num_heads: int = 12
    num_layers: int = 12
    d_ff: int = 3072
    max_len: int = 512
    type_vocab_size: int = 2
    dropout: float = 0.1
    layer_norm_eps: float = 1e-12
    pad_id: int = 0

    def __post_init__(self):
        self._check_ints("vocab_size", "d_model", "num_heads", "num_layers", "d_ff", "max_len",
                         "type_vocab_size")
        self._check_heads()
        self._check_probability("dropout")
        self._check_positive_number("layer_norm_eps")
        self._check_index("pad_id", self.vocab_size, what="vocab_size")


class BERT(nn.Module):
    """The BERT encoder: embeddings plus a stack of post-LN layers (chapter 7).

    Args:
        config: a :class:`BERTConfig`. Instead of it, its fields may be given
            as keyword arguments (``BERT(vocab_size=100, d_model=64, ...)``),
            never by position.

    Attributes:
        config: the :class:`BERTConfig`.
        tok_emb, seg_emb (``nn.Embedding``), pos_emb
        (:class:`LearnedPositionalEncoding`), emb_norm (LayerNorm), layers
        (``num_layers`` post-LN :class:`EncoderLayer`); vocab_size, max_len,
        type_vocab_size, d_model, layer_norm_eps (copied from ``config``).

    ``forward(input_ids (B, L), token_type_ids=None, attention_mask=None)``
    returns ``(B, L, d_model)``.
    """

    def __init__(self, config: BERTConfig | None = None, **settings):
        super().__init__()
        self.config = c = resolve_config(BERTConfig, "BERT", config, settings)
        self.vocab_size, self.max_len, self.type_vocab_size = c.vocab_size, c.max_len, c.type_vocab_size
        self.d_model, self.layer_norm_eps = c.d_model, c.layer_norm_eps
        self.tok_emb = nn.Embedding(c.vocab_size, c.d_model, padding_idx=c.pad_id)
        self.pos_emb = LearnedPositionalEncoding(c.d_model, c.max_len)
        self.seg_emb = nn.Embedding(c.type_vocab_size, c.d_model)
        self.emb_norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(c.d_model, c.num_heads, c.d_ff, dropout=c.dropout, activation="gelu",
                         norm_first=False, layer_norm_eps=c.layer_norm_eps)
            for _ in range(c.num_layers))

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None, need_weights: bool = False):
        """Contextual vectors for every token (chapter 7).

        Args:
            input_ids: token ids ``(B, L)``, ``L <= max_len``.
            token_type_ids: segment ids ``(B, L)`` in ``[0, type_vocab_size)``;
                None means all zeros (a single sentence).
            attention_mask: ``(B, L)``, 1 (or True) for real tokens and 0 for
                padding; None means no padding. Padding is never attended to.
            need_weights: also return each layer's attention weights.

        Returns:
            ``h`` of shape ``(B, L, d_model)``, or ``(h, weights)`` with
            ``weights`` a list of ``num_layers`` tensors ``(B, num_heads, L, L)``.
        """
        check_token_ids(input_ids, "input_ids", vocab_size=self.vocab_size, max_len=self.max_len)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        check_token_ids(token_type_ids, "token_type_ids", vocab_size=self.type_vocab_size)
        if token_type_ids.shape != input_ids.shape:
            raise ValueError(f"token_type_ids must have the shape of input_ids "
                             f"{shape_str(input_ids.shape)}, got {shape_str(token_type_ids.shape)}")
        mask = None if attention_mask is None else \
            check_padding_mask(attention_mask, "attention_mask", input_ids.shape)  # (B, 1, 1, L)
        x = self.tok_emb(input_ids) + self.seg_emb(token_type_ids)             # (B, L, d_model)
        x = self.dropout(self.emb_norm(self.pos_emb(x)))                       # (B, L, d_model)
        weights = []
        for layer in self.layers:
            x, w = layer(x, mask=mask, need_weights=need_weights)  # (B, L, d_model), (B, num_heads, L, L)
            weights.append(w)
        return (x, weights) if need_weights else x

    @classmethod
    def from_config(cls, config, state: dict[str, torch.Tensor]) -> "BERT":
        """Build a BERT from a Hugging Face config and copy its weights.

        Args:
            config: a ``BertConfig`` or any object (or dict) with the fields
                of ``config.json``: ``vocab_size``, ``hidden_size``, ...
            state: Hugging Face tensors by name, with or without the
                ``"bert."`` prefix; heads (``cls.*``, ``pooler.*``) are ignored.

        Returns:
            A :class:`BERT` in eval mode (chapter 7).
        """
        model = cls(_bert_config(config))
        return load_parameters(model, _backbone_tensors(model, hf_state(state, "bert."))).eval()

    @classmethod
    def from_hf(cls, hf_model) -> "BERT":
        """Copy a ``transformers`` ``BertModel`` (or a task model holding one).

        Chapter 7 checks that the copy computes what ``transformers`` computes.

        Args:
            hf_model: ``BertModel``, ``BertForMaskedLM``, ... ; only the
                encoder is copied (see :class:`BertForMLM` and
                :class:`BertClassifier` for the heads).

        Returns:
            A :class:`BERT` in eval mode.
        """
        return cls.from_config(hf_model.config, hf_model.state_dict())

    @classmethod
    def from_pretrained_dir(cls, path) -> "BERT":
        """Load a local Hugging Face BERT folder without ``transformers``.

        Args:
            path: folder with ``config.json`` and ``model.safetensors``, e.g.
                :func:`course_lib.models.pretrained.minilm_dir` (all-MiniLM-L6-v2,
                which chapters 7 and 8 load through
                :func:`course_lib.models.pretrained.load_minilm`).

        Returns:
            A :class:`BERT` in eval mode.
        """
        from safetensors.torch import load_file

        path = Path(path)
        for name in ("config.json", "model.safetensors"):
            if not (path / name).is_file():
                raise FileNotFoundError(f"path must be a folder holding {name}; "
                                        f"not found in {path}")
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        state = load_file(path / "model.safetensors")
        # Checkpoints converted from TensorFlow name LayerNorm weights gamma/beta.
        state = {k.replace("LayerNorm.gamma", "LayerNorm.weight")
                  .replace("LayerNorm.beta", "LayerNorm.bias"): v for k, v in state.items()}
        return cls.from_config(config, state)


def _bert_config(config) -> BERTConfig:
    """Our :class:`BERTConfig` from a Hugging Face ``BertConfig`` or ``config.json`` dict."""
    c = SimpleNamespace(**config) if isinstance(config, dict) else config
    if c.hidden_act != "gelu":
        raise ValueError(f"config.hidden_act must be 'gelu', got {c.hidden_act!r}")
    return BERTConfig(vocab_size=c.vocab_size, d_model=c.hidden_size,
                      num_heads=c.num_attention_heads, num_layers=c.num_hidden_layers,
                      d_ff=c.intermediate_size, max_len=c.max_position_embeddings,
                      type_vocab_size=c.type_vocab_size, layer_norm_eps=c.layer_norm_eps,
                      pad_id=c.pad_token_id or 0)


def _backbone_tensors(bert: BERT, state: dict[str, torch.Tensor], prefix: str = "") -> dict:
    """Our BERT parameter names (with ``prefix``) -> Hugging Face tensors."""
    names = {"tok_emb": "embeddings.word_embeddings", "seg_emb": "embeddings.token_type_embeddings",
             "emb_norm": "embeddings.LayerNorm"}
    for i in range(len(bert.layers)):
        names.update(encoder_layer_names(f"layers.{i}", f"encoder.layer.{i}", _HF_BERT_LAYER))
    tensors = gather(state, names)
    positions = state["embeddings.position_embeddings.weight"]
    tensors[only_parameter(bert.pos_emb, "pos_emb")] = positions
    return {prefix + k: v for k, v in tensors.items()}


def init_bert_weights(model: nn.Module, std: float = 0.02) -> nn.Module:
    """BERT's initialisation, in place (chapter 7): every ``nn.Linear`` and ``nn.Embedding`` weight
    drawn from N(0, ``std``²) cut at ±2 ``std`` (as Devlin et al.'s code), biases zero, LayerNorms
    at weight 1 and bias 0, an embedding's padding row zero.

    PyTorch's own defaults, which :class:`BERT` keeps, draw embeddings from N(0, 1). With the
    decoder of :class:`BertForMLM` tied to the token embedding, the first logits then spread by
    about √d_model and the masked-LM loss starts far above ln V. Uses PyTorch's global generator.

    Returns:
        ``model``.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if isinstance(std, bool) or not isinstance(std, (int, float)) or not 0 < std < float("inf"):
        raise ValueError(f"std must be a positive finite number, got {std!r}")
    seen = set()                                  # a tied weight (the MLM decoder's) is drawn once
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)) and id(m.weight) not in seen:
            seen.add(id(m.weight))
            nn.init.trunc_normal_(m.weight, std=std, a=-2 * std, b=2 * std)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)
        if isinstance(m, nn.Embedding) and m.padding_idx is not None:
            with torch.no_grad():
                m.weight[m.padding_idx].zero_()
        if isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
    return model


class BertForMLM(nn.Module):
    """BERT with the masked-language-model head (chapter 7).

    ``logits = LN(gelu(h W_t + b_t)) E^T + b``: the output matrix is the token
    embedding ``E`` itself (tied), plus one bias per vocabulary entry.

    Args:
        bert: the :class:`BERT` encoder (its ``tok_emb`` becomes ``E``).

    ``forward(input_ids, token_type_ids=None, attention_mask=None)`` takes
    the arguments of :meth:`BERT.forward` (each ``(B, L)``) and returns
    logits ``(B, L, vocab_size)``;
    train with ``F.cross_entropy(logits.transpose(1, 2), labels)`` where
    ``labels`` come from :func:`mask_tokens` (-100 = not predicted).
    """

    def __init__(self, bert: BERT):
        super().__init__()
        self.bert = bert
        self.transform = nn.Linear(bert.d_model, bert.d_model)
        self.norm = nn.LayerNorm(bert.d_model, eps=bert.layer_norm_eps)
        self.decoder = nn.Linear(bert.d_model, bert.vocab_size)
        self.decoder.weight = bert.tok_emb.weight

    def forward(self, input_ids, token_type_ids=None, attention_mask=None) -> torch.Tensor:
        """Vocabulary logits at every position (chapter 7).

        Args:
            input_ids, token_type_ids, attention_mask: ``(B, L)`` each, as
                for :meth:`BERT.forward`.

        Returns:
            ``(B, L, vocab_size)`` logits.
        """
        h = self.bert(input_ids, token_type_ids, attention_mask)              # (B, L, d_model)
        return self.decoder(self.norm(F.gelu(self.transform(h))))           # (B, L, vocab_size)

    @classmethod
    def from_hf(cls, hf_model) -> "BertForMLM":
        """Copy a ``transformers`` ``BertForMaskedLM`` (encoder and head).

        Args:
            hf_model: the Hugging Face ``BertForMaskedLM``.

        Returns:
            A :class:`BertForMLM` in eval mode.
        """
        model = cls(BERT(_bert_config(hf_model.config)))
        state = hf_model.state_dict()
        tensors = _backbone_tensors(model.bert, hf_state(state, "bert."), prefix="bert.")
        tensors.update(gather(state, {"transform": "cls.predictions.transform.dense",
                                      "norm": "cls.predictions.transform.LayerNorm"}))
        tensors["decoder.bias"] = state["cls.predictions.bias"]
        return load_parameters(model, tensors).eval()


class BertClassifier(nn.Module):
    """BERT with a sequence classifier on the [CLS] token (chapter 7).

    As in BERT, the final [CLS] vector first goes through the *pooler*
    ``tanh(h_cls W_p + b_p)``, then dropout and a linear layer.

    Args:
        bert: the :class:`BERT` encoder.
        num_classes: number of labels.
        dropout: dropout probability before the last linear layer.

    ``forward(input_ids, token_type_ids=None, attention_mask=None)`` takes
    the arguments of :meth:`BERT.forward` (each ``(B, L)``) and returns
    logits ``(B, num_classes)``. Chapter 7 fine-tunes one on sentiment
    sentences; chapter 10 (``ch10_capstone``) trains a small one from random
    weights.
    """

    def __init__(self, bert: BERT, num_classes: int, dropout: float = 0.1):
        super().__init__()
        self.bert = bert
        self.pooler = nn.Linear(bert.d_model, bert.d_model)
        self.dropout = nn.Dropout(check_probability(dropout, "dropout"))
        self.classifier = nn.Linear(bert.d_model, check_positive_int(num_classes, "num_classes"))

    def forward(self, input_ids, token_type_ids=None, attention_mask=None) -> torch.Tensor:
        """Class logits from the [CLS] token, position 0 (chapter 7).

        Args:
            input_ids, token_type_ids, attention_mask: ``(B, L)`` each, as
                for :meth:`BERT.forward`.

        Returns:
            ``(B, num_classes)`` logits.
        """
        h = self.bert(input_ids, token_type_ids, attention_mask)              # (B, L, d_model)
        pooled = torch.tanh(self.pooler(h[:, 0]))                           # (B, d_model)
        return self.classifier(self.dropout(pooled))                        # (B, num_classes)

    @classmethod
    def from_hf(cls, hf_model) -> "BertClassifier":
        """Copy a ``transformers`` ``BertForSequenceClassification``.

        Args:
            hf_model: the Hugging Face ``BertForSequenceClassification``.

        Returns:
            A :class:`BertClassifier` in eval mode.
        """
        model = cls(BERT(_bert_config(hf_model.config)), hf_model.config.num_labels)
        state = hf_model.state_dict()
        tensors = _backbone_tensors(model.bert, hf_state(state, "bert."), prefix="bert.")
        tensors.update(gather(state, {"pooler": "bert.pooler.dense", "classifier": "classifier"}))
        return load_parameters(model, tensors).eval()


def mask_tokens(input_ids: torch.Tensor, mask_id: int, vocab_size: int, special_ids,
                prob: float = 0.15, generator: torch.Generator | None = None):
    """BERT's masked-LM corruption: pick 15 %, then 80/10/10 (chapter 7).

    Each non-special token is selected with probability ``prob``. A selected
    token is replaced by [MASK] with probability 0.8, by a uniformly random
    token id with probability 0.1, and kept with probability 0.1; the model
    must predict the original token at every selected position.

    Args:
        input_ids: token ids ``(B, L)``.
        mask_id: id of [MASK].
        vocab_size: random replacements are drawn from ``[0, vocab_size)``.
        special_ids: iterable of ids never selected ([CLS], [SEP], [PAD], ...).
        prob: selection probability, in ``[0, 1)``.
        generator: ``torch.Generator`` for reproducible draws, or None.

    Returns:
        ``(inputs, labels)``, both ``(B, L)``: the corrupted ids, and the
        original id at selected positions with -100 elsewhere (the
        ``ignore_index`` of ``F.cross_entropy``).
    """
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    check_token_ids(input_ids, "input_ids", vocab_size=vocab_size)
    if not 0 <= check_positive_int(mask_id, "mask_id", minimum=0) < vocab_size:
        raise ValueError(f"mask_id must be in [0, vocab_size) = [0, {vocab_size}), got {mask_id}")
    prob = check_probability(prob, "prob")
    special = torch.as_tensor(list(special_ids), dtype=input_ids.dtype)
    shape = input_ids.shape
    selected = (torch.rand(shape, generator=generator) < prob) & ~torch.isin(input_ids, special)
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, -100))
    r = torch.rand(shape, generator=generator)          # decides [MASK] / random / keep
    random_ids = torch.randint(vocab_size, shape, generator=generator, dtype=input_ids.dtype)
    inputs = torch.where(selected & (r < 0.8), torch.full_like(input_ids, mask_id), input_ids)
    inputs = torch.where(selected & (r >= 0.8) & (r < 0.9), random_ids, inputs)
    return inputs, labels
