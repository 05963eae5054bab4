"""The offline book's JavaScript: MathJax 3 and mermaid, from the committed vendor/ into _vendor/.

    python tools/vendor.py             # vendor/ -> _vendor/  (`make vendor`, run by make book and make test)
    python tools/vendor.py --refresh   # node_modules/ -> vendor/  (`make vendor-refresh`, after `npm ci`)
    python tools/vendor.py --verify    # vendor/ matches vendor/MANIFEST.json and package.json

A learner needs neither npm nor root: vendor/ holds exactly the files the
book serves (MathJax's ``es5/`` build and mermaid's ``dist/mermaid.min.js``),
with their licences, and ``vendor/MANIFEST.json`` their versions and SHA-256.
npm stays the way to update them: change the pins in package.json, then
``make vendor-refresh`` (``npm ci``, then this script with ``--refresh``) and
commit vendor/.

_vendor/ is listed in html_static_path, so its files land in
_build/html/_static/ and pages load them by relative path: no CDN, and it
works from file:// too.
"""

import hashlib
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NODE = ROOT / "node_modules"
SOURCE = ROOT / "vendor"          # committed
VENDOR = ROOT / "_vendor"         # built, served
MANIFEST = SOURCE / "MANIFEST.json"

#: (npm package, its file or folder, where it is kept in vendor/, where it is served from in _vendor/)
FILES = [
    ("mathjax", "es5", "mathjax/es5", "mathjax"),
    ("mermaid", "dist/mermaid.min.js", "mermaid/mermaid.min.js", "mermaid/mermaid.min.js"),
]
#: kept beside them in vendor/, not served
LICENCES = [("mathjax", "LICENSE", "mathjax/LICENSE", None), ("mermaid", "LICENSE", "mermaid/LICENSE", None)]


def _files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _copy(src: Path, dst: Path) -> None:
    shutil.rmtree(dst, ignore_errors=True) if dst.is_dir() else dst.unlink(missing_ok=True)
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst)
    else:
        shutil.copy2(src, dst)


def pinned() -> dict:
    """The versions package.json pins: ``{"mathjax": "3.2.2", …}``."""
    return json.loads((ROOT / "package.json").read_text(encoding="utf-8"))["dependencies"]


def refresh() -> int:
    """node_modules/ (after `npm ci`) -> vendor/, and a new MANIFEST.json."""
    missing = [f"node_modules/{pkg}/{path}" for pkg, path, _, _ in FILES + LICENCES
               if not (NODE / pkg / path).exists()]
    if missing:
        print("vendor: missing " + ", ".join(missing) + " (run `npm ci` first)", file=sys.stderr)
        return 1
    readme = (SOURCE / "README.md").read_bytes() if (SOURCE / "README.md").exists() else None
    shutil.rmtree(SOURCE, ignore_errors=True)
    SOURCE.mkdir()
    if readme is not None:
        (SOURCE / "README.md").write_bytes(readme)
    for pkg, path, kept, _ in FILES + LICENCES:
        _copy(NODE / pkg / path, SOURCE / kept)
    versions = {pkg: json.loads((NODE / pkg / "package.json").read_text(encoding="utf-8"))["version"]
                for pkg in pinned()}
    files = {str(p.relative_to(SOURCE)): _sha256(p) for p in _files(SOURCE) if p.name != "README.md"}
    MANIFEST.write_text(json.dumps({"versions": versions, "sha256": files}, indent=1) + "\n",
                        encoding="utf-8")
    print(f"vendor: vendor/ refreshed from node_modules ({', '.join(f'{k} {v}' for k, v in versions.items())}):"
          " commit it")
    return 0


def verify() -> list[str]:
    """What is wrong with vendor/: files that differ from MANIFEST.json, versions not package.json's."""
    if not MANIFEST.exists():
        return [f"{MANIFEST.relative_to(ROOT)} is missing (make vendor-refresh)"]
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    problems = [f"vendor/ has {pkg} {manifest['versions'].get(pkg)}, package.json pins {v}"
                for pkg, v in pinned().items() if manifest["versions"].get(pkg) != v]
    have = {str(p.relative_to(SOURCE)) for p in _files(SOURCE)} - {"MANIFEST.json", "README.md"}
    want = set(manifest["sha256"])
    problems += [f"vendor/{p}: not in MANIFEST.json" for p in sorted(have - want)]
    problems += [f"vendor/{p}: missing" for p in sorted(want - have)]
    problems += [f"vendor/{p}: SHA-256 differs from MANIFEST.json" for p in sorted(want & have)
                 if _sha256(SOURCE / p) != manifest["sha256"][p]]
    return problems


def install(dest: Path = VENDOR) -> int:
    """vendor/ -> _vendor/ (what the book serves); refuses a vendor/ that does not verify."""
    problems = verify()
    if problems:
        print("vendor: vendor/ is not what MANIFEST.json says:\n  " + "\n  ".join(problems),
              file=sys.stderr)
        return 1
    shutil.rmtree(dest, ignore_errors=True)
    for _, _, kept, served in FILES:
        _copy(SOURCE / kept, dest / served)
    print(f"vendor: MathJax and mermaid copied from vendor/ into {dest.name}/")
    return 0


def main(argv: list[str]) -> int:
    if argv == ["--refresh"]:
        return refresh()
    if argv == ["--verify"]:
        problems = verify()
        print("\n".join(problems) or "vendor: vendor/ matches MANIFEST.json and package.json")
        return 1 if problems else 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    return install()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
