"""A notebook kernel that dies at its start is started again (tests/conftest.py, retry_kernel_start).

jupyter_client's port race (a kernel's TCP port taken by another process before the kernel binds
it) made a parallel ``make test`` fail a notebook whose kernel had run no cell. These tests drive
the retry with a stand-in for nbval's ``start_new_kernel``.
"""

import nbval.kernel
import pytest

from conftest import KERNEL_START_ATTEMPTS, retry_kernel_start

DIED = "Kernel died before replying to kernel_info"


def _starter(failures: list):
    """A stand-in start: raises the given exceptions one by one, then returns ("km", "kc")."""
    calls = []

    def start(*args, **kwargs):
        calls.append((args, kwargs))
        if failures:
            raise failures.pop(0)
        return "km", "kc"
    return start, calls


def test_a_kernel_that_died_at_its_start_is_started_again():
    start, calls = _starter([RuntimeError(DIED)])
    with pytest.warns(RuntimeWarning, match="attempt 2 of 3"):
        assert retry_kernel_start(start)(kernel_name="python3", cwd="book") == ("km", "kc")
    assert calls == [((), {"kernel_name": "python3", "cwd": "book"})] * 2


def test_the_last_attempt_raises():
    start, calls = _starter([RuntimeError(DIED)] * 3)
    with pytest.warns(RuntimeWarning), pytest.raises(RuntimeError, match="died before replying"):
        retry_kernel_start(start, attempts=3)()
    assert len(calls) == 3


def test_a_kernel_that_starts_on_its_last_attempt_is_used():
    start, calls = _starter([RuntimeError(DIED)] * 2)
    with pytest.warns(RuntimeWarning):
        assert retry_kernel_start(start, attempts=3)() == ("km", "kc")
    assert len(calls) == 3


@pytest.mark.parametrize("error", [RuntimeError("Kernel didn't respond in 60 seconds"),
                                   ValueError(DIED), KeyError("python3")])
def test_other_failures_are_not_retried(error):
    start, calls = _starter([error])
    with pytest.raises(type(error)):
        retry_kernel_start(start)()
    assert len(calls) == 1


def test_nbval_starts_its_kernels_through_the_retry():
    installed = nbval.kernel.start_new_kernel
    assert KERNEL_START_ATTEMPTS == 3
    assert installed.__wrapped__.__module__ == "nbval.kernel"      # nbval's own, wrapped once
    assert not hasattr(installed.__wrapped__, "__wrapped__")
    # RunningKernel finds it by name in nbval.kernel, where conftest put it
    assert "start_new_kernel" in nbval.kernel.RunningKernel.__init__.__code__.co_names
