"""Parameter counts of real LLaMA configurations, KV-cache and training-memory arithmetic."""

import pytest
import torch

from course_lib.models.attention import KVCache
from course_lib.models.memory import (CONFIGS, LlamaLike, build_llama_on_meta, compare_with_published,
                                      kv_cache_bytes, llama_like_config, min_fsdp_devices,
                                      parameter_count, training_memory_bytes)


def hand_count(num_layers, d_model, num_heads, num_kv_heads, d_ff, vocab_size):
    """Independent reference, by hand: per layer W_Q, W_O (d x d), W_K, W_V (d x kv_width),
    three SwiGLU matrices (d x d_ff) and two RMSNorm gains; embeddings, final norm, untied head."""
    kv_width = num_kv_heads * (d_model // num_heads)
    per_layer = 2 * d_model * d_model + 2 * d_model * kv_width + 3 * d_model * d_ff + 2 * d_model
    return num_layers * per_layer + 2 * vocab_size * d_model + d_model


@pytest.mark.parametrize("name", list(CONFIGS))
def test_parameter_count_matches_hand_count(name):
    assert parameter_count(llama_like_config(name)) == hand_count(**CONFIGS[name])


def test_published_sizes():
    # Hugging Face's model cards: Llama-2-7b-hf has 6,738,415,616 parameters,
    # Meta-Llama-3-8B has 8,030,261,248.
    assert parameter_count(llama_like_config("LLaMA-2-7B")) == 6_738_415_616
    assert parameter_count(llama_like_config("Llama-3-8B")) == 8_030_261_248
    for name, printed in (("LLaMA-2-7B", "7B"), ("Llama-3-8B", "8B")):
        result = compare_with_published(name)
        assert result["published"] == printed and result["rounds to published"]


def test_built_on_meta_and_mqa_is_smaller():
    model = build_llama_on_meta(llama_like_config("LLaMA-2-7B"))
    assert all(p.device.type == "meta" for p in model.parameters())
    mqa = parameter_count(llama_like_config("LLaMA-2-7B", num_kv_heads=1))
    assert parameter_count(llama_like_config("LLaMA-2-7B")) - mqa == 32 * 2 * 4096 * (4096 - 128)


def test_tiny_llama_runs_and_caches():
    torch.manual_seed(0)
    model = LlamaLike(num_layers=2, d_model=16, num_heads=4, num_kv_heads=2, d_ff=24, vocab_size=11,
                      max_len=4).double()
    ids = torch.randint(0, 11, (2, 7))
    full = model(ids)
    assert full.shape == (2, 7, 11)
    caches = [KVCache() for _ in model.blocks]
    steps = [model(ids[:, :3], caches)] + [model(ids[:, t:t + 1], caches) for t in range(3, 7)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-12, rtol=0)


def test_kv_cache_bytes():
    mha = llama_like_config("LLaMA-2-7B")
    # 2 (K and V) x 32 layers x 32 heads x 128 x 2 bytes x 4096 tokens = 2 GiB
    assert kv_cache_bytes(mha, 4096) == 2 * 32 * 32 * 128 * 2 * 4096 == 2 ** 31
    assert kv_cache_bytes(mha, 4096, batch_size=3) == 3 * 2 ** 31
    assert kv_cache_bytes(llama_like_config("Llama-3-8B"), 4096) == 2 ** 31 // 4      # 8 of 32 heads
    assert kv_cache_bytes(llama_like_config("LLaMA-2-7B", num_kv_heads=1), 4096) == 2 ** 31 // 32
    assert kv_cache_bytes(mha, 4096, bytes_per_value=4) == 2 ** 32


def test_training_memory_bytes():
    n = 7_000_000_000
    mixed = training_memory_bytes(n)
    assert mixed == {"parameters": 2 * n, "gradients": 2 * n, "master weights": 4 * n,
                     "Adam moments": 8 * n, "total": 16 * n}
    fp32 = training_memory_bytes(n, param_bytes=4, grad_bytes=4, master_bytes=0)
    assert fp32["total"] == 16 * n and fp32["master weights"] == 0
    assert training_memory_bytes(n, 8, "ddp") == mixed
    assert training_memory_bytes(n, 8, "fsdp")["total"] == 2 * n
    assert training_memory_bytes(3, 2, "fsdp")["parameters"] == 3   # a shard rounds up


def test_min_fsdp_devices():
    n = parameter_count(llama_like_config("LLaMA-2-7B"))   # 16 bytes each: 108 GB > 80 GB
    N = min_fsdp_devices(n, 80e9)
    assert N == 2
    fits, does_not = (training_memory_bytes(n, k, "fsdp")["total"] for k in (N, N - 1))
    assert fits <= 80e9 < does_not
    assert min_fsdp_devices(1_000_000, 80e9) == 1
    assert min_fsdp_devices(70_000_000_000, 80e9) == 14   # 1.12 TB / 80 GB


BAD = [
    (lambda: llama_like_config("GPT-5"), ValueError, "name must be one of"),
    (lambda: llama_like_config("LLaMA-2-7B", heads=8), ValueError, "the configuration key must be one of"),
    (lambda: llama_like_config("LLaMA-2-7B", num_kv_heads=0), ValueError,
     "num_kv_heads must be an integer >= 1"),
    (lambda: build_llama_on_meta([32, 4096]), TypeError, "config must be a dict"),
    (lambda: build_llama_on_meta({"num_layers": 2}), ValueError, "config is missing the key"),
    (lambda: build_llama_on_meta(llama_like_config("LLaMA-2-7B", num_kv_heads=5)), ValueError,
     "num_kv_heads=5 must divide num_heads=32"),
    (lambda: parameter_count(None), TypeError, "config must be a dict"),
    (lambda: parameter_count(dict(CONFIGS["LLaMA-2-7B"], d_ff=1.5)), TypeError,
     r"config\['d_ff'\] must be an integer"),
    (lambda: parameter_count({}), ValueError, "config is missing the key"),
    (lambda: compare_with_published("LLaMA-3-70B"), ValueError, "name must be one of"),
    (lambda: compare_with_published(7), ValueError, "name must be one of"),
    (lambda: compare_with_published(None), ValueError, "name must be one of"),
    (lambda: kv_cache_bytes(CONFIGS["LLaMA-2-7B"], 0), ValueError, "num_tokens must be an integer >= 1"),
    (lambda: kv_cache_bytes(CONFIGS["LLaMA-2-7B"], 10, batch_size="2"), TypeError,
     "batch_size must be an integer"),
    (lambda: kv_cache_bytes(CONFIGS["LLaMA-2-7B"], 10, bytes_per_value=0), ValueError,
     "bytes_per_value must be an integer >= 1"),
    (lambda: training_memory_bytes(0), ValueError, "num_params must be an integer >= 1"),
    (lambda: training_memory_bytes(10, 1.5), TypeError, "num_devices must be an integer"),
    (lambda: training_memory_bytes(10, 2, "zero"), ValueError, "strategy must be one of"),
    (lambda: training_memory_bytes(10, param_bytes=-1), ValueError, "param_bytes must be an integer >= 0"),
    (lambda: min_fsdp_devices(10, 0), ValueError, "device_bytes must be a positive number"),
    (lambda: min_fsdp_devices(10, "80GB"), TypeError, "device_bytes must be a positive number"),
    (lambda: min_fsdp_devices(0), ValueError, "num_params must be an integer >= 1"),
    (lambda: LlamaLike(2, 16, 4, 2, 24, 11)(torch.zeros(2, 3)), TypeError, "ids must be an integer tensor"),
    (lambda: LlamaLike(2, 16, 4, 2, 24, 11)(torch.zeros(2, 3, dtype=torch.long), [KVCache()]), ValueError,
     "caches must hold one KVCache per block"),
    (lambda: LlamaLike(0, 16, 4, 2, 24, 11), ValueError, "num_layers must be an integer >= 1"),
]


@pytest.mark.parametrize("call,exc,message", BAD)
def test_bad_input_names_the_argument(call, exc, message):
    with pytest.raises(exc, match=message):
        call()
