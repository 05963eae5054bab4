"""course_lib.widgets, the Python side: numbers, bad inputs, offline HTML, stable ids.

The browser side (the JavaScript shows these same numbers) is
tests/book/test_widgets_browser.py.
"""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from course_lib.display import fmt
from course_lib.scratch import attention_scores, scaled_dot_product_attention, softmax
from course_lib.widgets import attention_explorer, qkv_playground, show
from course_lib.widgets._html import static_text

ROOT = Path(__file__).resolve().parents[2]
TOKENS = [["the", "cat", "sat", "down"], ["hello", "world", "!"]]


def _weights(seed=0):
    rng = np.random.default_rng(seed)
    return [softmax(rng.normal(size=(2, 3, 4, 4)), axis=-1),
            softmax(rng.normal(size=(2, 3, 3, 3)), axis=-1)]


Q0 = np.array([0.5, -1.0, 1.5, 0.25])
K = np.array([[1.0, 0.5, -0.5, 2.0], [-1.0, 1.0, 0.0, 0.5], [0.3, -0.2, 1.1, -0.7]])
V = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0], [0.5, 0.5, 0.5]])


# ---- numbers -------------------------------------------------------------------------

def test_show_is_fmt_after_rounding_float_noise_away():
    assert show(0.125, 2) == fmt(0.125, 2) == "0.12"           # half to even, like Python
    assert show(0.9125000000000001, 3) == show(0.9124999999999999, 3) == "0.912"
    assert show(-0.0001, 3) == "0.000"
    rng = np.random.default_rng(1)
    for x in rng.normal(size=200):
        assert show(x, 3) == fmt(x, 3)                          # no effect away from ties


def test_playground_numbers_are_course_lib_scratch():
    p = qkv_playground(Q0, K, V, digits=3)
    Q = Q0[None]
    scores = attention_scores(Q, K)[0]
    context, weights = scaled_dot_product_attention(Q, K, V)
    text, html = repr(p), p._repr_html_()
    for i in range(3):
        assert f'data-cell="score-{i}">{show(scores[i], 3)}<' in html
        assert f'data-cell="weight-{i}">{show(weights[0, i], 3)}<' in html
        assert f"{show(scores[i], 3)}  {show(weights[0, i], 3)}" in text
    ctx = "[" + ", ".join(show(c, 3) for c in context[0]) + "]"
    assert f"context · 上下文向量 = {ctx}" in text
    assert "√d_k = 2.000" in text
    # the inlined data is exactly the input, for the JavaScript to recompute from
    assert p.payload["q"] == Q0.tolist() and p.payload["K"] == K.tolist()
    assert p.payload["V"] == V.tolist() and p.payload["digits"] == 3


def test_playground_scores_are_scaled_by_sqrt_dk():
    # not q.k: the text would show 0.707 for q.k = 1 with d_k = 2 only if scaled
    p = qkv_playground([1.0, 0.0], [[1.0, 0.0], [0.0, 1.0]], [[1.0], [2.0]], digits=3)
    assert "k1  [1.000, 0.000]  [1.000]  0.707" in repr(p)


def test_explorer_payload_shows_the_weights_given():
    W = _weights()
    e = attention_explorer(TOKENS, W, title="t", digits=2)
    for i, w in enumerate(W):
        shown = np.vectorize(lambda x: show(x, 2))(np.array(e.payload["inputs"][i]["weights"]))
        assert (shown == np.vectorize(lambda x: show(x, 2))(w)).all()
        assert e.payload["inputs"][i]["tokens"] == TOKENS[i]
    # near-exact values survive the compaction of the inlined data
    assert np.allclose(np.array(e.payload["inputs"][0]["weights"]), W[0], atol=1e-6)


def test_explorer_text_lists_each_querys_top_key():
    W = _weights()
    text = repr(attention_explorer(TOKENS, W, title="Demo · 演示", digits=3))
    lines = text.splitlines()
    assert lines[0] == "Attention explorer · 注意力浏览器: Demo · 演示"
    for i, toks in enumerate(TOKENS):
        for layer in range(2):
            for head in range(3):
                w = W[i][layer, head]
                expected = " | ".join(f"{toks[q]}->{toks[int(np.argmax(w[q]))]} {show(w[q].max(), 3)}"
                                      for q in range(len(toks)))
                assert f"  L{layer + 1} H{head + 1}: {expected}" in lines


def test_explorer_accepts_the_documented_layouts():
    W = _weights()
    five_d = np.stack([W[0], W[0]])
    a = attention_explorer([TOKENS[0], TOKENS[0]], five_d, title="t")
    b = attention_explorer([TOKENS[0], TOKENS[0]], [W[0], W[0]], title="t")
    c = attention_explorer(TOKENS[0], W[0], title="t")      # one input, plain token list
    assert a.payload == b.payload
    assert c.payload["inputs"] == a.payload["inputs"][:1]
    assert a.payload["layers"] == ["Layer 1 · 层 1", "Layer 2 · 层 2"]
    assert a.payload["heads"][2] == "Head 3 · 头 3"


# ---- bad inputs: clear errors naming the argument ---------------------------------------

def _bad_rows():
    W = _weights()
    W[0] = W[0].copy()
    W[0][1, 2, 3] *= 1.01
    return W


@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(weights=_bad_rows()), ValueError, ["weights[0]", "sum to 1", "(1, 2, 3)"]),
    (dict(tokens_by_input=[TOKENS[0], ["hello", "world"]]), ValueError,
     ["weights[1]", "len(tokens_by_input[1]) = 2", "(2, 3, 3, 3)"]),
    (dict(weights=[_weights()[0] * np.nan, _weights()[1]]), ValueError, ["weights[0]", "finite"]),
    (dict(weights=[-_weights()[0], _weights()[1]]), ValueError, ["weights[0]", "non-negative"]),
    (dict(weights=_weights()[:1]), ValueError, ["weights holds 1", "tokens_by_input has 2"]),
    (dict(weights=np.ones((3, 3))), ValueError, ["weights must be", "(num_layers, num_heads, L, L)"]),
    (dict(weights=[_weights()[0], np.ones((1, 3, 3, 3)) / 3]), ValueError,
     ["weights[1]", "same (num_layers, num_heads)"]),
    (dict(tokens_by_input=[["a", 2, "c", "d"], ["x", "y", "z"]]), TypeError, ["tokens_by_input[0]"]),
    (dict(tokens_by_input="the cat"), TypeError, ["tokens_by_input"]),
    (dict(title=None), TypeError, ["title"]),
    (dict(title="  "), TypeError, ["title"]),
    (dict(layer_names=["one"]), ValueError, ["layer_names", "2"]),
    (dict(head_names="h"), TypeError, ["head_names"]),
    (dict(digits=2.5), TypeError, ["digits"]),
    (dict(digits=-1), ValueError, ["digits"]),
])
def test_explorer_bad_input(kwargs, exc, words):
    args = dict(tokens_by_input=TOKENS, weights=_weights(), title="t")
    args.update(kwargs)
    tokens, weights = args.pop("tokens_by_input"), args.pop("weights")
    with pytest.raises(exc) as info:
        attention_explorer(tokens, weights, **args)
    for w in words:
        assert w in str(info.value), f"{w!r} not in {info.value}"


@pytest.mark.parametrize("args, kwargs, exc, words", [
    ((Q0, K[:, :3], V), {}, ValueError, ["K must have shape (L_k, d_k)", "d_k = 4", "(3, 3)"]),
    ((Q0, K, V[:2]), {}, ValueError, ["V must have shape (L_k, d_v)", "L_k = 3", "(2, 3)"]),
    ((np.stack([Q0, Q0]), K, V), {}, ValueError, ["Q_init", "(2, 4)"]),
    ((Q0, np.where(K > 1.5, np.nan, K), V), {}, ValueError, ["K contains NaN"]),
    ((Q0, K, np.full((3, 2), np.inf)), {}, ValueError, ["V contains an infinite"]),
    (("abcd", K, V), {}, TypeError, ["Q_init"]),
    ((Q0, K, V), {"digits": "3"}, TypeError, ["digits"]),
    ((Q0, K, V), {"key_names": ["a"]}, ValueError, ["key_names", "3"]),
])
def test_playground_bad_input(args, kwargs, exc, words):
    with pytest.raises(exc) as info:
        qkv_playground(*args, **kwargs)
    for w in words:
        assert w in str(info.value), f"{w!r} not in {info.value}"


# ---- offline, self-contained HTML ---------------------------------------------------------

NETWORK = re.compile(r"https?:|\bsrc\s*=|\burl\(|@import|\bfetch\(|XMLHttpRequest|\bimport\(|"
                     r"<link\b|//[a-z0-9-]+\.[a-z]{2,}", re.I)


def test_html_requests_nothing_and_inlines_code_and_data():
    for w in (attention_explorer(TOKENS, _weights(), title="t"), qkv_playground(Q0, K, V)):
        html = w._repr_html_()
        assert not NETWORK.search(html), NETWORK.search(html).group(0)
        assert html.startswith(f'<div class="cw-root cw-{w.kind}" id="{w.id}">')
        assert html.endswith("</script></div>")
        assert "<style>" in html and static_text("common.js") in html
    assert NETWORK.search('<script src="https://cdn.example.org/x.js">')  # the check can fail


def test_tokens_cannot_break_out_of_the_script():
    evil = ["</script><script>alert(1)</script>", "<em>", "&amp;"]
    w = softmax(np.zeros((1, 1, 3, 3)))
    html = attention_explorer(evil, w, title="<i>title</i>")._repr_html_()
    assert "<script>alert(1)" not in html
    assert "<em>" not in html and "<i>title" not in html
    assert html.count("<script>") == 1 and html.count("</script>") == 1


def test_bilingual_labels():
    html = attention_explorer(TOKENS, _weights(), title="t")._repr_html_()
    for label in ["Input · 输入", "Layer · 层", "Head · 头", "Queries · 查询", "Keys · 键"]:
        assert label in html
    html = qkv_playground(Q0, K, V)._repr_html_()
    for label in ["score · 分数", "weight · 权重", "context · 上下文向量", "演练场"]:
        assert label in html


# ---- deterministic ids ------------------------------------------------------------------------

_SCRIPT = """
import numpy as np
from course_lib.scratch import softmax
from course_lib.widgets import attention_explorer, qkv_playground
w = softmax(np.arange(2 * 2 * 3 * 3, dtype=float).reshape(2, 2, 3, 3) / 7)
print(attention_explorer(["a", "b", "c"], w, title="t")._repr_html_())
print(qkv_playground([1.0, 2.0], [[1.0, 0.0], [0.5, 0.5]], [[1.0], [2.0]])._repr_html_())
"""


def test_html_is_the_same_in_every_fresh_kernel():
    runs = [subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                           check=True, cwd=ROOT, env={"PYTHONHASHSEED": str(seed), "PATH": ""}).stdout
            for seed in (0, 1)]
    assert runs[0] == runs[1] and "cw-explorer-" in runs[0]


def test_ids_are_distinct_within_a_kernel():
    W = _weights()
    a = attention_explorer(TOKENS, W, title="same")
    b = attention_explorer(TOKENS, W, title="same")
    c = attention_explorer(TOKENS, W, title="other")
    assert len({a.id, b.id, c.id}) == 3
    assert b.id.startswith(a.id) and re.fullmatch(r"cw-explorer-[0-9a-f]{12}(-\d+)?", a.id)
    assert a._repr_html_() == a._repr_html_()       # displaying twice: one id
    assert a._repr_html_().count(a.id) == 3           # root, and the script's two look-ups


def test_static_files_are_package_data():
    for name in ("common.js", "explorer.js", "playground.js", "widgets.css"):
        assert static_text(name).strip()


def test_inlined_data_does_not_depend_on_the_last_bits():
    # near-ties (they show differently once rounded to digits + 4 decimals) that
    # differ only in the last bits, as MiniLM's weights do between two CPUs
    from course_lib.widgets._html import compact
    for a, b in [(0.004999861637965387, 0.004999861637965397),
                 (0.015000293772717234, 0.01500029377271727)]:
        assert compact(a, 2) == compact(b, 2) and show(compact(a, 2), 2) == show(a, 2)
    p = 0.004999861637965387
    w = np.array([[[[p, 1 - p], [1 - p, p]]]])
    w2 = w.copy()
    w2[0, 0, 0, 0] = np.nextafter(w2[0, 0, 0, 0], 1)
    assert attention_explorer(["a", "b"], w, title="t").payload == \
        attention_explorer(["a", "b"], w2, title="t").payload


# ---- real models: course_lib.widgets.models ---------------------------------------------------

def _small(kind):
    import torch

    from course_lib.models import BERT, GPT, Transformer
    torch.manual_seed(0)
    if kind == "bert":
        return BERT(vocab_size=30, d_model=16, num_heads=2, num_layers=3, d_ff=32, max_len=16).double()
    if kind == "gpt":
        return GPT(vocab_size=30, d_model=16, num_heads=4, num_layers=2, d_ff=32, max_len=16).double()
    return Transformer(src_vocab=30, tgt_vocab=30, d_model=16, num_heads=2, num_encoder_layers=2,
                       num_decoder_layers=1, d_ff=32, max_len=16).double()


def test_attention_maps_are_the_models_own_weights():
    import torch

    from course_lib.widgets import attention_maps
    model = _small("bert").train()                       # left in training mode on purpose
    ids = [[1, 5, 7, 9, 2], [1, 4, 2]]
    maps = attention_maps(model, ids)
    assert model.training, "the model's mode must be restored"
    model.eval()
    for x, m in zip(ids, maps):
        _, ref = model(torch.tensor([x]), need_weights=True)
        assert m.shape == (3, 2, len(x), len(x)) and m.dtype == np.float64
        np.testing.assert_allclose(m, torch.stack([w[0] for w in ref]).detach().numpy(), atol=1e-12)
    # the hooks are gone: the model computes as before
    assert all(not mod._forward_hooks and not mod._forward_pre_hooks for mod in model.modules())


def test_attention_maps_of_gpt_are_causal_and_leave_the_output_alone():
    import torch

    from course_lib.widgets import attention_maps, model_explorer
    model = _small("gpt").eval()
    ids = torch.tensor([3, 8, 1, 4, 4, 9])
    before = model(ids[None])
    (m,) = attention_maps(model, [ids])
    assert m.shape == (2, 4, 6, 6)
    np.testing.assert_allclose(m.sum(-1), 1.0, atol=1e-12)
    assert (np.triu(m, k=1) == 0).all(), "a GPT query never sees a later token"
    assert torch.equal(model(ids[None]), before)
    e = model_explorer(model, [ids], tokens=[list("abcdef")], title="GPT · 测试")
    assert e.payload["heads"][3] == "Head 4 · 头 4" and "a->a 1.00" in repr(e)


def test_attention_maps_choose_a_stack_with_where():
    import torch

    from course_lib.widgets import attention_maps
    model = _small("transformer").eval()

    def run(model, x):
        src, tgt = x
        return model(torch.tensor([src]), torch.tensor([tgt]))
    x = ([5, 6, 7, 8, 2], [1, 9, 3])
    with pytest.raises(ValueError, match="where="):
        attention_maps(model, [x], forward=run)          # encoder, decoder self- and cross-attention
    (m,) = attention_maps(model, [x], forward=run, where="encoder")
    assert m.shape == (2, 2, 5, 5)
    (m,) = attention_maps(model, [x], forward=run, where=lambda n: n.endswith("self_attn")
                          and n.startswith("decoder"))
    assert m.shape == (1, 2, 3, 3)


@pytest.mark.parametrize("call, exc, words", [
    (lambda m: __import__("course_lib.widgets", fromlist=["x"]).attention_maps(m.float(), [[1, 2]]),
     ValueError, ["float64", "allow_float32"]),
    (lambda m: __import__("course_lib.widgets", fromlist=["x"]).attention_maps(m, "1 2 3"),
     TypeError, ["inputs"]),
    (lambda m: __import__("course_lib.widgets", fromlist=["x"]).attention_maps(m, [[0.5, 1.5]]),
     TypeError, ["token ids", "forward="]),
    (lambda m: __import__("course_lib.widgets", fromlist=["x"]).attention_maps(m, [[1, 2]], where="nope"),
     ValueError, ["where='nope'"]),
    (lambda m: __import__("course_lib.widgets", fromlist=["x"]).attention_maps("model", [[1, 2]]),
     TypeError, ["model"]),
])
def test_attention_maps_bad_input(call, exc, words):
    with pytest.raises(exc) as info:
        call(_small("bert"))
    for w in words:
        assert w in str(info.value), f"{w!r} not in {info.value}"


def test_minilm_explorer_is_hugging_face_minilm_in_float64():
    import torch

    from course_lib.models.pretrained import load_minilm, minilm_dir
    from course_lib.widgets import minilm_explorer
    import transformers  # pinned in requirements.txt: a broken install fails here, never skips
    sentences = ["The cat sat on the mat.", "It was tired."]
    e = minilm_explorer(sentences, title="MiniLM")
    model, tokenizer = load_minilm()
    assert model.tok_emb.weight.dtype == torch.float32, "the cached model must stay as it was"
    hf = transformers.BertModel.from_pretrained(str(minilm_dir()), attn_implementation="eager")
    hf = hf.double().eval()
    for s, inp in zip(sentences, e.payload["inputs"]):
        enc = tokenizer.encode(s)
        assert inp["tokens"] == enc.tokens and inp["tokens"][0] == "[CLS]"
        with torch.no_grad():
            ref = torch.stack([a[0] for a in hf(torch.tensor([enc.ids]), output_attentions=True).attentions])
        shown = np.vectorize(lambda x: show(x, 2))
        assert (shown(np.array(inp["weights"])) == shown(ref.numpy())).all()
    assert len(e.payload["layers"]) == 6 and len(e.payload["heads"]) == 12
