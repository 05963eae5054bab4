"""`.ci/run` runs what `make test` and `make test-portable` run, and says where the time went.

The timing helpers are taken from `.ci/run` itself (the lines from ``PARTS=()`` to
``trap summary EXIT``) and run on stand-in commands, so a change to them is tested
as it is, not as a copy.
"""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CI_RUN = (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def _helpers() -> str:
    start = CI_RUN.index("PARTS=()")
    end = CI_RUN.index("trap summary EXIT") + len("trap summary EXIT")
    return CI_RUN[start:end]


def _run(body: str) -> subprocess.CompletedProcess:
    script = "set -euo pipefail\n" + _helpers() + "\n" + body
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)


def test_summary_lists_each_part_and_the_failure_then_stops():
    out = _run('timed "first part" true\n'
               'timed "the failing part" bash -c "exit 3"\n'
               'timed "never reached" true\n')
    assert out.returncode == 3
    lines = out.stdout.splitlines()
    head = lines.index("== .ci/run: where the time went ==")
    assert re.fullmatch(r" +\d+ s  first part", lines[head + 1])          # 0 s, or 1 on a loaded machine
    assert re.fullmatch(r" +\d+ s  the failing part  FAILED \(exit 3\)", lines[head + 2])
    assert re.fullmatch(r" +\d+ s  in all", lines[head + 3])
    assert "never reached" not in out.stdout
    assert len(lines) == head + 4


def test_summary_measures_wall_time():
    out = _run('timed "a two-second part" sleep 2\n')
    assert out.returncode == 0
    (line,) = [ln for ln in out.stdout.splitlines() if "a two-second part" in ln]
    assert int(line.split()[0]) in (2, 3)


def test_summary_even_when_nothing_ran():
    out = _run("exit 4\n")
    assert out.returncode == 4
    assert out.stdout.splitlines()[-2:] == ["== .ci/run: where the time went ==", out.stdout.splitlines()[-1]]
    assert out.stdout.splitlines()[-1].endswith(" s  in all")


def test_ci_runs_make_test_and_every_part_of_make_test_portable():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    prereqs = re.search(r"^test-portable:(.*)$", makefile, re.M).group(1).split()
    assert prereqs, "make test-portable should be made of its parts"
    called = re.findall(r"^timed \"[^\"]*\" make ([\w-]+)", CI_RUN, re.M)
    assert called[0] == "venv" and "test" in called
    assert [t for t in called if t in prereqs] == prereqs, (called, prereqs)
    for target in prereqs:          # each part is a real target with a recipe
        assert re.search(rf"^{target}: venv\n\t\S", makefile, re.M), target


def test_a_part_beside_another_is_joined_with_its_output_time_and_status():
    out = _run('beside "slow side part" bash -c "sleep 2; echo side says hi"\n'
               'timed "main part" sleep 1\n'
               'joined\n'
               'timed "after" true\n')
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert "---- output of: slow side part" in lines and "side says hi" in lines
    head = lines.index("== .ci/run: where the time went ==")
    # whole seconds of bash's SECONDS: a loaded machine may add one
    assert re.fullmatch(r" +[12] s  main part", lines[head + 1])
    assert re.fullmatch(r" +[23] s  slow side part", lines[head + 2])   # started before main, joined after it
    assert re.fullmatch(r" +[01] s  after", lines[head + 3])


def test_a_failing_part_beside_fails_the_run_at_the_join():
    out = _run('beside "side part" bash -c "echo broken; exit 5"\n'
               'timed "main part" true\n'
               'joined\n'
               'timed "never reached" true\n')
    assert out.returncode == 5
    assert "broken" in out.stdout and "never reached" not in out.stdout
    assert re.search(r"^ +\d+ s  side part  FAILED \(exit 5\)$", out.stdout, re.M)


def test_a_part_beside_is_stopped_when_the_run_fails_first(tmp_path):
    """The main part fails: the part beside it (and its children) is stopped, not left running."""
    marker = tmp_path / "still-running"
    out = _run(f'beside "side part" bash -c "sleep 3; touch {marker}"\n'
               'timed "main part" bash -c "exit 2"\n'
               'joined\n')
    assert out.returncode == 2
    assert re.search(r"^ +\d+ s  side part  STOPPED \(the run ended first\)$", out.stdout, re.M)
    import time
    time.sleep(4)
    assert not marker.exists()


def test_make_bench_reads_the_table_that_ci_run_prints():
    """`make bench`'s ci section runs .ci/run and reads its closing table: every row, with its
    status, from the helpers' real output."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("bench_tool", ROOT / "tools" / "bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = _run('beside "side" bash -c "sleep 1; exit 4"\n'
               'timed "make test (all of it)" sleep 1\n'
               'joined || true\n'
               'timed "failing part" bash -c "exit 3"\n')
    assert out.returncode == 3
    rows = bench.parse_ci_summary(out.stdout)
    assert [w for w, _, _ in rows] == ["make test (all of it)", "side", "failing part", "in all"]
    seconds = [s for _, s, _ in rows]                  # whole seconds of bash's SECONDS; load may add one
    assert seconds[0] in (1.0, 2.0) and seconds[1] in (1.0, 2.0) and seconds[2] in (0.0, 1.0)
    assert [st for _, _, st in rows] == ["ok", "FAILED (exit 4)", "FAILED (exit 3)", "ok"]
    assert rows[-1][1] in (1.0, 2.0, 3.0)             # the side part ran beside the first one
    import pytest
    with pytest.raises(ValueError, match="no 'where the time went' table"):
        bench.parse_ci_summary("make: *** [test] Error 2\n")
