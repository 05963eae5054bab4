"""Every on-page check is an assertion (CONTRIBUTING.md, *What the reader sees*).

A cell that prints ``equal: False`` next to a claim still passes nbval, since
the stored output says ``False`` too. So no stored output may print a bare
``True`` or ``False``: a check goes through ``course_lib.display.check`` (or
``check_close``), which prints ✓ and raises otherwise, and a fact that is
meant to be "no" is stated as a claim that holds ("shuffling changes the
output" ✓). The only exceptions quote a source document's own output, in its
errata and listings boxes; they are listed here with the reason.
"""

import re

import nbformat
import pytest

from toc import notebooks

BOOL = re.compile(r"(?<![\w'\"`])(True|False)(?![\w'\"`])")

# (page stem, a substring of the line, runs of spaces read as one): why a bare True/False may
# stand there. Erratum ch04-length is shown in chapter 4 and in the errata appendix.
QUOTED = {
    (page, sub): why
    for page in ("errata", "ch04_positional_encoding")
    for sub, why in {
        "did the length change? True": "quotes the source's log (erratum ch04-length)",
        "是否改变了序列长度: True": "quotes the source's log (erratum ch04-length)",
        "· True False ✗": "the source's printed True beside the computed False, ✗ marking the source's "
                          "error (erratum ch04-length's comparison row)",
    }.items()
}


def bare_booleans(nb, stem: str) -> list[tuple[int, str]]:
    """(cell index, line) of every stored output line that prints a bare True/False."""
    out = []
    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []):
            if o.output_type == "stream":
                text = o.text
            elif o.output_type in ("display_data", "execute_result"):
                if "scrapbook" in o.get("metadata", {}):
                    continue  # a glued value is checked where the prose uses it
                text = o.data.get("text/plain", "")
            else:
                continue
            for line in text.splitlines():
                spaced = " ".join(line.split())
                if BOOL.search(line) and not any(stem == s and sub in spaced for s, sub in QUOTED):
                    out.append((i, line.strip()))
    return out


@pytest.mark.parametrize("ipynb", notebooks(), ids=lambda p: p.stem)
def test_no_stored_output_prints_a_bare_boolean(ipynb):
    bad = bare_booleans(nbformat.read(ipynb, as_version=4), ipynb.stem)
    assert not bad, (f"{ipynb.stem}: outputs print True/False instead of a checked ✓ "
                     f"(course_lib.display.check): {bad[:10]}")


def test_the_rule_catches_a_failed_check_and_spares_words():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(outputs=[
        nbformat.v4.new_output("stream", text="complex form < 1e-12: False\n✓ equal\nTrue positive rate · 真阳性率 0.9\n")])]
    assert bare_booleans(nb, "x") == [(0, "complex form < 1e-12: False"),
                                      (0, "True positive rate · 真阳性率 0.9")]
    nb.cells[0].outputs[0].text = "✓ rows sum to 1\nis_causal='False' in code\n"
    assert bare_booleans(nb, "x") == []
