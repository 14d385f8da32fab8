"""Run a test in a fresh interpreter: for behaviour that depends on the process's allocation
history (an RLIMIT_DATA cap counts mappings the C allocator may already hold from earlier tests)."""

import functools
import inspect
import os
import subprocess
import sys


def in_fresh_process(test):
    marker = f"{test.__module__}.{test.__name__}"

    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        if os.environ.get("VITBENCH_FRESH_PROCESS") == marker:
            return test(*args, **kwargs)
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "slow or not slow",
             f"{inspect.getfile(test)}::{test.__name__}"],
            env={**os.environ, "VITBENCH_FRESH_PROCESS": marker},
            capture_output=True, text=True, check=False,
        )
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]

    return wrapper
