"""One run of one configuration, in this process: the passes on one built model (timing under
the memory cap, then attention-kernel detection, peak memory and the optional trace), the
memory cap from the first allocation, and ``--batch-size auto``.

The cap (:class:`~vitbench.measure.oom.MemoryCap`) is fixed right after the runtime starts
(libraries loaded, thread pool running; no model built), so everything the configuration
allocates counts: building, warm-up, timing. On the CPU, those blocks run on a step thread
that is replaced after one runs out of memory (:mod:`vitbench.measure.step_thread`: oneDNN's
per-thread state does not survive a failed primitive creation). The profiler passes that follow
run uncapped (the profiler's own buffers are not the step's) and the peak they measure is
checked against the limit: a configuration whose measured peak exceeds it is out of memory
(``status='oom'``).

``--batch-size auto`` starts from the memory model's largest batch for the budget (``vitbench
plan``), measures it and, while it does not fit, steps down (10%, or in proportion to the
measured peak over the limit); without a memory model it first searches under the cap by
doubling and bisection.
"""

from __future__ import annotations

from typing import Any

from vitbench.errors import ModelError, VitbenchError, model_code
from vitbench.measure import attention_kernel, memory, timer, trace
from vitbench.measure import workload as workloads
from vitbench.measure.allocator import apply_allocator
from vitbench.measure.autobatch import find_max_batch
from vitbench.measure.budget import auto_budget, planned_batch
from vitbench.measure.env import environment, thread_count
from vitbench.measure.oom import MemoryCap, error_text, is_oom, release_memory
from vitbench.measure.record import base_record, timing_columns
from vitbench.measure.step_thread import step_runner
from vitbench.measure.target import Measured
from vitbench.measure.timer import synchronize
from vitbench.measure.workload import effective_target
from vitbench.models.target import Target
from vitbench.procfs import proc_bytes
from vitbench.row_status import RowStatus
from vitbench.row_warnings import warning
from vitbench.settings import RunSettings

#: with --batch-size auto: how many batches are measured, from the memory model's (or the
#: search's) down, before giving up
AUTO_ATTEMPTS = 8


class PeakOverLimit(MemoryError):
    """The measured peak exceeded the memory limit (the step ran, but does not fit the cap)."""

    def __init__(self, peak: int, limit: int, batch: int):
        self.peak, self.limit = peak, limit
        super().__init__(f"measured peak {peak} B exceeds the memory limit of {limit} B at batch {batch}")


def step_down(batch: int, peak: int | None = None, limit: int | None = None) -> int:
    """The next batch to try below ``batch``: one step of 10% fewer images (at least one
    fewer), or, when a measured ``peak`` exceeded ``limit``, the batch scaled by limit / peak
    if that is lower (activations grow with the batch, so this lands at or below the edge)."""
    smaller = max(1, min(batch - 1, batch * 9 // 10))
    if peak and limit and peak > limit:
        smaller = min(smaller, max(1, batch * limit // peak))
    return smaller


def _warm_up_module():
    """A tiny model with the layers vision models use (convolution, BatchNorm, GELU, dropout,
    linear, LayerNorm, scaled-dot-product attention), 8x8 images, 10 classes."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class WarmUp(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.GELU(), nn.Dropout(0.1))
            self.norm = nn.LayerNorm(8)
            self.qkv = nn.Linear(8, 24)
            self.head = nn.Linear(8, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            tokens = self.norm(self.conv(x).flatten(2).transpose(1, 2))
            q, k, v = self.qkv(tokens).view(x.shape[0], -1, 3, 2, 4).permute(2, 0, 3, 1, 4)
            attended = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).flatten(2)
            return self.head(attended.mean(1))

    return WarmUp()


def start_runtime(device: str, settings: RunSettings) -> None:
    """Before the memory cap: load what a step needs and start the thread pools, without
    building the model (a model that does not fit must fail under the cap). Three steps of a
    tiny model with the same mode, precision, optimizer and memory format (not compiled) load
    the measurement modules, the profiler, oneDNN's kernels, autocast and the optimizer's
    lazily imported modules: an import that failed under the cap would leave a half-initialised
    module behind in the process."""
    import torch
    import torch.profiler  # noqa: F401

    torch.randn(1 << 16).exp_().sum()  # large enough to run on the intra-op pool
    module = _warm_up_module()
    warm = Target("warm-up", "module", (3, 8, 8), build=lambda: module, module=module)
    target = Measured(warm, None, None, None, 10)
    workload = workloads.build_workload(target, settings.replace(compile=False, attention=None), 2, device)
    try:
        workload.run(3)
    finally:
        workload.close()
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _cap_bytes(settings: RunSettings, budget: int | None) -> int | None:
    """The cap in force: the memory limit, or (``--batch-size auto`` without one) the budget."""
    if settings.memory_limit_bytes is not None:
        return settings.memory_limit_bytes
    return budget if settings.batch_size == "auto" else None


def measure_batch(target, settings: RunSettings, device: str, batch: int, cap,
                  detect_attention: bool = True) -> tuple[dict[str, Any], list[str]]:
    """Build and time under ``cap`` (an OOM raises), then on the same model detect the attention
    kernel (unless ``detect_attention`` is false: a pooled row's later runs, whose first run
    named it), measure peak memory (always, when capped) and trace: a failure in one of those
    passes is a warning, not a lost row. Raises :class:`PeakOverLimit` when the measured peak
    exceeds the cap. Returns (columns, warnings)."""
    out: dict[str, Any] = {}
    warnings: list[dict[str, str]] = []
    workload = None

    def optional(what: str, fn):
        failed = None
        try:
            with model_code():  # a pass over the user's model: its kernels, its memory, a trace
                return fn()
        except VitbenchError as exc:  # the pass failed (the model's code, torch, the trace folder): a warning on the row
            failed = error_text(exc)
        warnings.append(warning("pass-failed", f"{what} failed: {failed}"))
        release_memory(device)
        return None

    def build_and_time():
        built = workloads.build_workload(target, settings, batch, device)
        try:
            return built, timer.time_steps(
                built.run, device, min_run_time_s=settings.min_run_time_s,
                warmup=settings.warmup, min_samples=settings.min_samples,
            )
        except BaseException:
            built.close()
            raise

    try:
        workload, timing = cap.run(build_and_time)
        out.update(timing_columns(clock_samples(timing, settings.clock), batch))
        out["steps_per_sample"] = timing.steps_per_sample
        out["wall_samples_s"] = list(timing.samples_s)
        out["cpu_samples_s"] = list(timing.cpu_samples_s) if timing.cpu_samples_s is not None else None
        if detect_attention:  # a profiler pass: importing torch.profiler alone costs seconds of CPU
            out["attention_kernel"] = optional("attention kernel detection", lambda: attention_kernel.detect(workload, target.spec))
        if settings.memory or cap.limit_bytes is not None:
            out.update(optional("peak memory pass", lambda: memory.measure_workload_memory(workload)) or {})
            if out.get("memory_breakdown_error"):
                warnings.append(warning("memory-breakdown", f"memory breakdown unavailable: {out['memory_breakdown_error']}"))
        if settings.trace_dir:
            name = trace.run_name(target.name, batch, settings.mode, settings.precision, device)
            out["trace_files"] = optional("trace", lambda: trace.write_trace(workload, settings.trace_dir, name))
            out["trace_run"] = name
    finally:
        if workload is not None:
            workload.close()
        workload = None
    peak = out.get("peak_memory_bytes")
    if cap.limit_bytes is not None:
        if peak is None:
            warnings.append(warning("memory-cap-unverified", f"the peak was not measured, so the memory limit of {cap.limit_bytes} B is not verified"))
        elif peak > cap.limit_bytes:
            raise PeakOverLimit(peak, cap.limit_bytes, batch)
    return out, warnings


def clock_samples(timing, clock: str) -> list[float]:
    """The samples of the run's clock: wall seconds per step, or (``clock='cpu'``) the
    process's CPU seconds per step divided by the threads (the step time if the threads had
    their cores to themselves)."""
    if clock == "wall":
        return list(timing.samples_s)
    import torch

    if timing.cpu_samples_s is None:
        raise RuntimeError("no CPU-time samples (the CPU-time clock is for --device cpu)")
    threads = torch.get_num_threads()
    return [s / threads for s in timing.cpu_samples_s]


def _fits(target, settings: RunSettings, device: str, cap):
    """``fits(batch)``: two training steps (the second with the optimizer state the first
    created), or one forward pass, run under ``cap`` without running out of memory."""
    def probe(batch: int) -> None:
        workload = workloads.build_workload(target, settings, batch, device)
        try:
            workload.run(2 if settings.mode == "train" else 1)
            synchronize(device)
        finally:
            workload.close()

    def fits(batch: int) -> bool:
        failed = False
        try:
            cap.run(lambda: probe(batch))
        except (MemoryError, RuntimeError, ModelError) as exc:  # what is_oom can call out of memory
            if not is_oom(exc, capped=cap.limit_bytes is not None):
                raise
            failed = True
        if failed:  # outside the except block: the traceback no longer pins the probe's tensors
            cap.recover()
        return not failed

    return fits


def _measure_or_none(target, settings, device, batch, cap):
    """(measure_batch's result, None, None) or, when it ran out of memory (under the cap) or
    its measured peak exceeded the limit, (None, the peak or None, the error's text)."""
    result, peak, reason = None, None, None
    try:
        result = measure_batch(target, settings, device, batch, cap)
    except (MemoryError, RuntimeError, ModelError) as exc:  # what is_oom can call out of memory
        if not is_oom(exc, capped=cap.limit_bytes is not None):
            raise
        peak, reason = getattr(exc, "peak", None), error_text(exc, limit=160)
    if result is None:
        cap.recover()  # outside the except block: the traceback is gone
    return result, peak, reason


def measure_auto(target, settings: RunSettings, device: str, cap, budget: int | None, record: dict[str, Any]):
    """``--batch-size auto``: (batch, columns, warnings); fills the columns
    ``batch_size_plan`` (the memory model's batch), ``auto_method`` ('plan' or 'search'),
    ``auto_probes`` (the search's [batch, fits] under the cap, in order; empty after a plan) and
    ``auto_attempts`` (the [batch, fits] measured, in order) of ``record``. Raises MemoryError
    when not even one image fits."""
    warnings: list[dict[str, str]] = []
    planned = planned_batch(target, settings, budget, device) if budget is not None else None
    record["batch_size_plan"] = planned
    probes: list[list[Any]] = []
    attempts: list[list[Any]] = []
    record["auto_probes"], record["auto_attempts"] = probes, attempts
    if planned == 0:
        raise MemoryError(f"not even batch size 1 fits in {budget} B, as the memory model predicts (vitbench plan)")
    if planned is None:
        record["auto_method"] = "search"
        search = find_max_batch(_fits(target, settings, device, cap.strict()), max_batch=settings.max_batch_size)
        probes.extend([b, ok] for b, ok in search.probes)
        # the probes' freed memory that the C allocator keeps mapped would count against the
        # level fixed before them; the measured peak is what is checked against the limit
        cap.rebase()
        if search.hit_limit:
            warnings.append(warning("auto-batch-limit", f"--batch-size auto reached max_batch_size={settings.max_batch_size}",
                                    "larger batches may fit: raise --max-batch-size"))
        start = search.batch_size
    else:
        record["auto_method"] = "plan"
        start = min(planned, settings.max_batch_size)
        if planned > settings.max_batch_size:
            warnings.append(warning("auto-batch-limit", f"--batch-size auto stopped at max_batch_size={settings.max_batch_size}",
                                    f"the memory model fits {planned}: raise --max-batch-size"))
    batch, result, reasons = start, None, []
    for _ in range(AUTO_ATTEMPTS):
        if batch < 1:
            break
        result, peak, reason = _measure_or_none(target, settings, device, batch, cap)
        attempts.append([batch, result is not None])
        if result is None:
            reasons.append(reason)
        if result is not None or batch == 1:
            break
        batch = step_down(batch, peak, cap.limit_bytes)
    if result is None:
        raise MemoryError(("not even batch size 1 fits (--batch-size auto)" if batch <= 1 else
                           f"no batch from {start} down to {batch} fits (--batch-size auto)") + (f"; last: {reasons[-1]}" if reasons else ""))
    if batch != start:
        warnings.append(warning("auto-batch-stepped-down",
                                f"batch {start} from --batch-size auto did not fit when measured ({reasons[0]}); measured at {batch}"))
    columns, pass_warnings = result
    return batch, columns, warnings + pass_warnings


def measure_run(target, settings: RunSettings, device: str, detect_attention: bool = True) -> dict[str, Any]:
    """One run of one configuration in this process: one flat record with the raw samples
    (``samples_s``) and the memory columns; summaries across runs are added by
    :mod:`vitbench.measure.runs`. ``detect_attention``: name the attention kernel (a profiler
    pass; a pooled row's later runs skip it). Never raises for an OOM or a run-time failure."""
    target = effective_target(target, settings)
    record = base_record(target, settings, device)
    warnings: list[dict[str, str]] = []
    failure: tuple[str, str] | None = None
    capped = False
    steps = None
    with thread_count(settings.threads):
        try:
            with model_code():  # the user's model, built and run for real
                record["env_malloc"] = apply_allocator(settings.allocator)
                will_cap = settings.memory_limit_bytes is not None or settings.batch_size == "auto"
                steps = step_runner(device, will_cap, warm=lambda: start_runtime(device, settings))
                budget = None
                if settings.batch_size == "auto":
                    budget, source = auto_budget(settings, device)
                    record["memory_budget_bytes"], record["memory_budget_source"] = budget, source
                cap = MemoryCap(device, _cap_bytes(settings, budget), steps=steps)
                capped = cap.limit_bytes is not None
                record.update(environment(device))
                if settings.batch_size == "auto":
                    batch, columns, pass_warnings = measure_auto(target, settings, device, cap, budget, record)
                    record["batch_size"], record["batch_size_auto"] = batch, True
                    if target.macs is not None:
                        record["macs"] = target.macs * batch
                else:
                    columns, pass_warnings = measure_batch(target, settings, device, settings.batch_size, cap,
                                                           detect_attention)
                record.update(columns)
                warnings.extend(pass_warnings)
                record["status"] = RowStatus.OK
        # a configuration whose model fails (built, run for real: its code, torch, the device) is
        # a result row, never lost; vitbench's own bug is raised (exit 3)
        except ModelError as exc:
            failure = (RowStatus.OOM if is_oom(exc, capped) else RowStatus.ERROR, error_text(exc))
        except MemoryError as exc:  # out of host memory, or the measured peak over the limit
            failure = (RowStatus.OOM, error_text(exc))
        finally:
            if steps is not None:
                steps.close()
        if failure is not None:  # outside the except block: the traceback no longer pins tensors
            record["status"], record["error"] = failure
            release_memory(device)
    record["peak_rss_bytes"] = peak_rss()
    record["warnings"] = warnings
    return record


def peak_rss() -> int | None:
    """The process's peak resident memory (VmHWM, Linux), beside ``peak_memory_bytes`` (the
    tensors' peak, what --memory-limit is checked against): the interpreter, torch's libraries,
    oneDNN's primitives and the allocator's cache on top. None where /proc has no such line."""
    return proc_bytes("/proc/self/status", "VmHWM")
