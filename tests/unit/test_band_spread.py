"""tools/band_spread.py and the band log of repro.band (CONTRIBUTING, "Reproducible on every CPU")."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from course_lib import repro

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import band_spread  # noqa: E402


def _line(label, value, lo, hi, path):
    return json.dumps({"label": label, "value": value, "lo": lo, "hi": hi, "path": path, "host": "h"})


def test_band_logs_each_value_with_its_path(tmp_path, monkeypatch, capsys):
    log = tmp_path / "bands.jsonl"
    monkeypatch.setenv(repro.BAND_LOG_ENV, str(log))
    repro.band("loss · 损失", 0.5, 0.4, 0.6)                 # outside a notebook: not logged
    assert not log.exists()
    monkeypatch.setattr(repro, "_in_notebook", lambda: True)
    repro.band("loss · 损失", 0.5, 0.4, 0.6)
    with pytest.raises(AssertionError):
        repro.band("loss · 损失", 0.7, 0.4, 0.6)           # a value outside is logged too, then fails
    rows = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()]
    assert [(r["label"], r["value"], r["lo"], r["hi"]) for r in rows] == [("loss · 损失", 0.5, 0.4, 0.6),
                                                                        ("loss · 损失", 0.7, 0.4, 0.6)]
    assert all(r["path"].startswith("aten ") and "threads" in r["path"] for r in rows)


def test_no_log_without_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(repro.BAND_LOG_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    repro.band("x", 1.0, 0.0, 2.0)
    assert list(tmp_path.iterdir()) == []


def test_spread_use_and_risk_worked_out_by_hand():
    rows = [json.loads(_line("a", v, 0.9, 1.1, p)) for v, p in ((1.0, "p1"), (1.004, "p2"), (0.998, "p3"))]
    rows += [json.loads(_line("b", v, 0.0, 10.0, p)) for v, p in ((5.0, "p1"), (5.2, "p2"))]
    (a,) = [e for e in band_spread.spreads(rows) if e["label"] == "a"]
    # half-width 0.1, centre 1.0: spread 0.006 -> 0.06 of it; the farthest value 0.004 off -> use 0.04
    assert a["spread"] == pytest.approx(0.006) and a["spread_share"] == pytest.approx(0.06)
    assert a["use"] == pytest.approx(0.04) and a["rel_half_width"] == pytest.approx(0.1)
    assert not a["at_risk"] and band_spread.spreads(rows, at_risk=0.05)[0]["at_risk"]
    (b,) = [e for e in band_spread.spreads(rows) if e["label"] == "b"]
    assert b["spread_share"] == pytest.approx(0.04) and b["values"] == {"p1": 5.0, "p2": 5.2}


def test_the_chapter_5_xeon_miss_would_have_been_flagged():
    """The old band (rel 5e-6) with this host's two values 1.7e-6 apart is at risk; the floor is not."""
    ref = 0.43499455
    for rel, flagged in ((5e-6, True), (repro.LIVE_REL_MIN, False)):
        lo, hi = ref * (1 - rel), ref * (1 + rel)
        rows = [json.loads(_line("step 100", v, lo, hi, p)) for v, p in ((ref, "avx512"), (ref + 1.7e-6, "c"))]
        assert band_spread.spreads(rows)[0]["at_risk"] is flagged


def test_cli_prints_and_fails_only_on_a_value_outside(tmp_path):
    log = tmp_path / "b.jsonl"
    log.write_text(_line("a", 1.0, 0.9, 1.1, "p1") + "\n" + _line("a", 1.05, 0.9, 1.1, "p2") + "\n",
                   encoding="utf-8")
    run = subprocess.run([sys.executable, str(ROOT / "tools/band_spread.py"), str(log)],
                         capture_output=True, text=True)
    assert run.returncode == 0 and "1 live bands, values from 2 kernel paths" in run.stdout
    assert "at risk (spread on this host > 0.1 of the half-width): 1" in run.stdout
    log.write_text(_line("a", 1.2, 0.9, 1.1, "p1") + "\n", encoding="utf-8")
    run = subprocess.run([sys.executable, str(ROOT / "tools/band_spread.py"), str(log)],
                         capture_output=True, text=True)
    assert run.returncode == 1 and "OUTSIDE" in run.stdout


@pytest.mark.parametrize("text, words", [("not json\n", "not a JSON line"),
                                         ('{"label": "a"}\n', "missing")])
def test_bad_logs_get_clear_errors(tmp_path, text, words):
    log = tmp_path / "b.jsonl"
    log.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=words):
        band_spread.read_logs([log])
    with pytest.raises(ValueError, match="at_risk"):
        band_spread.spreads([], at_risk=0)
