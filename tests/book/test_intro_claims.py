"""The introduction's factual sentences, each compared with what it describes.

``book/intro.md`` has no code cells, so its claims are checked here: the appendix pages it lists
against ``_toc.yml``, the ``make`` targets it shows against the Makefile, the pinned packages,
the one pretrained model, the language switch that remembers the reader's choice, and where each
chapter's exercises sit. Each reader also runs on a planted page or file, so a stale sentence fails.
"""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
INTRO = ROOT / "book" / "intro.md"


def intro() -> str:
    return INTRO.read_text(encoding="utf-8")


def appendix_pages() -> set[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return {c["file"].removeprefix("book/") for p in toc["parts"] for c in p["chapters"]
            if c["file"].startswith("book/appendix/")}


def linked_appendix(text: str, lang: str) -> set[str]:
    """The appendix pages the sentence 'The appendix collects …' (or its Chinese twin) links."""
    marker = "The appendix collects" if lang == "en" else "附录收录"
    line = next(line for line in text.splitlines() if marker in line)
    return set(re.findall(r"\{doc\}`[^`<]*<(appendix/[\w-]+)>`", line))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_intro_links_every_appendix_page(lang):
    assert appendix_pages() and linked_appendix(intro(), lang) == appendix_pages()


def test_an_appendix_page_left_out_is_caught():
    planted = intro().replace(", an {doc}`attention explorer <appendix/explorer>`", "", 1)
    assert planted != intro()
    assert linked_appendix(planted, "en") != appendix_pages()


def make_targets() -> set[str]:
    return set(re.findall(r"(?m)^([\w-]+(?: [\w-]+)*):", (ROOT / "Makefile").read_text(encoding="utf-8")))


def shown_commands(text: str) -> list[str]:
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    return re.findall(r"(?m)^make (\S+)", block)


def test_the_make_commands_shown_exist_and_book_writes_where_it_says():
    targets = {t for line in make_targets() for t in line.split()}
    assert shown_commands(intro()) == ["lab", "book", "test"]
    assert set(shown_commands(intro())) <= targets
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"(?m)^lab: venv$", makefile)                # the first command makes the .venv
    assert "The book is in _build/html" in makefile and "this book as HTML in _build/html" in intro()


def test_a_command_the_makefile_lacks_is_caught():
    planted = intro().replace("make lab ", "make jupyter ", 1)
    targets = {t for line in make_targets() for t in line.split()}
    assert not set(shown_commands(planted)) <= targets


def unpinned(lines) -> list[str]:
    """Requirement lines that pin no exact version (the editable install of the course itself aside)."""
    return [ln for ln in lines if ln.strip() and not ln.startswith("#") and ln.strip() != "-e ."
            and "==" not in ln]


def test_every_package_is_pinned_and_the_cpu_wheel_is_opt_in():
    for name in ("requirements.txt", "requirements-nodeps.txt"):
        assert unpinned((ROOT / name).read_text(encoding="utf-8").splitlines()) == [], name
    assert unpinned(["numpy>=2"]) == ["numpy>=2"]                # the reader catches a loose pin
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "TORCH_INDEX=https://download.pytorch.org/whl/cpu" in makefile and "TORCH_INDEX ?=\n" in makefile
    assert "`TORCH_INDEX=https://download.pytorch.org/whl/cpu`" in intro()


def test_minilm_is_the_only_pretrained_model():
    source = (ROOT / "course_lib" / "models" / "pretrained.py").read_text(encoding="utf-8")
    assert re.findall(r"(?m)^def (load_\w+)", source) == ["load_minilm"]
    assert "The one pretrained model it loads, MiniLM" in intro()


def test_the_language_switch_remembers_the_choice():
    js = (ROOT / "_ext" / "static" / "course" / "lang.js").read_text(encoding="utf-8")
    assert "localStorage.setItem(" in js and "localStorage.getItem(" in js
    assert "and remembers your choice" in intro() and "并记住你的选择" in intro()


def exercises_before_summary(paths) -> list[str]:
    """Chapters whose last two ``##`` sections are not Exercises then Summary."""
    bad = []
    for path in paths:
        heads = re.findall(r"(?m)^## (.*)$", path.read_text(encoding="utf-8"))
        if heads[-2:] != ["Exercises · 练习", "Summary · 小结"]:
            bad.append(path.stem)
    return bad


def test_every_chapter_has_its_exercises_before_its_summary():
    chapters = sorted((ROOT / "book").glob("ch[0-9][0-9]_*.md"))
    assert len(chapters) >= 12 and exercises_before_summary(chapters) == []


def test_a_chapter_without_exercises_is_caught(tmp_path):
    text = (ROOT / "book" / "ch02_worked_qkv.md").read_text(encoding="utf-8").replace("## Exercises · 练习", "## More")
    planted = tmp_path / "ch02_worked_qkv.md"
    planted.write_text(text, encoding="utf-8")
    assert exercises_before_summary([planted]) == ["ch02_worked_qkv"]


@pytest.mark.parametrize("label, stub", [
    ("ch02-ex-masked", "masked softmax"), ("ch05-ex-causal", "causal mask"), ("ch04-ex-pe", "positional-encoding table"),
])
def test_the_examples_of_coding_exercises_exist_and_call_a_checker(label, stub):
    assert stub in intro()
    text = next((ROOT / "book").glob(f"{label[:4]}_*.md")).read_text(encoding="utf-8")
    m = re.search(rf":label: {label}\n(.*?)\{{exercise-end\}}", text, re.S)
    assert m and "NotImplementedError" in m.group(1) and re.search(r"(?m)^ex\.check_\w+\(", m.group(1))
