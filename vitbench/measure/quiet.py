"""Silence the profiler's native start/stop chatter (libkineto writes lines such as
``USDT: ... profiler_start`` straight to file descriptor 2, below Python's ``sys.stderr``).

Only the profiler's start and stop calls run with fd 2 pointed at /dev/null; the profiled steps
do not, so warnings and errors raised while measuring still reach the user. Set
``VITBENCH_PROFILER_LOGS=1`` to see the chatter."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def native_stderr_silenced() -> Iterator[None]:
    if os.environ.get("VITBENCH_PROFILER_LOGS"):
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real fd 2 (embedded interpreters)
        yield
        return
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@contextlib.contextmanager
def quiet_profile(prof) -> Iterator:
    """``with quiet_profile(torch.profiler.profile(...)) as prof:`` - start and stop silenced."""
    with native_stderr_silenced():
        prof.__enter__()
    try:
        yield prof
    except BaseException:
        with native_stderr_silenced():
            prof.__exit__(*sys.exc_info())
        raise
    else:
        with native_stderr_silenced():
            prof.__exit__(None, None, None)


def quiet_step(prof) -> None:
    """``prof.step()`` (which starts and stops recording under a schedule), silenced."""
    with native_stderr_silenced():
        prof.step()
