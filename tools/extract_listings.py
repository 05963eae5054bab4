"""Snapshot every fenced code block of the four source documents.

    python tools/extract_listings.py DIR

DIR holds the four source documents as text files (``000_….txt`` … ``003_….txt``).
Each document is identified by its title line, not by its file name, and mapped to
its key in ``course_lib.chapters._claims.SOURCES``. Writes
``data/sources/listings.json``: for each document its sha256, and for every
fenced block (```` ```lang ```` … ```` ``` ````) the source key, the block's index in
that document (0-based), its language tag ("" for a plain fence), the line number
of its first text line (1-based), the verbatim text and its sha256.
The registry ``course_lib/chapters/listings.py`` accounts for each block;
``tests/book/test_source_coverage.py`` checks it.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "sources" / "listings.json"

#: The title line of each source document -> its key in ``SOURCES``.
TITLES = {
    "Attention Mechanism Multi-Representation Example": "multirep",
    "第24章：Transformer架构详解": "ch24",
    "wawa_transformer.py": "pe_tests",
    "Attention Mechanisms and Transformers": "attention",
}
FENCE = re.compile(r"^```([A-Za-z0-9_+-]*)\s*$")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def source_key(text: str) -> str:
    """The ``SOURCES`` key of a document, from its first line."""
    first = text.lstrip().split("\n", 1)[0]
    keys = [k for t, k in TITLES.items() if t in first]
    if len(keys) != 1:
        raise ValueError(f"text must start with one of the titles {list(TITLES)}, got {first!r}")
    return keys[0]


def blocks(text: str) -> list[dict]:
    """Every fenced block of ``text``: index, language, first line, verbatim text."""
    out, open_at, lang, lines = [], None, "", text.split("\n")
    for no, line in enumerate(lines, start=1):
        m = FENCE.match(line)
        if not m:
            continue
        if open_at is None:
            open_at, lang = no, m.group(1)
        elif m.group(1) == "":
            body = "\n".join(lines[open_at:no - 1]) + "\n"
            out.append({"index": len(out), "language": lang, "first_line": open_at + 1,
                        "text": body, "sha256": sha256(body)})
            open_at = None
        else:
            raise ValueError(f"line {no}: a fence ```{m.group(1)} opens inside the block "
                             f"opened on line {open_at}")
    if open_at is not None:
        raise ValueError(f"the block opened on line {open_at} is never closed")
    return out


def extract(folder: Path) -> dict:
    """``{"documents": {key: {"sha256", "lines"}}, "listings": [...]}`` for the four documents."""
    files = sorted(Path(folder).glob("*.txt"))
    docs, listings = {}, []
    for f in files:
        text = f.read_text(encoding="utf-8")
        key = source_key(text)
        if key in docs:
            raise ValueError(f"two documents in {folder} have the key {key!r}")
        docs[key] = {"sha256": sha256(text), "lines": text.count("\n")}
        listings += [{"source": key, **b} for b in blocks(text)]
    if set(docs) != set(TITLES.values()):
        raise ValueError(f"folder must hold the four source documents, found {sorted(docs)}")
    return {"documents": dict(sorted(docs.items())), "listings": listings}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    data = extract(Path(argv[0]))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    n = {k: sum(b["source"] == k for b in data["listings"]) for k in data["documents"]}
    print(f"wrote {OUT.relative_to(ROOT)}: {len(data['listings'])} blocks {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
