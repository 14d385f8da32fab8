"""The columns of a measured row: identity (what was measured, how), timing summaries of raw
samples, and a failed or refused row. Pure: no torch, nothing run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vitbench.measure.stats import summarize
from vitbench.results import identity_columns
from vitbench.row_status import RowStatus
from vitbench.row_warnings import merge
from vitbench.settings import RunSettings
from vitbench.specs.identity import RowIdentity

#: Columns of the default table view of ``vitbench profile``.
TABLE_COLUMNS = [
    "model", "batch_size", "device", "mode", "precision", "status", "throughput_img_s",
    "latency_p50_s", "latency_p90_s", "latency_cv", "peak_memory_bytes", "attention_kernel", "mfu",
]


def base_record(target, settings: RunSettings, device: str) -> dict[str, Any]:
    """Identity columns of a result row (the configuration, before anything is measured):
    the model (``target``: a :class:`vitbench.measure.target.Measured`), its size (``params``;
    ``macs`` of the batch's forward pass, ``macs_per_image``) and the run settings."""
    spec = target.spec
    identity = RowIdentity.of(target, settings.batch_size)
    return {
        **identity_columns(
            model=identity.model, kind=identity.kind, spec_key=identity.spec_key,
            img_size=identity.img_size, patch_size=identity.patch_size,
            batch_size=identity.batch_size, params=target.params, macs_per_image=target.macs,
        ),
        "source": identity.source,
        "overrides": target.overrides,
        "reference": target.reference,
        "macs_per_image": target.macs,
        "macs_source": target.macs_source,
        "device": device,
        "mode": settings.mode,
        "precision": settings.precision,
        "channels_last": settings.channels_last,
        "compile": settings.compile,
        "attention": getattr(spec, "attention", None),
        "optimizer": settings.optimizer if settings.mode == "train" else None,
        "threads": settings.threads,
        "min_run_time_s": settings.min_run_time_s,
        "warmup": settings.warmup,
        "isolate": settings.in_worker,
        "runs": settings.runs,
        "clock": settings.clock,
        "allocator": settings.allocator,
        "memory_limit_bytes": settings.memory_limit_bytes,
        "status": None,
        "error": None,
    }


def failed_row(target, settings: RunSettings, device: str, status: RowStatus, error: str) -> dict[str, Any]:
    """A row for a configuration that did not produce a measurement: status 'oom', 'error' or
    'refused' (not run), with the reason in ``error``."""
    record = base_record(target, settings, device)
    record.update(status=status, error=error, warnings=[])
    return record


def timing_columns(samples: Sequence[float], batch_size: int) -> dict[str, Any]:
    """Summaries of per-step times (seconds): ``latency_p50_s`` is the median of ``samples``
    and ``throughput_img_s = batch_size / latency_p50_s``."""
    s = summarize(samples)
    return {
        "throughput_img_s": batch_size / s.median,
        "latency_p50_s": s.median,
        "latency_p90_s": s.p90,
        "latency_iqr_s": s.iqr,
        "latency_cv": s.cv,
        "latency_mean_s": s.mean,
        "latency_min_s": s.minimum,
        "n_samples": s.n,
        "samples_s": [float(v) for v in samples],
    }


def unique_warnings(*lists: Sequence[Any] | None) -> list[dict[str, str]]:
    """Warnings of several lists as one list, each once, in order of first appearance (the
    ``warnings`` column: ``{"code", "message", "advice"}`` objects, :mod:`vitbench.row_warnings`)."""
    return merge(*lists)
