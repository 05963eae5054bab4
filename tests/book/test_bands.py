"""Every number nbval does not compare is checked against its band in the same cell.

The sanitizer ``tools/nbval_sanitize.cfg`` masks numbers printed as
``label: ⟨value⟩ ✓ band [lo, hi]`` by ``course_lib.repro.band``, which
asserts them. These tests make sure it can mask nothing else.
"""

import configparser
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SANITIZER = ROOT / "tools" / "nbval_sanitize.cfg"
BAND_LINE = re.compile(r"⟨[^⟨⟩\n]*⟩ ✓ band \[[^\]\n]+\]")
CALLS = ("band(", "band_for(", "reference=")


def _notebooks():
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    pages = [toc["root"]] + [c["file"] for p in toc.get("parts", []) for c in p.get("chapters", [])]
    return [ROOT / f"{p}.ipynb" for p in pages if (ROOT / f"{p}.ipynb").exists()]


def _texts(cell):
    for out in cell.get("outputs", []):
        if "text" in out:
            yield "".join(out["text"])
        for mime, value in out.get("data", {}).items():
            if mime.startswith("text/"):
                yield "".join(value) if isinstance(value, list) else str(value)


def unbanded(cells) -> list[str]:
    """Problems: a ⟨…⟩ that is not a full band line, or a band line in a cell that calls no band function."""
    problems = []
    for i, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell.get("source", ""))
        for text in _texts(cell):
            if "⟨" not in text and "⟩" not in text:
                continue
            stripped = BAND_LINE.sub("", text)
            if "⟨" in stripped or "⟩" in stripped:
                problems.append(f"cell {i}: a ⟨…⟩ outside a band line")
            if BAND_LINE.search(text) and not any(c in source for c in CALLS):
                problems.append(f"cell {i}: prints a band line but calls none of {CALLS}")
    return problems


@pytest.mark.parametrize("nb", _notebooks(), ids=lambda p: p.stem)
def test_every_masked_number_is_banded_in_its_cell(nb):
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    assert unbanded(cells) == []


def _cell(source, text):
    return {"cell_type": "code", "source": source, "outputs": [{"output_type": "stream", "text": text}]}


def test_the_pairing_check_catches_an_unbanded_number():
    good = _cell("repro.band('loss', x, 0, 1)", "loss: ⟨0.412⟩ ✓ band [0.000, 1.000]\n")
    assert unbanded([good]) == []
    assert unbanded([_cell("print(x)", "loss: ⟨0.412⟩ ✓ band [0.000, 1.000]\n")])   # no band call
    assert unbanded([_cell("repro.band('loss', x, 0, 1)", "loss: ⟨0.412⟩\n")])       # not a band line
    assert unbanded([_cell("band(1)", "a ⟨0.4⟩ ✓ band [0, 1] and ⟨0.5⟩ elsewhere\n")])


def _rule():
    cfg = configparser.ConfigParser()
    cfg.read(SANITIZER, encoding="utf-8")
    assert cfg.sections() == ["band"], "the sanitizer must hold the band rule and nothing else"
    return re.compile(cfg["band"]["regex"]), cfg["band"]["replace"]


def test_band_lines_differ_only_in_the_masked_number(capsys):
    from course_lib import repro

    rule, replace = _rule()
    masked = []
    for value in (0.25, 0.75):
        repro.band("loss · 损失", value, 0.0, 1.0)
        masked.append(rule.sub(replace, capsys.readouterr().out))
    assert masked[0] == masked[1] == "loss · 损失: ⟨…⟩ ✓ band [0.000, 1.000]\n"


@pytest.mark.parametrize("text", ["loss 0.25", "accuracy: 98%", "⟨0.25⟩ band [0, 1]", "x = ⟨0.25⟩ ✓ bandwidth",
                                  "⟨0.25⟩ ✓ band", "⟨a⟩⟨0.2⟩ x ✓ band ["])
def test_the_sanitizer_leaves_every_other_text_alone(text):
    rule, replace = _rule()
    assert rule.sub(replace, text) == text


CUT_END = re.compile(r"\b(?:min|max)\(\s*(?:0|0\.0|1|1\.0|100|100\.0)\s*,")


def cut_bands(source: str) -> list[str]:
    """The lines of a cell that cut a band's end at a limit by hand (``min(1.0, ref + tol)``) in a cell
    that calls ``band``: the band log then holds the cut end, and ``tools/band_spread.py`` would measure
    the spread against a half-width the band does not have. ``bounds=(0, 1)`` cuts it for the print only."""
    if "band(" not in source:
        return []
    return [line.strip() for line in source.splitlines() if CUT_END.search(line)]


@pytest.mark.parametrize("nb", _notebooks(), ids=lambda p: p.stem)
def test_no_band_is_cut_at_a_limit_by_hand(nb):
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    assert [line for c in cells if c.get("cell_type") == "code" for line in cut_bands("".join(c["source"]))] == []


def test_the_cut_check_sees_each_way_of_cutting():
    for line in ('repro.band("a", x, max(0.0, ref - tol), min(1.0, ref + tol))',
                 'repro.band("a", x, ref - tol, min(100, ref + tol), unit="%")',
                 'lo = 100 * max(0, m - tol)\nrepro.band("a", x, lo, hi)'):
        assert cut_bands(line), line
    assert cut_bands('repro.band("a", x, ref - tol, ref + tol, bounds=(0, 1))') == []
    assert cut_bands("best = max(1, n)") == []                            # no band in the cell
