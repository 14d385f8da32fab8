"""Measured cost: ``measure(spec, settings)`` times one configuration on a real device and
returns one flat record; ``profile(models, settings)`` does it for several models.

A configuration that runs out of memory or fails at run time becomes a row with
``status='oom'`` or ``status='error'`` (and the message in ``error``): the next configuration
still runs. Bad input (an unknown device, fp16 on the CPU) raises :class:`SpecError`.

Passes, in order, on one built model: timing (warm-up, adaptive sample count), attention-kernel
detection (one profiled step), peak memory (separate steps; see ``vitbench.measure.memory``) and
the optional trace. Throughput is ``batch_size / median step time``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterable, Iterator
from typing import Any

from vitbench.errors import VitbenchError
from vitbench.settings import RunSettings, settings_fields
from vitbench.results import Records
from vitbench.specs import ModelSpec, spec_key

__all__ = ["RunSettings", "measure", "profile", "validate_settings", "TABLE_COLUMNS"]

#: Columns of the default table view of ``vitbench profile``.
TABLE_COLUMNS = [
    "model", "batch_size", "device", "mode", "precision", "status", "throughput_img_s",
    "latency_p50_s", "latency_p90_s", "latency_cv", "peak_memory_bytes", "attention_kernel", "mfu",
]


@contextlib.contextmanager
def thread_count(threads: int | None) -> Iterator[None]:
    """``torch.set_num_threads(threads)`` for the block, then the previous count again."""
    import torch

    if threads is None:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def base_record(spec: ModelSpec, settings: RunSettings, device: str) -> dict[str, Any]:
    """Identity columns of a result row (the configuration, before anything is measured)."""
    img = spec.img_size
    return {
        "model": spec.name,
        "kind": spec.kind,
        "spec_key": spec_key(spec),
        "img_size": img[0] if img[0] == img[1] else f"{img[0]}x{img[1]}",
        "patch_size": getattr(spec, "patch_size", None),
        "batch_size": settings.batch_size,
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
        "isolate": settings.isolate,
        "status": None,
        "error": None,
    }


def _timing_columns(samples: tuple[float, ...], batch_size: int, steps_per_sample: int) -> dict[str, Any]:
    from vitbench.measure.stats import summarize

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
        "steps_per_sample": steps_per_sample,
        "samples_s": list(samples),
    }


def _tf32_enabled() -> bool:
    import torch

    try:
        return torch.get_float32_matmul_precision() != "highest"
    except Exception:  # pragma: no cover - API drift
        return bool(torch.backends.cuda.matmul.allow_tf32)


def _roofline_columns(spec: ModelSpec, settings: RunSettings, batch_size: int, device: str, device_name: str, median_s: float, warnings: list[str]) -> dict[str, Any]:
    from vitbench.analytic import complexity
    from vitbench.measure.intensity import forward_intensity, intensity_columns
    from vitbench.measure.roofline import peak_precision_key, roofline, step_flops

    macs = complexity(spec, batch_size).macs
    key = peak_precision_key(settings.precision, device, _tf32_enabled())
    roof = roofline(
        macs, settings.mode, median_s, key,
        device_name if device.startswith("cuda") else None,
        settings.peak_flops, settings.peak_bandwidth,
    )
    out: dict[str, Any] = {
        "macs": macs,
        "flops_per_step": step_flops(macs, settings.mode),
        "flops_per_s": roof.flops_per_s,
        "peak_flops_per_s": roof.peak_flops_per_s,
        "peak_bandwidth_bytes_per_s": roof.peak_bandwidth_bytes_per_s,
        "peak_source": roof.peak_source,
        "peak_precision": key,
        "mfu": roof.mfu,
    }
    try:
        per_kind = forward_intensity(spec, batch_size, settings.precision, settings.channels_last)
    except Exception as exc:  # context, not the measurement: never lose the row over it
        warnings.append(f"arithmetic intensity failed: {exc.__class__.__name__}: {exc}")
        return out
    out.update(intensity_columns(per_kind, roof.ridge))
    return out


def prewarm(spec: ModelSpec, settings: RunSettings, device: str) -> None:
    """Before a CPU memory cap: load every lazily imported module and library and start the
    thread pool, by running the step at batch size 1 (and one parallel op) uncapped. An import
    that fails under the cap would leave a half-initialised module behind for the process."""
    import torch

    from vitbench.measure import attention_kernel, memory, trace  # noqa: F401
    from vitbench.measure.workload import build_workload

    torch.randn(1 << 20).exp_().sum()
    workload = build_workload(spec, settings, 1, device)
    try:
        workload.run(2)
    finally:
        workload.close()


def _auto_batch(spec: ModelSpec, settings: RunSettings, device: str):
    """Largest batch for which the step runs without OOM (under the memory cap, if any): two
    training steps (the second one runs with the optimizer state the first one created), or
    one forward pass."""
    from vitbench.measure.autobatch import find_max_batch
    from vitbench.measure.oom import is_oom, memory_cap, release_memory
    from vitbench.measure.timer import synchronize
    from vitbench.measure.workload import build_workload

    def fits(batch: int) -> bool:
        failed = False
        workload = None
        try:
            with memory_cap(device, settings.memory_limit_bytes):
                workload = build_workload(spec, settings, batch, device)
                workload.run(2 if settings.mode == "train" else 1)
                synchronize(device)
        except Exception as exc:
            if not is_oom(exc):
                raise
            failed = True
        finally:
            if workload is not None:
                workload.close()
            workload = None
        if failed:
            release_memory(device)
        return not failed

    return find_max_batch(fits, max_batch=settings.max_batch_size)


def _measure_batch(spec: ModelSpec, settings: RunSettings, device: str, batch: int) -> tuple[dict[str, Any], Any, list[str]]:
    """Build and time (an OOM here raises), then on the same model detect the attention kernel,
    measure memory and trace: a failure in one of those passes is a warning, not a lost row.
    Returns (columns, timing, warnings)."""
    from vitbench.measure import attention_kernel, memory, trace
    from vitbench.measure.oom import error_text, memory_cap, release_memory
    from vitbench.measure.timer import time_steps
    from vitbench.measure.workload import build_workload

    out: dict[str, Any] = {}
    warnings: list[str] = []
    workload = None

    def optional(what: str, fn):
        failed = None
        try:
            return fn()
        except Exception as exc:
            failed = error_text(exc)
        warnings.append(f"{what} failed: {failed}")
        release_memory(device)
        return None

    try:
        # The cap covers building and timing; the profiler passes that follow run the same step
        # again and would only add the profiler's own buffers.
        with memory_cap(device, settings.memory_limit_bytes):
            workload = build_workload(spec, settings, batch, device)
            timing = time_steps(
                workload.run, device, min_run_time_s=settings.min_run_time_s,
                warmup=settings.warmup, min_samples=settings.min_samples,
            )
        out.update(_timing_columns(timing.samples_s, batch, timing.steps_per_sample))
        out["attention_kernel"] = optional("attention kernel detection", lambda: attention_kernel.detect(workload, spec))
        if settings.memory:
            out.update(optional("peak memory pass", lambda: memory.measure_workload_memory(workload)) or {})
            if out.get("memory_breakdown_error"):
                warnings.append(f"memory breakdown unavailable: {out['memory_breakdown_error']}")
        if settings.trace_dir:
            name = trace.run_name(spec.name, batch, settings.mode, settings.precision, device)
            out["trace_files"] = optional("trace", lambda: trace.write_trace(workload, settings.trace_dir, name))
            out["trace_run"] = name
    finally:
        if workload is not None:
            workload.close()
        workload = None
    return out, timing, warnings


#: with --batch-size auto, how often the measurement may back off by 10% when the batch the
#: search found runs out of memory after all (allocator state differs between runs)
AUTO_RETRIES = 3


def _measure_here(spec: ModelSpec, settings: RunSettings, device: str) -> dict[str, Any]:
    from vitbench.measure.env import environment
    from vitbench.measure.oom import error_text, is_oom, release_memory
    from vitbench.measure.stats import stability_warning, summarize
    from vitbench.measure.workload import effective_spec

    spec = effective_spec(spec, settings)
    record = base_record(spec, settings, device)
    warnings: list[str] = []
    failure: tuple[str, str] | None = None
    with thread_count(settings.threads):
        record.update(environment(device))
        try:
            batch = settings.batch_size
            if settings.memory_limit_bytes is not None and device == "cpu":
                prewarm(spec, settings, device)
            if batch == "auto":
                search = _auto_batch(spec, settings, device)
                batch = search.batch_size
                record["batch_size"] = batch
                record["batch_size_auto"] = True
                record["auto_probes"] = [list(p) for p in search.probes]
                if search.hit_limit:
                    warnings.append(f"--batch-size auto reached max_batch_size={settings.max_batch_size}; larger batches may fit")
                if batch == 0:
                    raise MemoryError("not even batch size 1 fits (--batch-size auto)")
            retries = AUTO_RETRIES if settings.batch_size == "auto" else 0
            while True:
                backoff = False
                try:
                    columns, timing, pass_warnings = _measure_batch(spec, settings, device, batch)
                except Exception as exc:
                    if not (retries and batch > 1 and is_oom(exc)):
                        raise
                    backoff = True
                if not backoff:
                    break
                release_memory(device)  # outside the except block: the traceback is gone
                retries -= 1
                smaller = max(1, batch * 9 // 10)
                warnings.append(f"batch {batch} found by --batch-size auto ran out of memory while measuring; measured at {smaller}")
                batch = smaller
                record["batch_size"] = batch
            record.update(columns)
            warnings.extend(pass_warnings)
            record.update(_roofline_columns(spec, settings, batch, device, record.get("env_device_name"), record["latency_p50_s"], warnings))
            warning = stability_warning(summarize(timing.samples_s), threads=settings.threads)
            if warning:
                warnings.append(warning)
            record["status"] = "ok"
        except VitbenchError:
            raise
        except Exception as exc:  # a failed configuration is a result row, never lost
            failure = ("oom" if is_oom(exc) else "error", error_text(exc))
        if failure is not None:  # outside the except block: the traceback no longer pins tensors
            record["status"], record["error"] = failure
            release_memory(device)
    record["warnings"] = "; ".join(warnings) or None
    return record


def validate_settings(settings: RunSettings) -> str:
    """The device ``settings`` will run on; :class:`SpecError` if it cannot (no CUDA, fp16 on
    the CPU). Check every configuration with this before running any."""
    from vitbench.measure.env import resolve_device
    from vitbench.measure.workload import check_precision

    device = resolve_device(settings.device)
    check_precision(device, settings.precision)
    return device


def measure(spec: ModelSpec, settings: RunSettings | None = None) -> dict[str, Any]:
    """Measure one configuration; one flat record (raw units: seconds, bytes, FLOP/s).

    Never raises for an OOM or a run-time failure (``status`` = 'oom' | 'error'); raises
    :class:`SpecError` for settings the device cannot run."""
    settings = settings or RunSettings()
    device = validate_settings(settings)
    if settings.isolate:
        from vitbench.measure.isolate import measure_isolated

        return measure_isolated(spec, settings, device)
    return _measure_here(spec, settings, device)


def split_overrides(overrides: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Keyword arguments -> (run-setting changes, spec-field overrides). ``attention`` is a run
    setting (it applies to every ViT)."""
    names = set(settings_fields())
    return (
        {k: v for k, v in overrides.items() if k in names},
        {k: v for k, v in overrides.items() if k not in names},
    )


def profile(
    models: Iterable[str | ModelSpec] | str | ModelSpec,
    settings: RunSettings | None = None,
    **overrides: Any,
) -> Records:
    """Measure every model under ``settings``; keyword arguments that name a
    :class:`RunSettings` field change the settings, the rest override spec fields.

    >>> profile(["vit-s/16", "resnet18"], mode="train", batch_size=8)  # doctest: +SKIP
    """
    from vitbench.api import resolve_models

    if isinstance(models, str) or not isinstance(models, Iterable):
        models = [models]
    setting_changes, spec_overrides = split_overrides(overrides)
    settings = settings or RunSettings()
    if setting_changes:
        settings = dataclasses.replace(settings, **setting_changes)
    specs = resolve_models(models, spec_overrides)
    validate_settings(settings)
    return Records(measure(spec, settings) for spec in specs)
