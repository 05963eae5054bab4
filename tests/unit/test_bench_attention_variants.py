"""tools/bench_attention_variants.py (chapter 10's variants timed by `make bench`) and its place in
tools/bench.py's speed section."""

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tool(name):
    spec = importlib.util.spec_from_file_location(f"tool_{name}", ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


variants_bench = _tool("bench_attention_variants")


def test_measure_times_every_variant_and_counts_its_work():
    """Two short lengths; the multiply-adds are the chapter's formulas for 2 heads of width 32,
    window 32, stride 32, worked out by hand."""
    rows = variants_bench.measure((64, 128))
    assert [r["L"] for r in rows] == [64, 128]
    for r in rows:
        assert set(r["seconds"]) == {"full", "local", "strided", "linear"}
        assert all(s > 0 for s in r["seconds"].values())
    assert rows[0]["macs"] == {"full": 2 * 2 * 64 * 64 * 32, "local": 2 * 2 * 64 * 65 * 32,
                               "strided": 2 * 2 * 64 * (65 + 2) * 32, "linear": 2 * 2 * 64 * 32 * 32}
    assert rows[1]["macs"]["full"] == 4 * rows[0]["macs"]["full"]


def test_report_prints_times_ratios_and_growth_of_one_run():
    rows = [{"L": 256, "seconds": {"full": 0.004, "local": 0.002, "strided": 0.003, "linear": 0.001},
             "macs": {"full": 400, "local": 100, "strided": 200, "linear": 50}},
            {"L": 512, "seconds": {"full": 0.016, "local": 0.004, "strided": 0.006, "linear": 0.002},
             "macs": {"full": 1600, "local": 200, "strided": 480, "linear": 96}}]
    text = variants_bench.report(rows)
    assert re.search(r"^  256 +4\.000 +2\.000 +3\.000 +1\.000$", text, re.M)            # ms
    assert re.search(r"^  512 +0\.250 \( *0\.125\) +0\.375 \( *0\.300\) +0\.125 \( *0\.060\)$", text, re.M)
    assert re.search(r"^  512 +4\.00 \( *4\.00\) +2\.00 \( *2\.00\) +2\.00 \( *2\.40\) +2\.00 \( *1\.92\)$",
                     text, re.M)                                                          # growth per doubling


def test_make_bench_runs_every_bench_script(monkeypatch):
    """bench.py's speed section runs each tools/bench_*.py once (a new one must be hooked in)."""
    bench = _tool("bench")
    ran = []
    monkeypatch.setattr(bench.subprocess, "run", lambda cmd, **kw: ran.append(cmd))
    assert bench.bench_speed()
    scripts = {Path(c[1]).name for c in ran if len(c) == 2}
    assert scripts == {p.name for p in (ROOT / "tools").glob("bench_*.py")}
