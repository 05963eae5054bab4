"""Every core concept is in the book four ways: formula, code, diagram, words.

``course_lib.chapters.concepts.CONCEPTS`` says where; this test opens each
chapter's ``.md``, finds the section (a MyST label or a heading's English
title, up to the next heading of any level) and checks that it holds what the
entry promises (see the registry's docstring). The planted tests at the end
show that a removed entry, a section without a diagram, a formula, code or
words taken out of the book, and a call to a look-alike that is not the
``course_lib`` function are all caught.
"""

import ast
import dataclasses
import functools
import importlib
import re
import sys
from dataclasses import dataclass, field

import jupytext
import pytest

from course_lib.chapters import concepts
from course_lib.chapters.concepts import CONCEPTS, KINDS, Loc
from toc import ROOT

#: The core concepts every Transformer course must show four ways.
REQUIRED = {
    "scaled_dot_product_attention", "self_attention_projections", "multi_head_attention",
    "positional_encoding", "feed_forward", "layer_norm", "residual_connection", "masking",
    "encoder_layer", "decoder_layer", "vit_patching", "bert_mlm", "gpt_causal_lm", "muon",
    "weight_averaging",
}
CJK = re.compile(r"[\u4e00-\u9fff]")
LATIN = re.compile(r"[A-Za-z]{2,}")
HEADING = re.compile(r"^(#{1,6}) (.+)$")
LABEL = re.compile(r"^\((?P<name>[\w-]+)\)=\s*$")


@dataclass
class Section:
    title: str                                   # the heading's English half
    labels: set = field(default_factory=set)
    cells: list = field(default_factory=list)    # (cell_type, tags, text)


def read_page(page: str) -> str:
    """The text of ``book/<page>.md`` (the planted tests replace this)."""
    return (ROOT / "book" / f"{page}.md").read_text(encoding="utf-8")


@functools.lru_cache(maxsize=None)
def _sections(text: str) -> tuple:
    out, labels = [Section("")], set()
    for cell in jupytext.reads(text, fmt="md:myst").cells:
        tags = frozenset(cell.metadata.get("tags", []))
        if cell.cell_type != "markdown":
            out[-1].cells.append((cell.cell_type, tags, cell.source))
            continue
        chunk, fence = [], False
        for line in cell.source.splitlines():
            if line.lstrip().startswith(("```", ":::")):
                fence = not fence if line.strip() in ("```", ":::") or not fence else fence
            if not fence and (m := LABEL.match(line.strip())):
                labels.add(m["name"])
            elif not fence and not tags and (h := HEADING.match(line)):
                if chunk:
                    out[-1].cells.append(("markdown", tags, "\n".join(chunk)))
                out.append(Section(h[2].split(" · ")[0].strip(), labels))
                chunk, labels = [], set()
            else:
                chunk.append(line)
        if chunk:
            out[-1].cells.append(("markdown", tags, "\n".join(chunk)))
    return tuple(out)


def find_section(loc: Loc) -> Section | None:
    label = LABEL.match(loc.anchor)
    for s in _sections(read_page(loc.page)):
        if (label and label["name"] in s.labels) or (not label and s.title == loc.anchor):
            return s
    return None


def _markdown(section):
    return "\n".join(text for kind, _, text in section.cells if kind == "markdown")


def _dotted(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and (base := _dotted(node.value)):
        return f"{base}.{node.attr}"
    return None


def _parse(code: str):
    try:
        return ast.parse("\n".join("" if l.lstrip().startswith(("%", "!")) else l for l in code.splitlines()))
    except SyntaxError:
        return ast.Module(body=[], type_ignores=[])


def _resolve(dotted: str):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


def _bindings(page: str) -> tuple[dict, set]:
    """Names the chapter imports from course_lib (name -> dotted path), and names it defines itself."""
    imported, defined = {}, set()
    for cell in jupytext.reads(read_page(page), fmt="md:myst").cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(_parse(cell.source)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("course_lib") and not node.level:
                for a in node.names:
                    imported[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("course_lib"):
                        imported[a.asname or a.name.split(".")[0]] = a.asname and a.name or "course_lib"
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, ast.Assign):
                defined |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return imported, defined


def _check_formula(c, s):
    formulas = re.findall(r"\$\$(.+?)\$\$", _markdown(s), re.S)
    if not formulas:
        return ["no $$ … $$ display formula"]
    if not any(re.search(c.formula_has, f, re.S) for f in formulas):
        return [f"no display formula matches {c.formula_has!r}"]
    return []


def _check_code(c, s, page):
    imported, defined = _bindings(page)
    called = {_dotted(n.func) for kind, _, text in s.cells if kind == "code"
              for n in ast.walk(_parse(text)) if isinstance(n, ast.Call)}
    out = []
    for function, call in zip(c.functions, c.calls):
        head, _, rest = call.partition(".")
        if call not in called:
            out.append(f"no code cell calls {call}(…)")
        elif head in defined:
            out.append(f"{call}: the chapter defines its own {head!r}, so the call is not course_lib's")
        elif head not in imported:
            out.append(f"{call}: {head!r} is not imported from course_lib in this chapter")
        else:
            try:
                target = _resolve(function)
                got = _resolve(imported[head] + (f".{rest}" if rest else ""))
            except (ImportError, AttributeError) as e:
                out.append(f"{call}: cannot import {e}")
                continue
            if got is not target:
                out.append(f"{call} is {getattr(got, '__module__', '?')}.{getattr(got, '__name__', got)}, "
                           f"not {function}")
    return out


def _check_diagram(c, s):
    fences = re.findall(r"```mermaid\n(.*?)```", _markdown(s), re.S)
    if not fences:
        return ["no ```mermaid diagram"]
    good = [f for f in fences if CJK.search(f) and LATIN.search(f)
            and (re.search(c.terms[0], f, re.I) or re.search(c.terms[1], f))]
    return [] if good else [f"no mermaid diagram with bilingual labels naming {c.terms}"]


def _check_words(c, s):
    cells = s.cells
    for (k1, t1, en), (k2, t2, zh) in zip(cells, cells[1:]):
        if "en" in t1 and "zh" in t2 and re.search(c.terms[0], en, re.I) and re.search(c.terms[1], zh):
            return []
    return [f"no en prose cell matching {c.terms[0]!r} followed by its zh twin matching {c.terms[1]!r}"]


def problems(key: str, kind: str) -> list[str]:
    """What is wrong with representation ``kind`` of concept ``key`` (empty when all is well)."""
    c = concepts.CONCEPTS[key]
    loc = getattr(c, kind)
    s = find_section(loc)
    if s is None:
        return [f"{loc.page}.md has no section {loc.anchor!r}"]
    found = {"formula": lambda: _check_formula(c, s), "code": lambda: _check_code(c, s, loc.page),
             "diagram": lambda: _check_diagram(c, s), "words": lambda: _check_words(c, s)}[kind]()
    return [f"{key} / {kind} in {loc.page}.md, {loc.anchor!r}: {p}" for p in found]


def missing_concepts() -> set:
    return REQUIRED - set(concepts.CONCEPTS)


def test_every_core_concept_is_registered():
    assert not missing_concepts(), f"concepts without an entry in course_lib/chapters/concepts.py: {missing_concepts()}"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("key", sorted(CONCEPTS))
def test_representation_is_where_the_registry_says(key, kind):
    assert problems(key, kind) == []


# -- planted: each kind of gap must be caught --------------------------------------------------


def _plant_text(monkeypatch, page, old, new):
    real = read_page(page)
    assert old in real, f"the planted test's anchor text is gone from {page}.md: {old[:40]!r}"
    planted = real.replace(old, new, 1)
    original = read_page
    monkeypatch.setattr(sys.modules[__name__], "read_page", lambda p: planted if p == page else original(p))


def test_removed_entry_is_caught(monkeypatch):
    monkeypatch.delitem(concepts.CONCEPTS, "feed_forward")
    assert missing_concepts() == {"feed_forward"}


def test_section_without_diagram_is_caught(monkeypatch):
    entry = CONCEPTS["layer_norm"]
    monkeypatch.setitem(concepts.CONCEPTS, "layer_norm",
                        dataclasses.replace(entry, diagram=Loc(entry.diagram.page, "Why LayerNorm, not BatchNorm")))
    assert any("no ```mermaid diagram" in p for p in problems("layer_norm", "diagram"))


def test_unknown_section_is_caught(monkeypatch):
    entry = CONCEPTS["masking"]
    monkeypatch.setitem(concepts.CONCEPTS, "masking",
                        dataclasses.replace(entry, words=Loc(entry.words.page, "(no-such-label)=")))
    assert any("has no section" in p for p in problems("masking", "words"))


def test_removed_diagram_formula_and_words_are_caught(monkeypatch):
    page = CONCEPTS["feed_forward"].diagram.page
    text = read_page(page)
    s = find_section(CONCEPTS["feed_forward"].diagram)
    fence = re.search(r"```mermaid\n.*?```", _markdown(s), re.S)[0]
    formula = re.search(r"\$\$.+?\$\$", _markdown(s), re.S)[0]
    zh = next(t for _, tags, t in s.cells if "zh" in tags)
    assert text.count(fence) == 1 and text.count(formula) == 1 and text.count(zh) == 1
    _plant_text(monkeypatch, page, fence, "")
    assert problems("feed_forward", "diagram")
    _plant_text(monkeypatch, page, formula, "")
    assert problems("feed_forward", "formula")
    _plant_text(monkeypatch, page, zh, "The Chinese twin replaced by English.")
    assert problems("feed_forward", "words")


def test_look_alike_code_is_caught(monkeypatch):
    entry = CONCEPTS["feed_forward"]
    # ch05 defines its own feed_forward: calling it is not calling course_lib's
    monkeypatch.setitem(concepts.CONCEPTS, "feed_forward", dataclasses.replace(entry, calls=("feed_forward",)))
    assert any("defines its own" in p for p in problems("feed_forward", "code"))
    # a real course_lib function, but not the one the registry names
    monkeypatch.setitem(concepts.CONCEPTS, "feed_forward",
                        dataclasses.replace(entry, functions=("course_lib.scratch.layers.layer_norm",)))
    assert any("not course_lib.scratch.layers.layer_norm" in p for p in problems("feed_forward", "code"))
    # the call removed from the section
    monkeypatch.setitem(concepts.CONCEPTS, "feed_forward", entry)
    _plant_text(monkeypatch, entry.code.page, "scratch.feed_forward(", "scratch_feed_forward(")
    assert any("no code cell calls" in p for p in problems("feed_forward", "code"))


def test_registry_rejects_bad_entries():
    with pytest.raises(ValueError, match="page"):
        Loc("book/ch05_transformer.md", "The decoder layer")
    with pytest.raises(ValueError, match="functions and calls"):
        dataclasses.replace(CONCEPTS["masking"], calls=("causal_mask",))
