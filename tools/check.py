"""`make check`: the tests that what you changed can break, in parallel. The loop to run while working.

    python tools/check.py                 # changed since the merge-base with main, plus the working tree
    BASE=HEAD~3 python tools/check.py     # changed since another revision (or --base REV)
    python tools/check.py --dry-run       # only print what it would run, and why
    python tools/check.py --files course_lib/scratch/attention.py   # as if only these had changed
    python tools/check.py -- -x           # after --: more pytest arguments

What changed: ``git diff --name-only BASE`` (commits since BASE, staged and
unstaged edits) plus untracked files, where BASE is ``$BASE``/``--base``, else
the merge-base of HEAD with ``origin/main`` (or ``main``), else HEAD.

What it runs (pytest -n <cores> --dist loadscope, as ``make test`` does):

- a test module under ``tests/`` that changed, or that imports, directly or
  through ``course_lib``'s own imports, a changed ``course_lib`` module (also
  ``tools/`` scripts and ``tests/conftest.py``, which tests import too);
- nbval (the same options as ``make test``) on each chapter whose ``.md`` or
  ``.ipynb`` changed, or whose code cells import a changed module, the same way;
- when a page of the book changed: the book's static checks (the modules of
  ``tests/book/`` that need neither the built book nor a browser, but for the
  minutes-long ones of ``SLOW_BOOK_CHECKS``);
- a data file (anything else): what names it (its file name; for a checkpoint,
  its name), followed through the imports likewise.

Code that reads the chapter registries (``chapters.show``, ``ERRATA``,
``EXAMPLES``, ``CHECKERS``, ...) imports every chapter's bookkeeping, so it
depends on all of ``course_lib/chapters/chNN/``. A change to ``tests/conftest.py``
selects every test module, one to ``tools/nbval_sanitize.cfg`` every notebook.
What no test here covers (``_ext/``, ``_config.yml``, the Makefile, ...) is
listed with the command that does check it. ``make test`` stays the full check.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from toc import ROOT, notebooks  # noqa: E402

NBVAL = ["--nbval", "--nbval-current-env", "--nbval-sanitize-with", "tools/nbval_sanitize.cfg"]
#: The registries of course_lib.chapters: reading one imports every chapter's modules.
REGISTRY_NAMES = {"ERRATA", "EXAMPLES", "CHECKERS", "show_all", "chapter_module"}
REGISTRY = "course_lib/chapters/chNN/*"            # the pseudo-node standing for all of them
REGISTRY_USE = re.compile(r"\bchapters\.(show|" + "|".join(sorted(REGISTRY_NAMES)) + r")\b")
#: Changes no test of `make check` covers, and the command that checks them.
ONLY_BY = {"_ext/": "make book", "_config.yml": "make book", "_toc.yml": "make book",
           "vendor/": "make book", "Makefile": "make test", "requirements.txt": "make test",
           "requirements-nodeps.txt": "make test", "pyproject.toml": "make test",
           ".ci/": "make test"}
#: Book checks too slow for this loop (minutes): a page's edit leaves them to `make test`.
SLOW_BOOK_CHECKS = {"tests/book/test_grading.py": "grades submissions in real kernels, minutes"}
#: File names too common to say which file a string means (the full path still counts).
GENERIC_NAMES = {"README.md", "LICENSE", "__init__.py", "index.html", "MANIFEST.json", "package.json"}
#: The same environment as the Makefile's (xdist's workers must collect the same tests).
ENV = {"PYTHONHASHSEED": "0", "OMP_WAIT_POLICY": "PASSIVE", "HF_HUB_OFFLINE": "1",
       "TRANSFORMERS_OFFLINE": "1"}


# --------------------------------------------------------------------------- what changed

def _git(*args, root: Path = ROOT) -> str | None:
    r = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def find_base(root: Path = ROOT, base: str | None = None) -> tuple[str, str]:
    """(revision, how it was chosen): ``base`` (or ``$BASE``), else the merge-base of HEAD with
    origin/main or main, else HEAD."""
    base = base or os.environ.get("BASE")
    if base:
        rev = _git("rev-parse", "--verify", f"{base}^{{commit}}", root=root)
        if rev is None:
            raise SystemExit(f"check: BASE={base!r} is not a revision of this repository")
        return rev.strip(), f"BASE={base}"
    head = (_git("rev-parse", "HEAD", root=root) or "").strip()
    for ref in ("origin/main", "main"):
        mb = _git("merge-base", "HEAD", ref, root=root)
        if mb and mb.strip() != head:
            return mb.strip(), f"merge-base of HEAD and {ref}"
    return head, "HEAD (on main, or no main to compare with)"


def changed_files(base: str, root: Path = ROOT) -> list[str]:
    """Paths (from the repository's root) changed since ``base``: commits, staged and unstaged
    edits, deletions, and untracked files (not ignored ones)."""
    diff = _git("diff", "--name-only", "--no-renames", base, root=root) or ""
    new = _git("ls-files", "--others", "--exclude-standard", root=root) or ""
    return sorted({p for p in (diff + new).splitlines() if p.strip()})


# --------------------------------------------------------------------------- who imports what

def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except SyntaxError:       # a cell with IPython syntax: drop its magics and shell lines, then retry
        lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith(("%", "!"))]
        try:
            return ast.parse("\n".join(lines))
        except SyntaxError:
            return None


def _statements(body):
    """Every statement of ``body``, nested ones too (imports are statements; expressions are skipped)."""
    for st in body:
        yield st
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(st, name, None)
            if isinstance(inner, list):
                yield from _statements(inner)
        for part in [*getattr(st, "handlers", []), *getattr(st, "cases", [])]:
            yield from _statements(part.body)


def _code(path: Path) -> str:
    """The Python of ``path``: a module's text, or a notebook's code cells."""
    if path.suffix == ".ipynb":
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = [c["source"] for c in nb.get("cells", []) if c.get("cell_type") == "code"]
        return "\n".join("".join(s) if isinstance(s, list) else s for s in cells)
    return path.read_text(encoding="utf-8")


class Graph:
    """Import edges between the repository's files (paths from its root): ``course_lib``'s
    modules, ``tools/`` scripts, ``tests/conftest.py``, test modules and notebooks."""

    def __init__(self, root: Path = ROOT):
        self.root = root
        self.tools = {p.stem for p in (root / "tools").glob("*.py")}
        self.chapter_modules = sorted(p.relative_to(root).as_posix()
                                      for p in (root / "course_lib" / "chapters").glob("ch[0-9][0-9]/*.py"))
        self._edges: dict[str, set[str]] = {}
        self._text: dict[str, str] = {}

    def text(self, node: str) -> str:
        if node not in self._text:
            path = self.root / node
            try:
                self._text[node] = _code(path) if path.is_file() else ""
            except (OSError, ValueError):
                self._text[node] = ""
        return self._text[node]

    def _module_files(self, dotted: str) -> list[str]:
        """``course_lib.a.b`` -> the files Python runs importing it: each package's __init__.py, then the module."""
        parts, out = dotted.split("."), []
        for i in range(1, len(parts) + 1):
            base = "/".join(parts[:i])
            if (self.root / base / "__init__.py").is_file():
                out.append(f"{base}/__init__.py")
            elif i == len(parts) or (self.root / f"{base}.py").is_file():
                out.append(f"{base}.py")
        return out

    def edges(self, node: str) -> set[str]:
        """The files ``node`` imports (each one step)."""
        if node in self._edges:
            return self._edges[node]
        out: set[str] = set()
        self._edges[node] = out
        if node == REGISTRY:
            out.update(self.chapter_modules)
            return out
        tree = _parse(self.text(node))
        if tree is None:
            return out
        package = node.rsplit("/", 1)[0]
        sees_tools = not node.startswith("course_lib/")
        # the registries' own machinery (chapters/__init__.py, _errata.py, ...) reads them only when
        # called; counting that would make every chapter depend on every other one
        reads_registry = not (package == "course_lib/chapters" and Path(node).name.startswith("_"))
        prose = []                                            # docstrings' lines: not code
        for n in _statements(tree.body):
            if isinstance(n, ast.Import):
                for a in n.names:
                    out.update(self._absolute(a.name, sees_tools))
            elif isinstance(n, ast.ImportFrom):
                if n.level:                                   # relative: inside course_lib
                    parts = package.split("/")
                    parts = parts[:len(parts) - (n.level - 1)]
                    dotted = ".".join(parts + ([n.module] if n.module else []))
                else:
                    dotted = n.module or ""
                out.update(self._absolute(dotted, sees_tools))
                if dotted.split(".")[0] != "course_lib":
                    continue
                for a in n.names:                             # from a package import a submodule
                    sub = f"{dotted}.{a.name}".replace(".", "/")
                    out.update(c for c in (f"{sub}.py", f"{sub}/__init__.py") if (self.root / c).is_file())
                if reads_registry and dotted == "course_lib.chapters" and \
                        any(a.name in REGISTRY_NAMES | {"show"} for a in n.names):
                    out.add(REGISTRY)
            elif isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str):
                prose.append((n.lineno, n.end_lineno))
        if reads_registry:                                    # chapters.show(key), chapters.ERRATA, ...
            lines = self.text(node).splitlines()
            for lo, hi in prose:
                lines[lo - 1:hi] = [""] * (hi - lo + 1)
            if any(REGISTRY_USE.search(ln.split("#", 1)[0]) for ln in lines):
                out.add(REGISTRY)
        out.discard(node)
        return out

    def _absolute(self, dotted: str, sees_tools: bool) -> list[str]:
        top = dotted.split(".")[0]
        if top == "course_lib":
            return self._module_files(dotted)
        if sees_tools and top == "conftest":
            return ["tests/conftest.py"]
        if sees_tools and top in self.tools:
            return [f"tools/{top}.py"]
        return []

    def path_to(self, start: str, targets: set[str]) -> list[str] | None:
        """The shortest import chain from ``start`` to a file of ``targets`` (both ends included)."""
        seen, queue = {start: None}, deque([start])
        while queue:
            node = queue.popleft()
            if node in targets:
                chain = []
                while node is not None:
                    chain.append(node)
                    node = seen[node]
                return chain[::-1]
            for nxt in sorted(self.edges(node)):
                if nxt not in seen:
                    seen[nxt] = node
                    queue.append(nxt)
        return None


# --------------------------------------------------------------------------- what to run

@dataclass
class Selection:
    tests: dict[str, str] = field(default_factory=dict)        # test module -> why
    notebooks: dict[str, str] = field(default_factory=dict)    # notebook -> why
    unchecked: dict[str, str] = field(default_factory=dict)    # changed file -> what checks it instead


def _serial_reason(module: str, root: Path):
    """tests/conftest.py's ``serial_reason``: does this test module need a browser, a server or _build?"""
    sys.path.insert(0, str(root / "tests"))
    try:
        from conftest import serial_reason
    finally:
        sys.path.pop(0)
    return serial_reason(module)


def _toc_notebooks(root: Path) -> list[str]:
    if root == ROOT:
        return [p.relative_to(root).as_posix() for p in notebooks()]
    import yaml
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    pages = [toc["root"]] + [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    return [f"{p}.ipynb" for p in pages if (root / f"{p}.ipynb").is_file()]


def _package_of(f: str, root: Path) -> str | None:
    """The nearest package __init__.py above ``f`` (a file inside course_lib/)."""
    d = Path(f).parent
    while d.parts and d.parts[0] == "course_lib":
        if (root / d / "__init__.py").is_file():
            return (d / "__init__.py").as_posix()
        d = d.parent
    return None


def _strings(text: str) -> list[str]:
    """The string constants of some Python, docstrings left out (a file named in prose is not read)."""
    tree = _parse(text)
    if tree is None:
        return [text]
    prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in prose]


def select(changed: list[str], root: Path = ROOT) -> Selection:
    """What to run for the changed files ``changed`` (paths from the repository's root)."""
    graph = Graph(root)
    sel = Selection()
    tests = sorted(p.relative_to(root).as_posix() for p in (root / "tests").rglob("test_*.py"))
    nbs = _toc_notebooks(root)
    modules = sorted([*(p.relative_to(root).as_posix() for p in (root / "course_lib").rglob("*.py")),
                      *(p.relative_to(root).as_posix() for p in (root / "tools").glob("*.py"))])
    code: dict[str, str] = {}          # changed code -> how it changed ("" for an edit of its own)
    data = []
    for f in changed:                  # 1. the changed files themselves
        if f.endswith(".py") and f.startswith(("course_lib/", "tools/")) or f == "tests/conftest.py":
            code.setdefault(f, "")
        elif f.startswith("tests/") and Path(f).name.startswith("test_") and f.endswith(".py"):
            if (root / f).is_file():
                sel.tests.setdefault(f, "changed")
        elif f.startswith("book/") and f.endswith((".md", ".ipynb")):
            page = f.rsplit(".", 1)[0] + ".ipynb"
            if page in nbs:
                sel.notebooks.setdefault(page, f"{f} changed")
            for t in tests:               # the book's static checks (no build, no browser)
                if t.startswith("tests/book/") and not _serial_reason(t, root):
                    if t in SLOW_BOOK_CHECKS:
                        sel.unchecked.setdefault(t, f"make test ({SLOW_BOOK_CHECKS[t]})")
                    else:
                        sel.tests.setdefault(t, f"a page of the book changed ({f})")
        elif f == "tools/nbval_sanitize.cfg":
            for nb in nbs:
                sel.notebooks.setdefault(nb, f"{f} changed")
        else:
            data.append(f)
    if "tests/conftest.py" in code:
        for t in tests:
            sel.tests.setdefault(t, "tests/conftest.py changed (pytest loads it for every test)")
    strings = {}
    for f in data:                     # 2. data and the rest: what names the file in its code
        only = next((cmd for prefix, cmd in ONLY_BY.items() if f == prefix or f.startswith(prefix)), None)
        exact, suffixes = {f}, ("/" + f,) if "/" in f else ()
        if not only and Path(f).name not in GENERIC_NAMES:
            exact.add(Path(f).name)                   # data_path("sentiment_bilingual.tsv")
            suffixes += ("/" + Path(f).name,)
        if f.startswith("data/checkpoints/"):
            exact.add(Path(f).stem)                   # load_checkpoint("ch08-sentiment")
        named = False
        for n in [*tests, *nbs, *modules]:
            if n == f:
                continue
            if n not in strings:
                strings[n] = set(_strings(graph.text(n)))
            if any(st in exact or st.endswith(suffixes) for st in strings[n]):
                named = True
                if n in modules:
                    code.setdefault(n, f"names {f}")
                else:
                    (sel.tests if n in tests else sel.notebooks).setdefault(n, f"names {f}")
        if not named and f.startswith("course_lib/") and _package_of(f, root):
            code.setdefault(_package_of(f, root), f"holds {f}")
            named = True
        if only or not named:
            sel.unchecked[f] = only or "no test reads it"
    for n in [*tests, *nbs]:           # 3. code: what imports it, however indirectly
        if code and n not in sel.tests and n not in sel.notebooks:
            chain = graph.path_to(n, set(code))
            if chain:
                how = code[chain[-1]]
                why = "imports " + " -> ".join(chain[1:]) + (f" ({how})" if how else "")
                (sel.tests if n in tests else sel.notebooks)[n] = why
    return sel


# --------------------------------------------------------------------------- the command

def workers(sel: Selection) -> int:
    """As many xdist workers as cores, but no more than there are scopes to share out."""
    scopes = {("serial" if _serial_reason(t, ROOT) else t) for t in sel.tests} | set(sel.notebooks)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, len(scopes)))


def command(sel: Selection, extra=()) -> list[str]:
    n = workers(sel)
    return [sys.executable, "-m", "pytest", "-q", *(["-n", str(n), "--dist", "loadscope"] if n > 1 else []),
            *sel.tests, *sel.notebooks, *(NBVAL if sel.notebooks else []), *extra]


def _compact(paths: list[str], most: int = 25) -> list[str]:
    """``paths`` for the eye: a folder with many changed files is one line."""
    if len(paths) <= most:
        return paths
    groups: dict[str, list[str]] = {}
    for p in paths:
        head = p.split("/", 1)[0] + "/" if "/" in p else p
        groups.setdefault(head, []).append(p)
    return [g[0] if len(g) == 1 else f"{head} ({len(g)} files)" for head, g in groups.items()]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", help="compare with this revision (default: $BASE, else the merge-base with main)")
    parser.add_argument("--files", nargs="+", metavar="FILE",
                        help="take these files as the changed ones instead of asking git")
    parser.add_argument("--dry-run", action="store_true", help="print what would run, run nothing")
    parser.add_argument("pytest_args", nargs="*", help="after --: more arguments for pytest")
    args = parser.parse_args(argv)
    if args.files:
        changed = sorted({Path(f).resolve().relative_to(ROOT).as_posix() for f in args.files})
        print(f"check: taking {len(changed)} file(s) as changed")
    else:
        base, how = find_base(base=args.base)
        changed = changed_files(base)
        print(f"check: comparing with {base[:12]} ({how}) plus the working tree: {len(changed)} changed file(s)")
    for line in _compact(changed):
        print(f"  {line}")
    sel = select(changed)
    for title, items in (("test modules", sel.tests), ("notebooks (nbval)", sel.notebooks)):
        if items:
            print(f"{title}:")
            for item, why in items.items():
                print(f"  {item}  <- {why}")
    if sel.unchecked:
        print("not run here (what checks it):")
        by_command: dict[str, list[str]] = {}
        for f, by in sel.unchecked.items():
            by_command.setdefault(by, []).append(f)
        for by, files in by_command.items():
            for line in _compact(files, most=5):
                print(f"  {line}  <- {by}")
    if not sel.tests and not sel.notebooks:
        print("check: nothing to run")
        return 0
    cmd = command(sel, args.pytest_args)
    print("$ " + " ".join(str(c) if " " not in str(c) else repr(c) for c in cmd[1:]), flush=True)
    if args.dry_run:
        return 0
    env = {**ENV, **os.environ}
    return subprocess.run(cmd, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
