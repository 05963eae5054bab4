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
