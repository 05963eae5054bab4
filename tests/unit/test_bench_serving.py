"""tools/bench_serving.py and the reference measurement chapter 10 draws (data/bench/serving_latency.json).

The chapter draws stored latencies instead of timing this machine, so that nbval
compares every number the figure draws. These tests check the script's summary
and its ``--store`` file against numbers worked out by hand, and the stored file
against what the chapter reads from it.
"""

import importlib.util
import json
from pathlib import Path

import pytest

from course_lib.data import data_path
from course_lib.labs.serving import percentile

ROOT = Path(__file__).resolve().parents[2]


def _tool(name):
    spec = importlib.util.spec_from_file_location(f"tool_{name}", ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench_serving = _tool("bench_serving")


def test_summarise_rounds_then_recomputes_every_statistic():
    r = bench_serving.summarise([1.00004, 2.0, 3.0, 4.00006], errors=0)
    assert r["latencies_ms"] == [1.0, 2.0, 3.0, 4.0001]
    assert r["p50_ms"] == 2.5                                   # between the 2nd and 3rd of four
    assert r["p95_ms"] == pytest.approx(3 + 0.85 * 1.0001)      # position 0.95 * 3 = 2.85
    assert r["texts_per_s"] == pytest.approx(1e3 * 4 / 10.0001)
    assert r["errors"] == 0


def test_summarise_refuses_an_empty_run():
    with pytest.raises(ValueError, match="latencies_ms must not be empty"):
        bench_serving.summarise([], errors=0)


def test_store_writes_what_the_chapter_reads(tmp_path, monkeypatch, capsys):
    """``--store`` with the measurement replaced by two short fixed runs, into a data folder in tmp."""
    (tmp_path / "README.md").write_text("stand-in data folder\n")
    monkeypatch.setenv("COURSE_DATA", str(tmp_path))
    fake = {"float32": {"latencies_ms": [2.0, 1.0, 3.0], "errors": 0},
            "int8": {"latencies_ms": [5.0, 4.0], "errors": 0}}
    monkeypatch.setattr(bench_serving, "measure", lambda threads: {k: dict(v, p50_ms=0.0, p95_ms=0.0,
                                                                          texts_per_s=0.0)
                                                                   for k, v in fake.items()})
    assert bench_serving.main(["--store", "--threads", "1"]) == 0
    stored = json.loads((tmp_path / "bench" / "serving_latency.json").read_text(encoding="utf-8"))
    assert stored["command"] == "python tools/bench_serving.py --store --threads 1"
    assert stored["machine"]["torch_threads"] == 1 and stored["machine"]["cores"] >= 1
    assert set(stored["versions"]) == {"python", "torch"} and stored["date_utc"].endswith("Z")
    assert stored["runs"]["float32"]["p50_ms"] == 2.0 and stored["runs"]["int8"]["p50_ms"] == 4.5
    assert stored["runs"]["int8"]["texts_per_s"] == pytest.approx(1e3 * 2 / 9)
    assert "stored in" in capsys.readouterr().out


def test_a_run_with_errors_fails_the_script(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_serving, "measure", lambda threads: {
        "float32": {"latencies_ms": [1.0], "p50_ms": 1.0, "p95_ms": 1.0, "texts_per_s": 1e3, "errors": 1}})
    assert bench_serving.main([]) == 1


def test_threads_must_be_positive():
    with pytest.raises(SystemExit):
        bench_serving.main(["--threads", "0"])


def test_the_stored_reference_is_consistent():
    """What chapter 10 draws and prints: 300 reviews x 5 passes for each model, no errors, and the
    p50, p95 and texts per second that the stored latencies give."""
    stored = json.loads(data_path("bench", "serving_latency.json").read_text(encoding="utf-8"))
    assert list(stored["runs"]) == ["float32", "int8"]
    for r in stored["runs"].values():
        lat = r["latencies_ms"]
        assert len(lat) == 300 * 5 and r["errors"] == 0
        assert all(x > 0 and round(x, 4) == x for x in lat)
        assert (r["p50_ms"], r["p95_ms"]) == (percentile(lat, 50), percentile(lat, 95))
        assert r["texts_per_s"] == 1e3 * len(lat) / sum(lat)
    machine = stored["machine"]
    assert {"cpu", "cores", "torch_threads", "load_average_1min", "platform"} <= set(machine)
    assert stored["command"].startswith("python tools/bench_serving.py --store")
