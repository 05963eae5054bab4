"""Result numbers in the prose come from code (CONTRIBUTING.md, *What the reader sees*).

A number typed into a sentence drifts from the cell that computed it. So a
decimal, a percentage or a ratio (``0.75``, ``15.1%``, ``9.05×``) in an
English or Chinese prose cell must be one of:

- glued from code: ``{glue:text}`name``` (``course_lib.display.glue``);
- inside math (``$d_k = 64$``) or code (`` `0.5` ``), where it is notation;
- a definition or a cited fact, declared in the same cell on a MyST comment
  line ``% numbers: 0.1 (definition: label smoothing ε); 28.4 (cited: Vaswani
  et al. 2017, Table 2)``. The reason is required.

Integers (``8 heads``, ``1998``) are not flagged: they are almost always
definitions. A version such as ``2.13.0`` is not a result either.
"""

import re

import jupytext
import pytest

from toc import ROOT, pages

LANG_TAGS = {"en", "zh"}

_STRIP = [
    re.compile(r"\$\$.*?\$\$", re.S),                 # display math
    re.compile(r"(?<!\\)\$[^$\n]+?(?<!\\)\$"),         # inline math
    re.compile(r"\{[\w:-]+\}`[^`]*`"),                 # roles, glue included
    re.compile(r"(`+).+?\1", re.S),                    # code spans
    re.compile(r"\]\([^)]*\)"),                        # link targets
    re.compile(r"<!--.*?-->", re.S),                   # HTML comments
    re.compile(r"(?m)^\s*:[\w-]+:.*$"),                # directive options
    re.compile(r"\b\d+(?:\.\d+){2,}\b"),               # versions 2.13.0
]
NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?\s*[%×]|\d+\.\d+(?!\w|\.\d))")
DECLARED = re.compile(r"(?m)^%\s*numbers:\s*(.+)$")


def _declared(source: str) -> set[str]:
    out = set()
    for line in DECLARED.findall(source):
        for item in line.split(";"):
            item = item.strip()
            m = re.match(r"(\S+)\s+\((definition|cited)\b[^)]*\)", item)
            if not m:
                raise AssertionError(
                    f"'% numbers:' items read 'NUMBER (definition: …)' or 'NUMBER (cited: …)', got {item!r}")
            out.add(m.group(1))
    return out


def typed_numbers(source: str) -> list[str]:
    """The result-like numbers typed into one prose cell and not declared."""
    allowed = _declared(source)
    text = DECLARED.sub("", source)
    text = re.sub(r"(?m)^%.*$", "", text)              # other MyST comments
    for pattern in _STRIP:
        text = pattern.sub(" ", text)
    found = [re.sub(r"\s+", "", m) for m in NUMBER.findall(text)]
    return [n for n in found if n not in allowed and n.rstrip("%×") not in allowed]


def _prose_cells(page):
    nb = jupytext.read(ROOT / f"{page}.md")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and LANG_TAGS & set(cell.metadata.get("tags", [])):
            yield i, cell.source


@pytest.mark.parametrize("page", pages())
def test_no_result_number_is_typed_into_the_prose(page):
    bad = [(i, n) for i, src in _prose_cells(page) for n in typed_numbers(src)]
    assert not bad, (
        f"{page}: numbers typed into the prose (cell index, number): {bad[:20]}"
        f"{' …' if len(bad) > 20 else ''}. Glue them from code ({{glue:text}}`name`), or "
        "declare a definition or cited fact on a '% numbers:' line in the same cell")


def test_the_rule_flags_and_spares_what_it_should():
    assert typed_numbers("Accuracy is 0.75, 15.1% and 9.05× faster.") == ["0.75", "15.1%", "9.05×"]
    assert typed_numbers("准确率为 0.75，快 9.05 倍。") == ["0.75", "9.05"]
    assert typed_numbers("It ends at 0.75. Or 75%. Or 3×.") == ["0.75", "75%", "3×"]
    assert typed_numbers("It is {glue:text}`acc` with $d_k = 64$ and `0.5`, on 8 heads, torch 2.13.0.") == []
    assert typed_numbers("% numbers: 0.1 (definition: label smoothing)\nSmoothing 0.1 and 0.2.") == ["0.2"]
    with pytest.raises(AssertionError, match="definition"):
        typed_numbers("% numbers: 0.1 because\nSmoothing 0.1.")
