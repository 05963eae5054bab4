"""Memory arithmetic of a real model: parameters, KV cache, training state.

Three questions of chapter 11 (*Attention today*), answered by counting:

1. **How many parameters?** :func:`build_llama_on_meta` builds a LLaMA-style
   model from this package's modules (embeddings, :class:`LlamaBlock` s with
   :class:`GroupedQueryAttention`, :class:`RMSNorm`, :class:`SwiGLU`, an
   untied output layer) on PyTorch's ``meta`` device, where tensors have a
   shape but no storage, and :func:`parameter_count` counts it. Nothing is
   typed in but the published configuration, kept in :data:`CONFIGS`.
2. **How big is the KV cache?** :func:`kv_cache_bytes` uses
   :func:`~course_lib.models.gqa.kv_cache_bytes_per_token`, for MHA, GQA or MQA.
3. **Does training fit?** :func:`training_memory_bytes`: with Adam in mixed
   precision each parameter costs 16 bytes before any activation (Rajbhandari
   et al., 2020, "ZeRO"): 2 (bf16 weights) + 2 (bf16 gradients) + 4 (fp32
   master weights) + 8 (Adam's two fp32 moments). Data parallelism (DDP)
   keeps all of it on every device; fully sharded data parallelism (FSDP,
   ZeRO-3) splits all of it across the ``N`` devices; tensor parallelism
   splits each layer's matrices (and so their gradients and Adam states) the
   same way, but must exchange activations inside every layer, so it is kept
   within one machine. :func:`min_fsdp_devices` finds the smallest ``N``.
"""

from __future__ import annotations

import torch
from torch import nn

from .._validate import check_choice, check_positive_int, check_positive_number, check_tensor
from .gqa import kv_cache_bytes_per_token
from .norms import LlamaBlock, RMSNorm
from .rope import RotaryEmbedding

__all__ = ["CONFIGS", "PUBLISHED", "LlamaLike", "llama_like_config", "build_llama_on_meta",
           "parameter_count", "compare_with_published", "kv_cache_bytes", "training_memory_bytes",
           "min_fsdp_devices"]

CONFIGS = {
    # Touvron et al. (2023), "Llama 2", Table 1 and the released params.json / config.json:
    # 32 layers, d_model 4096, 32 heads (no GQA at 7B), SwiGLU width 11008, vocabulary 32000.
    "LLaMA-2-7B": dict(num_layers=32, d_model=4096, num_heads=32, num_kv_heads=32,
                       d_ff=11008, vocab_size=32000),
    # Meta (2024), "The Llama 3 Herd of Models", Table 3: 32 layers, d_model 4096,
    # 32 query heads, 8 key/value heads, FFN 14336, vocabulary 128256 (128K).
    "Llama-3-8B": dict(num_layers=32, d_model=4096, num_heads=32, num_kv_heads=8,
                       d_ff=14336, vocab_size=128256),
}
"""Published configurations; each becomes a model with :func:`build_llama_on_meta`."""

PUBLISHED = {"LLaMA-2-7B": (7e9, "7B"), "Llama-3-8B": (8e9, "8B")}
"""The sizes in the models' names, as ``(number, how it is printed)``."""

_KEYS = ("num_layers", "d_model", "num_heads", "num_kv_heads", "d_ff", "vocab_size")


class LlamaLike(nn.Module):
    """A LLaMA-style decoder: embeddings, ``num_layers`` pre-norm blocks, RMSNorm, output layer.

    Args:
        num_layers, d_model, num_heads, num_kv_heads, d_ff, vocab_size: the
            keys of :data:`CONFIGS`.
        max_len: positions whose RoPE table is precomputed (longer inputs extend it).
        rope_base: RoPE's ``base`` (LLaMA-2: 10000; Llama-3: 500000; it
            changes no parameter count).

    Attributes:
        tok_emb: ``nn.Embedding(vocab_size, d_model)``.
        blocks: ``nn.ModuleList`` of :class:`~course_lib.models.norms.LlamaBlock`.
        norm: the final :class:`~course_lib.models.norms.RMSNorm`.
        lm_head: ``nn.Linear(d_model, vocab_size, bias=False)``, not tied to ``tok_emb``.

    Chapter 11, *Attention today*.
    """

    def __init__(self, num_layers: int, d_model: int, num_heads: int, num_kv_heads: int,
                 d_ff: int, vocab_size: int, max_len: int = 4096, rope_base: float = 10000.0):
        super().__init__()
        num_layers = check_positive_int(num_layers, "num_layers")
        vocab_size = check_positive_int(vocab_size, "vocab_size")
        d_model = check_positive_int(d_model, "d_model")
        num_heads = check_positive_int(num_heads, "num_heads")
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} must be divisible by num_heads={num_heads}")
        rope = RotaryEmbedding(d_model // num_heads, max_len, rope_base)   # shared, no parameters
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(LlamaBlock(d_model, num_heads, num_kv_heads, d_ff, rope=rope)
                                    for _ in range(num_layers))
        self.norm = RMSNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, ids: torch.Tensor, caches=None) -> torch.Tensor:
        """Next-token logits.

        Args:
            ids: ``(B, L)`` token ids.
            caches: optional list of one :class:`~course_lib.models.attention.KVCache`
                per block, for generation.

        Returns:
            ``(B, L, vocab_size)`` logits; position ``t`` sees tokens ``0..t``.
        """
        check_tensor(ids, "ids", ndim=2, floating=False, layout="(B, L)")
        if caches is not None and len(caches) != len(self.blocks):
            raise ValueError(f"caches must hold one KVCache per block ({len(self.blocks)}), "
                             f"got {len(caches)}")
        x = self.tok_emb(ids)                              # (B, L, d_model)
        for i, block in enumerate(self.blocks):
            x = block(x, causal=True, cache=None if caches is None else caches[i])
        return self.lm_head(self.norm(x))                  # (B, L, vocab_size)


def llama_like_config(name: str, **changes) -> dict:
    """A configuration from :data:`CONFIGS`, optionally changed.

    Args:
        name: ``"LLaMA-2-7B"`` or ``"Llama-3-8B"``.
        **changes: keys of the configuration to replace, e.g.
            ``num_kv_heads=1`` for the same model with multi-query attention.

    Returns:
        A new ``dict`` with the keys ``num_layers, d_model, num_heads,
        num_kv_heads, d_ff, vocab_size``.

    Raises:
        ValueError: an unknown ``name`` or key; TypeError/ValueError: a
            value that is not a positive integer.

    Chapter 11, *Attention today*.
    """
    config = dict(CONFIGS[check_choice(name, "name", CONFIGS)])
    for key, value in changes.items():
        check_choice(key, "the configuration key", _KEYS)
        config[key] = check_positive_int(value, key)
    return config


def _check_config(config) -> dict:
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict like llama_like_config(...), got {type(config).__name__}")
    missing = [k for k in _KEYS if k not in config]
    if missing:
        raise ValueError(f"config is missing the key(s) {missing}; expected {list(_KEYS)}")
    return {k: check_positive_int(config[k], f"config[{k!r}]") for k in _KEYS}


def build_llama_on_meta(config: dict) -> LlamaLike:
    """:class:`LlamaLike` built on the ``meta`` device: shapes, no storage, no time.

    Args:
        config: a dict from :func:`llama_like_config` (or with the same keys).

    Returns:
        A :class:`LlamaLike` that can be counted, not run.

    Chapter 11, *Attention today*.
    """
    config = _check_config(config)
    with torch.device("meta"):
        return LlamaLike(**config)


def parameter_count(config: dict) -> int:
    """Number of parameters of the model built from ``config`` on the ``meta`` device.

    Args:
        config: a dict from :func:`llama_like_config`.

    Returns:
        The count, an ``int`` (LLaMA-2-7B: compare ``PUBLISHED["LLaMA-2-7B"]``).

    Chapter 11, *Attention today*.
    """
    return sum(p.numel() for p in build_llama_on_meta(config).parameters())


def compare_with_published(name: str) -> dict:
    """The counted parameters of a :data:`CONFIGS` model beside the size in its name.

    Args:
        name: a key of :data:`CONFIGS`.

    Returns:
        ``{"counted": int, "published": "7B", "counted, in billions": float,
        "rounds to published": bool}``; the last says whether the count,
        rounded to whole billions, is the published figure.

    Chapter 11, *Attention today*.
    """
    name = check_choice(name, "name", CONFIGS)
    counted = parameter_count(CONFIGS[name])
    value, printed = PUBLISHED[name]
    return {"counted": counted, "published": printed, "counted, in billions": counted / 1e9,
            "rounds to published": round(counted / 1e9) == round(value / 1e9)}


def kv_cache_bytes(config: dict, num_tokens: int, batch_size: int = 1,
                   bytes_per_value: int = 2) -> int:
    """Bytes of the KV cache for ``batch_size`` sequences of ``num_tokens`` tokens.

    Args:
        config: a dict from :func:`llama_like_config`; ``num_kv_heads`` picks
            MHA (``= num_heads``), GQA or MQA (1).
        num_tokens: context length held in the cache.
        batch_size: sequences generated at once.
        bytes_per_value: 2 for bf16/fp16.

    Returns:
        ``kv_cache_bytes_per_token(num_layers, num_kv_heads, d_k, bytes_per_value)
        × num_tokens × batch_size``, an ``int``.

    Chapter 11, *Attention today*.
    """
    config = _check_config(config)
    num_tokens = check_positive_int(num_tokens, "num_tokens")
    batch_size = check_positive_int(batch_size, "batch_size")
    per_token = kv_cache_bytes_per_token(config["num_layers"], config["num_kv_heads"],
                                         config["d_model"] // config["num_heads"], bytes_per_value)
    return per_token * num_tokens * batch_size


def training_memory_bytes(num_params: int, num_devices: int = 1, strategy: str = "ddp", *,
                          param_bytes: int = 2, grad_bytes: int = 2, master_bytes: int = 4,
                          adam_bytes: int = 8) -> dict:
    """Bytes of model state one device holds when training with Adam.

    Args:
        num_params: parameters of the model (e.g. :func:`parameter_count`).
        num_devices: devices training together, ``N``.
        strategy: ``"ddp"`` (every device holds everything) or ``"fsdp"``
            (ZeRO-3: each holds ``1/N`` of everything; tensor parallelism
            divides the model state the same way).
        param_bytes, grad_bytes: per parameter, 2 in bf16 (4 in pure fp32).
        master_bytes: the fp32 copy of the weights mixed precision keeps (0 in pure fp32).
        adam_bytes: Adam's two moments, 2 × 4 bytes.

    Returns:
        ``{"parameters", "gradients", "master weights", "Adam moments",
        "total"}`` in bytes per device (ints). Activations, which grow with
        batch size and sequence length, come on top.

    Raises:
        TypeError, ValueError: a count that is not a positive integer (a byte
            size may be 0), an unknown ``strategy``.

    Chapter 11, *Attention today*.
    """
    num_params = check_positive_int(num_params, "num_params")
    num_devices = check_positive_int(num_devices, "num_devices")
    check_choice(strategy, "strategy", ("ddp", "fsdp"))
    sizes = {"parameters": param_bytes, "gradients": grad_bytes,
             "master weights": master_bytes, "Adam moments": adam_bytes}
    names = {"parameters": "param_bytes", "gradients": "grad_bytes",
             "master weights": "master_bytes", "Adam moments": "adam_bytes"}
    share = num_devices if strategy == "fsdp" else 1
    out = {key: -(-num_params * check_positive_int(b, names[key], minimum=0) // share)
           for key, b in sizes.items()}                    # ceil: a shard is never smaller
    out["total"] = sum(out.values())
    return out


def min_fsdp_devices(num_params: int, device_bytes: float = 80e9, **byte_sizes) -> int:
    """The fewest devices whose shards of the model state (FSDP) each fit in ``device_bytes``.

    Args:
        num_params: parameters of the model.
        device_bytes: memory of one device (80 GB for an A100/H100 80GB).
        **byte_sizes: ``param_bytes``, ``grad_bytes``, ``master_bytes``,
            ``adam_bytes`` as in :func:`training_memory_bytes`.

    Returns:
        ``N``: 1 means plain DDP fits (before activations).

    Chapter 11, *Attention today*.
    """
    device_bytes = check_positive_number(device_bytes, "device_bytes")
    total = training_memory_bytes(num_params, **byte_sizes)["total"]
    n = max(1, -(-total // int(device_bytes)))
    while training_memory_bytes(num_params, n, "fsdp", **byte_sizes)["total"] > device_bytes:
        n += 1
    return int(n)
