"""The environment a measurement runs in: the device it resolves to, the settings it can honour,
the CPU thread count, and the ``env_*`` columns recorded with every result (the software and
hardware; the machine's changing state is :mod:`vitbench.measure.machine`)."""

from __future__ import annotations

import contextlib
import functools
import os
import platform
from collections.abc import Iterator
from typing import Any

from vitbench.errors import SpecError
from vitbench.measure.machine import free_cores, nvidia_smi
from vitbench.measure.workload import check_precision
from vitbench.row_warnings import warning
from vitbench.settings import RunSettings, default_threads
from vitbench.version import __version__


def resolve_device(device: str) -> str:
    """'auto' -> 'cuda' when a CUDA device is usable, else 'cpu'."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        built = f"CUDA {torch.version.cuda}" if torch.version.cuda else "without CUDA"
        raise SpecError("device", "cuda", f"no CUDA device available (torch {torch.__version__} built {built})")
    return device


@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo (Linux), else ``platform.processor()``."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@functools.lru_cache(maxsize=1)
def nvidia_driver() -> str | None:
    """The NVIDIA driver version (e.g. '550.54.15') from nvidia-smi; None when unavailable."""
    out = nvidia_smi("--query-gpu=driver_version", "--format=csv,noheader") or ""
    return out.strip().splitlines()[0].strip() if out.strip() else None


def environment(device: str) -> dict[str, Any]:
    """``env_*`` columns for a result measured on ``device`` ('cpu' or 'cuda[:i]')."""
    import torch

    record: dict[str, Any] = {
        "env_device_name": cpu_model(),
        "env_torch": torch.__version__,
        "env_cuda": torch.version.cuda,
        "env_driver": None,
        "env_cpu": cpu_model(),
        "env_threads": torch.get_num_threads(),
        "env_cpu_count": os.cpu_count(),
        "env_python": platform.python_version(),
        "env_platform": platform.platform(terse=True),
        "vitbench_version": __version__,
    }
    if device.startswith("cuda"):
        index = torch.cuda.current_device() if device == "cuda" else int(device.split(":")[1])
        props = torch.cuda.get_device_properties(index)
        record["env_device_name"] = props.name
        record["env_device_memory_bytes"] = int(props.total_memory)
        record["env_device_capability"] = f"{props.major}.{props.minor}"
        record["env_driver"] = nvidia_driver()
        record["env_cudnn"] = torch.backends.cudnn.version()
    return record


def validate_settings(settings: RunSettings) -> str:
    """The device ``settings`` will run on; :class:`SpecError` if it cannot (no CUDA, fp16 on
    the CPU). Check every configuration with this before running any."""
    device = resolve_device(settings.device)
    check_precision(device, settings.precision)
    if settings.clock == "cpu" and device.startswith("cuda"):
        raise SpecError("clock", "cpu", "the CPU-time clock is for --device cpu (on CUDA the CPU only launches kernels)")
    return device


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


def choose_threads(settings: RunSettings, device: str, state: dict[str, Any]) -> tuple[int | None, list[str]]:
    """The CPU thread count to measure with, and warnings about it.

    ``settings.threads`` when given; otherwise on the CPU :func:`vitbench.settings.default_threads`
    of the CPUs this process may use (at most 4): fixed by the machine, never by its load when
    the run starts, so the same command measures with the same count on a busy machine and an
    idle one. Either way a warning says when the count exceeds the free cores of ``state``
    (``machine.free_cores``: affinity less the cores other processes keep busy; an
    oversubscribed intra-op pool stalls at every barrier). On CUDA the torch default is kept
    (None): the CPU only launches kernels."""
    cpus = state.get("machine_cpus") or os.cpu_count() or 1
    if settings.threads is None and device.startswith("cuda"):
        return None, []
    threads = settings.threads if settings.threads is not None else default_threads(cpus)
    free = free_cores(cpus, state.get("machine_busy_cores"))
    warnings = []
    if threads > free:
        given = f"--threads {threads}" if settings.threads is not None else f"{threads} thread(s) (the default)"
        warnings.append(warning(
            "threads-compete",
            f"{given} but only {free} of {cpus} cores are free: the threads compete with other processes",
            f"consider --threads {free}",
        ))
    return threads, warnings
