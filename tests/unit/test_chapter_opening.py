"""A chapter's opening line (course_lib.chapters.opening) and the measurements behind it
(tools/chapter_times.py): read from data/chapter_times.json, never typed."""

import hashlib
import json

import pytest

import chapter_times
from course_lib import chapters
from course_lib.chapters.opening import chapter_times as stored_times
from course_lib.chapters.opening import opening_line, times_path


def _write(tmp_path, chapters_):
    path = tmp_path / "chapter_times.json"
    path.write_text(json.dumps({"words_per_minute": 200, "chapters": chapters_}), encoding="utf-8")
    return path


ENTRY = {"reading_words": 7010, "reading_minutes": 35.05, "live_seconds": 52.0, "live_cpu_seconds": 39.6, "cpu": "Some CPU",
         "cores": 8, "threads": 2, "date": "2026-11-29"}


def test_the_line_reads_the_stored_numbers(tmp_path):
    path = _write(tmp_path, {"ch05_transformer": ENTRY})
    assert opening_line("ch05_transformer", path) == (
        "Reading time ≈ 35 min · live cells ≈ 40 s of CPU time (2 threads, measured 2026-11-29) · "
        "阅读约 35 分钟 · 现场单元格约 40 秒 CPU 时间（2 线程，2026-11-29 测）")
    assert opening_line("ch05", path) == opening_line("ch05_transformer", path)     # the short name


def test_opening_prints_the_line(tmp_path, capsys):
    path = _write(tmp_path, {"ch02_worked_qkv": dict(ENTRY, reading_minutes=0.2, live_cpu_seconds=0.3)})
    assert chapters.opening("ch02_worked_qkv", path) is None
    assert capsys.readouterr().out == ("Reading time ≈ 1 min · live cells ≈ 1 s of CPU time (2 threads, measured "
                                       "2026-11-29) · 阅读约 1 分钟 · 现场单元格约 1 秒 CPU 时间（2 线程，2026-11-29 测）\n")


def test_a_missing_chapter_is_named(tmp_path):
    path = _write(tmp_path, {"ch05_transformer": ENTRY})
    with pytest.raises(KeyError, match=r"ch06_vit.*not in chapter_times.json.*--store book/ch06_vit.md"):
        opening_line("ch06_vit", path)
    path = _write(tmp_path, {"ch07_bert": ENTRY, "ch07_gpt": ENTRY})
    with pytest.raises(KeyError, match="'ch07'"):                                   # two chapters start so
        opening_line("ch07", path)


@pytest.mark.parametrize("bad", [None, 5, "", "chapter 5", "ch5"])
def test_bad_chapter_names_are_refused(tmp_path, bad):
    with pytest.raises(ValueError, match="chapter must be"):
        opening_line(bad, _write(tmp_path, {"ch05_transformer": ENTRY}))


def test_a_missing_file_or_field_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="chapter_times.py --store"):
        opening_line("ch05", tmp_path / "none.json")
    entry = {k: v for k, v in ENTRY.items() if k != "live_cpu_seconds"}
    with pytest.raises(ValueError, match="ch05.*live_cpu_seconds"):
        opening_line("ch05", _write(tmp_path, {"ch05_transformer": entry}))


def test_every_stored_chapter_has_a_line():
    stored = json.loads(times_path().read_text(encoding="utf-8"))["chapters"]
    assert stored
    for name, entry in stored.items():
        assert stored_times(name) == entry
        assert f"≈ {max(1, round(entry['live_cpu_seconds']))} s of CPU time" in opening_line(name)


def test_reading_words_count_english_prose_only():
    md = ("---\njupytext:\n  text_representation:\n    format_name: myst\n---\n\n"
          "(ch99)=\n# 99. Ten words · 十个词\n\n"
          '+++ {"tags": ["en"]}\n\n% numbers: 0.1 (definition: not prose)\n'
          "Attention reads $d_k$ numbers, don't it? See [here](https://x.org/a-b-c).\n\n"
          '+++ {"tags": ["zh"]}\n\n注意力 reads 很多。\n\n+++\n\n'
          "```mermaid\nflowchart LR\n  a --> b\n```\n\n"
          "```{code-cell} ipython3\nprint('code is not prose')\n```\n")
    # heading: 99, Ten, words (3); en cell: Attention, reads, d_k, numbers, don't, it, See, here (8)
    assert chapter_times.reading_words(md) == 11


def test_store_merges_and_updates_the_readme_row(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("## Checksums\n\n| `chapter_times.json` | 0 | ours · 本课程 | `" + "0" * 64 + "` |\n",
                      encoding="utf-8")
    path = _write(tmp_path, {"ch01_a": ENTRY})
    chapter_times.store({"ch02_b": dict(ENTRY, live_seconds=3.0)}, path, readme)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert list(data["chapters"]) == ["ch01_a", "ch02_b"] and data["words_per_minute"] == 200
    blob = path.read_bytes()
    assert readme.read_text(encoding="utf-8") == (
        f"## Checksums\n\n| `chapter_times.json` | {len(blob)} | ours · 本课程 | `{hashlib.sha256(blob).hexdigest()}` |\n")
    readme.write_text("## Checksums\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no checksum row"):
        chapter_times.store({}, path, readme)


def _notebook(tmp_path, sources):
    import nbformat
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="an old line\n")]
    path = tmp_path / "ch05_transformer.ipynb"
    nbformat.write(nb, path)
    return path


def test_store_writes_the_new_line_as_the_opening_cells_output(tmp_path):
    """The opening cell's output is a function of the stored file: --store writes it, so the chapter
    needs no re-execution (and nbval still compares it on the next run)."""
    import nbformat
    times = _write(tmp_path, {"ch05_transformer": ENTRY})
    ipynb = _notebook(tmp_path, ['chapters.opening("ch05_transformer")', "x = 1"])
    assert chapter_times.patch_opening_output(ipynb, "ch05_transformer", times) is True
    cells = nbformat.read(ipynb, as_version=4).cells
    assert cells[0].outputs == [nbformat.v4.new_output(
        "stream", name="stdout", text=opening_line("ch05_transformer", times) + "\n")]
    assert cells[1].outputs == []                                            # nothing else touched
    assert chapter_times.patch_opening_output(ipynb, "ch05_transformer", times) is False   # already so


def test_patching_needs_exactly_one_opening_cell(tmp_path):
    times = _write(tmp_path, {"ch05_transformer": ENTRY})
    for sources in (["x = 1"], ['chapters.opening("ch05")', 'chapters.opening("ch05")']):
        with pytest.raises(ValueError, match="cells calling chapters.opening"):
            chapter_times.patch_opening_output(_notebook(tmp_path, sources), "ch05_transformer", times)
