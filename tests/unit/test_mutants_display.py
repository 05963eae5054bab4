"""Tests that kill mutants of course_lib.display's check and check_close (make mutate, tools/mutate.py).

Each states a property the helpers promise; the mutant it was written for is named beside it.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from course_lib import display


def _printed_before_a_hard_exit(call: str) -> str:
    """stdout of a process that runs ``call`` and then dies at once (os._exit: no buffer is flushed)."""
    code = f"import os\nfrom course_lib import display\n{call}\nos._exit(0)\n"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}   # stdout to a pipe: block-buffered
    package_root = str(Path(display.__file__).resolve().parents[2])             # the course_lib this test imported
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout


def test_check_flushes_its_mark(capsys):
    """A ✓ is printed with flush=True: a kernel killed right after still showed it
    (mutants: flush=False, flush=None, no flush)."""
    display.check("rows sum to 1", True)
    assert capsys.readouterr().out == "✓ rows sum to 1\n"
    assert _printed_before_a_hard_exit("display.check('rows sum to 1', True)") == "✓ rows sum to 1\n"


def test_check_close_flushes_its_mark(capsys):
    display.check_close("equal", [1.0, 2.0], [1.0, 2.0], atol=1e-12)
    assert capsys.readouterr().out == "✓ equal (max |Δ| < 1e-12)\n"
    out = _printed_before_a_hard_exit("display.check_close('equal', [1.0, 2.0], [1.0, 2.0], atol=1e-12)")
    assert out == "✓ equal (max |Δ| < 1e-12)\n"


def test_check_close_compares_unsigned_integers_and_booleans_as_numbers(capsys):
    # |0 - 1| is 1, not the 255 of uint8 arithmetic; booleans as 0 and 1 (mutants: dtype=float dropped)
    display.check_close("uint8", np.array([0], dtype=np.uint8), np.array([1], dtype=np.uint8), atol=2)
    display.check_close("bool", np.array([True, False]), np.array([True, False]), atol=0.5)
    assert capsys.readouterr().out == "✓ uint8 (max |Δ| < 2)\n✓ bool (max |Δ| < 0.5)\n"


def test_check_close_of_two_empty_arrays_holds(capsys):
    # no element differs, whatever atol (mutants: the empty case skipped or given a difference of 1)
    display.check_close("empty", [], [], atol=1e-12)
    display.check_close("empty 2-d", np.zeros((0, 3)), np.zeros((0, 3)), atol=0.5)
    assert capsys.readouterr().out == "✓ empty (max |Δ| < 1e-12)\n✓ empty 2-d (max |Δ| < 0.5)\n"


class _HasItemOnly:
    """Not a bool, and no array either: an ``item`` method but no ``ndim``."""

    def item(self):
        return True


def test_check_refuses_what_is_not_one_truth_value_and_says_how_to_reduce():
    with pytest.raises(TypeError, match="^ok must be a bool") as e:
        display.check("x", _HasItemOnly())
    assert "got _HasItemOnly;" in str(e.value)
    with pytest.raises(TypeError) as e:
        display.check("rows sum to 1", np.array([True, False]))
    assert "got ndarray;" in str(e.value)                                  # names what it got
    assert str(e.value).endswith("reduce an array with .all() or .any() first")   # and the way out
