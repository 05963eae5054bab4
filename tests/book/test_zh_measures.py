"""The Chinese prose reads in short sentences and names each concept one way (tools/zh_measures.py).

Every chapter: mean sentence length 45 characters at most, 5 % of sentences longer than
100 characters at most, and no second name for a glossary term.
"""

import pytest

import zh_measures as zm


def _page(*cells):
    """A synthetic MyST page: each cell a (tag, text) pair."""
    out = ["# A page · 一页\n"]
    for tag, text in cells:
        out.append(f'+++ {{"tags": ["{tag}"]}}\n\n{text}\n\n+++\n')
    return "\n".join(out)


@pytest.mark.parametrize("path", zm.chapters(), ids=lambda p: p.stem)
def test_chapter_sentences_are_short(path):
    m = zm.measure_text(path.read_text(encoding="utf-8"))
    assert m["sentences"] > 0, f"{path.stem}: no sentence in its zh cells"
    assert m["mean"] <= zm.MEAN_MAX and m["long_share"] <= zm.LONG_SHARE_MAX, (
        f"{path.stem}: zh sentences average {m['mean']:.1f} characters (at most {zm.MEAN_MAX}) and "
        f"{m['long']} of {m['sentences']} ({m['long_share']:.1%}, at most {zm.LONG_SHARE_MAX:.0%}) are longer "
        f"than {zm.LONG}; the longest has {m['longest']} (python tools/zh_measures.py)")


@pytest.mark.parametrize("path", zm.chapters(), ids=lambda p: p.stem)
def test_chapter_uses_the_glossary_terms(path):
    found = zm.measure_text(path.read_text(encoding="utf-8"))["variants"]
    assert not found, (f"{path.stem}: second names of glossary terms in the zh prose (variant (use): count): "
                       f"{found}")


def test_sentences_split_at_full_stops_paragraphs_and_list_items():
    cell = ("第一句。第二句！第三句？\n续行仍是第三段的一句\n\n"
            "- 列表项一\n- 列表项二。还有一句……\n1. 编号项“引号。”\n")
    assert zm.sentences(cell) == ["第一句。", "第二句！", "第三句？", "续行仍是第三段的一句",
                                  "列表项一", "列表项二。", "还有一句……", "编号项“引号。”"]


def test_math_code_and_glue_count_as_one_character():
    cell = "误差为 {glue:text}`ch05_err`，公式 $\\frac{QK^\\top}{\\sqrt{d_k}}$ 与 `torch.nn.functional.softmax` 相同。"
    assert zm.sentences(cell) == ["误差为 X，公式 X 与 X 相同。"]
    assert len(zm.sentences(cell)[0]) == 18         # 误差为 ␣X，公式␣X␣与␣X␣相同。
    cell = "% numbers: 0.1 (definition: 平滑)\n见 [第 5 章](ch05_transformer.md) 与 {ref}`ch05`，$$x^2$$ 成立。"
    assert zm.sentences(cell) == ["见 第 5 章 与 X，X 成立。"]


def test_an_over_long_chapter_fails():
    short = "这是一个短句。" * 20
    m = zm.measure_text(_page(("en", "An English cell is not measured. " * 40), ("zh", short)))
    assert (m["sentences"], m["mean"], m["long"]) == (20, 7.0, 0)
    long_sentence = "这" * 101 + "。"
    m = zm.measure_text(_page(("zh", short), ("zh", long_sentence)))
    assert (m["sentences"], m["long"]) == (21, 1)
    assert m["long_share"] <= zm.LONG_SHARE_MAX                 # 1 of 21: within 5 %
    m = zm.measure_text(_page(("zh", "这是一个短句。" * 10 + long_sentence)))
    assert m["long_share"] > zm.LONG_SHARE_MAX                  # 1 of 11 sentences is long
    m = zm.measure_text(_page(("zh", ("这" * 60 + "。") * 5)))
    assert m["mean"] == 61 > zm.MEAN_MAX


def test_long_means_over_a_hundred_characters():
    m = zm.measure_text(_page(("zh", "这" * 99 + "。" + "那" * 100 + "。")))
    assert (m["sentences"], m["long"], m["longest"]) == (2, 1, 101)


def test_only_zh_cells_are_measured():
    page = _page(("en", "Long English. " * 50), ("zh", "中文。")) + "\n```{code-cell} ipython3\nx = '键值缓存'\n```\n"
    m = zm.measure_text(page)
    assert (m["sentences"], m["variants"]) == (1, {})


@pytest.mark.parametrize("text, key", [
    ("推理时用键值缓存。", "键值缓存 (KV 缓存)"),
    ("画成热力图。", "热力图 (热图)"),
    ("每个 logit 都减去最大值。", "logit (logits)"),
    ("编码器-解码器模型。", "编码器-解码器 (编码器–解码器)"),
    ("编码器—解码器模型。", "编码器-解码器 (编码器–解码器)"),
    ("把归一化放在前面（pre-LN）。", "pre-LN/post-LN (前归一化/后归一化)"),
    ("采用前置归一化。", "前置/后置归一化 (前归一化/后归一化)"),
    ("损失落在区间内；95 % 置信区间见下。", zm.INTERVAL_KEY),
])
def test_a_variant_fails(text, key):
    assert zm.measure_text(_page(("zh", text)))["variants"] == {key: 1}


@pytest.mark.parametrize("text", [
    "推理时用 KV 缓存。", "键值缓存（KV 缓存）是一种缓存。", "画成热图。", "softmax 之前的 logits。",
    "编码器–解码器模型。", "采用前归一化（pre-LN）。", "前归一化，pre-LN。",
    "损失落在容许区间内；置信区间另算。", "损失落在区间内。",
    "代码 `logit = x` 与 $\\mathrm{logit}$ 不算。",
])
def test_the_preferred_forms_pass(text):
    assert zm.measure_text(_page(("zh", text)))["variants"] == {}


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="text"):
        zm.measure_text(3)
