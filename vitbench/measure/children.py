"""Worker processes die with their parent: a measurement or calibration worker left running
30-45 s after its parent was SIGKILLed (issue "hardening") took CPU from whatever ran next.

:func:`die_with_parent` is a ``preexec_fn``: in the child, between fork and exec, it asks Linux
to SIGKILL the process when its parent thread exits (``prctl(PR_SET_PDEATHSIG)``), and exits
at once if the parent is already gone. Elsewhere it does nothing.
"""

from __future__ import annotations

import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int | None = None) -> None:
    """Call in the child (``preexec_fn``) or at the start of a worker."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if parent is not None and os.getppid() != parent:  # the parent died before prctl
        os._exit(1)


def preexec() -> object:
    """A ``preexec_fn`` bound to this process as the parent."""
    parent = os.getpid()
    return lambda: die_with_parent(parent)


__all__ = ["die_with_parent", "preexec"]
