"""Adaptive timing of a repeated step, in the manner of ``torch.utils.benchmark``'s
``blocked_autorange``: warm up, calibrate how many steps make one sample, then collect samples
until a minimum measuring time has passed. CUDA: CUDA events with synchronisation; CPU:
``time.perf_counter``, and ``time.process_time`` beside it (the CPU seconds this process's
threads used: on a time-shared machine wall time grows with the other processes' demand, CPU time
much less). The loop adds a few clock reads per sample and nothing per step."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    """Raw timing: ``samples_s`` are seconds per step, each the mean over ``steps_per_sample``
    consecutive steps (1 for any step longer than the minimum sample time)."""

    samples_s: tuple[float, ...]
    steps_per_sample: int
    warmup_steps: int
    total_time_s: float
    cpu_samples_s: tuple[float, ...] | None = None  # CPU seconds per step, all threads (CPU only)

    @property
    def total_steps(self) -> int:
        return len(self.samples_s) * self.steps_per_sample


def sample_size(step_seconds: float, min_sample_s: float, max_steps: int = 10_000) -> int:
    """Steps per sample so that one sample lasts at least ``min_sample_s``."""
    if step_seconds <= 0:
        return max_steps
    return max(1, min(max_steps, math.ceil(min_sample_s / step_seconds)))


class _CpuClock:
    """Wall time of the block; ``last_cpu_s`` = the process's CPU time during it."""

    last_cpu_s: float | None = None

    def block(self, run: Callable[[int], None], steps: int) -> float:
        cpu = time.process_time()
        start = time.perf_counter()
        run(steps)
        elapsed = time.perf_counter() - start
        self.last_cpu_s = time.process_time() - cpu
        return elapsed


class _CudaClock:
    """Events recorded on the current stream around the block; ``synchronize`` on the end event
    waits for the GPU, so the block's time is GPU time, not launch time."""

    def __init__(self) -> None:
        import torch

        self._torch = torch
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def block(self, run: Callable[[int], None], steps: int) -> float:
        self.start.record()
        run(steps)
        self.end.record()
        self.end.synchronize()
        return self.start.elapsed_time(self.end) / 1e3


def clock_for(device: str):
    return _CudaClock() if device.startswith("cuda") else _CpuClock()


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def time_steps(
    run: Callable[[int], None],
    device: str = "cpu",
    *,
    min_run_time_s: float = 1.0,
    warmup: int = 3,
    min_samples: int = 5,
    min_sample_s: float | None = None,
    clock=None,
) -> Timing:
    """Time ``run(n)`` (which performs n steps).

    1. ``warmup`` steps, then synchronise (compilation, allocator and autotuning settle here).
    2. One timed step estimates the step time; a sample is then enough steps to last
       ``min_sample_s`` (default: 1% of ``min_run_time_s``, at least 5 ms; on CUDA
       ``min_run_time_s / (2 x min_samples)``: each sample starts from a synchronised, empty
       queue, so the host's dispatch that a back-to-back loop hides behind the previous step's
       kernels shows in every sample; a sample of several steps hides it as such a loop does).
    3. Samples are taken until at least ``min_run_time_s`` of them and ``min_samples`` samples.

    ``clock`` (an object with ``block(run, steps) -> seconds``) defaults to the device's clock.
    """
    clock = clock or clock_for(device)
    run(warmup)
    synchronize(device)
    estimate = clock.block(run, 1)
    if min_sample_s is None:
        min_sample_s = max(0.005, min_run_time_s / (2 * min_samples) if device.startswith("cuda") else min_run_time_s / 100)
    steps = sample_size(estimate, min_sample_s)
    samples: list[float] = []
    cpu_samples: list[float] = []
    total = 0.0
    while total < min_run_time_s or len(samples) < min_samples:
        elapsed = clock.block(run, steps)
        total += elapsed
        samples.append(elapsed / steps)
        cpu = getattr(clock, "last_cpu_s", None)
        if cpu is not None:
            cpu_samples.append(cpu / steps)
    cpu_out = tuple(cpu_samples) if len(cpu_samples) == len(samples) else None
    return Timing(tuple(samples), steps, warmup + 1, total, cpu_out)
