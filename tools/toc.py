"""List the book's pages from _toc.yml.

    python tools/toc.py notebooks   # paired chapters' .ipynb paths (what nbval runs)
    python tools/toc.py pages       # every page, without suffix
"""

import os
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def pages() -> list[str]:
    """Every page of the book, in reading order, as paths without suffix."""
    path = Path(os.environ.get("COURSE_TOC", ROOT / "_toc.yml"))  # another toc, for drafts
    toc = yaml.safe_load(path.read_text(encoding="utf-8"))
    out = [toc["root"]]
    for part in toc.get("parts", []):
        out += [c["file"] for c in part.get("chapters", [])]
    return out


def notebooks() -> list[Path]:
    """The .ipynb half of every paired page (pages whose notebook has code)."""
    return [ROOT / f"{p}.ipynb" for p in pages() if (ROOT / f"{p}.ipynb").exists()]


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "notebooks"
    items = notebooks() if what == "notebooks" else pages()
    print(" ".join(str(Path(i).relative_to(ROOT)) if what == "notebooks" else i for i in items))
