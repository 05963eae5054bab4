"""One Chinese rendering per glossary term (/work notes: Chinese house style).

``book/appendix/glossary.md`` is the single source of truth for the book's
terms: a table ``Term | 术语 | chapter``. A term rendered two ways in the
Chinese prose (attention heatmap as 热图 here and 热力图 there, the source
documents as 原始资料 and 原文) reads as two concepts. The practical rule:

    for every pair of prose cells (one tagged ``en``, its twin tagged ``zh``),
    when the English cell uses a glossary term, the Chinese cell uses the
    glossary's Chinese rendering of it.

Code spans, math and roles are removed first, so ``mask`` in code or
``$K$`` in a formula do not count. A row such as ``split heads / merge heads``
gives two terms, paired with ``拆分多头 / 合并多头`` side by side; a
parenthesis (``recurrent neural network (RNN)``) gives an alternative
spelling of the same term. ``ALLOW`` below lists the exceptions, each with its
reason: a short form the glossary itself implies, or an English word that is
often not the term (``key`` in "a key idea").
"""

import re

import jupytext
import pytest

from toc import ROOT, pages

GLOSSARY = ROOT / "book" / "appendix" / "glossary.md"
LANG_TAGS = ("en", "zh")

_STRIP = [
    re.compile(r"\$\$.*?\$\$", re.S),                 # display math
    re.compile(r"(?<!\\)\$[^$\n]+?(?<!\\)\$"),         # inline math
    re.compile(r"\{[\w:-]+\}`[^`]*`"),                 # roles ({ref}, {doc}, glue)
    re.compile(r"(`+).+?\1", re.S),                    # code spans
    re.compile(r"\]\([^)]*\)"),                        # link targets
    re.compile(r"<!--.*?-->", re.S),                   # HTML comments
    re.compile(r"(?m)^%.*$"),                          # MyST comments
]

# English terms that are too common as plain words to require the term in the
# Chinese twin, or short forms that the glossary row itself implies.
# term (as parsed from the glossary, lower case) -> (accepted extra renderings, reason)
ALLOW: dict[str, tuple[tuple[str, ...], str]] = {
    "key": (("*",), "'key' is also an everyday adjective (a key idea, the key step)"),
    "value": (("*",), "'value' is also a plain number (the value of a cell, exact values)"),
    "token": (("*",), "'token' as a plural count or in 'token accuracy' is checked by 词元 in most cells, "
                      "but the Chinese often names the concrete unit (词, 字母, 图像块) instead"),
    "attention": (("*",), "'attention' is in almost every cell; 注意力 is never rendered otherwise, "
                          "and a Chinese sentence may refer back to it by 它 or by the model's name"),
    "head": (("头",), "the glossary's 注意力头 is the full form; 头 alone after 多头注意力 has been named"),
    "alignment": (("*",), "'alignment' is also the plain verb/noun (in alignment with, aligned columns)"),
    "mask": (("掩码", "遮", "屏蔽"), "'mask' as a verb (to mask a number) is 遮盖/屏蔽; the noun is 掩码"),
    "temperature": (("*",), "only the sampling chapter uses the term; elsewhere it is plain English"),
    "scale": (("*",), "'scale' is usually the verb (scale the scores), not quantisation's scale"),
    "patch": (("图像块", "块"), "块 alone once 图像块 has been named in the same chapter"),
    "attention weights": (("权重",), "权重 alone when the sentence already says 注意力"),
    "attention score": (("分数",), "分数 alone when the sentence already says 注意力"),
    "vocabulary": (("词表", "词汇"), "词汇 when the English means the words themselves, not the table"),
    "throughput": (("吞吐",), "吞吐 is the same word without its suffix"),
    "sparsity": (("稀疏",), "稀疏 (sparse) in 'sparsity pattern' → 稀疏模式"),
    "softmax": (("*",), "softmax stays softmax in Chinese; the gloss is given once, in chapter 2"),
    "segment": (("*",), "'segment' is also a plain word (a segment of the curve)"),
    "information bottleneck": (("瓶颈",), "瓶颈 alone once 信息瓶颈 has been named"),
    "all-reduce": (("全归约", "all-reduce"), "the glossary gives the English in parentheses"),
    "multiply-add": (("乘加",), "乘加 (次) is the same word; 乘加次数 is the count"),
    "[cls] token": (("[CLS] 词元",), "分类词元 is the gloss at first use; [CLS] 词元 afterwards"),
    "kv cache": (("KV 缓存", "键值缓存"), "the house style allows 键值缓存 (KV cache) at first use"),
}


def _clean(text: str) -> str:
    for pattern in _STRIP:
        text = pattern.sub(" ", text)
    return text


def _split_alternatives(cell: str, zh: bool) -> list[list[str]]:
    """'split heads / merge heads' -> [['split heads'], ['merge heads']];
    'recurrent neural network (RNN)' -> [['recurrent neural network', 'RNN']];
    'local (window) attention' -> [['local attention', 'window attention']]."""
    cell = re.sub(r"\$[^$]*\$", "", cell).strip()
    parts = re.split(r"\s*/\s*|，" if zh else r"\s*/\s*|,\s+(?=[A-Z])", cell)
    sep = "" if zh else " "
    out = []
    for part in parts:
        m = re.match(r"^(.*?)\s*[（(]([^）)]*)[）)]\s*(.*)$", part)
        if not m:
            out.append([part.strip()])
            continue
        head, inner, tail = (g.strip() for g in m.groups())
        forms = [sep.join(x for x in (head, tail) if x)]
        if tail:                                          # a word inside the term: both spellings
            forms.append(sep.join(x for x in (inner, tail) if x))
        elif not zh or re.search(r"[\u4e00-\u9fff]", inner):
            forms.append(inner)                           # an acronym, or a Chinese gloss
        out.append([f for f in forms if f])
    return out


def glossary() -> list[tuple[str, list[str]]]:
    """(English form, accepted Chinese renderings) for every term in the glossary."""
    rows = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or cells[0] in ("Term", "") or cells[0].startswith(":--"):
            continue
        en, zh = _split_alternatives(cells[0], zh=False), _split_alternatives(cells[1], zh=True)
        if len(en) == len(zh):
            pairs = zip(en, zh)
        else:                                            # cannot pair: any rendering of the row will do
            pairs = ((e, [z for zs in zh for z in zs]) for e in en)
        for en_forms, zh_forms in pairs:
            for form in en_forms:
                rows.append((form, zh_forms))
    return rows


def _en_pattern(term: str) -> re.Pattern:
    words = [re.escape(w) for w in re.split(r"\s+", term)]
    body = r"\s+".join(words).replace(r"\-", "[-–]")      # a hyphenated term keeps its hyphen
    # plural and possessive forms, word boundaries; acronyms are case-sensitive
    flags = 0 if term.isupper() or re.search(r"[A-Z]{2}", term) else re.I
    return re.compile(rf"(?<![\w-]){body}(?:s|es|'s)?(?![\w-])", flags)


def inconsistencies(en: str, zh: str, terms=None) -> list[tuple[str, list[str]]]:
    """Glossary terms used in the English cell whose Chinese rendering is missing in its twin."""
    en, zh = _clean(en), _clean(zh)
    out = []
    for term, renderings in terms if terms is not None else glossary():
        extra, _reason = ALLOW.get(term.lower(), ((), ""))
        if "*" in extra or not _en_pattern(term).search(en):
            continue
        accepted = [r for r in renderings if r] + list(extra)
        if re.search(r"[A-Z]", term):                    # names and acronyms (RNN, ViT, RoPE) stay as they are
            accepted.append(term)
        if not any(r in zh for r in accepted):
            out.append((term, accepted))
    return out


def _pairs(page: str):
    nb = jupytext.read(ROOT / f"{page}.md")
    cells = nb.cells
    for i, cell in enumerate(cells[:-1]):
        tags = set(cell.metadata.get("tags", []))
        nxt = cells[i + 1]
        if cell.cell_type == "markdown" and "en" in tags and "zh" in set(nxt.metadata.get("tags", [])):
            yield i, cell.source, nxt.source


# Pages with a known inconsistency, to fix with a re-sync of the page (then delete the entry:
# the mark is strict, so the test fails once the page is fixed and the entry is still here).
KNOWN: dict[str, str] = {}


@pytest.mark.parametrize("page", [pytest.param(p, marks=pytest.mark.xfail(reason=KNOWN[p], strict=True))
                                  if p in KNOWN else p for p in pages()])
def test_glossary_terms_have_one_chinese_rendering(page):
    bad = [(i, term, accepted) for i, en, zh in _pairs(page) for term, accepted in inconsistencies(en, zh)]
    assert not bad, (
        f"{page}: English prose uses a glossary term but its Chinese twin does not use the glossary's "
        f"rendering (cell index, term, renderings accepted): {bad[:15]}{' …' if len(bad) > 15 else ''}. "
        "Use the glossary's term (book/appendix/glossary.md), or fix the glossary, or add a reasoned "
        "exception to ALLOW in this test")


def test_glossary_is_parsed():
    terms = dict((t, r) for t, r in glossary())
    assert terms["encoder–decoder"] == ["编码器–解码器"]
    assert terms["recurrent neural network"] == ["循环神经网络"] and terms["RNN"] == ["循环神经网络"]
    assert terms["split heads"] == ["拆分多头"] and terms["merge heads"] == ["合并多头"]
    assert all(r for _, r in glossary())
    assert all(reason or extra for extra, reason in ALLOW.values() if "*" in extra)


def test_the_rule_catches_a_planted_inconsistency():
    en = "Add a positional encoding to each token, then draw the heatmap."
    assert inconsistencies(en, "给每个词元加上位置编码，再画出热图。") == []
    planted = inconsistencies(en, "给每个词元加上位置嵌入，再画出热图。")
    assert [t for t, _ in planted] == ["positional encoding"]
    heatmap = [("heatmap", ["热图"])]                     # a term the house style fixes: 热图, not 热力图
    assert inconsistencies(en, "给每个词元加上位置编码，再画出热力图。", heatmap) == [("heatmap", ["热图"])]
    assert [t for t, _ in inconsistencies("The encoder–decoder and its bottleneck.",
                                          "编码器-解码器及其瓶颈。")] == ["encoder–decoder"]
    # code and math do not count
    assert inconsistencies("Call `positional_encoding(x)` on $K$.", "调用。") == []
