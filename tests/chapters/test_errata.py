"""The worked examples and their errata: recomputed independently, and kept honest."""

import dataclasses
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from course_lib import chapters
from course_lib.chapters import EXAMPLES, Claim
from course_lib.chapters._errata import KINDS, rounds_to
from course_lib.chapters.ch02 import worked


def test_single_query_by_hand():
    # The dot products and softmax written out with math, one number at a time.
    q = [0.2, 0.4, 0.6, 0.8]
    H = [[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8], [0.9, 1.0, 1.1, 1.2]]
    e = [sum(a * b for a, b in zip(q, h)) for h in H]
    z = sum(math.exp(v) for v in e)
    alpha = [math.exp(v) / z for v in e]
    c = [sum(alpha[i] * H[i][j] for i in range(3)) for j in range(4)]
    steps = worked.single_query_steps()
    np.testing.assert_allclose(steps["scores"], e, rtol=1e-12)
    np.testing.assert_allclose(steps["sum"], z, rtol=1e-12)
    np.testing.assert_allclose(steps["weights"], alpha, rtol=1e-12)
    np.testing.assert_allclose(steps["context"], c, rtol=1e-12)


def test_two_head_by_hand():
    X = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
    W1 = [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6], [0.7, 0.8]]
    Q = [[sum(X[i][k] * W1[k][j] for k in range(4)) for j in range(2)] for i in range(3)]
    steps = worked.two_head_steps()
    np.testing.assert_allclose(steps["Q1"], Q, rtol=1e-12)
    S = [[sum(Q[i][k] * Q[j][k] for k in range(2)) / math.sqrt(2) for j in range(3)]
         for i in range(3)]
    for i in range(3):
        m = max(S[i])
        z = sum(math.exp(s - m) for s in S[i])
        np.testing.assert_allclose(steps["A1"][i], [math.exp(s - m) / z for s in S[i]],
                                   rtol=1e-12, atol=1e-300)
    # Head 2 uses W1 with its columns swapped: identical weights, swapped outputs.
    np.testing.assert_allclose(steps["A2"], steps["A1"])
    np.testing.assert_allclose(steps["head2"], steps["head1"][:, ::-1])


def _all_steps():
    return [(name, step) for name, (_, data) in EXAMPLES.items() for step in data["claims"]]


@pytest.mark.parametrize("example,step", _all_steps())
def test_every_mismatch_has_an_erratum(example, step):
    covered = {(e.example, e.step) for e in chapters.ERRATA}
    if chapters.mismatches(example, step):
        assert (example, step) in covered, f"{example}/{step} differs from the source but has no erratum"


@pytest.mark.parametrize("e", chapters.ERRATA, ids=lambda e: e.key)
def test_every_erratum_points_at_a_real_mismatch(e):
    assert e.is_live(), f"{e.key}: the source now matches; drop the erratum"
    text = repr(chapters.show(e.key))
    assert e.title("en") in text and e.title("zh") in text
    assert e.example is None or e.kind == "note" or "✗" in text
    assert f"{KINDS[e.kind][0]} ({e.key}, {KINDS[e.kind][1]}" in text     # verdict and kind shown
    for template in (e.why_en, e.why_zh, e.title_en, e.title_zh):
        assert "{" not in template.format(**e.details())  # every field was filled


def test_correct_steps_are_marked_as_matching():
    table = chapters.compare("single_query", "weights")
    assert [r[3] for r in table.rows] == ["✓", "✓", "✓"]


def test_keys_are_unique_and_markdown_links_back():
    keys = [e.key for e in chapters.ERRATA]
    assert len(keys) == len(set(keys))
    md = chapters.show_all()._repr_markdown_()
    assert md.count("{admonition}") == len(keys)
    assert "{doc}`/book/ch02_worked_qkv`" in md


def test_claim_decimals_follow_the_printed_text():
    assert Claim("attention", "x", ("0.60", "14.902", "5")).decimals() == [2, 3, 0]


@pytest.mark.parametrize("call,match", [
    (lambda: chapters.compare("nope", "scores"), r"example must be one of"),
    (lambda: chapters.compare("single_query", "nope"), r"step must be one of"),
    (lambda: chapters.show("nope"), r"key must be one of"),
    (lambda: chapters.show_all("book/nope"), r"chapter must be one of"),
    (lambda: worked.single_query_steps(q=[1.0, 2.0]), r"q must have shape \(d,\) and H shape"),
    (lambda: worked.two_head_steps(W1=np.ones((3, 2))), r"W1 must have shape \(d_model, d_k\) with d_model=4"),
])
def test_bad_input_is_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- Verdicts and kinds -------------------------------------------------------------------

def test_kinds_give_verdicts_and_defaults():
    a = chapters.Erratum("k", "book/x", "single_query", "context", "t", "t", "w", "w")
    c = chapters.Erratum("k", "book/x", None, None, "t", "t", "w", "w", evidence=lambda: "e")
    n = dataclasses.replace(c, kind="note")
    assert (a.kind, a.verdict) == ("arithmetic", "✗")
    assert (c.kind, c.verdict) == ("code", "✗")
    assert (n.kind, n.verdict) == ("note", "✓")
    md = chapters.Box([n], link_chapter=True)._repr_markdown_()
    assert ":class: tip\n" in md and "Note · 说明 ✓" in md


def test_boxes_fold_in_chapters_and_stay_open_in_the_appendix():
    c = chapters.Erratum("k", "book/x", None, None, "t", "t", "w", "w", evidence=lambda: "e")
    in_chapter = chapters.Box([c], link_chapter=False)._repr_markdown_().splitlines()
    in_appendix = chapters.Box([c], link_chapter=True)._repr_markdown_().splitlines()
    assert in_chapter[1] == ":class: warning dropdown"
    assert in_appendix[1] == ":class: warning"
    with pytest.raises(ValueError, match="kind must be one of"):
        dataclasses.replace(c, kind="typo")
    with pytest.raises(ValueError, match="lang must be"):
        c.title("fr")


# The entries the review of the errata found to be correct sources (issue 15): notes, not errors.
NOTES = {"ch04-pos5-error", "ch05-encoder-no-mask", "ch07-bert-768", "ch06-params"}


def test_correct_sources_are_notes():
    kinds = {e.key: e.kind for e in chapters.ERRATA}
    assert {k for k in NOTES if kinds.get(k) != "note"} == set()
    assert kinds["ch02-context"] == "arithmetic"
    assert kinds["ch08-float32-quant"] == "code"


def test_summary_lists_every_entry_with_its_kind():
    table = chapters.show_all().summary()
    assert [r[0] for r in table.rows] == [e.key for e in chapters.ERRATA]
    assert {r[0]: r[1] for r in table.rows}["ch04-pos5-error"] == "✓"
    assert {r[0]: r[1] for r in table.rows}["ch02-q1"] == "✗"


# --- Published, rounded figures --------------------------------------------------------------

@pytest.mark.parametrize("exact,printed,how", [
    (86.567656, "86", "toward zero"),      # truncated
    (86.567656, "87", "nearest"),
    (304.326632, "307", None),             # no rounding of 304.3 gives 307
    (304.326632, "305", "away from zero"),
    (25.557032, "25.6", "nearest"),
    (25.557032, "25.5", "toward zero"),
    (25.557032, "25", "toward zero"),
    (2.5, "2", "nearest"),                 # ties to even
    (2.5, "3", "away from zero"),
    (-1.27, "-1.2", "toward zero"),
    (-1.27, "-1.3", "nearest"),
    (0.0999, "0.100", "nearest"),
    (7, "7", "nearest"),
])
def test_rounds_to(exact, printed, how):
    assert rounds_to(exact, printed) == how


@pytest.mark.parametrize("call,exc,match", [
    (lambda: rounds_to("86.5", "86"), TypeError, "exact must be a finite real"),
    (lambda: rounds_to(float("nan"), "86"), TypeError, "exact must be a finite real"),
    (lambda: rounds_to(True, "1"), TypeError, "exact must be a finite real"),
    (lambda: rounds_to(86.5, "86M"), ValueError, "printed must be a number as printed"),
    (lambda: rounds_to(86.5, 86), ValueError, "printed must be a number as printed"),
])
def test_rounds_to_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_published_parameter_counts_are_judged_by_rounding():
    table = chapters.chapter_module("ch06", "errata")._params_evidence()
    # ResNet-50 25,557,032 and ViT-B/16 86,567,656 parameters (torchvision, timm), truncated
    # to 25M and 86M; ViT-L/16 has 304,326,632, which no rounding turns into 307M.
    assert [r[3].split(" · ")[0] for r in table.rows] == ["✓ toward zero", "✓ toward zero",
                                                         "✗ no rounding gives it"]


def test_compare_judges_published_figures_by_rounds_to():
    table = chapters.compare("vit_table", "params_m", published=True)
    # The same rule as the ch06-params note: 25M and 86M are truncations, 307M no rounding.
    assert [r[3].split(" · ")[0] for r in table.rows] == ["✓ toward zero", "✓ toward zero",
                                                         "✗ no rounding gives it"]
    assert [r[2] for r in table.rows] == ["25.557", "86.568", "304.327"]
    assert [r[3] for r in chapters.compare("vit_table", "params_m").rows] == ["✗", "✗", "✗"]
    with pytest.raises(TypeError, match="published must be True or False"):
        chapters.compare("vit_table", "params_m", published="yes")


# --- Every number in an erratum's text comes from code ---------------------------------------

#: Stripped before looking for numbers: ``{fields}``, section marks (§3.4), identifiers
#: and names with digits (float32, W1, ViT-B/16, ResNet-50, all-MiniLM-L6-v2).
_NOT_NUMBERS = re.compile(r"\{\w+\}|§[\d.]+|[A-Za-z_][\w.]*\d\w*|[A-Za-z][\w]*(?:[-/]\w+)+"
                          r"|[Cc]hapters?\s+\d+|第\s*\d+\s*章")     # a chapter's number (10, 11, 12) is no result
#: What looks like a result: a decimal, two or more digits, or a number with %, M or ×.
#: Single digits stay allowed: ordinals and indices (row 2, head 1, chapter 3) and formula
#: constants (1 − x²/2, weights sum to 1).
_RESULT = re.compile(r"\d+\.\d+|\d{2,}|\d+\s*[%M×]")
#: Definitional numbers typed on purpose: (erratum key, text) -> why.
DEFINITIONAL = {
    ("ch08-untrained", "np.random.randn(...) * 0.1"): "quotes the source's code verbatim",
}


def typed_results(e) -> list[str]:
    """The result-like numbers typed into an erratum's title or explanation templates."""
    found = []
    for template in (e.title_en, e.title_zh, e.why_en, e.why_zh):
        for quote in (q for (key, q) in DEFINITIONAL if key == e.key):
            template = template.replace(quote, " ")
        found += _RESULT.findall(_NOT_NUMBERS.sub(" ", template))
    return found


@pytest.mark.parametrize("e", chapters.ERRATA, ids=lambda e: e.key)
def test_no_typed_numbers_in_errata_texts(e):
    assert typed_results(e) == [], f"{e.key}: numbers typed into the text; compute them in details()"


@pytest.mark.parametrize("planted", ["304M, not 307M", "e.g. 0.037 + 0.190", "the 67 held-out",
                                     "a 175 × 128 matrix", "不是 75%"])
def test_typed_number_check_catches_a_planted_number(planted):
    e = next(e for e in chapters.ERRATA if e.key == "ch06-params")
    assert typed_results(e) == []
    assert typed_results(dataclasses.replace(e, why_zh=e.why_zh + planted)) != []
    assert typed_results(dataclasses.replace(e, title_en=planted)) != []


def test_definitional_quotes_are_still_in_their_texts():
    errata = {e.key: e for e in chapters.ERRATA}
    for key, quote in DEFINITIONAL:
        assert quote in errata[key].why_en + errata[key].why_zh, (key, quote)


# --- ch04-pos5-error: PyTorch's float32 recipe prints the source's error column ---------------

_RECIPE = """
import math, torch
d_model, max_len = 512, 100
pe = torch.zeros(max_len, d_model)
position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
pe[:, 0::2] = torch.sin(position * div_term)
pe[:, 1::2] = torch.cos(position * div_term)
for i in range(8):
    exact = (math.sin if i % 2 == 0 else math.cos)(5 / 10000 ** ((i - i % 2) / d_model))
    print(f"{abs(exact - float(pe[5, i])):.8f}")
"""


@pytest.mark.parametrize("capability", ["default", "avx2"])
def test_torch_float32_prints_the_source_error_column(capability):
    env = dict(os.environ, ATEN_CPU_CAPABILITY=capability, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", _RECIPE], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    printed = list(EXAMPLES["pe_test"][1]["claims"]["pos5_error"].printed)
    assert out == printed
    assert chapters.mismatches("pe_test", "pos5_error") == []
    assert chapters.mismatches("pe_test", "pos5_model") == []


def test_pos5_note_shows_every_digit_reproduced():
    table = chapters.chapter_module("ch04", "errata")._pos5_error_evidence()
    assert [r[2].endswith("✓") for r in table.rows] == [True] * 8
    # The correctly rounded float32 routine differs in exactly one dimension (the old "✗").
    assert [r[1] != r[3] for r in table.rows].count(True) == 1


# --- ch08-float32-quant: the source's float64 arrays are halved by its float32 cast --------

def test_source_quantisation_halves_float64():
    from course_lib.chapters.ch10.source import SourceTransformerTextClassifier, source_quantize_weights
    np.random.seed(0)
    W = SourceTransformerTextClassifier(10, d_model=8, num_heads=2, num_layers=1).embedding
    Q = source_quantize_weights(W, 8)
    assert (W.dtype, Q.dtype, 2 * Q.nbytes) == (np.float64, np.float32, W.nbytes)
    errata = chapters.chapter_module("ch10", "errata")
    table = errata.run_source_quantization()
    assert table.rows[0][1:] == ["float64", "float32", "uint8"]
    d = errata._quant_details()
    assert (d["kept"], d["int8"]) == ("1/2", "1/8")
