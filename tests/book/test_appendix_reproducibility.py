"""The reproducibility appendix says what the project does, as the code does it.

``book/appendix/reproducibility.md`` states the budgets, what ``make test-portable`` runs and what
``tools/train.py --check`` retrains. Each statement is compared here with its source: the budgets
with ``tools/bench.py``'s constants, the kernel paths and thread counts with the Makefile, the
example band line with what ``course_lib.repro.band`` prints, the call to ``repro.setup()`` with
the chapters, and "never moves a model to MPS or a GPU" with the code. Each reader is run on a
planted page or planted code too, so a stale sentence is caught.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "book" / "appendix" / "reproducibility.md"
MAKEFILE = ROOT / "Makefile"
BENCH = ROOT / "tools" / "bench.py"


def page() -> str:
    return PAGE.read_text(encoding="utf-8")


def bench_budgets(source: str) -> dict[str, float]:
    """``NOTEBOOK_BUDGET_S``, ``CI_BUDGET_S`` and ``TEST_BUDGET_S`` of tools/bench.py, evaluated
    (plain arithmetic on numbers only)."""
    wanted = ("NOTEBOOK_BUDGET_S", "CI_BUDGET_S", "TEST_BUDGET_S")
    out = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = (zip(target.elts, node.value.elts) if isinstance(target, ast.Tuple)
                     and isinstance(node.value, ast.Tuple) else [(target, node.value)])
            for name, value in pairs:
                if isinstance(name, ast.Name) and name.id in wanted:
                    out[name.id] = float(eval(compile(ast.Expression(value), "bench", "eval"), {"__builtins__": {}}))
    return out


def budgets_section(text: str) -> str:
    start = text.index("(budgets)=")
    end = text.index("\n## ", text.index("\n## ", start) + 1)
    return text[start:end]


PATTERNS = {
    "en": {"NOTEBOOK_BUDGET_S": r"\*\*A chapter's live run\*\* is budgeted at (\d+) s on 2 cores",
           "CI_BUDGET_S": r"target for the whole of `\.ci/run` is (\d+) minutes on 2 cores",
           "TEST_BUDGET_S": r"`make test` on a warm clone is given (\d+) minutes"},
    "zh": {"NOTEBOOK_BUDGET_S": r"\*\*一章的现场运行\*\*：2 核上的预算为 (\d+) 秒",
           "CI_BUDGET_S": r"整个 `\.ci/run` 定的目标是 2 核上 (\d+) 分钟",
           "TEST_BUDGET_S": r"留给 `make test`（在已有缓存的克隆上）(\d+) 分钟"},
}
SCALE = {"NOTEBOOK_BUDGET_S": 1, "CI_BUDGET_S": 60, "TEST_BUDGET_S": 60}


def page_budgets(text: str, lang: str = "en") -> dict[str, float]:
    """The budgets the page's list in ``lang`` states, in seconds (None: not found)."""
    section = budgets_section(text)
    found = {k: re.search(pattern, section) for k, pattern in PATTERNS[lang].items()}
    return {k: float(m.group(1)) * SCALE[k] if m else None for k, m in found.items()}


def test_the_budgets_on_the_page_are_the_ones_make_bench_times_against():
    code = bench_budgets(BENCH.read_text(encoding="utf-8"))
    assert set(code) == {"NOTEBOOK_BUDGET_S", "CI_BUDGET_S", "TEST_BUDGET_S"}
    assert page_budgets(page()) == code
    assert page_budgets(page(), "zh") == code


def test_a_stale_budget_is_caught():
    planted = page().replace("is 25 minutes on 2 cores", "is 30 minutes on 2 cores", 1)
    assert planted != page()
    assert page_budgets(planted) != bench_budgets(BENCH.read_text(encoding="utf-8"))


def make_recipe(target: str, makefile: str) -> str:
    """The command lines of one Makefile target."""
    m = re.search(rf"(?m)^{re.escape(target)}:[^\n]*\n((?:\t[^\n]*\n)+)", makefile)
    assert m, target
    return m.group(1)


def portable_runs(makefile: str) -> dict[str, dict[str, str]]:
    """For each part of test-portable: the environment it sets (ATEN_CPU_CAPABILITY, MKL_…, threads)."""
    parts = re.search(r"(?m)^test-portable:(.*)$", makefile).group(1).split()
    out = {}
    for part in parts:
        env = dict(re.findall(r"([A-Z_]+)=(\S+)", make_recipe(part, makefile)))
        out[part] = {k: env.get(k) for k in ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "OMP_NUM_THREADS")}
        out[part]["command"] = make_recipe(part, makefile)
    return out


# what the page says each part of make test-portable runs: (kernels, MKL, threads), in both languages
PAGE_SAYS = {
    ("default", "SSE4_2", "1"): ("under PyTorch's plain-C kernels with MKL limited to SSE4.2, on one thread",
                                 "第一遍用 PyTorch 的纯 C 内核，MKL 限用 SSE4.2，单线程"),
    ("avx2", "AVX2", "3"): ("under AVX2 kernels with MKL limited to AVX2, on three threads",
                            "第二遍用 AVX2 内核，MKL 限用 AVX2，三线程"),
}


def test_make_test_portable_runs_what_the_page_says():
    runs = portable_runs(MAKEFILE.read_text(encoding="utf-8"))
    text = page()
    nbval = {(r["ATEN_CPU_CAPABILITY"], r["MKL_ENABLE_INSTRUCTIONS"], r["OMP_NUM_THREADS"])
             for r in runs.values() if "$(NBVAL)" in r["command"] or "--nbval" in r["command"]}
    assert nbval == set(PAGE_SAYS)
    for en, zh in PAGE_SAYS.values():
        assert en in text and zh in text
    checks = [r for r in runs.values() if "tools/train.py --check" in r["command"]]
    assert len(checks) == 1 and checks[0]["ATEN_CPU_CAPABILITY"] == "avx2"
    assert "--full" not in checks[0]["command"]            # CI's check retrains long recipes' prefixes only
    assert "checks every checkpoint under AVX2 with `tools/train.py --check`" in text
    full = make_recipe("train-check-full", MAKEFILE.read_text(encoding="utf-8"))
    assert "tools/train.py --check --full" in full
    assert "`make train-check-full` retrains every recipe whole" in text


def test_another_kernel_path_in_the_makefile_is_caught():
    makefile = MAKEFILE.read_text(encoding="utf-8").replace("OMP_NUM_THREADS=3", "OMP_NUM_THREADS=4", 1)
    runs = portable_runs(makefile)
    assert {(r["ATEN_CPU_CAPABILITY"], r["MKL_ENABLE_INSTRUCTIONS"], r["OMP_NUM_THREADS"])
            for r in runs.values() if "$(NBVAL)" in r["command"] or "--nbval" in r["command"]} != set(PAGE_SAYS)


RETRAINS_ALL = re.compile(r"retrain(?:s|ing)? every (?:checkpoint|recipe)(?! whole)|retrains? all|重训(?:每个|所有|全部)检查点")


def overclaims(text: str) -> list[str]:
    """Sentences that say the checks of make test / make test-portable / CI retrain every checkpoint
    (they retrain a long recipe's prefix only; make train-check-full, outside CI, retrains all)."""
    bad = []
    for sentence in re.split(r"(?<=[.。；;])\s*", text):
        if RETRAINS_ALL.search(sentence) and "train-check-full" not in sentence:
            bad.append(sentence.strip())
        if re.search(r"(make test-portable|CI|\.ci/run)[^.。]*retrain(s|ed)? (every|each) (checkpoint|recipe) whole",
                     sentence):
            bad.append(sentence.strip())
    return bad


def test_the_page_never_says_ci_retrains_every_checkpoint():
    assert overclaims(page()) == []


@pytest.mark.parametrize("planted", [
    "CI retrains every checkpoint on each push.",
    "`make test-portable` retrains every recipe whole.",
    "测试会重训每个检查点。",
])
def test_the_old_overclaim_is_caught(planted):
    assert overclaims(page() + "\n\n" + planted + "\n")


def test_the_example_band_line_is_what_band_prints(capsys, monkeypatch):
    from course_lib import repro

    monkeypatch.delenv(repro.BAND_LOG_ENV, raising=False)
    repro.band("label", 0.431, 0.3, 0.6)
    printed = capsys.readouterr().out.strip()
    examples = re.findall(r"`(label: ⟨[^`]*)`", page())
    assert len(examples) == 2 and set(examples) == {printed}


def test_a_band_example_in_another_format_is_caught(capsys, monkeypatch):
    from course_lib import repro

    monkeypatch.delenv(repro.BAND_LOG_ENV, raising=False)
    repro.band("label", 0.431, 0.3, 0.6)
    printed = capsys.readouterr().out.strip()
    assert "label: ⟨0.4312⟩ ✓ band [0.30, 0.60]" != printed   # the example the page showed before


def chapters_without_setup(paths=None) -> list[str]:
    """Chapters whose code uses PyTorch (``torch`` or a course module built on it) but never calls
    ``repro.setup()`` in one of their first three code cells."""
    import jupytext

    bad = []
    for path in paths or sorted((ROOT / "book").glob("ch[0-9][0-9]_*.md")):
        nb = jupytext.read(path)
        code = [c.source for c in nb.cells if c.cell_type == "code"]
        uses_torch = any(re.search(r"\btorch\b|load_checkpoint|course_lib\.(labs|models|training)|from course_lib "
                                   r"import [^\n]*\b(labs|models|training)\b", c) for c in code)
        if uses_torch and not any("repro.setup()" in c for c in code[:3]):
            bad.append(path.stem)
    return bad


def test_every_chapter_that_runs_pytorch_calls_setup_first():
    assert chapters_without_setup() == []


def test_a_chapter_that_seeds_too_late_is_caught(tmp_path):
    text = (ROOT / "book" / "ch05_transformer.md").read_text(encoding="utf-8")
    assert "repro.setup()" in text
    planted = tmp_path / "ch05_transformer.md"
    planted.write_text(text.replace("repro.setup()", "pass"), encoding="utf-8")
    assert chapters_without_setup([planted]) == ["ch05_transformer"]


def test_chapter_2_uses_no_pytorch_and_seeds_its_own_generators():
    text = (ROOT / "book" / "ch02_worked_qkv.md").read_text(encoding="utf-8")
    assert "torch" not in text and "repro.setup()" not in text
    assert re.search(r"np\.random\.default_rng\(\d+\)", text)


DEVICE = re.compile(r"""["'](mps|cuda)(:\d+)?["']|\.(cuda|mps)\(\)|torch\.device\(["'](mps|cuda)""")


def device_moves(files) -> list[str]:
    return [f"{p}:{i}" for p in files for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if DEVICE.search(line)]


def test_nothing_is_moved_to_mps_or_a_gpu():
    files = [*(ROOT / "course_lib").rglob("*.py"), *(ROOT / "book").rglob("*.md"), *(ROOT / "tools").glob("*.py")]
    assert device_moves(files) == []


def test_a_move_to_mps_is_caught(tmp_path):
    planted = tmp_path / "x.py"
    planted.write_text('model.to("mps")\nx = x.cuda()\n', encoding="utf-8")
    assert device_moves([planted]) == [f"{planted}:1", f"{planted}:2"]
