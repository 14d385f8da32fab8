"""The report's "Environment" lines: device, library versions, threads, runs and machine load of
the measured rows, and how many rows of each status the results hold."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _distinct(records: Sequence[dict[str, Any]], key: str) -> list[str]:
    return sorted({str(r.get(key)) for r in records if r.get(key) is not None})


def _measured_lines(measured: Sequence[dict[str, Any]], env: dict[str, Any]) -> list[str]:
    """Device, torch and threads, machine load, timing clock and runs of the measured rows."""
    r = measured[0]
    lines = [
        f"device: {', '.join(_distinct(measured, 'device'))} ({r.get('env_device_name') or r.get('env_cpu')})",
        f"torch {r.get('env_torch')}, CUDA {r.get('env_cuda') or 'none'}, threads "
        f"{', '.join(_distinct(measured, 'env_threads')) or '?'}, CPU cores {r.get('env_cpu_count') or env.get('cpu_count')}",
    ]
    loads = [r["machine_loadavg_1m"] for r in measured if isinstance(r.get("machine_loadavg_1m"), (int, float))]
    busy = [r["machine_busy_cores"] for r in measured if isinstance(r.get("machine_busy_cores"), (int, float))]
    if loads:
        lines.append(
            f"machine while measuring: load average (1 min) {min(loads):.2f} to {max(loads):.2f}"
            + (f", other processes busy on up to {max(busy):.1f} of {r.get('machine_cpus') or '?'} cores" if busy else "")
            + " (machine_* columns of results.csv)"
        )
    clocks = _distinct([r for r in measured if r.get("clock")], "clock")
    if clocks:
        said = {"cpu": "CPU time (--clock cpu: the process's CPU seconds per step and thread)", "wall": "wall time"}
        lines.append(f"timing clock: {', '.join(said.get(c, c) for c in clocks)} (clock column of results.csv)")
    runs = _distinct(measured, "runs")
    if runs:
        lines.append(f"runs per configuration: {', '.join(runs)} (fresh worker processes, pooled)")
    return lines


def environment_lines(records: Sequence[dict[str, Any]], sidecar: dict[str, Any]) -> list[str]:
    env = sidecar.get("environment") or {}
    measured = [r for r in records if r.get("env_torch")]
    lines = _measured_lines(measured, env) if measured else []
    if env.get("sources"):
        lines.append(f"merged from {len(env['sources'])} stores")
    if env.get("load_average_1m") is not None and measured:
        cores = env.get("cpu_count") or 1
        busy = env["load_average_1m"] > cores  # more runnable work than cores: contention
        lines.append(
            f"load average when the sweep started: {env['load_average_1m']} on {cores} cores"
            + (" (more runnable work than cores: measured times may be inflated and noisy)" if busy else "")
        )
    if env.get("python"):
        lines.append(f"python {env.get('python')}, {env.get('platform')}")
    versions = set(_distinct(records, "vitbench_version")) | ({env["vitbench_version"]} if env.get("vitbench_version") else set())
    if versions:
        lines.append(f"vitbench {', '.join(sorted(versions))}")
    statuses: dict[str, int] = {}
    for r in records:
        statuses[str(r.get("status"))] = statuses.get(str(r.get("status")), 0) + 1
    lines.append(
        f"{len(records)} result rows ({', '.join(f'{n} {s}' for s, n in sorted(statuses.items()))}); raw data: "
        "[results.csv](results.csv), [results.json](results.json) (with raw timing samples)"
    )
    return lines
