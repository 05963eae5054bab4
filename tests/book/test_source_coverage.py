"""Every fenced block of the four source documents is accounted for.

``data/sources/listings.json`` is the verbatim snapshot (``tools/extract_listings.py``);
``course_lib.chapters.listings_data`` gives each block a verdict. This fails if a block
has no entry, if an entry cites an erratum, book file, label/heading or test that does
not exist, or if a snapshot text no longer matches its sha256.
"""

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from course_lib.chapters import listings as L
from course_lib.chapters import listings_data

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("extract_listings", ROOT / "tools" / "extract_listings.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_block_is_accounted_for():
    assert L.coverage() == []


def test_snapshot_is_complete_and_verbatim():
    snap = L.snapshot()
    assert sorted(snap["documents"]) == ["attention", "ch24", "multirep", "pe_tests"]
    for b in snap["listings"]:
        assert hashlib.sha256(b["text"].encode("utf-8")).hexdigest() == b["sha256"]
    for key in snap["documents"]:
        idx = [b["index"] for b in snap["listings"] if b["source"] == key]
        assert idx == list(range(len(idx)))           # blocks numbered 0, 1, … per document
    assert len(snap["listings"]) == len(listings_data.LISTINGS)


def test_removing_an_entry_reports_exactly_that_block(monkeypatch):
    before = set(L.coverage())
    removed = listings_data.LISTINGS[7]
    monkeypatch.setattr(listings_data, "LISTINGS",
                        tuple(e for e in listings_data.LISTINGS if e is not removed))
    new = set(L.coverage()) - before
    assert [p.split(":")[0] for p in new] == [str((removed.source, removed.index))]
    assert "no registry entry" in new.pop()


@pytest.mark.parametrize("change,expected", [
    ({"errata": ("no-such-erratum",)}, "erratum 'no-such-erratum' does not exist"),
    ({"where": ("book/no_such_page.md",)}, "book/no_such_page.md does not exist"),
    ({"where": ("book/ch02_worked_qkv.md#No such heading",)}, "no label or heading 'No such heading'"),
    ({"evidence": "tests/chapters/test_listings.py::test_nothing"}, "'test_nothing' is not defined"),
])
def test_dangling_references_are_reported(change, expected):
    entries = list(L.registry().values())
    e = entries[0]
    entries[0] = L.Listing(**{**e.__dict__, **change})
    before = set(L.coverage())
    new = set(L.coverage(entries=entries)) - before
    assert len(new) == 1 and expected in new.pop()


def test_a_changed_text_is_reported():
    snap = json.loads(json.dumps(L.snapshot()))
    snap["listings"][3]["text"] += " "
    b = snap["listings"][3]
    assert f"{(b['source'], b['index'])}: text does not match its sha256" in L.coverage(snap=snap)


def test_extractor_finds_blocks_and_documents(tmp_path):
    tool = _tool()
    for n, title in enumerate(tool.TITLES):
        body = f"# {title}\n\ntext\n```python\nx = 1\n```\n\n```\nlog\n```\n"
        (tmp_path / f"00{n}_doc.txt").write_text(body, encoding="utf-8")
    data = tool.extract(tmp_path)
    assert sorted(data["documents"]) == sorted(tool.TITLES.values())
    blocks = [b for b in data["listings"] if b["source"] == "multirep"]
    assert [(b["index"], b["language"], b["first_line"], b["text"]) for b in blocks] == [
        (0, "python", 5, "x = 1\n"), (1, "", 9, "log\n")]
    with pytest.raises(ValueError, match="never closed"):
        tool.blocks("```python\nx\n")
    with pytest.raises(ValueError, match="must start with one of the titles"):
        tool.source_key("# Something else\n")


def test_data_readme_lists_the_snapshot_checksum():
    digest = hashlib.sha256((ROOT / "data" / "sources" / "listings.json").read_bytes()).hexdigest()
    rows = [l for l in (ROOT / "data" / "README.md").read_text(encoding="utf-8").splitlines()
            if l.startswith("| `sources/listings.json` |") and "`" + digest + "`" in l]
    assert len(rows) == 1, "update the sha256 of sources/listings.json in data/README.md"
