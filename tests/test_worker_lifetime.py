"""A worker dies with its parent (issue "hardening": a measurement worker kept running 30-45 s
after its parent was SIGKILLed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


def _children(parent: int, marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and marker in cmdline:
            found.append(int(entry.name))
    return found


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_measurement_worker_dies_with_its_parent():
    parent = subprocess.Popen(
        [sys.executable, "-m", "vitbench", "profile", "mnist-vit", "--min-time", "120", "--runs", "2", "--threads", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        workers: list[int] = []
        while time.monotonic() < deadline and not workers:
            workers = _children(parent.pid, "vitbench.measure.worker")
            time.sleep(0.1)
        assert workers, "no worker started"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(Path(f"/proc/{w}").exists() and "Z" not in _state(w) for w in workers):
            time.sleep(0.1)
        assert not [w for w in workers if Path(f"/proc/{w}").exists() and "Z" not in _state(w)], "the worker outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"
