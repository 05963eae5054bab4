"""Copy MathJax 3 and mermaid from node_modules/ into _vendor/ for the offline book.

Run by `make vendor` after `npm ci`. _vendor/ is listed in html_static_path,
so its files land in _build/html/_static/ and pages load them by relative
path: no CDN, and it works from file:// too.
"""

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NODE = ROOT / "node_modules"
VENDOR = ROOT / "_vendor"

COPIES = [
    (NODE / "mathjax" / "es5", VENDOR / "mathjax"),
    (NODE / "mermaid" / "dist" / "mermaid.min.js", VENDOR / "mermaid" / "mermaid.min.js"),
]


def main() -> int:
    missing = [str(src) for src, _ in COPIES if not src.exists()]
    if missing:
        print("vendor: missing " + ", ".join(missing) + " (run `npm ci` first)", file=sys.stderr)
        return 1
    shutil.rmtree(VENDOR, ignore_errors=True)
    for src, dst in COPIES:
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copy2(src, dst)
    print(f"vendor: MathJax and mermaid copied into {VENDOR.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
