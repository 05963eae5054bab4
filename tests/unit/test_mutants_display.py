"""Tests that kill mutants of course_lib.display's check and check_close (make mutate, tools/mutate.py).

Each states a property the helpers promise; the mutant it was written for is named beside it.
"""

import subprocess
import sys

from course_lib import display


def _printed_before_a_hard_exit(call: str) -> str:
    """stdout of a process that runs ``call`` and then dies at once (os._exit: no buffer is flushed)."""
    code = f"import os\nfrom course_lib import display\n{call}\nos._exit(0)\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_check_reaches_the_output_at_once():
    """A ✓ is printed with flush=True: a kernel killed right after still showed it
    (mutants: flush=False, flush=None, no flush)."""
    assert _printed_before_a_hard_exit("display.check('rows sum to 1', True)") == "✓ rows sum to 1\n"


def test_check_close_reaches_the_output_at_once():
    out = _printed_before_a_hard_exit("display.check_close('equal', [1.0, 2.0], [1.0, 2.0], atol=1e-12)")
    assert out == "✓ equal (max |Δ| < 1e-12)\n"
