"""The teachers' page describes the grader as it is: every status it can write, and its time limits.

The statuses and the defaults are read from ``tools/grade.py``'s source (its ``ast``), not from a
copy, so a new status or a changed default fails here until the page says it.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GRADER = ROOT / "tools" / "grade.py"
PAGE = ROOT / "book" / "appendix" / "teachers.md"


def grader_statuses(source: str) -> set[str]:
    """Every string the grader's code can store as a row's or a result's ``status``:
    ``{"status": "…"}``, ``….update(status="…")`` and ``…["status"] = "…"``."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value == "status" and isinstance(v, ast.Constant):
                    out.add(v.value)
        elif isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg == "status" and isinstance(kw.value, ast.Constant):
                    out.add(kw.value.value)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if (isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant)
                        and target.slice.value == "status"):
                    out.add(node.value.value)
    return out


def grader_defaults(source: str) -> dict[str, float]:
    """The default of each ``--…-timeout`` option of the grader's argument parser."""
    out = {}
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument" and node.args
                and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).endswith("-timeout")):
            default = next(kw.value.value for kw in node.keywords if kw.arg == "default")
            out[node.args[0].value] = default
    return out


def statuses_missing(page: str, statuses: set[str]) -> list[str]:
    """The statuses the page does not name, as inline code (`graded`), in its list of statuses
    (the sentence of the results section) and in the English and the Chinese prose alike."""
    en = re.search(r"a status \(([^)]*)\)", page)
    zh = re.search(r"状态（([^）]*)）", page)
    missing = []
    for status in sorted(statuses):
        for name, found in (("en", en), ("zh", zh)):
            if found is None or f"`{status}`" not in found.group(1):
                missing.append(f"{status} ({name})")
    return missing


def quoted_defaults(page: str) -> dict[str, list[float]]:
    """Every ``\\`--x-timeout\\` (default \\`N\\` …`` / ``（默认 \\`N\\` …`` the page quotes."""
    out: dict[str, list[float]] = {}
    for option, value in re.findall(r"`(--[\w-]+-timeout)`\s*[(（](?:default|默认)\s*`(\d+(?:\.\d+)?)`", page):
        out.setdefault(option, []).append(float(value))
    return out


def test_the_grader_has_the_statuses_read_from_its_code():
    # guards the reader itself: the four statuses of today's grader, found in three forms
    assert grader_statuses(GRADER.read_text(encoding="utf-8")) == {"graded", "invalid", "timeout", "failed"}


def test_the_page_names_every_status_the_grader_can_write():
    statuses = grader_statuses(GRADER.read_text(encoding="utf-8"))
    assert not statuses_missing(PAGE.read_text(encoding="utf-8"), statuses)


def test_a_status_the_page_leaves_out_is_caught():
    page = PAGE.read_text(encoding="utf-8")
    statuses = grader_statuses(GRADER.read_text(encoding="utf-8"))
    planted = page.replace(", `timeout` or `failed`", " or `timeout`", 1)
    assert planted != page
    assert statuses_missing(planted, statuses) == ["failed (en)"]


def test_a_new_status_in_the_grader_is_caught():
    source = GRADER.read_text(encoding="utf-8") + '\n\ndef _late(row):\n    row["status"] = "late"\n'
    assert "late (en)" in statuses_missing(PAGE.read_text(encoding="utf-8"), grader_statuses(source))


def test_the_page_quotes_the_graders_time_limits():
    defaults = grader_defaults(GRADER.read_text(encoding="utf-8"))
    assert set(defaults) == {"--cell-timeout", "--notebook-timeout"}
    quoted = quoted_defaults(PAGE.read_text(encoding="utf-8"))
    assert set(quoted) == set(defaults)
    for option, values in quoted.items():
        assert len(values) == 2 and all(v == defaults[option] for v in values), (option, values, defaults)


@pytest.mark.parametrize("planted", ["(default `60`, in seconds)", "（默认 `60`，单位为秒）"])
def test_a_stale_time_limit_is_caught(planted):
    page = PAGE.read_text(encoding="utf-8")
    assert planted in page
    stale = page.replace(planted, planted.replace("`60`", "`90`"), 1)
    defaults = grader_defaults(GRADER.read_text(encoding="utf-8"))
    assert any(v != defaults[o] for o, vs in quoted_defaults(stale).items() for v in vs)
