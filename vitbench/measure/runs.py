"""Repeated runs of one configuration, pooled into one row (as pyperf runs several worker
processes per benchmark).

Each of ``settings.runs`` runs happens in a fresh worker process (or, for ``runs=1`` without
isolation, in this process). The first run settles the batch size (``--batch-size auto``),
measures peak memory, names the attention kernel and writes the trace; the others repeat the
timing at that batch size (without the profiler passes, which cost seconds of CPU to start).

Columns of the pooled row: ``runs`` (runs pooled), ``run_samples_s`` (each run's raw samples,
seconds per step), ``run_medians_s`` (each run's median: the replicates a between-run test
uses), ``run_cv`` (their coefficient of variation), ``samples_s`` (all samples pooled) and the
summaries of the pooled samples (``latency_p50_s``, ``latency_cv``...: pooling adds the
between-run variance to the spread), ``throughput_img_s = batch_size / latency_p50_s``, and the
achieved FLOP/s and MFU at that median.

The timing columns follow the run's ``clock``: wall time (default), or the process's CPU time
per thread. On the CPU the row also carries the process's CPU seconds per step (``cpu_samples_s``,
``run_cpu_samples_s``, ``run_cpu_medians_s``, ``cpu_latency_p50_s``), the wall seconds
(``wall_samples_s``; with ``clock='cpu'`` also ``wall_latency_p50_s``,
``wall_throughput_img_s`` and ``run_wall_medians_s``), and ``cpu_share`` = CPU seconds / (wall seconds x threads)
(``run_cpu_shares`` per run): 1.0 when the threads ran all the time, 0.5 when other processes
took half of it. Wall time grows with the other processes' demand, CPU time much less.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from vitbench.errors import ModelError, model_code
from vitbench.measure.intensity import forward_intensity, intensity_columns
from vitbench.measure.isolate import run_in_worker
from vitbench.measure.record import timing_columns, unique_warnings
from vitbench.measure.roofline import peak_precision_key, roofline, step_flops
from vitbench.measure.single import measure_run
from vitbench.measure.stability import run_cv, time_sharing_warnings, timing_warnings
from vitbench.row_status import RowStatus
from vitbench.row_warnings import merge, warning
from vitbench.settings import RunSettings


def _later_settings(settings: RunSettings, first: dict[str, Any]) -> RunSettings:
    """Settings of runs 2..N: the first run's batch size; no memory pass (unless a cap must be
    verified) and no trace (the first run has them)."""
    return settings.replace(batch_size=first["batch_size"], memory=False, trace_dir=None)


def measure_runs(target, settings: RunSettings, device: str,
                 on_run: Callable[[int], None] | None = None) -> dict[str, Any]:
    """``settings.runs`` runs of ``target``, pooled (see the module docstring). ``on_run(index)``
    is called as run ``index`` (0-based) starts."""
    in_worker = settings.in_worker and target.portable
    records: list[dict[str, Any]] = []

    warnings: list[dict[str, str]] = []
    if settings.in_worker and not target.portable:
        warnings.append(warning(
            "not-isolated",
            f"a live nn.Module is measured in this process: its {settings.runs} run(s) are not isolated",
            "pass a reference such as py:module:function to run them in workers",
        ))
    current = settings
    for index in range(settings.runs):
        if on_run is not None:
            on_run(index)
        # the first run names the attention kernel (the pooled row's); the others need not
        record = (run_in_worker(target, current, device, index == 0) if in_worker
                  else measure_run(target, current, device, index == 0))
        records.append(record)
        if record.get("status") != RowStatus.OK:
            if index > 0:
                warnings.append(warning(
                    "run-failed",
                    f"run {index + 1} of {settings.runs} failed ({record.get('status')}: {record.get('error')}); pooled the others",
                ))
                records.pop()
            break
        if index == 0:
            current = _later_settings(settings, record)
    pooled = pool(records, settings)
    pooled["isolate"] = in_worker
    pooled["warnings"] = merge(warnings, pooled.get("warnings"))
    return pooled


def pool(records: list[dict[str, Any]], settings: RunSettings) -> dict[str, Any]:
    """One row from the records of several runs of one configuration (the first run's identity,
    memory and trace columns; timing pooled). A failed first run is the row."""
    first = dict(records[0])
    first["runs_requested"] = settings.runs
    if first.get("status") != RowStatus.OK:
        first["runs"] = 0
        return first
    run_samples = [list(r["samples_s"]) for r in records]
    medians = [statistics.median(s) for s in run_samples]
    pooled = [s for samples in run_samples for s in samples]
    out = first
    out.update(timing_columns(pooled, first["batch_size"]))
    out.update(
        runs=len(records), run_samples_s=run_samples, run_medians_s=medians, run_cv=run_cv(medians),
        run_steps_per_sample=[r.get("steps_per_sample") for r in records],
    )
    out.update(cpu_columns(records, settings.threads or first.get("env_threads") or 1))
    out["warnings"] = unique_warnings(
        *(r.get("warnings") for r in records),
        timing_warnings(pooled, medians, settings.threads, clock=settings.clock),
        time_sharing_warnings(out.get("cpu_share"), settings.threads or first.get("env_threads") or 1),
    )
    return out


def cpu_columns(records: list[dict[str, Any]], threads: int) -> dict[str, Any]:
    """The CPU-time columns pooled over runs (None where a run has no CPU samples: CUDA)."""
    per_run = [r.get("cpu_samples_s") for r in records]
    if not per_run or any(not s for s in per_run):
        return dict.fromkeys(("cpu_samples_s", "run_cpu_samples_s", "run_cpu_medians_s", "cpu_latency_p50_s", "cpu_share", "run_cpu_shares", "wall_samples_s"))
    walls = [r.get("wall_samples_s") or r["samples_s"] for r in records]
    shares = [sum(c) / (sum(w) * threads) for c, w in zip(per_run, walls)]
    pooled = [s for samples in per_run for s in samples]
    pooled_wall = [s for samples in walls for s in samples]
    out = {
        "cpu_samples_s": pooled,
        "run_cpu_samples_s": [list(s) for s in per_run],
        "run_cpu_medians_s": [statistics.median(s) for s in per_run],
        "cpu_latency_p50_s": statistics.median(pooled),
        "cpu_share": sum(pooled) / (sum(pooled_wall) * threads),
        "run_cpu_shares": shares,
        "wall_samples_s": pooled_wall,
    }
    if records[0].get("clock") == "cpu":  # the wall-clock figures beside the CPU-time ones
        out["wall_latency_p50_s"] = statistics.median(pooled_wall)
        out["wall_throughput_img_s"] = records[0]["batch_size"] / out["wall_latency_p50_s"]
        out["run_wall_medians_s"] = [statistics.median(w) for w in walls]
    return out


def _tf32_enabled() -> bool:
    import torch

    try:
        return torch.get_float32_matmul_precision() != "highest"
    except AttributeError:  # pragma: no cover - API drift
        return bool(torch.backends.cuda.matmul.allow_tf32)


def roofline_columns(target, settings: RunSettings, record: dict[str, Any]) -> dict[str, Any]:
    """Achieved FLOP/s and MFU at the row's median step time, and the arithmetic intensity per
    kind of operation (FLOPs = 2 x MACs per forward pass, x3 for a training step)."""
    macs, median = record.get("macs"), record.get("latency_p50_s")
    if macs is None or not median:
        return {}
    device = record["device"]
    key = peak_precision_key(settings.precision, device, _tf32_enabled())
    roof = roofline(
        macs, settings.mode, median, key,
        record.get("env_device_name") if device.startswith("cuda") else None,
        settings.peak_flops, settings.peak_bandwidth,
    )
    out: dict[str, Any] = {
        "flops_per_step": step_flops(macs, settings.mode),
        "flops_per_s": roof.flops_per_s,
        "peak_flops_per_s": roof.peak_flops_per_s,
        "peak_bandwidth_bytes_per_s": roof.peak_bandwidth_bytes_per_s,
        "peak_source": roof.peak_source,
        "peak_precision": key,
        "mfu": roof.mfu,
    }
    if target.spec is None:
        return out
    try:
        with model_code():  # torch's operators and their FLOP formulas on the model
            per_kind = forward_intensity(target.spec, record["batch_size"], settings.precision, settings.channels_last)
    except ModelError as exc:  # context, not the measurement: never lose the row over it

        out["warnings"] = [warning("intensity-failed", f"arithmetic intensity failed: {exc.detail}")]
        return out
    out.update(intensity_columns(per_kind, roof.ridge))
    return out
