"""course_lib.display's "what the reader sees" kit: md_escape, md_prose, check, check_close, glue,
and the guard that fails a cell which builds a display object and drops it (NotShownError).

Every expected value here is written out by hand from the documented behaviour, not computed
with the code under test. Markdown is also rendered by MyST's own parser (the one the book
uses, with the book's extensions) to see what a reader would get: an escaped cell must come
back as exactly its text. The guard is exercised in a real IPython shell.
"""

from __future__ import annotations

import os
import subprocess
import sys
from html.parser import HTMLParser

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib import display as D
from course_lib.display import (NotShownError, Table, check, check_close, glue, install_guard, md_escape,
                                md_prose)


# ----------------------------------------------------------------------- what MyST shows

def _myst():
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser
    # the extensions of _config.yml's parse.myst_enable_extensions
    config = MdParserConfig(enable_extensions={"colon_fence", "dollarmath", "amsmath", "substitution"})
    return create_md_parser(config, RendererHTML)


MYST = _myst()


class _Text(HTMLParser):
    """The text a browser shows for some HTML: tags (known or not) vanish, math keeps its TeX only."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts = []

    def handle_data(self, data):
        self.parts.append(data)


def shown(markdown: str) -> str:
    parser = _Text()
    parser.feed(MYST.render(markdown))
    return " ".join("".join(parser.parts).split())


def in_a_table_cell(cell_markdown: str) -> str:
    """What a reader sees of a cell written into a Markdown table (under a header "h")."""
    seen = shown(f"| h |\n|:--|\n| {cell_markdown} |\n")
    assert seen.startswith("h"), seen
    return seen[1:].strip()


# ----------------------------------------------------------------------- md_escape

@pytest.mark.parametrize("text,escaped", [
    ("<mask>", r"\<mask\>"),
    ("<eos> </s>", r"\<eos\> \</s\>"),
    ("a*b*c", r"a\*b\*c"),
    ("__init__", r"\_\_init\_\_"),
    ("$5 and $6", r"\$5 and \$6"),
    ("a|b", r"a\|b"),
    ("`x`", r"\`x\`"),
    ("[1](2)", r"\[1\](2)"),
    ("{glue}", r"\{glue\}"),
    ("R&D", r"R\&D"),
    ("~~x~~", r"\~\~x\~\~"),
    ("C:\\new", r"C:\\new"),
])
def test_md_escape_backslashes_every_syntax_character(text, escaped):
    assert md_escape(text) == escaped


@pytest.mark.parametrize("text", ["0.500", "ch05-segment-smooth · 分词", "h₁ → 0.31 (Layer 1 · 层 1)",
                                  "q·k/√d = 2.000", "50%, 3/4; done.", ""])
def test_md_escape_leaves_ordinary_text_alone(text):
    assert md_escape(text) == text


@pytest.mark.parametrize("text", ["the <mask> sat", "<PAD>, <SOS>, <EOS>}", "a*b*c and _x_",
                                  "$5 and $6", "a|b", "`code`", "R&amp;D", "\\times", "[link](x)",
                                  "'<mask>' must start with ‘’", "{0: <PAD>, 1: A}"])
def test_an_escaped_cell_shows_exactly_its_text(text):
    assert in_a_table_cell(md_escape(text)) == " ".join(text.split())


@pytest.mark.parametrize("raw,seen", [
    ("the <mask> sat", "the sat"),       # a tag to the browser: the token vanishes
    ("a*b*c", "abc"),                    # emphasis
    ("$5 and $6", "5 and6"),             # math
])
def test_unescaped_the_same_cell_loses_tokens(raw, seen):
    """Why md_escape exists (and that ``shown`` can see a loss at all)."""
    assert in_a_table_cell(raw) == seen


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab <>/*_$|`[](){}&~\\#!-+.:'\"·文")), max_size=24))
def test_any_escaped_text_round_trips_through_myst(text):
    assert in_a_table_cell(md_escape(text)) == " ".join(text.split())


def test_a_table_escapes_its_cells_caption_and_headers():
    md = Table(["<h>"], [["<mask>"]], caption="a*b*")._repr_markdown_()
    assert md == "**a\\*b\\***\n\n| \\<h\\> |\n|:--|\n| \\<mask\\> |\n"
    assert shown(md) == "a*b* <h> <mask>"
    assert repr(Table(["<h>"], [["<mask>"]], caption="a*b*")) == "a*b*\n<h>\n------\n<mask>"


# ----------------------------------------------------------------------- md_prose

@pytest.mark.parametrize("text,out", [
    ("a < b", r"a \< b"),
    ("the <mask> token & more", r"the \<mask\> token \& more"),
    ("use `x<y` here, <t>", r"use `x<y` here, \<t\>"),
    ("``a`b<c`` then <d>", r"``a`b<c`` then \<d\>"),
    ("keeps *emphasis*, **strong** and {ref}`x`", "keeps *emphasis*, **strong** and {ref}`x`"),
    ("`a <b>", r"`a \<b\>"),                    # an unclosed backtick is no code span
])
def test_md_prose_escapes_tags_outside_code_only(text, out):
    assert md_prose(text) == out


def test_md_prose_shows_tokens_and_keeps_markup():
    assert shown(md_prose("the *rounded* <mask> in `a<b>`")) == "the rounded <mask> in a<b>"


# ----------------------------------------------------------------------- check

def test_check_prints_a_tick_and_the_label(capsys):
    assert check("rows sum to 1 · 每行之和为 1", True) is None
    assert capsys.readouterr().out == "✓ rows sum to 1 · 每行之和为 1\n"


@pytest.mark.parametrize("ok", [np.bool_(True), np.array(True), torch.tensor(True), np.array([1, 2]).all()])
def test_check_takes_numpy_and_torch_truths(ok, capsys):
    check("x", ok)
    assert capsys.readouterr().out == "✓ x\n"


@pytest.mark.parametrize("ok", [False, np.bool_(False), torch.tensor(False)])
def test_a_failed_check_raises_and_prints_nothing(ok, capsys):
    with pytest.raises(AssertionError, match=r"^check failed · 检查未通过: the mask hides <pad>$"):
        check("the mask hides <pad>", ok)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("ok", [1, 0, "yes", None, np.array([True, True]), torch.tensor([True]), 1.0])
def test_check_wants_one_truth_value(ok):
    with pytest.raises(TypeError, match=r"^ok must be a bool"):
        check("x", ok)


@pytest.mark.parametrize("label", ["", "   ", None, 3])
def test_check_wants_a_label(label):
    with pytest.raises(TypeError, match=r"^label must be a non-empty string"):
        check(label, True)


# ----------------------------------------------------------------------- check_close

def test_check_close_prints_the_bound(capsys):
    check_close("same as course_lib · 与 course_lib 相同", [1.0, 2.0], [1.0, 2.0], atol=1e-12)
    assert capsys.readouterr().out == "✓ same as course_lib · 与 course_lib 相同 (max |Δ| < 1e-12)\n"


TINY = 2.0 ** -40      # exact in binary: 1.5 ± TINY is computed without rounding


@pytest.mark.parametrize("expected,passes", [
    (1.0 + 0.5 - TINY, True),          # just below atol
    (1.0 + 0.5, False),                # exactly atol: the bound is strict
    (1.0 + 0.5 + TINY, False),         # just above
    (1.0 - 0.5 + TINY, True),          # below, from the other side
    (1.0 - 0.5 - TINY, False),
])
def test_check_close_tolerance_is_strict_from_both_sides(expected, passes, capsys):
    if passes:
        check_close("x", [0.0, 1.0], [0.0, expected], atol=0.5)
        assert capsys.readouterr().out == "✓ x (max |Δ| < 0.5)\n"
    else:
        with pytest.raises(AssertionError, match=r"^check failed · 检查未通过: x: max \|Δ\| = 0\.5 ≥ 0\.5$"):
            check_close("x", [0.0, 1.0], [0.0, expected], atol=0.5)
        assert capsys.readouterr().out == ""


def test_check_close_near_misses_at_a_small_atol():
    check_close("x", [2.0], [2.0 + 0.9e-6], atol=1e-6)
    with pytest.raises(AssertionError, match=r"max \|Δ\| = 1\.1e-06 ≥ 1e-06"):
        check_close("x", [2.0], [2.0 + 1.1e-6], atol=1e-6)


def test_check_close_takes_torch_with_grad_and_nested_lists(capsys):
    w = torch.tensor([[0.25, 0.75]], dtype=torch.float64, requires_grad=True)
    check_close("w", w * 1, [[0.25, 0.75]], atol=1e-15)
    assert capsys.readouterr().out == "✓ w (max |Δ| < 1e-15)\n"


def test_check_close_fails_on_nan_and_on_shapes():
    with pytest.raises(AssertionError, match=r"max \|Δ\| = nan ≥ 1"):
        check_close("x", [np.nan], [0.0], atol=1)
    with pytest.raises(AssertionError, match=r"x: shape \(2,\) != \(1, 2\)"):
        check_close("x", [1.0, 2.0], [[1.0, 2.0]], atol=1)
    with pytest.raises(AssertionError, match=r"shape \(3,\) != \(\)"):
        check_close("x", [1.0, 1.0, 1.0], 1.0, atol=1)      # no broadcasting


@pytest.mark.parametrize("atol", [0, -1e-3, True, "1e-3", float("nan"), None, [1e-3]])
def test_check_close_wants_a_positive_atol(atol):
    with pytest.raises(ValueError, match=r"^atol must be a positive number"):
        check_close("x", [1.0], [1.0], atol=atol)


def test_check_close_atol_is_named_and_label_required():
    with pytest.raises(TypeError):
        check_close("x", [1.0], [1.0], 1e-3)                 # atol only by name
    with pytest.raises(TypeError, match=r"^label must be a non-empty string"):
        check_close("", [1.0], [1.0], atol=1e-3)


# ----------------------------------------------------------------------- glue

@pytest.fixture
def glued(monkeypatch):
    """myst_nb.glue replaced by a recorder: [(name, value, display)]."""
    calls = []
    import myst_nb
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: calls.append((name, value, display)))
    return calls


@pytest.mark.parametrize("value,fmt,text", [
    (0.12345, ".3f", "0.123"),
    (0.256, ".1%", "25.6%"),
    (42, None, "42"),
    (np.int64(7), None, "7"),
    (np.float64(0.5), ".2f", "0.50"),
    (torch.tensor(0.25, dtype=torch.float64), ".3f", "0.250"),
    (1234567, ",", "1,234,567"),
    ("ViT-B/16", None, "ViT-B/16"),
])
def test_glue_formats_and_hands_the_text_to_myst_nb(glued, value, fmt, text):
    assert glue("ch05_word_f1", value, fmt) == text
    assert glued == [("ch05_word_f1", text, False)]


def test_glue_puts_a_hidden_scrapbook_output_in_the_cell(shell):
    """Through the real myst_nb.glue in an IPython shell: what the stored notebook holds."""
    from IPython.utils.capture import capture_output
    with capture_output() as cap:
        shell.run_cell("from course_lib.display import glue\nglue('ch05_x', 0.5, '.2f')")
    (out,) = cap.outputs
    assert out.data == {"application/papermill.record/text/plain": "'0.50'"}
    assert out.metadata == {"scrapbook": {"name": "ch05_x", "mime_prefix": "application/papermill.record/"}}


@pytest.mark.parametrize("name", ["", "1st", "a b", "ch05.f1", "_x", None, 5])
def test_glue_wants_a_name(glued, name):
    with pytest.raises(ValueError, match=r"^name must be letters"):
        glue(name, 1)
    assert glued == []


@pytest.mark.parametrize("value", [True, None, [1], np.array([1.0, 2.0]), 1 + 2j])
def test_glue_wants_a_number_or_a_string(glued, value):
    with pytest.raises(TypeError, match=r"^value must be a number or a string"):
        glue("x", value, ".3f")
    assert glued == []


def test_glue_wants_fmt_for_floats_only(glued):
    with pytest.raises(ValueError, match=r"fmt is required for a float"):
        glue("x", 0.5)
    with pytest.raises(ValueError, match=r"^fmt is for numbers"):
        glue("x", "0.5", ".3f")
    assert glued == []


# ----------------------------------------------------------------------- bad input names its argument

@pytest.mark.parametrize("call,error,argument", [
    (lambda: md_escape(3), TypeError, "text"),
    (lambda: md_escape(None), TypeError, "text"),
    (lambda: md_prose(b"<x>"), TypeError, "text"),
    (lambda: check(None, True), TypeError, "label"),
    (lambda: check("x", "true"), TypeError, "ok"),
    (lambda: check_close(None, 1, 1, atol=1), TypeError, "label"),
    (lambda: check_close("x", 1, 1, atol=-1), ValueError, "atol"),
    (lambda: glue("a b", 1), ValueError, "name"),
    (lambda: glue("x", object()), TypeError, "value"),
    (lambda: glue("x", 0.5), ValueError, "fmt"),
    (lambda: Table(["a", "b"], [["1"]]), ValueError, "rows"),
])
def test_bad_input_names_the_argument(call, error, argument):
    with pytest.raises(error) as info:
        call()
    assert str(info.value).split()[0] == argument


# ----------------------------------------------------------------------- the not-shown guard

@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    """An IPython shell with the guard, no history file; afterwards the process is as it was
    (IPython replaces sys.modules["__main__"] and adds builtins)."""
    import builtins

    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config
    main, names, ipythondir = sys.modules["__main__"], set(vars(builtins)), os.environ.get("IPYTHONDIR")
    os.environ["IPYTHONDIR"] = str(tmp_path_factory.mktemp("ipython"))
    config = Config()
    config.HistoryManager.enabled = False
    sh = InteractiveShell.instance(config=config)
    assert install_guard(sh)
    yield sh
    InteractiveShell.clear_instance()
    sys.modules["__main__"] = main
    for name in set(vars(builtins)) - names:
        delattr(builtins, name)
    if ipythondir is None:
        os.environ.pop("IPYTHONDIR", None)
    else:
        os.environ["IPYTHONDIR"] = ipythondir


def run(shell, code: str):
    """Run ``code`` as one cell; return (the exception it raised or None, its result)."""
    from IPython.utils.capture import capture_output
    shell.run_cell("from course_lib.display import Table, matrix_table\n"
                   "from course_lib.chapters._check import Verdict\nfrom IPython.display import display",
                   store_history=False)
    with capture_output():
        result = shell.run_cell(code, store_history=False)
    return result.error_in_exec, result.result


T = "Table(['a'], [['1']])"


@pytest.mark.parametrize("code", [
    f"{T}\nx = 1",                                                  # dropped, then a statement
    f"{T}\n1",                                                      # dropped before the last expression
    f"t = {T}\nt\nx = 1",                                           # a name of one, dropped
    "matrix_table([[1.0]], 2)\n2",
    "Verdict('ex', True, 1, 1)\n3",                                 # a checker's result
    f"for i in range(2):\n    {T}",                                 # nested: a loop
    f"if True:\n    {T}",
    f"if False:\n    pass\nelse:\n    {T}",
    f"try:\n    {T}\nfinally:\n    pass",
    f"try:\n    pass\nfinally:\n    {T}",
    f"with open('/dev/null') as f:\n    {T}",
    f"while True:\n    {T}\n    break",
    f"def f():\n    {T}\n    return 1\nf()",                        # in a function the cell calls
    f"for i in range(1):\n    if i == 0:\n        {T}",              # two levels down
])
def test_a_dropped_display_object_fails_its_cell(shell, code):
    error, _ = run(shell, code)
    assert isinstance(error, NotShownError), f"{code!r} ran without NotShownError: {error!r}"
    assert "never shown" in str(error) and "display(" in str(error)
    assert isinstance(error, TypeError)


@pytest.mark.parametrize("code", [
    T,                                                  # the last expression: Jupyter shows it
    f"x = 1\n{T}",
    f"display({T})\n1",
    f"t = {T}\ndisplay(t)\nx = 2",
    f"print({T})\n1",                                   # printed: shown as text
    "1 + 1\n2",                                         # a plain value dropped is no display object
    "class M:\n    def _repr_markdown_(self):\n        return 'm'\nM()\n1",   # not the course's
    '"""a docstring"""\nx = 1',
    f"rows = [{T} for _ in range(2)]\nlen(rows)",        # kept in a list, not dropped
])
def test_a_shown_or_kept_object_passes(shell, code):
    error, _ = run(shell, code)
    assert error is None, f"{code!r} raised {error!r}"


def test_the_last_expression_is_still_displayed(shell):
    _, result = run(shell, f"x = 1\n{T}")
    assert isinstance(result, Table) and result.rows == [["1"]]


def test_install_guard_is_idempotent_and_off_outside_ipython(shell):
    assert install_guard(shell)
    assert sum(isinstance(t, D._Guard) for t in shell.ast_transformers) == 1
    out = subprocess.run([sys.executable, "-c", "import course_lib.display as d; print(d.install_guard())"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
