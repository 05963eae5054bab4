"""Every live band beside the spread measured across kernel paths (CONTRIBUTING, "Reproducible on every CPU").

A live band (a training loss, an accuracy of a live run, a timing, a measured ratio) must hold on
every learner's CPU: other kernel paths, thread counts *and* CPU models. One host can show only the
first two. ``.ci/run`` therefore sets ``COURSE_BAND_LOG`` for every notebook run (``make test`` and
the two portable runs); :func:`course_lib.repro.band` appends each banded value there, and this tool
prints, per band, its half-width, the values of each kernel path, their spread, and how much of
the half-width the farthest value uses:

    python tools/band_spread.py LOG.jsonl [LOG2.jsonl …] [--json] [--at-risk 0.1]

A band is listed **at risk** when the spread of one host alone exceeds ``--at-risk`` (a tenth, by
default) of its half-width: between CPU models the spread was about twenty times that of one host's
kernel paths (chapter 5's 100-step run: 1.7e-6 on one host, 3.2e-5 on an Intel Xeon), so such a band
can fail on another machine. The tool reports; it fails (exit 1) only when a value lies outside its
band, which the notebook itself has already reported.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def read_logs(paths) -> list[dict]:
    """The JSON lines of the logs, each ``{label, value, lo, hi, path, host}``."""
    rows = []
    for p in paths:
        for n, line in enumerate(Path(p).read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{p}:{n}: not a JSON line ({e})") from None
            missing = {"label", "value", "lo", "hi", "path"} - set(row)
            if missing:
                raise ValueError(f"{p}:{n}: missing {sorted(missing)}")
            rows.append(row)
    return rows


def spreads(rows: list[dict], at_risk: float = 0.1) -> list[dict]:
    """One entry per band (its label and ends), with the values of each kernel path and their spread.

    ``spread`` is max - min over all values logged for the band; ``use`` the largest distance of a
    value from the band's centre over the half-width (1 = on an end); ``spread_share`` the spread over
    the half-width; ``at_risk`` is ``spread_share > at_risk``.
    """
    if not 0 < at_risk <= 1:
        raise ValueError(f"at_risk must be in (0, 1], got {at_risk!r}")
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["label"], r["lo"], r["hi"]), []).append(r)
    out = []
    for (label, lo, hi), rs in groups.items():
        values = [r["value"] for r in rs]
        half = (hi - lo) / 2
        centre = (hi + lo) / 2
        spread = max(values) - min(values)
        use = max(abs(v - centre) for v in values) / half if half > 0 else float("inf")
        share = spread / half if half > 0 else float("inf")
        out.append({"label": label, "lo": lo, "hi": hi, "half_width": half,
                    "rel_half_width": half / abs(centre) if centre else float("inf"),
                    "values": {r["path"]: r["value"] for r in rs}, "n": len(rs),
                    "spread": spread, "spread_share": share, "use": use,
                    "outside": any(not lo <= v <= hi for v in values), "at_risk": share > at_risk})
    return sorted(out, key=lambda e: -e["spread_share"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--json", action="store_true", help="print the entries as JSON")
    ap.add_argument("--at-risk", type=float, default=0.1,
                    help="flag a band whose spread on this host exceeds this share of its half-width")
    a = ap.parse_args(argv)
    missing = [p for p in a.logs if not Path(p).is_file()]
    if missing:
        print(f"band_spread: no log at {', '.join(missing)} (no notebook ran with COURSE_BAND_LOG set)",
              file=sys.stderr)
        return 2
    entries = spreads(read_logs(a.logs), a.at_risk)
    if a.json:
        print(json.dumps(entries, ensure_ascii=False, indent=1))
    else:
        paths = sorted({p for e in entries for p in e["values"]})
        print(f"{len(entries)} live bands, values from {len(paths)} kernel paths: " + "; ".join(paths))
        print(f"{'spread/half':>11} {'use':>6} {'rel half':>9}  band")
        for e in entries:
            flag = " OUTSIDE" if e["outside"] else (" at risk" if e["at_risk"] else "")
            print(f"{e['spread_share']:11.2e} {e['use']:6.3f} {e['rel_half_width']:9.2e}  "
                  f"{e['label'][:90]} [{e['lo']:.6g}, {e['hi']:.6g}] n={e['n']}{flag}")
        risky = [e for e in entries if e["at_risk"]]
        print(f"at risk (spread on this host > {a.at_risk:g} of the half-width): {len(risky)}")
    return 1 if any(e["outside"] for e in entries) else 0


if __name__ == "__main__":
    sys.exit(main())
