"""Parent side of a worker run: one configuration measured once in a fresh Python process
(``python -m vitbench.measure.worker``), so allocator state, fragmentation, OOMs and memory caps
do not leak from one run into the next.

The request ``{"model": ..., "settings": ..., "device": ...}`` goes to the worker's stdin as
JSON; the worker prints one line ``MARKER <record as JSON>``. A worker that dies (killed by the
kernel's OOM killer, a crash in a native library) or runs past ``timeout_s`` still yields a row,
with ``status`` 'oom' or 'error'.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any

from vitbench.measure.children import preexec
from vitbench.measure.record import failed_row
from vitbench.row_status import RowStatus
from vitbench.settings import RunSettings

MARKER = "@@vitbench-record@@"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def request(target, settings: RunSettings, device: str, detect_attention: bool = True) -> str:
    """The JSON a worker reads: the model, the settings of ONE in-process run, the device, and
    whether to name the attention kernel (``detect_attention``; absent: yes)."""
    one_run = settings.replace(isolate=False, runs=1, timeout_s=None)
    data = {"model": target.to_request(), "settings": one_run.to_dict(), "device": device}
    if not detect_attention:
        data["detect_attention"] = False
    return json.dumps(data)


def run_in_worker(target, settings: RunSettings, device: str, detect_attention: bool = True) -> dict[str, Any]:
    """Measure one run of ``target`` in a fresh process (killed with its parent); one record,
    whatever happens to it. ``detect_attention``: as :func:`~vitbench.measure.single.measure_run`."""
    env = dict(os.environ)
    env.setdefault("KINETO_LOG_LEVEL", "5")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "vitbench.measure.worker"],
            input=request(target, settings, device, detect_attention), capture_output=True, text=True,
            timeout=settings.timeout_s, env=env, preexec_fn=preexec(),
        )
    except subprocess.TimeoutExpired:
        return failed_row(target, settings, device, RowStatus.ERROR, f"isolated run timed out after {settings.timeout_s} s")
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER):])
    if proc.returncode == -signal.SIGKILL:
        return failed_row(
            target, settings, device, RowStatus.OOM,
            "isolated run killed by SIGKILL (most likely the kernel's out-of-memory killer)",
        )
    detail = _last_line(proc.stderr) or _last_line(proc.stdout) or "no output"
    return failed_row(target, settings, device, RowStatus.ERROR, f"isolated run exited with code {proc.returncode}: {detail}")
