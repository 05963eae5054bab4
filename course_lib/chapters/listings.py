"""Every code listing of the four source documents, accounted for (appendix "Source listings").

The snapshot ``data/sources/listings.json`` (written by ``tools/extract_listings.py``)
holds each fenced block of the source documents verbatim, with its sha256.
``listings_data.LISTINGS`` gives each block a verdict (a ``Listing``, defined in
``listings_verdicts``; this module imports ``listings_data``, never the reverse):

- ``"ok"``: runs and is right; ``evidence`` names the test or book cell that ran it;
- ``"erratum"``: wrong; ``errata`` lists the ``Erratum`` keys (``chapters.show(key)``);
- ``"diagram"``: a mermaid diagram or a text illustration; ``where`` is the book's version;
- ``"output"``: a log the source printed; ``where`` is where the book checks it;
- ``"not-runnable"``: cannot run as written; ``note_en`` says why and ``evidence``
  names the port that does run (``listings_ports``).

``coverage()`` is what ``tests/book/test_source_coverage.py`` checks; ``run()`` executes
Python listings verbatim; ``table()`` is the appendix's overview.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..display import Table
from . import listings_data
from .listings_verdicts import VERDICTS, Listing  # noqa: F401  (Listing: public here too, as before)

__all__ = ["VERDICTS", "Listing", "Run", "snapshot", "text", "registry", "coverage", "run",
           "table", "shorten_floats"]


def _root() -> Path:
    return Path(__file__).resolve().parents[2]


def snapshot() -> dict:
    """``data/sources/listings.json``: ``{"documents": {...}, "listings": [...]}``."""
    from ..data import data_path
    return json.loads(data_path("sources", "listings.json").read_text(encoding="utf-8"))


def text(source: str, index: int) -> str:
    """The verbatim text of block ``index`` of ``source``."""
    for b in snapshot()["listings"]:
        if b["source"] == source and b["index"] == index:
            return b["text"]
    raise ValueError(f"(source, index) must name a block of the snapshot, got {(source, index)!r}")


def registry() -> dict:
    """``{(source, index): Listing}`` from ``listings_data.LISTINGS``."""
    out = {}
    for e in listings_data.LISTINGS:
        if (e.source, e.index) in out:
            raise ValueError(f"two registry entries for {(e.source, e.index)}")
        out[(e.source, e.index)] = e
    return out


def _anchor_ok(path: Path, anchor: str) -> bool:
    lines = path.read_text(encoding="utf-8").splitlines()
    return any(l.strip() == f"({anchor})=" or (l.startswith("#") and anchor in l) for l in lines)


def _evidence_problems(root: Path, evidence: str) -> list[str]:
    path, _, name = evidence.partition("::")
    if not (root / path).is_file():
        return [f"evidence file {path} does not exist"]
    if name and not re.search(rf"^\s*(def|class) {re.escape(name)}\b",
                              (root / path).read_text(encoding="utf-8"), re.M):
        return [f"evidence {name!r} is not defined in {path}"]
    return []


def coverage(entries=None, snap=None, errata_keys=None, root=None) -> list[str]:
    """Everything that is not accounted for, one line each (empty list: all is well).

    Checks: every block of the snapshot has exactly one entry and no entry is extra;
    every block's text matches its sha256; every erratum key exists; every ``where``
    names an existing file (and anchor); "ok" and "not-runnable" entries carry evidence.
    ``entries`` (iterable of ``Listing``), ``snap``, ``errata_keys`` and ``root`` default
    to the real registry, snapshot, ``chapters.ERRATA`` keys and repository.
    """
    import hashlib
    snap = snapshot() if snap is None else snap
    entries = list(registry().values()) if entries is None else list(entries)
    if errata_keys is None:
        from . import ERRATA
        errata_keys = {e.key for e in ERRATA}
    root = _root() if root is None else Path(root)
    problems = []
    blocks = {(b["source"], b["index"]): b for b in snap["listings"]}
    by_key = {}
    for e in entries:
        by_key.setdefault((e.source, e.index), []).append(e)
    for key, b in blocks.items():
        if hashlib.sha256(b["text"].encode("utf-8")).hexdigest() != b["sha256"]:
            problems.append(f"{key}: text does not match its sha256")
        if key not in by_key:
            problems.append(f"{key}: no registry entry ({b['language'] or 'plain'}, line {b['first_line']})")
    for key, es in by_key.items():
        if key not in blocks:
            problems.append(f"{key}: registry entry for a block the snapshot does not have")
        if len(es) > 1:
            problems.append(f"{key}: {len(es)} registry entries")
        for e in es:
            if e.verdict == "erratum" and not e.errata:
                problems.append(f"{key}: verdict 'erratum' without erratum keys")
            for k in e.errata:
                if k not in errata_keys:
                    problems.append(f"{key}: erratum {k!r} does not exist")
            if e.verdict in ("ok", "not-runnable") and not e.evidence:
                problems.append(f"{key}: verdict {e.verdict!r} needs evidence")
            if e.evidence:
                problems += [f"{key}: {p}" for p in _evidence_problems(root, e.evidence)]
            if e.verdict in ("diagram", "output") and not e.where:
                problems.append(f"{key}: verdict {e.verdict!r} needs a book location")
            for w in e.where:
                path, _, anchor = w.partition("#")
                if not (root / path).is_file():
                    problems.append(f"{key}: {path} does not exist")
                elif anchor and not _anchor_ok(root / path, anchor):
                    problems.append(f"{key}: no label or heading {anchor!r} in {path}")
    return problems


@dataclass
class Run:
    """What running listings verbatim did: ``stdout``, the ``error`` raised (or None), ``namespace``."""

    stdout: str
    error: BaseException | None
    namespace: dict = field(repr=False)

    def __repr__(self) -> str:
        err = "" if self.error is None else f"raised {type(self.error).__name__}: {self.error}\n"
        return (self.stdout + err).rstrip() or "(ran, printed nothing · 运行完毕，没有输出)"


def run(source: str, indices, seed: int = 0) -> Run:
    """Execute blocks ``indices`` of ``source`` verbatim, in order, in one fresh namespace.

    As a reader would in one session (``__name__ == "__main__"``), with NumPy's and
    torch's global RNGs seeded with ``seed``; matplotlib draws off screen and its
    figures are closed. Stops at the first exception, which is returned, not raised.
    """
    if isinstance(indices, int):
        indices = [indices]
    if not isinstance(indices, (list, tuple)) or not all(isinstance(i, int) for i in indices):
        raise TypeError(f"indices must be a block index or a list of them, got {indices!r}")
    codes = [text(source, i) for i in indices]
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import torch
    np.random.seed(seed)
    torch.manual_seed(seed)
    ns = {"__name__": "__main__"}
    out, error = io.StringIO(), None
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            for code in codes:
                exec(compile(code, f"<{source} block {indices}>", "exec"), ns)
        except Exception as exc:  # the listing's own error is the evidence
            error = exc
        finally:
            plt.close("all")
    return Run(out.getvalue(), error, ns)


def shorten_floats(s: str, digits: int = 4) -> str:
    """``np.float64(0.50123456…)`` and long floats in ``s`` rounded to ``digits`` decimals."""
    if not isinstance(s, str):
        raise TypeError(f"s must be a str, got {type(s).__name__}")
    s = re.sub(r"np\.float\d+\(([-0-9.e]+)\)", r"\1", s)
    return re.sub(r"-?\d+\.\d{%d,}" % (digits + 1), lambda m: f"{float(m.group()):.{digits}f}", s)


def table() -> Table:
    """One row per block: source, block, language, first line, verdict, errata or where."""
    reg = registry()
    rows = []
    for b in snapshot()["listings"]:
        e = reg.get((b["source"], b["index"]))
        verdict = VERDICTS[e.verdict] if e else "—"
        where = ", ".join(list(e.errata) + [w.replace("book/", "").replace(".md", "") for w in e.where]) if e else ""
        rows.append([b["source"], b["index"], b["language"] or "text", b["first_line"], verdict, where])
    return Table(["source · 原始资料", "block · 块", "language · 语言", "line · 行", "verdict · 结论",
                  "errata / where · 勘误 / 位置"], rows)
