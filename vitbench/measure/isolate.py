"""``--isolate``: each configuration in a fresh Python process, so allocator state, fragmentation
and OOMs do not leak from one configuration into the next.

The parent sends ``{"spec": ..., "settings": ..., "device": ...}`` as JSON on the child's stdin;
the child (``python -m vitbench.measure.isolate``) measures and prints one line
``MARKER <record as JSON>``. A child that dies (killed by the kernel's OOM killer, a crash in a
native library, a timeout) still yields a row, with ``status`` 'oom' or 'error'.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any

from vitbench.settings import RunSettings
from vitbench.specs import ModelSpec, spec_from_dict, spec_to_dict

MARKER = "@@vitbench-record@@"


def _failed_row(spec: ModelSpec, settings: RunSettings, device: str, status: str, error: str) -> dict[str, Any]:
    from vitbench.measure.profile import base_record
    from vitbench.measure.workload import effective_spec

    record = base_record(effective_spec(spec, settings), settings, device)
    record.update(status=status, error=error, warnings=None)
    return record


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def measure_isolated(spec: ModelSpec, settings: RunSettings, device: str) -> dict[str, Any]:
    payload = json.dumps(
        {"spec": spec_to_dict(spec), "settings": settings.replace(isolate=False).to_dict(), "device": device}
    )
    env = dict(os.environ)
    env.setdefault("KINETO_LOG_LEVEL", "5")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "vitbench.measure.isolate"],
            input=payload, capture_output=True, text=True, timeout=settings.timeout_s, env=env,
        )
    except subprocess.TimeoutExpired:
        return _failed_row(spec, settings, device, "error", f"isolated run timed out after {settings.timeout_s} s")
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARKER):
            record = json.loads(line[len(MARKER):])
            record["isolate"] = True
            return record
    if proc.returncode == -signal.SIGKILL:
        return _failed_row(
            spec, settings, device, "oom",
            "isolated run killed by SIGKILL (most likely the kernel's out-of-memory killer)",
        )
    detail = _last_line(proc.stderr) or _last_line(proc.stdout) or "no output"
    return _failed_row(spec, settings, device, "error", f"isolated run exited with code {proc.returncode}: {detail}")


def main() -> int:
    """Child side: read the request from stdin, measure, print the marked record."""
    request = json.loads(sys.stdin.read())
    spec = spec_from_dict(request["spec"])
    settings = RunSettings.from_dict(request["settings"])
    device = request["device"]
    from vitbench.measure.profile import _measure_here

    try:
        record = _measure_here(spec, settings, device)
    except Exception as exc:  # SpecError and the like: still one row
        record = _failed_row(spec, settings, device, "error", f"{exc.__class__.__name__}: {exc}")
    record["isolate"] = True
    sys.stdout.write(MARKER + json.dumps(record, default=str) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
