"""Measures of the Chinese prose: sentence length and the glossary's terms, per page.

    python tools/zh_measures.py             # a table: chapters and appendix pages
    python tools/zh_measures.py --json      # the same, and every variant found, as JSON
    python tools/zh_measures.py book/ch05_transformer.md …

What is measured
----------------
The prose of the cells tagged ``zh`` (a MyST ``+++ {"tags": ["zh"]}`` marker, up to
the next ``+++`` marker or code cell) of ``book/ch*.md`` and ``book/appendix/*.md``.

The sentence rule
-----------------
1. MyST comment lines (``%`` first, ``% numbers:`` declarations included) are dropped.
2. Each display-math span ``$$…$$``, role ``{name}`…``` (glue and ``{ref}`` included),
   inline code span ```…``` and inline-math span ``$…$`` becomes a single character:
   the reader reads it as one unit.
3. A Markdown link ``[text](target)`` keeps its text only; emphasis markers (``**``,
   ``__``, ``*``) and a block quote's ``>`` are dropped.
4. The text is cut into blocks at blank lines (a paragraph ends) and before each
   list item (a line starting ``-``, ``*``, ``+``, ``1.`` or ``1)``; the marker is
   dropped), so a list item or paragraph ends its last sentence even without a full
   stop. The lines of one block are joined (a soft line break is not a break).
5. A block is cut after each run of sentence ends ``。｡！!？?…`` (with the closing
   quotes or brackets ``”’」』）)`` that follow it, which stay with the sentence).
6. Pieces that are empty after stripping whitespace are ignored. A sentence's length
   is its number of characters after stripping the whitespace at its ends (and
   collapsing each run of inner whitespace, a joined line break included, to one).

Reported: the number of sentences, their mean length, and the share longer than
``LONG`` (100) characters. The goals (tests/book/test_zh_measures.py): a chapter's
mean is ``MEAN_MAX`` (45) at most, and ``LONG_SHARE_MAX`` (5 %) of its sentences are
longer than 100 characters at most.

Glossary variants
-----------------
Each is a second name for a concept that has one in ``book/appendix/glossary.md``
(or in the Chinese style rules where the glossary has no entry); found in the zh
prose after step 2 (so not in math, code or roles):

- ``键值缓存``: the text says ``KV 缓存``; the glossary's defining form
  ``键值缓存（KV 缓存）`` (full name, then the short one) is allowed;
- ``热力图``: the term is ``热图``;
- ``logit`` (singular, not followed by ``s``): the term stays ``logits``;
- ``编码器-解码器`` or ``编码器—解码器`` (hyphen, em dash or another dash):
  the glossary writes ``编码器–解码器`` (en dash);
- ``pre-LN``/``post-LN`` as bare English, and ``前置归一化``/``后置归一化``: the
  glossary's terms are ``前归一化``/``后归一化``; ``前归一化（pre-LN）`` (the term
  with the English right after it, in brackets or after a comma: ``前归一化，pre-LN``) is allowed;
- bare ``区间`` (not inside ``置信区间`` or ``容许区间``) on a page whose zh prose
  also says ``置信区间``: one word for two concepts (a band is ``容许区间``, a
  confidence interval ``置信区间``). ``置信区间`` itself is never flagged (the
  glossary does not restrict it).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONG = 100                 # a sentence longer than this many characters is long
MEAN_MAX = 45              # goal: a chapter's mean sentence length, characters
LONG_SHARE_MAX = 0.05      # goal: share of a chapter's sentences longer than LONG

_MARKER = re.compile(r"^\+\+\+\s*(\{.*\})?\s*$")
_CODE_START = re.compile(r"^```")
_UNIT = "X"
_SPANS = [
    re.compile(r"\$\$.*?\$\$", re.S),                  # display math
    re.compile(r"\{[\w:.-]+\}(`+).*?\1", re.S),        # roles, glue and ref included
    re.compile(r"(`+).+?\1", re.S),                    # inline code
    re.compile(r"(?<!\\)\$[^$\n]+?(?<!\\)\$"),          # inline math
]
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_SENTENCE_END = re.compile(r"[。｡！!？?…]+[”’」』）)\"']*")

VARIANTS = {
    "键值缓存 (KV 缓存)": re.compile(r"键值缓存(?![（(]KV\s*缓存[）)])"),
    "热力图 (热图)": re.compile(r"热力图"),
    "logit (logits)": re.compile(r"(?<![A-Za-z])logit(?!s)(?![A-Za-z])"),
    "编码器-解码器 (编码器–解码器)": re.compile(r"编码器\s*[-‐‑‒—―−－~～]\s*解码器"),
    "pre-LN/post-LN (前归一化/后归一化)": re.compile(
        r"(?<!归一化（)(?<!归一化\()(?<!归一化，)(?<!归一化、)(?<!归一化, )\b(?:pre|post)-LN\b"),
    "前置/后置归一化 (前归一化/后归一化)": re.compile(r"[前后]置归一化"),
}
_BARE_INTERVAL = re.compile(r"(?<![置容信许])区间")
_CONFIDENCE = re.compile(r"置信区间")
INTERVAL_KEY = "bare 区间 beside 置信区间 (容许区间/置信区间)"


def zh_cells(text: str) -> list[str]:
    """The source of every cell tagged ``zh`` on a MyST page."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a page's MyST text (str), got {type(text).__name__}")
    out, current = [], None
    for line in text.split("\n"):
        m = _MARKER.match(line)
        if m or _CODE_START.match(line):
            if current is not None:
                out.append("\n".join(current))
                current = None
            if m and m.group(1):
                try:
                    tags = json.loads(m.group(1)).get("tags", [])
                except json.JSONDecodeError:
                    tags = []
                if "zh" in tags:
                    current = []
            continue
        if current is not None:
            current.append(line)
    if current is not None:
        out.append("\n".join(current))
    return out


def flatten(source: str) -> str:
    """Steps 1-3 of the sentence rule: comments out, math, roles and code as one character, links as text."""
    text = "\n".join(ln for ln in source.split("\n") if not ln.lstrip().startswith("%"))
    for pattern in _SPANS:
        text = pattern.sub(_UNIT, text)
    text = _LINK.sub(r"\1", text)
    text = re.sub(r"\*\*|__|\*", "", text)
    return re.sub(r"(?m)^\s*>\s?", "", text)


def sentences(source: str) -> list[str]:
    """The sentences of one zh cell (the sentence rule, module docstring)."""
    blocks, current = [], []
    for line in flatten(source).split("\n"):
        if not line.strip():
            blocks.append(current)
            current = []
        elif _LIST_ITEM.match(line):
            blocks.append(current)
            current = [_LIST_ITEM.sub("", line)]
        else:
            current.append(line.strip())
    blocks.append(current)
    out = []
    for block in blocks:
        text = re.sub(r"\s+", " ", " ".join(block))
        pos = 0
        for m in _SENTENCE_END.finditer(text):
            out.append(text[pos:m.end()])
            pos = m.end()
        out.append(text[pos:])
    return [s.strip() for s in out if s.strip()]


def variants(cells: list[str]) -> dict[str, int]:
    """{variant: count} over a page's zh cells (only variants found)."""
    texts = [flatten(c) for c in cells]
    found = {}
    for key, pattern in VARIANTS.items():
        n = sum(len(pattern.findall(t)) for t in texts)
        if n:
            found[key] = n
    if any(_CONFIDENCE.search(t) for t in texts):
        n = sum(len(_BARE_INTERVAL.findall(t)) for t in texts)
        if n:
            found[INTERVAL_KEY] = n
    return found


def measure_text(text: str) -> dict:
    """The measures of one page's MyST text."""
    cells = zh_cells(text)
    lengths = [len(s) for c in cells for s in sentences(c)]
    n = len(lengths)
    return {"sentences": n, "mean": sum(lengths) / n if n else 0.0,
            "long": sum(1 for x in lengths if x > LONG),
            "long_share": sum(1 for x in lengths if x > LONG) / n if n else 0.0,
            "longest": max(lengths, default=0), "variants": variants(cells)}


def chapters(root: Path = ROOT) -> list[Path]:
    return sorted((root / "book").glob("ch*.md"))


def pages(root: Path = ROOT) -> list[Path]:
    """Chapters, then appendix pages."""
    return chapters(root) + sorted((root / "book" / "appendix").glob("*.md"))


def measure(paths=None) -> dict:
    paths = pages() if paths is None else [Path(p) for p in paths]
    return {str(p.relative_to(ROOT)) if p.is_absolute() and ROOT in p.parents else str(p):
            measure_text(p.read_text(encoding="utf-8")) for p in paths}


def table(result: dict) -> str:
    rows = [f"{'page':<40} {'sent.':>5} {'mean':>5} {'>100':>5} {'share':>6}  variants"]
    for name, m in result.items():
        over = " >" if m["mean"] > MEAN_MAX or m["long_share"] > LONG_SHARE_MAX else ""
        var = ", ".join(f"{k.split(' (')[0]} {v}" for k, v in m["variants"].items())
        rows.append(f"{name:<40} {m['sentences']:>5} {m['mean']:>5.1f} {m['long']:>5} {m['long_share']:>6.1%}"
                    f"{over:2} {var}")
    rows.append(f"goals: mean <= {MEAN_MAX} characters, <= {LONG_SHARE_MAX:.0%} of sentences over {LONG} "
                "characters ('>' marks a page past one), no glossary variant")
    return "\n".join(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", help="pages' .md files (default: chapters and appendix)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    for f in args.files:
        if not Path(f).is_file():
            parser.error(f"files: {f} is not a file")
    result = measure([Path(f).resolve() for f in args.files] or None)
    print(json.dumps(result, indent=1, ensure_ascii=False) if args.json else table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
