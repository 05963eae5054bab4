"""The glossary's third column says where each term is explained: the reference must resolve to a
chapter or a section, and that page must use the term (its English or Chinese form, or, for the
terms listed in ``PHRASED``, the phrase the page explains it with). A planted row pointing at a
page that never uses its term fails.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = ROOT / "book" / "appendix" / "glossary.md"

#: Terms the page they point to explains in other words: term -> a phrase of that page, verbatim.
PHRASED = {
    "attention weights": "总和为一的权重",          # ch02: "weights that sum to one"
    "scaling factor $1/\\sqrt{d_k}$": "divides its scores by $\\sqrt{d_k}$",
    "rotation matrix": "is a rotation",            # ch04: "Relative position is a rotation"
    "length extrapolation": "extrapolation",
    "causal attention": "该层是因果的",
    "held-out set": "留出",
    "top-k sampling": "Top-k",
    "weight tying": "共享权重",
    "latency percentile (p50/p95)": "p95",
}


def rows(text: str) -> list[tuple[str, str, str]]:
    return re.findall(r"(?m)^\| (.+?) \| (.+?) \| \{ref\}`(.+?)` \|$", text)


def labels() -> dict[str, Path]:
    out = {}
    for page in sorted((ROOT / "book").rglob("*.md")):
        for m in re.finditer(r"(?m)^\((\S+)\)=\s*$", page.read_text(encoding="utf-8")):
            out[m.group(1)] = page
    return out


def _norm(s: str) -> str:
    """Math, emphasis and code marks dropped, hyphens and spaces made one space, lower case."""
    return re.sub(r"[\s\-–]+", " ", re.sub(r"[*_`]", "", re.sub(r"\$[^$]*\$", "", s))).strip().lower()


def _forms(cell: str) -> list[str]:
    return [f for f in (_norm(x) for x in re.split(r" / |, |，|\(|\)|（|）", cell)) if f]


def uses(term: str, zh: str, page: Path) -> bool:
    raw = page.read_text(encoding="utf-8")
    if term in PHRASED:
        return PHRASED[term] in raw
    text = _norm(raw)
    return (any(re.search(r"(?<!\w)" + re.escape(f) + r"(?:s|es)?(?!\w)", text) for f in _forms(term))
            or any(f in text for f in _forms(zh)))          # Chinese has no word boundaries


def problems(text: str) -> list[str]:
    found, out = labels(), []
    for term, zh, ref in rows(text):
        if ref not in found:
            out.append(f"{term}: {{ref}}`{ref}` is no label of the book")
        elif not uses(term, zh, found[ref]):
            out.append(f"{term}: {found[ref].relative_to(ROOT)} never uses it")
    return out


def test_the_glossary_is_read():
    assert len(rows(GLOSSARY.read_text(encoding="utf-8"))) >= 100
    assert all(term in {t for t, _, _ in rows(GLOSSARY.read_text(encoding="utf-8"))} for term in PHRASED)


def test_every_term_points_at_a_page_that_explains_it():
    assert problems(GLOSSARY.read_text(encoding="utf-8")) == []


def test_a_row_pointing_at_the_wrong_chapter_is_caught():
    text = GLOSSARY.read_text(encoding="utf-8")
    planted = text.replace("| throughput | 吞吐量 | {ref}`ch10` |", "| throughput | 吞吐量 | {ref}`ch02` |", 1)
    assert planted != text
    assert problems(planted) == ["throughput: book/ch02_worked_qkv.md never uses it"]


def test_a_missing_label_is_caught():
    text = GLOSSARY.read_text(encoding="utf-8").replace("{ref}`ch11-rope`", "{ref}`ch11-rope-gone`", 1)
    assert problems(text) == ["rotary position embedding (RoPE): {ref}`ch11-rope-gone` is no label of the book"]
