"""The state of the machine while measuring: CPU load, affinity, frequency governor, memory,
other processes on the GPU. Read from Linux's /proc and /sys (and ``nvidia-smi``), each reader
returning None where it cannot tell. No torch import.

Columns (``machine_*``, time-varying, unlike the ``env_*`` description of the software):
``machine_cpus`` (CPUs this process may run on), ``machine_busy_cores`` (cores other processes
kept busy during a short sampling window), ``machine_loadavg_1m/5m/15m``, ``machine_governor``,
``machine_mem_total_bytes``, ``machine_mem_available_bytes``, and on CUDA
``machine_gpu_other_processes`` (compute processes on the GPUs other than this one, as
optimum-benchmark checks before it measures).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from typing import Any

from vitbench.procfs import proc_fields
from vitbench.row_warnings import warning

#: seconds over which the CPU time of other processes is sampled
BUSY_WINDOW_S = 0.5


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def affinity_cpus() -> int:
    """CPUs this process may run on (``sched_getaffinity``; ``os.cpu_count()`` elsewhere)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def load_average() -> tuple[float, float, float] | None:
    """1, 5 and 15-minute load averages (runnable and uninterruptible tasks, whole machine)."""
    try:
        return os.getloadavg()
    except (AttributeError, OSError):
        return None


def governors() -> str | None:
    """The CPU frequency governors of the CPUs this process may use ('performance',
    'powersave,performance', ...); None where cpufreq is not exposed (most VMs)."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = list(range(os.cpu_count() or 1))
    seen = []
    for cpu in cpus:
        text = _read(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor")
        if text and text.strip() not in seen:
            seen.append(text.strip())
    return ",".join(seen) or None


def meminfo() -> dict[str, int]:
    """/proc/meminfo in bytes: {'MemTotal': ..., 'MemAvailable': ...}; empty where unreadable."""
    return proc_fields("/proc/meminfo")


def _cpu_jiffies() -> int | None:
    """Non-idle jiffies of all CPUs since boot (the first line of /proc/stat)."""
    text = _read("/proc/stat")
    if not text or not text.startswith("cpu "):
        return None
    fields = [int(v) for v in text.splitlines()[0].split()[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice: already in user/nice]
    return sum(fields[:8]) - fields[3] - (fields[4] if len(fields) > 4 else 0)


def _own_jiffies() -> int | None:
    """User + system jiffies of this process and its waited-for children."""
    text = _read("/proc/self/stat")
    if not text:
        return None
    fields = text.rsplit(")", 1)[1].split()
    # after the command: state(0) ... utime(11) stime(12) cutime(13) cstime(14)
    return sum(int(v) for v in fields[11:15])


def busy_cores(window_s: float = BUSY_WINDOW_S) -> float | None:
    """Cores kept busy by other processes: their CPU time over ``window_s`` of wall time
    (machine-wide non-idle time less this process's own), e.g. 1.0 = one core fully used."""
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    start_all, start_own, start = _cpu_jiffies(), _own_jiffies(), time.monotonic()
    if start_all is None or start_own is None:
        return None
    time.sleep(window_s)
    end_all, end_own, elapsed = _cpu_jiffies(), _own_jiffies(), time.monotonic() - start
    if end_all is None or end_own is None or elapsed <= 0:
        return None
    other = (end_all - start_all) - (end_own - start_own)
    return max(0.0, other / ticks / elapsed)


def free_cores(cpus: int, busy: float | None) -> int:
    """Cores left for a measurement: ``cpus`` less the busy ones (rounded), at least 1.

        free = max(1, cpus - round(busy))"""
    if busy is None:
        return max(1, cpus)
    return max(1, cpus - int(busy + 0.5))


def parse_compute_apps(text: str, own_pids: set[int]) -> list[dict[str, Any]]:
    """``nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,
    nounits`` output -> the processes that are not ours: [{'pid', 'name', 'memory_bytes'}]."""
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 3 or not parts[0].isdigit():
            continue
        pid = int(parts[0])
        if pid in own_pids:
            continue
        memory = int(parts[2]) * 2**20 if parts[2].isdigit() else None  # MiB without units
        out.append({"pid": pid, "name": parts[1], "memory_bytes": memory})
    return out


def gpu_other_processes() -> list[dict[str, Any]] | None:
    """Compute processes on the GPUs other than this one and its parent (NVML when the
    ``pynvml`` module is installed, else ``nvidia-smi``); None when neither can tell."""
    own = {os.getpid(), os.getppid()}
    try:
        import pynvml  # type: ignore[import-not-found]
    except ImportError:  # not installed: try nvidia-smi
        pynvml = None
    if pynvml is not None:
        try:
            return _nvml_processes(pynvml, own)
        except (OSError, pynvml.NVMLError):  # no driver, no library: try nvidia-smi
            pass
    text = nvidia_smi("--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader,nounits")
    return None if text is None else parse_compute_apps(text, own)


def _nvml_processes(pynvml: Any, own: set[int]) -> list[dict[str, Any]]:
    """The compute processes NVML lists on every GPU, but ``own``."""
    pynvml.nvmlInit()
    try:
        found = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                if proc.pid not in own:
                    found.append({"pid": proc.pid, "name": None, "memory_bytes": proc.usedGpuMemory})
        return found
    finally:
        pynvml.nvmlShutdown()


def nvidia_smi(*args: str) -> str | None:
    """The standard output of ``nvidia-smi ARGS``; None when it is missing or fails."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        return subprocess.run([exe, *args], capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def machine_state(device: str = "cpu", window_s: float = BUSY_WINDOW_S) -> dict[str, Any]:
    """The ``machine_*`` columns now (takes ``window_s`` to sample the CPU load)."""
    load = load_average()
    memory = meminfo()
    state: dict[str, Any] = {
        "machine_cpus": affinity_cpus(),
        "machine_busy_cores": busy_cores(window_s),
        "machine_loadavg_1m": load[0] if load else None,
        "machine_loadavg_5m": load[1] if load else None,
        "machine_loadavg_15m": load[2] if load else None,
        "machine_governor": governors(),
        "machine_mem_total_bytes": memory.get("MemTotal"),
        "machine_mem_available_bytes": memory.get("MemAvailable"),
    }
    if device.startswith("cuda"):
        others = gpu_other_processes()
        state["machine_gpu_other_processes"] = None if others is None else len(others)
    return state


def state_warnings(state: dict[str, Any], threads: int, clock: str = "wall") -> list[dict[str, str]]:
    """Warnings (with advice) about a machine state that makes timings slower or noisier:
    other processes on the cores this measurement needs (wall clock only: CPU time per thread
    is judged by the spread between runs, :mod:`vitbench.measure.stability`, and the load stays
    recorded in the ``machine_*`` columns), a power-saving CPU governor, other processes on the GPU."""
    warnings = []
    cpus, busy = state.get("machine_cpus") or 1, state.get("machine_busy_cores")
    load = state.get("machine_loadavg_1m")
    if clock == "wall" and busy is not None and busy + threads > cpus + 0.5:
        shown = f", load average {load:.1f}" if load is not None else ""
        warnings.append(warning(
            "busy-machine",
            f"busy machine: other processes use {busy:.1f} of {cpus} cores{shown}, and this run "
            f"uses {threads} thread(s): timings are slower and noisier than on an idle machine",
            "measure on an idle machine, or with fewer --threads and more --runs" if threads > 1
            else "measure on an idle machine, or with more --runs",
        ))
    governor = state.get("machine_governor")
    if governor and governor != "performance":
        warnings.append(warning(
            "cpu-governor",
            f"CPU frequency governor is {governor!r}: the clock speed varies while measuring",
            "set it to 'performance' (e.g. `sudo cpupower frequency-set -g performance`, or "
            "`python -m pyperf system tune`)",
        ))
    others = state.get("machine_gpu_other_processes")
    if others:
        warnings.append(warning(
            "gpu-shared",
            f"{others} other process(es) on the GPU: they share its compute and memory",
            "stop them before measuring (nvidia-smi lists them)",
        ))
    return warnings
