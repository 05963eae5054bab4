"""No duration is typed into the prose: times are measured and glued, budgets stated once.

A time typed into a sentence ("trains in 15 minutes", "十五分钟") goes stale as soon as the
code or the machine changes. So the markdown of every page (``book/**/*.md``, English and
Chinese, tagged or not) may not type a duration. Allowed:

- a measured time glued from code (``{glue:text}`ch07_muon_minutes` minutes``): the number is
  the glue, not typed;
- a link to the one statement of the budgets (``{ref}`budgets```,
  ``book/appendix/reproducibility.md``, section ``(budgets)=``);
- inside that section, a budget's definition declared on a ``% numbers:`` line of the same
  cell (``% numbers: 60 (definition: a notebook's budget, seconds on 2 cores)``);
- anything in code cells, fenced blocks, math, inline code, roles and link targets.

A duration is a number (digits, or an English or Chinese number word) with a unit of time:
``60 s``, ``15 minutes``, ``216-second``, ``3.8 CPU-minutes``, ``two minutes``, ``an hour``,
``15 分钟``, ``十五分钟``, ``两分钟``, ``两分多钟``, ``60 秒``, ``一小时``, ``一个小时``.
Not one: a vague amount (``a few minutes``, ``几分钟``), ``很小时`` ("when very small").
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUDGETS_LABEL = "(budgets)="

_NUM = r"\d+(?:[.,]\d+)?"
_EN_WORDS = (r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
             r"forty|forty-five|fifty|sixty|ninety|a hundred|hundred|a couple of|half an|half a|an|a)")
_EN_UNIT = r"(?:CPU[- ])?(?:milliseconds?|seconds?|secs?|minutes?|mins?|min|hours?|hrs?|ms|s|h)"
_EN_WORD_UNIT = r"(?:CPU[- ])?(?:seconds|minutes?|hours?)"
_ZH_UNIT = r"(?:毫秒|秒钟|秒|分多钟|分钟|小时|钟头)"
_ZH_NUM = r"[零〇一二两三四五六七八九十百千半]+"
DURATION = re.compile(
    rf"(?P<num>{_NUM})(?:\s+|-)(?:{_EN_UNIT})(?![\w])"                                  # 60 s, 216-second
    rf"|(?<![\w-])(?:{_EN_WORDS})(?:\s+|-)(?:{_EN_WORD_UNIT})(?![\w])"                   # two minutes, an hour
    rf"|(?P<zhnum>{_NUM})\s*(?:多)?(?:个)?(?:多)?\s*(?:CPU\s*)?{_ZH_UNIT}"              # 15 分钟, 60 秒
    rf"|{_ZH_NUM}(?:多)?(?:个)?(?:多|半)?\s*{_ZH_UNIT}", re.I)                            # 十五分钟, 两分多钟

_STRIP = [
    re.compile(r"^(`{3,}|~{3,}).*?^\1\s*$", re.S | re.M),   # fenced blocks (mermaid, directives' code)
    re.compile(r"\$\$.*?\$\$", re.S),                       # display math
    re.compile(r"(?<!\\)\$[^$\n]+?(?<!\\)\$"),               # inline math
    re.compile(r"\{[\w:.-]+\}(`+).*?\1", re.S),             # roles: glue, ref, doc, …
    re.compile(r"(`+).+?\1", re.S),                         # inline code
    re.compile(r"\]\([^)]*\)"),                             # link targets
    re.compile(r"<!--.*?-->", re.S),                        # HTML comments
    re.compile(r"(?m)^\s*%.*$"),                            # MyST comments, % numbers: included
    re.compile(r"(?m)^\s*:[\w-]+:.*$"),                     # directive options
    re.compile(r"(?m)^\s*\(\S+\)=\s*$"),                    # labels
]
_DECLARED = re.compile(r"(?m)^%\s*numbers:\s*(.+)$")
_MARKER = re.compile(r"^\+\+\+")
_CODE_CELL = re.compile(r"^```\{code-cell\}")
_HEADING = re.compile(r"^(#{1,6})\s")


def _blank(match) -> str:
    """The match replaced by spaces, its line breaks kept (so offsets still give lines)."""
    return re.sub(r"[^\n]", " ", match.group(0))


def _declared(cell: str) -> set[str]:
    out = set()
    for line in _DECLARED.findall(cell):
        for item in line.split(";"):
            m = re.match(r"\s*(\S+)\s+\((definition|cited)\b", item)
            if m:
                out.add(m.group(1))
    return out


def durations(cell: str, allowed: set[str] = frozenset()) -> list[tuple[int, str]]:
    """The typed durations of one markdown cell: (line within the cell, from 0; the text).
    ``allowed``: numbers declared as definitions (the budgets section only)."""
    text = cell
    for pattern in _STRIP:
        text = pattern.sub(_blank, text)
    out = []
    for m in DURATION.finditer(text):
        number = m.group("num") or m.group("zhnum")
        if number is not None and number in allowed:
            continue
        out.append((text.count("\n", 0, m.start()), re.sub(r"\s+", " ", m.group(0))))
    return out


def markdown_cells(text: str):
    """Every markdown cell of a MyST page: (its first line's number, from 1; its text; whether it
    is in the budgets section). Code cells and the front matter are skipped."""
    lines = text.split("\n")
    i = 0
    if lines and lines[0].strip() == "---":                          # jupytext front matter
        i = next((j for j in range(1, len(lines)) if lines[j].strip() == "---"), len(lines) - 1) + 1
    cells, start, current = [], i + 1, []
    in_budgets, budgets_level = False, None

    def flush():
        if current:
            cells.append((start, "\n".join(current), in_budgets))

    while i < len(lines):
        line = lines[i]
        if _CODE_CELL.match(line):
            flush()
            current = []
            fence = re.match(r"^`+", line).group(0)
            i += 1
            while i < len(lines) and lines[i].rstrip() != fence:
                i += 1
            i += 1
            start = i + 1
            continue
        if _MARKER.match(line):
            flush()
            current, start = [], i + 2
            i += 1
            continue
        if line.strip() == BUDGETS_LABEL:
            flush()
            current, start = [], i + 1
            in_budgets, budgets_level = True, None
        else:
            h = _HEADING.match(line)
            if h and in_budgets:
                if budgets_level is None:
                    budgets_level = len(h.group(1))
                elif len(h.group(1)) <= budgets_level:
                    flush()
                    current, start = [], i + 1
                    in_budgets = False
        current.append(line)
        i += 1
    flush()
    return cells


def page_durations(text: str) -> list[tuple[int, str]]:
    """(line number in the file, duration) for every typed duration on a page."""
    out = []
    for start, cell, in_budgets in markdown_cells(text):
        allowed = _declared(cell) if in_budgets else set()
        out += [(start + n, d) for n, d in durations(cell, allowed)]
    return out


def _pages():
    return sorted(p for p in (ROOT / "book").rglob("*.md") if "_build" not in p.parts)


@pytest.mark.parametrize("path", _pages(), ids=lambda p: str(p.relative_to(ROOT / "book")))
def test_no_duration_is_typed_into_the_prose(path):
    found = page_durations(path.read_text(encoding="utf-8"))
    where = [f"{path.relative_to(ROOT)}:{line}: {d}" for line, d in found]
    assert not where, (
        f"{len(where)} typed duration(s); glue the measured time from code, or link to the budgets "
        "({ref}`budgets`):\n" + "\n".join(where[:40]) + ("\n…" if len(where) > 40 else ""))


_PLANTED_EN = ["It trains in 15 minutes.", "Each notebook runs under 60 s.", "a 216-second run",
               "3.8 CPU-minutes of work", "It takes two minutes.", "That took over an hour.",
               "a fifteen-minute recipe", "100 ms per request", "1.5 hours later"]
_PLANTED_ZH = ["训练要十五分钟。", "训练要 15 分钟。", "每个笔记本不超过 60 秒。", "只要两分钟。",
               "要跑一个小时。", "大约半小时。", "3.8 CPU 分钟", "要两分多钟。", "十多分钟", "一小时"]


@pytest.mark.parametrize("text", _PLANTED_EN + _PLANTED_ZH)
def test_a_typed_duration_is_flagged(text):
    assert len(durations(text)) == 1, durations(text)


@pytest.mark.parametrize("text", [
    "It trains in {glue:text}`ch07_muon_minutes` minutes.",
    "训练用了 {glue:text}`ch07_muon_minutes` 分钟。",
    "The budgets are in {ref}`budgets`; see {doc}`/book/appendix/reproducibility`.",
    "预算见 {ref}`budgets`。",
    "The step is $t = 60 s$ in math, `sleep(60 s)` in code, and a second model.",
    "8 heads, 2 cores, 350 steps, 15 %, a minimum, the seconds column, 每秒请求数，分数 15 分。",
    "the 1990s, 矩阵这么小时，L 较小时开销大。",
    "It runs for a few minutes, some hours; 要跑几分钟，每隔几毫秒一帧。",
    "A [link](https://example.org/60-minutes) keeps its text.",
])
def test_allowed_forms_pass(text):
    assert durations(text) == []


def test_only_the_budgets_section_may_declare_a_duration():
    page = ("---\njupytext: {}\n---\n\n# Page · 页\n\n+++ {\"tags\": [\"en\"]}\n\n"
            "% numbers: 60 (definition: a notebook's budget)\nA notebook runs under 60 s.\n\n+++\n\n"
            "(budgets)=\n## Time budgets · 时间预算\n\n+++ {\"tags\": [\"en\"]}\n\n"
            "% numbers: 60 (definition: a notebook's budget, seconds)\nA notebook runs under 60 s, "
            "a recipe 15 minutes.\n\n+++\n\n```{code-cell} ipython3\n# 90 minutes in a comment\n```\n\n"
            "## Next · 下一节\n\n+++ {\"tags\": [\"zh\"]}\n\n% numbers: 60 (definition: 预算)\n不超过 60 秒。\n")
    found = page_durations(page)
    lines = page.split("\n")
    assert [(lines[n - 1], d) for n, d in found] == [
        ("A notebook runs under 60 s.", "60 s"),                       # declared, but not in the section
        ("A notebook runs under 60 s, a recipe 15 minutes.", "15 minutes"),   # in it, not declared
        ("不超过 60 秒。", "60 秒"),                                     # after the section
    ]
