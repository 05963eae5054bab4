"""data/README.md records every data file the repository ships: its size, licence and SHA-256.
A file added without its row, or changed without its row, fails here."""

import hashlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"


def checksum_rows(text: str) -> dict[str, tuple[int, str]]:
    """The rows of the "Checksums" table: ``{file: (bytes, sha256)}``."""
    section = text.split("## Checksums", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| `([^`]+)` \| (\d+) \| [^|]+ \| `([0-9a-f]{64})` \|$", line)
        if m:
            rows[m[1]] = (int(m[2]), m[3])
    return rows


def shipped_files() -> list[str]:
    """Every file under data/ but the README and the checkpoints (their JSON records their own SHA-256)."""
    return sorted(str(p.relative_to(DATA)) for p in DATA.rglob("*") if p.is_file()
                  and p.name != "README.md" and "checkpoints" not in p.relative_to(DATA).parts)


def test_every_shipped_file_has_a_row_with_its_size_and_checksum():
    rows = checksum_rows((DATA / "README.md").read_text(encoding="utf-8"))
    assert sorted(rows) == shipped_files()
    for name, (size, sha) in rows.items():
        blob = (DATA / name).read_bytes()
        assert (len(blob), hashlib.sha256(blob).hexdigest()) == (size, sha), name


def test_the_table_is_read_exactly():
    sha = "ab" * 32
    text = (f"## Checksums\n\n| file | bytes | licence | sha256 |\n|:--|--:|:--|:--|\n"
            f"| `a/b.json` | 12 | ours · 本课程 | `{sha}` |\n| `c.txt` | 7 | x | `{sha[:-1]}` |\n\n## Next\n| `d` | 1 | x | `{sha}` |\n")
    assert checksum_rows(text) == {"a/b.json": (12, sha)}       # a short checksum and the next section are not rows
