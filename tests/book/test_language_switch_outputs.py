"""Code-cell outputs follow the language switch (issue #22): in the built book, in Chromium.

Outputs print bilingual labels, "English · 中文" (table headers, captions,
check lines, stream lines). ``_ext/static/course/lang-outputs.js`` wraps each
label's sides in ``course-label-en`` / ``-sep`` / ``-zh`` spans, and
``lang.css`` hides one side and the separator when the reader picks English
or 中文. Its docstring gives the segmentation rules; this module checks them
on hand-written cases (near misses included), then reads back real outputs
(a table of chapter 3, a table and a stream of chapter 2, a check line) in
each language, served from 127.0.0.1 and opened from disk, and checks on
every notebook page that no language hides a number and that "both" shows
the text exactly as printed (what ``tests/book/test_visible_text.py``
compares with ``text/plain``).

Needs the built book (``make book``) and Debian's Chromium; ``COURSE_BOOK_HTML``
points at another build (e.g. ``/tmp/x/_build/html`` from
``jupyter-book build . --path-output /tmp/x``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from conftest import chromium, need_chromium, page_opener, serve, wait_for_stored
from page_visits import visit_step
from toc import ROOT, pages

HTML = Path(os.environ.get("COURSE_BOOK_HTML", ROOT / "_build" / "html"))

pytestmark = pytest.mark.browser

need_chromium("output language-switch tests", None if (HTML / "index.html").exists() else
              f"the book is not built at {HTML} (run `make book`)")

CH02, CH03 = "book/ch02_worked_qkv.html", "book/ch03_multi_head.html"


# ----------------------------------------------------------------------- one browser, one server

@pytest.fixture(scope="module")
def browser():
    """One Chromium for the module (it stays in one pytest-xdist worker with --dist loadscope)."""
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def server():
    with serve(HTML) as base:
        yield base


@pytest.fixture(scope="module")
def rules(browser, server):
    """A page of the book, for calling ``window.courseLabels.segments`` on hand-written text."""
    with page_opener(browser, server) as open_page:
        page = open_page(CH02)
        yield lambda text: page.evaluate("t => window.courseLabels.segments(t)", text)


def choose(page, lang: str):
    page.click(f".course-lang-switch button[value={lang}]")
    assert page.get_attribute("html", "data-course-lang") == lang


def view(segments, lang: str) -> str:
    """The text a reader of ``lang`` sees: shared parts and that language's side."""
    return "".join(text for kind, text in segments if kind in ("", lang))


# ----------------------------------------------------------------------- the rule itself

# (printed text, what English shows, what 中文 shows); "both" always shows the printed text.
CASES = [
    ("weights equal · 权重一致", "weights equal", "权重一致"),
    ("✓ rows sum to 1 · 每行之和为 1", "✓ rows sum to 1", "✓ 每行之和为 1"),
    ("✓ weights equal · 权重一致 (max |Δ| < 1e-12)",
     "✓ weights equal (max |Δ| < 1e-12)", "✓ 权重一致 (max |Δ| < 1e-12)"),
    ("label · 标签: 0.5", "label: 0.5", "标签: 0.5"),
    # several pairs on one line, separated by other text and column gaps
    ("scores · 分数: [0.71 0.71 1.41]   weights · 权重: [0.25 0.25 0.5 ]",
     "scores: [0.71 0.71 1.41]   weights: [0.25 0.25 0.5 ]",
     "分数: [0.71 0.71 1.41]   权重: [0.25 0.25 0.5 ]"),
    ("head 1 · 头 1, position 2 · 位置 2", "head 1, position 2", "头 1, 位置 2"),
    ("alpha · 甲\nbeta · 乙: 2", "alpha\nbeta: 2", "甲\n乙: 2"),
    ("label · 标签: 0.5   loss · 损失: 0.7", "label: 0.5   loss: 0.7", "标签: 0.5   损失: 0.7"),
    ("query → · 查询 →", "query →", "查询 →"),
    # a number that only one side prints stays shared
    ("plain: 51657 weights · 个权重", "plain: 51657 weights", "plain: 51657 个权重"),
    ("true · 真实 0", "true 0", "真实 0"),
    ("saved · 保存: 1,048,576 bytes · 字节", "saved: 1,048,576 bytes", "保存: 1,048,576 字节"),
    ("50,000 pairs per d_k · 每个 d_k 取 50,000 对", "50,000 pairs per d_k", "每个 d_k 取 50,000 对"),
    # tokens after the Chinese side that the text wrote before the separator belong to it
    ("the source claims ~75% · 原始资料称约 75%", "the source claims ~75%", "原始资料称约 75%"),
    ("calls embed_text and generate_text · 调用了 embed_text 和 generate_text",
     "calls embed_text and generate_text", "调用了 embed_text 和 generate_text"),
    # commas: one label when the Chinese side has "，" too; a key before it stays shared
    ("(ch05-encoder-no-mask, correct, with a note · 正确，附说明)",
     "(ch05-encoder-no-mask, correct, with a note)", "(ch05-encoder-no-mask, 正确，附说明)"),
    ("(ch02-context, arithmetic slip · 计算错误): rounded too early · 过早取整",
     "(ch02-context, arithmetic slip): rounded too early", "(ch02-context, 计算错误): 过早取整"),
    # Chinese data after a label, quoted strings, a quoted Chinese source
    ("gold · 答案: 单程 / 运行 / ８ / 小时", "gold: 单程 / 运行 / ８ / 小时", "答案: 单程 / 运行 / ８ / 小时"),
    ('→ 200 {"label": "positive · 正面", "confidence": 0.934}',
     '→ 200 {"label": "positive", "confidence": 0.934}', '→ 200 {"label": "正面", "confidence": 0.934}'),
    ("“从左到右” has it backwards · “从左到右”说反了",
     "“从左到右” has it backwards", "“从左到右” “从左到右”说反了"),
    # a "·" between English parts is not a separator of languages
    ("ch07-gpt · T = 0.8, top-k = 10 · 120 new tokens · 个新词元, seed 0 · 种子 0",
     "ch07-gpt · T = 0.8, top-k = 10 · 120 new tokens, seed 0",
     "ch07-gpt · T = 0.8, top-k = 10 · 120 个新词元, 种子 0"),
]

# Near misses: printed text that must stay whole (no language may hide any of it).
WHOLE = [
    "0.751 · 0.752",                                   # numbers, no Chinese
    "L1 H8 · 头",                                       # identifiers, not an English label
    "d_k · 维度",
    "ε = 0.1 · 平滑",
    "translator · step 100/150 · loss: ⟨0.00075⟩ ✓ band [0.00075, 0.00076]",   # "·" inside English
    "loss 0.5 · 损失 0.7",                               # the sides print different numbers
    "5·0.2 + 6·0.4 · 第 2 行",                          # no space around the first "·"; numbers differ
    "DDP = one process (float64) · DDP = 单进程",       # "64" only in English
    "头 · 位置",                                         # no English side
    "plain text without a separator, 中文",
]


def _id(text: str) -> str:
    return re.sub(r"[^\x21-\x7e]+", "_", text)[:40]


@pytest.mark.parametrize("text,en,zh", CASES, ids=[_id(c[0]) for c in CASES])
def test_the_rule_splits_labels(rules, text, en, zh):
    segments = rules(text)
    assert "".join(s for _, s in segments) == text, segments           # "both" is the printed text
    assert {k for k, _ in segments} <= {"", "en", "sep", "zh"}
    assert (view(segments, "en"), view(segments, "zh")) == (en, zh), segments


@pytest.mark.parametrize("text", WHOLE, ids=[_id(t) for t in WHOLE])
def test_the_rule_leaves_near_misses_whole(rules, text):
    assert rules(text) == [["", text]]


# ----------------------------------------------------------------------- real outputs

TABLE = r"""
(needle) => {
  const t = [...document.querySelectorAll('div.cell_output table')]
    .find(t => t.querySelector('thead').textContent.includes(needle));
  const cells = [...t.querySelectorAll('tr')].map(r => [...r.children].map(c => c.innerText.trim()));
  const caption = (t.closest('.pst-scrollable-table-container') || t).previousElementSibling;
  return {cells, caption: caption && caption.tagName === 'P' ? caption.innerText.trim() : null};
}
"""

STREAM = r"""
(needle) => [...document.querySelectorAll('div.cell_output .output.stream pre')]
  .find(p => p.textContent.includes(needle)).innerText.replace(/\n$/, '')
"""

CHECK = r"""
(needle) => [...document.querySelectorAll('div.cell_output .output')]
  .find(o => o.textContent.includes(needle)).innerText.replace(/\n$/, '')
"""

# Chapter 3's split_heads table: every header and row label bilingual (two pairs in one cell), numbers.
CH03_SPLIT = {
    "en": [["", "feature 1 of the head", "feature 2"], ["head 1, position 1", "0", "1"],
           ["head 1, position 2", "0", "1"], ["head 2, position 1", "2", "3"], ["head 2, position 2", "2", "3"],
           ["head 3, position 1", "4", "5"], ["head 3, position 2", "4", "5"]],
    "zh": [["", "头内特征 1", "特征 2"], ["头 1, 位置 1", "0", "1"], ["头 1, 位置 2", "0", "1"],
           ["头 2, 位置 1", "2", "3"], ["头 2, 位置 2", "2", "3"], ["头 3, 位置 1", "4", "5"], ["头 3, 位置 2", "4", "5"]],
    "both": [["", "feature 1 of the head · 头内特征 1", "feature 2 · 特征 2"],
             ["head 1 · 头 1, position 1 · 位置 1", "0", "1"], ["head 1 · 头 1, position 2 · 位置 2", "0", "1"],
             ["head 2 · 头 2, position 1 · 位置 1", "2", "3"], ["head 2 · 头 2, position 2 · 位置 2", "2", "3"],
             ["head 3 · 头 3, position 1 · 位置 1", "4", "5"], ["head 3 · 头 3, position 2 · 位置 2", "4", "5"]],
}
# Chapter 3's "word read most by each head" table: a bilingual caption, header and row labels;
# the words of the sentence are data and stay.
CH03_WORDS = {
    "en": ("Word read most by each head", ["query →", "the", "old", "cat", "sat", "on", "a", "red", "mat"],
           ["head 3", "old", "cat", "the", "old", "cat", "sat", "on", "a"]),
    "zh": ("每个头最关注的词", ["查询 →", "the", "old", "cat", "sat", "on", "a", "red", "mat"],
           ["头 3", "old", "cat", "the", "old", "cat", "sat", "on", "a"]),
    "both": ("Word read most by each head · 每个头最关注的词",
             ["query → · 查询 →", "the", "old", "cat", "sat", "on", "a", "red", "mat"],
             ["head 3 · 头 3", "old", "cat", "the", "old", "cat", "sat", "on", "a"]),
}

# Chapter 2's first "printed against computed" table (step 1, e = H q).
CH02_HEAD = {"en": ["entry", "source", "computed", "match"], "zh": ["位置", "原始资料", "计算", "一致"],
             "both": ["entry · 位置", "source · 原始资料", "computed · 计算", "match · 一致"]}
CH02_ROW1 = ["[1]", "0.60", "0.60", "✓"]

# Chapter 2's overflow stream, five bilingual lines and one number alone.
CH02_STREAM = {
    "en": "largest float32: 3.4028235e+38\nexp overflows above: 88.7\nscores row 3: [156.3 361.3 566.3]\n"
          "naive softmax: [nan nan nan]\nstable softmax: [0. 0. 1.]",
    "zh": "float32 最大值: 3.4028235e+38\nexp 溢出阈值: 88.7\n第 3 行分数: [156.3 361.3 566.3]\n"
          "朴素 softmax: [nan nan nan]\n稳定 softmax: [0. 0. 1.]",
    "both": "largest float32 · float32 最大值: 3.4028235e+38\nexp overflows above · exp 溢出阈值: 88.7\n"
            "scores row 3 · 第 3 行分数: [156.3 361.3 566.3]\nnaive softmax · 朴素 softmax: [nan nan nan]\n"
            "stable softmax · 稳定 softmax: [0. 0. 1.]",
}
CH02_CHECK = {  # three check lines
    "en": ["✓ outputs equal (max |Δ| < 1e-12)", "✓ weights equal (max |Δ| < 1e-12)",
           "✓ each row of weights sums to 1 (max |Δ| < 1e-12)"],
    "zh": ["✓ 输出一致 (max |Δ| < 1e-12)", "✓ 权重一致 (max |Δ| < 1e-12)", "✓ 每行权重之和为 1 (max |Δ| < 1e-12)"],
    "both": ["✓ outputs equal · 输出一致 (max |Δ| < 1e-12)", "✓ weights equal · 权重一致 (max |Δ| < 1e-12)",
             "✓ each row of weights sums to 1 · 每行权重之和为 1 (max |Δ| < 1e-12)"],
}


@pytest.mark.parametrize("kind", ["http", "file"])
def test_outputs_follow_the_switch(browser, server, kind):
    base = server if kind == "http" else HTML.as_uri()
    with page_opener(browser, base) as open_page:
        ch03, ch02 = open_page(CH03), open_page(CH02)
        for lang in ("en", "zh", "both"):
            choose(ch03, lang)
            split = ch03.evaluate(TABLE, "feature 1 of the head")
            assert split["cells"] == CH03_SPLIT[lang], lang
            assert split["caption"] == "split_heads(toy, 3): shape (3, 2, 2)"
            words = ch03.evaluate(TABLE, "query →")
            assert (words["caption"], words["cells"][0], words["cells"][3]) == CH03_WORDS[lang], lang
        assert wait_for_stored(ch02, "course-lang", "both")   # ch03's choice reached ch02 (conftest)
        ch02.reload(wait_until="load")                   # the choice is remembered across pages
        assert ch02.get_attribute("html", "data-course-lang") == "both"
        assert ch02.get_attribute(".course-lang-switch button[value=both]", "aria-pressed") == "true"
        for lang in ("en", "zh", "both"):
            choose(ch02, lang)
            got = ch02.evaluate(TABLE, "entry · 位置")
            assert got["cells"][0] == CH02_HEAD[lang] and got["cells"][1] == CH02_ROW1, (lang, got)
            assert got["caption"] == "e = H q"
            assert ch02.evaluate(STREAM, "exp overflows above") == CH02_STREAM[lang], lang
            check = ch02.evaluate(CHECK, "weights equal · 权重一致")
            assert [line.strip() for line in check.splitlines() if line.strip()] == CH02_CHECK[lang], lang
        choose(ch02, "en")
        assert wait_for_stored(ch03, "course-lang", "en")
        ch03.reload(wait_until="load")
        assert ch03.evaluate(TABLE, "feature 1 of the head")["cells"] == CH03_SPLIT["en"], "not kept on reload"


# ----------------------------------------------------------------------- every page

# For every output block: its text in each language (innerText: what is rendered), its text
# as the page was served (parsed again, no script run), and whether every label span shows in "both".
READ = r"""
async () => {
  const blocks = () => [...document.querySelectorAll('article div.cell_output')].flatMap(o => [...o.children]);
  const out = {};
  for (const lang of ['en', 'zh', 'both']) {
    document.querySelector(`.course-lang-switch button[value=${lang}]`).click();
    out[lang] = blocks().map(b => b.innerText);
  }
  const spans = [...document.querySelectorAll('.course-label-en, .course-label-sep, .course-label-zh')];
  out.labels = spans.length;
  out.hiddenInBoth = spans.filter(s => getComputedStyle(s).display !== 'inline').length;
  // the text of a block, without what other scripts add or rewrite (copy buttons, widgets, math)
  const text = b => {
    const c = b.cloneNode(true);
    c.querySelectorAll('button, .copybtn, .cw-root, .math, script, style').forEach(x => x.remove());
    return c.textContent.replace(/\s+/g, ' ').trim();  // a dropdown's toggle leaves whitespace
  };
  const served = new DOMParser().parseFromString(await (await fetch(location.href)).text(), 'text/html');
  out.served = [...served.querySelectorAll('article div.cell_output')].flatMap(o => [...o.children]).map(text);
  out.now = blocks().map(text);
  return out;
}
"""

NUMBER = re.compile(r"\d+(?:\.\d+)?")


def notebook_pages() -> list[str]:
    return [p for p in pages() if (ROOT / f"{p}.ipynb").exists()]


@visit_step("languages", rank=1)
def read_languages(page) -> dict:
    """READ on a visit shared with the other browser modules (tests/page_visits.py): it clicks the
    switch through each language and ends on both, before test_visible_text rewrites the page."""
    return page.evaluate(READ)


def test_no_language_hides_a_number_and_both_is_unchanged(browser, page_visits):  # visits borrow browser
    problems, labelled = [], 0
    for path in notebook_pages():
        seen = page_visits(HTML, path)
        got = seen.step("languages")
        problems += [f"{path}: console error {e}" for e in seen.errors]
        problems += [f"{path}: request to another host {u}" for u in seen.foreign]
        labelled += got["labels"]
        if got["hiddenInBoth"]:
            problems.append(f"{path}: {got['hiddenInBoth']} label spans hidden with both languages chosen")
        changed = [k for k, (a, b) in enumerate(zip(got["served"], got["now"])) if a != b]
        if len(got["served"]) != len(got["now"]) or changed:
            problems.append(f"{path}: the text of output blocks {changed} changed (only spans may be added)")
        for k, both in enumerate(got["both"]):
            numbers = set(NUMBER.findall(both))
            for lang in ("en", "zh"):
                lost = numbers - set(NUMBER.findall(got[lang][k]))
                if lost:
                    problems.append(f"{path} output block {k}: {lang} hides {sorted(lost)}: "
                                    f"{got[lang][k][:120]!r}")
    assert not problems, "\n".join(problems[:30])
    assert labelled > 1000, f"only {labelled} label spans in the whole book: is lang-outputs.js loaded?"
