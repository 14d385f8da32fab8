"""The measuring: a calibration of this CPU in a fresh worker process
(``python -m vitbench.timemodel.calibration.worker``), its GEMM grid, the ``torch.add`` sweep
and the probes, handed to :mod:`vitbench.timemodel.calibration.fitting`."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from vitbench.errors import SpecError
from vitbench.measure.allocator import apply_allocator
from vitbench.measure.children import preexec
from vitbench.measure.env import environment
from vitbench.measure.machine import _cpu_jiffies, _own_jiffies, affinity_cpus, load_average
from vitbench.timemodel.calibration.fitting import fit_affine, fit_efficiency, fit_ops, fit_steps
from vitbench.timemodel.calibration.schema import PRECISION_DTYPES, Calibration, CalibrationError
from vitbench.timemodel.probes import kernel_steps, median_seconds, probe_steps, time_kernels, time_probes

GEMM_M = (1, 8, 64, 512, 4096)
GEMM_KN = (16, 64, 256, 1024, 4096)


def default_threads() -> int:
    """The CPUs this process may run on: what a prediction is for unless told."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


#: the worker's progress lines on its standard error: MARKER done total label
PROGRESS_MARKER = "@@vitbench-calibration-step@@"


def calibration_steps(dtypes: tuple[str, ...]) -> list[str]:
    """The labels of a calibration's steps, in order (what its progress counts)."""
    gemm = [f"matrix products, {dtype}, m = {m} ({len(GEMM_KN) ** 2} shapes)" for dtype in dtypes for m in GEMM_M]
    return [*gemm, "additions, 6 sizes (memory bandwidth)", *probe_steps(), *kernel_steps()]


#: a calibration worker still running after this long is stopped: it hangs (a busy 2-core machine,
#: load 11, took 13 minutes of wall time for the 80 s of CPU time a calibration needs there; the
#: former 300 s stopped it halfway)
TIMEOUT_S = 3600.0


def calibrate(device: str = "cpu", threads: int | None = None, precisions: tuple[str, ...] = ("fp32",),
              timeout_s: float = TIMEOUT_S, on_step: Callable[[int, int, str], None] | None = None) -> Calibration:
    """Calibrate ``device`` at ``threads`` threads in a fresh worker process (steady allocator,
    its own thread count): about 50 s of CPU time at fp32 and one thread on a 2-core EPYC VM
    (docs/time.md), longer in wall time while other processes use the cores. ``on_step(done, total, label)`` as each of its steps
    (:func:`calibration_steps`) starts. CalibrationError if it fails."""
    if device != "cpu":
        raise SpecError("device", device, "calibration measures the CPU in this version; a GPU is priced by the "
                        "GPU cost model (`vitbench predict --device h100`; `vitbench devices` lists the GPUs)")
    threads = threads or default_threads()
    dtypes = sorted({PRECISION_DTYPES[p] for p in precisions} | {"float32"})
    command = [sys.executable, "-m", "vitbench.timemodel.calibration.worker", "--threads", str(threads),
               "--dtypes", ",".join(dtypes)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    returncode, stdout, stderr = _run_worker(command, env, timeout_s, on_step)
    if returncode != 0:
        last = (stderr.strip().splitlines() or [f"exit code {returncode}"])[-1]
        raise CalibrationError(f"calibration failed: {last}")
    return Calibration.from_json(stdout)


def _run_worker(command: list[str], env: dict[str, str], timeout_s: float,
                on_step: Callable[[int, int, str], None] | None) -> tuple[int, str, str]:
    """Run the worker: (exit code, its standard output, its standard error less the progress
    lines, which go to ``on_step`` as they come). CalibrationError past ``timeout_s``."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=preexec())
    out: list[str] = []
    errors: list[str] = []

    def relay() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            step = _progress(line)
            if step is None:
                errors.append(line)
            elif on_step is not None:
                on_step(*step)

    readers = [threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True),  # type: ignore[union-attr]
               threading.Thread(target=relay, daemon=True)]
    for reader in readers:
        reader.start()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise CalibrationError(f"calibration took over {timeout_s:.0f} s and was stopped") from None
    finally:
        for reader in readers:
            reader.join(timeout=5.0)
    return proc.returncode, "".join(out), "".join(errors)


def _progress(line: str) -> tuple[int, int, str] | None:
    """(done, total, label) of a progress line of the worker; None for any other line."""
    if not line.startswith(PROGRESS_MARKER):
        return None
    parts = line[len(PROGRESS_MARKER):].strip().split(" ", 2)
    if len(parts) != 3 or not (parts[0].isascii() and parts[0].isdigit() and parts[1].isascii() and parts[1].isdigit()):
        return None
    return int(parts[0]), int(parts[1]), parts[2]


def calibrate_here(threads: int, dtypes: tuple[str, ...] = ("float32",), block_s: float = 0.002,
                   on_step: Callable[[int, int, str], None] | None = None) -> Calibration:
    """The measurements, in this process (:func:`calibrate` runs this in a worker);
    ``on_step(done, total, label)`` as each of :func:`calibration_steps` starts."""
    import torch

    malloc = apply_allocator("steady")
    torch.set_num_threads(threads)
    threads = torch.get_num_threads()
    torch.set_flush_denormal(True)  # repeated in-place optimizer updates must not go subnormal (this is a worker)
    load_from = load_start()  # the machine's load while it runs: a busy one is kept with a warning
    started = time.perf_counter()

    def timed(run: Callable[[], Any], block: float = block_s) -> float:
        return median_seconds(run, time.process_time, threads, block)

    labels = calibration_steps(tuple(dtypes))
    counter = iter(range(len(labels)))

    def step(label: str) -> None:
        if on_step is not None:
            on_step(next(counter), len(labels), label)

    gemm: dict[str, list[list[float]]] = {}
    for dtype_name in dtypes:
        dtype = getattr(torch, dtype_name)
        rows = []
        for m in GEMM_M:
            step(f"matrix products, {dtype_name}, m = {m} ({len(GEMM_KN) ** 2} shapes)")
            for k in GEMM_KN:
                for n in GEMM_KN:
                    a, b = torch.randn(m, k, dtype=dtype), torch.randn(k, n, dtype=dtype)
                    rows.append([m, k, n, m * k * n / timed(lambda a=a, b=b: torch.mm(a, b))])
        gemm[dtype_name] = rows
    gemm_s = time.perf_counter() - started

    sizes, times = [], []
    step("additions, 6 sizes (memory bandwidth)")
    for numel in (100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000):
        a, b = torch.randn(numel), torch.randn(numel)
        times.append(timed(lambda a=a, b=b: torch.add(a, b)))
        sizes.append(3 * 4 * numel)
    overhead_s, bandwidth = fit_affine(sizes, times)

    probe_started = time.perf_counter()
    samples, steps = time_probes(time.process_time, threads, block_s, on_step=step)
    samples = samples + time_kernels(time.process_time, threads, block_s, on_step=step)
    probe_s = time.perf_counter() - probe_started
    partial = Calibration("cpu", "", threads, "", "calibration", gemm, {}, {}, overhead_s, bandwidth, {}, 1.0)
    efficiency = fit_efficiency(samples, partial)
    ops = fit_ops(samples, bandwidth)
    factor, framework = fit_steps(steps)

    env = environment("cpu")
    return Calibration(
        device="cpu", device_name=str(env.get("env_device_name") or ""), threads=threads, torch=torch.__version__,
        basis="calibration", gemm=gemm, efficiency=efficiency, ops=ops, overhead_s=overhead_s,
        bandwidth_bytes_s=bandwidth, framework_s=framework, in_step_factor=factor,
        seconds=time.perf_counter() - started,
        notes={"machine": load_finish(load_from, threads), "malloc": malloc, "gemm_s": round(gemm_s, 2), "probes_s": round(probe_s, 2),
               "probe_steps": [[s.probe, s.mode, s.step_s, s.ops_s, s.compute_s, s.ops, s.optimizer_ops] for s in steps]},
    )


def load_start() -> dict[str, Any]:
    """The counters as a calibration begins (in the process that measures)."""
    load = load_average()
    return {"all": _cpu_jiffies(), "own": _own_jiffies(), "at": time.monotonic(), "load": load[0] if load else None}


def load_finish(started: dict[str, Any], threads: int) -> dict[str, Any]:
    """The ``machine`` note of a calibration that began at ``started`` (:func:`load_start`):
    ``cpus`` (CPUs the worker could run on), ``threads``, ``busy_cores`` (CPU time other processes
    took during the calibration over its wall time: machine-wide non-idle time less the worker's
    own, 1.0 = one core; None where /proc/stat cannot be read), ``loadavg_1m_start`` and
    ``loadavg_1m_end`` (the 1-minute load average as it began and ended; None where unknown).
    :func:`~vitbench.timemodel.calibration.schema.busy_warnings` judges it."""
    end_all, end_own, elapsed = _cpu_jiffies(), _own_jiffies(), time.monotonic() - started["at"]
    busy = None
    if None not in (started["all"], started["own"], end_all, end_own) and elapsed > 0:
        ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        other = (end_all - started["all"]) - (end_own - started["own"])
        busy = round(max(0.0, other / ticks / elapsed), 2)
    load = load_average()
    return {"cpus": affinity_cpus(), "threads": threads, "busy_cores": busy,
            "loadavg_1m_start": started["load"], "loadavg_1m_end": load[0] if load else None}


def _main() -> int:
    parser = argparse.ArgumentParser(prog="python -m vitbench.timemodel.calibration.worker")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--dtypes", default="float32")
    args = parser.parse_args()
    def progress(done: int, total: int, label: str) -> None:  # to the parent, which relays it
        print(f"{PROGRESS_MARKER}{done} {total} {label}", file=sys.stderr, flush=True)

    calibration = calibrate_here(args.threads, tuple(args.dtypes.split(",")), on_step=progress)
    sys.stdout.write(calibration.to_json())
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
