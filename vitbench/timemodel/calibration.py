"""A machine's calibration for the time model, saved as versioned JSON.

Measured on the device, at a thread count, in a fresh worker process with the steady host
allocator (as ``profile`` measures), CPU time per thread (as ``profile --clock cpu``):

    gemm          MAC/s of ``torch.mm`` on the grid GEMM_M x GEMM_KN x GEMM_KN, per dtype;
                  between grid points, multilinear interpolation of log(rate) in log(m, k, n)
    efficiency    per compute kernel (conv, conv_backward, conv_grouped, conv_grouped_backward, attention,
                  attention_backward, bmm, gemm): median over the probes' calls of
                  achieved MAC/s / gemm rate at the call's (m, k, n)
    ops           per memory-bound operator name: ``t = overhead + bytes / bandwidth``, fitted
                  (least squares on relative error) to the probes' calls at three sizes
    overhead_s, bandwidth_bytes_s
                  the same fit on ``torch.add`` from 10^2 to 10^7 elements: the price of an
                  operator the probes never ran
    in_step_factor, framework_s
                  fitted to the probes' whole steps (timed without the timing mode), see
                  :func:`fit_steps`: memory-bound operators run colder in a step than on their
                  own (``in_step_factor``); Python, dispatch and autograd cost a fixed time per
                  operator (``framework_s``: infer, train, optimizer)

The probes (:mod:`vitbench.timemodel.probes`) are two small synthetic networks, never a model
that is predicted. A calibration is tied to the device, its name, the thread count and the
torch version (:func:`calibration_key`); :func:`load` refuses one made under another torch.

GPUs are priced by their own model (:mod:`vitbench.timemodel.gpu_model`), not by a calibration
of this form.
"""

from __future__ import annotations

import bisect
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from vitbench.errors import VitbenchError
from vitbench.timemodel.ops import COMPUTE_KERNELS

SCHEMA_VERSION = 2
GEMM_M = (1, 8, 64, 512, 4096)
GEMM_KN = (16, 64, 256, 1024, 4096)
PRECISION_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
BASES = ("calibration", "datasheet")


class CalibrationError(VitbenchError, ValueError):
    """A calibration that cannot be used: damaged, another schema or torch version, failed."""


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _non_negative(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


@dataclass(frozen=True)
class Calibration:
    device: str
    device_name: str
    threads: int
    torch: str
    basis: str
    gemm: dict[str, list[list[float]]]      # dtype -> [[m, k, n, macs_per_s], ...]
    efficiency: dict[str, list[list[float]]]  # compute kernel -> [[m, k, n, achieved / gemm rate], ...]
    ops: dict[str, list[float]]             # operator name -> [overhead_s, bandwidth_bytes_s]
    overhead_s: float
    bandwidth_bytes_s: float
    framework_s: dict[str, float]           # mode -> seconds per operator
    in_step_factor: float
    seconds: float = 0.0
    schema_version: int = SCHEMA_VERSION
    notes: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Calibration:
        """Parse and check a calibration; CalibrationError naming what is wrong."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise CalibrationError(f"damaged: not JSON ({exc})") from None
        except RecursionError:
            raise CalibrationError("damaged: JSON nested too deeply") from None
        if not isinstance(data, dict):
            raise CalibrationError("damaged: not a JSON object")
        if data.get("schema_version") != SCHEMA_VERSION:
            raise CalibrationError(f"schema_version is {data.get('schema_version')!r}, this vitbench reads {SCHEMA_VERSION}")
        try:
            calibration = cls(**data)
        except TypeError as exc:
            raise CalibrationError(f"damaged: {exc}") from None
        calibration.check()
        return calibration

    def check(self) -> None:
        if self.basis not in BASES:
            raise CalibrationError(f"basis={self.basis!r}: must be one of {', '.join(BASES)}")
        if not isinstance(self.threads, int) or isinstance(self.threads, bool) or self.threads < 1:
            raise CalibrationError(f"threads={self.threads!r}: must be a positive integer")
        for name in ("overhead_s", "bandwidth_bytes_s", "in_step_factor"):
            if not _positive(getattr(self, name)):
                raise CalibrationError(f"{name}={getattr(self, name)!r}: must be a positive number")
        if not isinstance(self.gemm, dict) or not self.gemm:
            raise CalibrationError("gemm: needs rates for at least one dtype")
        for dtype, rows in self.gemm.items():
            if not isinstance(rows, list) or not rows or any(
                    not isinstance(r, list) or len(r) != 4 or not all(_positive(v) for v in r) for r in rows):
                raise CalibrationError(f"gemm[{dtype!r}]: needs rows of [m, k, n, macs_per_s], all positive")
            axes = [sorted({r[i] for r in rows}) for i in range(3)]
            if len(rows) != len(axes[0]) * len(axes[1]) * len(axes[2]):
                raise CalibrationError(f"gemm[{dtype!r}]: the rows do not fill a grid")
        if not isinstance(self.framework_s, dict) or not all(isinstance(k, str) and _non_negative(v) for k, v in self.framework_s.items()):
            raise CalibrationError("framework_s: needs modes with non-negative seconds")
        if not isinstance(self.efficiency, dict) or any(
                not isinstance(rows, list) or not rows or any(not isinstance(r, list) or len(r) != 4 or not all(_positive(v) for v in r) for r in rows)
                for rows in self.efficiency.values()):
            raise CalibrationError("efficiency: needs kernels with rows of [m, k, n, efficiency], all positive")
        if not isinstance(self.ops, dict) or any(
                not isinstance(v, list) or len(v) != 2 or not _non_negative(v[0]) or not _positive(v[1]) for v in self.ops.values()):
            raise CalibrationError("ops: needs names with [overhead_s >= 0, bandwidth_bytes_s > 0]")

    @property
    def label(self) -> str:
        """What a prediction rests on: the ``pred_basis`` column."""
        if self.basis == "datasheet":
            return f"datasheet:{self.device_name}"
        return f"calibration:{self.device}:{self.device_name or 'unknown'}:{self.threads} threads:torch {self.torch}"

    def dtypes(self) -> list[str]:
        return sorted(self.gemm)

    @cached_property
    def _grids(self) -> dict[str, tuple[list[list[float]], dict[tuple[float, float, float], float]]]:
        out = {}
        for dtype, rows in self.gemm.items():
            axes = [sorted({math.log(r[i]) for r in rows}) for i in range(3)]
            table = {(math.log(r[0]), math.log(r[1]), math.log(r[2])): math.log(r[3]) for r in rows}
            out[dtype] = (axes, table)
        return out

    @cached_property
    def _rates(self) -> dict[str, dict[tuple[float, float, float], float]]:
        return {dtype: {(math.log(r[0]), math.log(r[1]), math.log(r[2])): r[3] for r in rows} for dtype, rows in self.gemm.items()}

    def gemm_rate(self, shape: tuple[int, ...], dtype: str = "float32") -> float:
        """MAC/s of an (m, k, n) product: log(rate) interpolated multilinearly in log(m, k, n)
        between the grid's points, held at the edge value beyond the grid."""
        if dtype not in self.gemm:
            raise CalibrationError(f"no {dtype} GEMM rates in this calibration (calibrated: {', '.join(self.dtypes())})")
        axes, table = self._grids[dtype]
        corners: list[list[tuple[float, float]]] = []  # per axis: (grid value, weight)
        for axis, size in zip(axes, shape):
            x = math.log(max(1, size))
            if x <= axis[0] or len(axis) == 1:
                corners.append([(axis[0], 1.0)] if x <= axis[0] else [(axis[-1], 1.0)])
            elif x >= axis[-1]:
                corners.append([(axis[-1], 1.0)])
            else:
                i = bisect.bisect_right(axis, x) - 1
                lo, hi = axis[i], axis[i + 1]
                w = (x - lo) / (hi - lo)
                corners.append([(lo, 1 - w), (hi, w)])
        if all(len(c) == 1 for c in corners):  # a grid point (or its edge): the measured rate itself
            return self._rates[dtype][(corners[0][0][0], corners[1][0][0], corners[2][0][0])]
        log_rate = 0.0
        for a, wa in corners[0]:
            for b, wb in corners[1]:
                for c, wc in corners[2]:
                    log_rate += wa * wb * wc * table[(a, b, c)]
        return math.exp(log_rate)

    @cached_property
    def _memo(self) -> dict[tuple[Any, ...], float]:
        return {}

    def compute_rate(self, kernel: str, shape: tuple[int, ...], dtype: str) -> float:
        """MAC/s of a compute kernel's call: gemm_rate x efficiency_at (remembered per shape)."""
        key = (kernel, shape, dtype)
        rate = self._memo.get(key)
        if rate is None:
            if len(self._memo) > 200_000:
                self._memo.clear()
            rate = self._memo[key] = self.gemm_rate(shape, dtype) * self.efficiency_at(kernel, shape)
        return rate

    def efficiency_at(self, kernel: str, shape: tuple[int, ...]) -> float:
        """A compute kernel's achieved / gemm rate at (m, k, n): inverse-distance-weighted mean
        of log(efficiency) over the four nearest calibrated calls in log(m, k, n); 1 without any."""
        rows = self.efficiency.get(kernel)
        if not rows:
            return 1.0
        point = [math.log(max(1, d)) for d in shape]
        # attention: its efficiency follows (head dim, tokens); batch x heads (in m) matters less
        scale = (0.25, 1.0, 1.0) if kernel.startswith("attention") else (1.0, 1.0, 1.0)
        scored = sorted((sum(scale[i] * (math.log(r[i]) - point[i]) ** 2 for i in range(3)), r[3]) for r in rows)[:4]
        if scored[0][0] < 1e-12:
            return scored[0][1]
        weights = [(1 / d, math.log(e)) for d, e in scored]
        return math.exp(sum(w * e for w, e in weights) / sum(w for w, _ in weights))

    def op_cost(self, name: str) -> tuple[float, float]:
        """(overhead_s, bandwidth_bytes_s) of a memory-bound operator."""
        fit = self.ops.get(name)
        return (fit[0], fit[1]) if fit else (self.overhead_s, self.bandwidth_bytes_s)


def file_safe(device_name: str) -> str:
    """A device's name as part of a file name: letters and digits, the rest as dashes."""
    return "".join(c if c.isalnum() else "-" for c in device_name).strip("-")[:48] or "unknown"


def calibration_key(device: str, device_name: str, threads: int, torch_version: str) -> str:
    return f"{device}-{file_safe(device_name)}-t{threads}-torch{torch_version.split('+')[0]}"


def cache_dir() -> Path:
    """``$VITBENCH_CACHE_DIR`` or ``$XDG_CACHE_HOME/vitbench`` or ``~/.cache/vitbench``, /calibrations."""
    root = os.environ.get("VITBENCH_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "vitbench")
    return Path(root) / "calibrations"


def cache_path(device: str, device_name: str, threads: int, torch_version: str) -> Path:
    return cache_dir() / (calibration_key(device, device_name, threads, torch_version) + ".json")


def save(calibration: Calibration, path: str | os.PathLike | None = None) -> Path:
    """Write atomically (fsync, rename) to ``path`` or the cache; the path written."""
    from vitbench.results import atomic_write_text

    target = Path(path) if path else cache_path(calibration.device, calibration.device_name, calibration.threads, calibration.torch)
    atomic_write_text(target, calibration.to_json() + "\n")
    return target


def load(path: str | os.PathLike, torch_version: str | None = None) -> Calibration:
    """A calibration file; CalibrationError when it is unreadable, damaged or made under another
    torch than ``torch_version``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CalibrationError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    calibration = Calibration.from_json(text)
    if torch_version is not None and calibration.basis == "calibration" and calibration.torch.split("+")[0] != torch_version.split("+")[0]:
        raise CalibrationError(f"made under torch {calibration.torch}, this is torch {torch_version}")
    return calibration


def default_threads() -> int:
    """The CPUs this process may run on: what a prediction is for unless told."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def calibrate(device: str = "cpu", threads: int | None = None, precisions: tuple[str, ...] = ("fp32",),
              timeout_s: float = 300.0) -> Calibration:
    """Calibrate ``device`` at ``threads`` threads in a fresh worker process (steady allocator,
    its own thread count): about 20-40 s on a small CPU. CalibrationError if it fails."""
    if device != "cpu":
        from vitbench.errors import SpecError

        raise SpecError("device", device, "calibration measures the CPU in this version; a GPU is priced by the "
                        "GPU cost model (`vitbench predict --device h100`; `vitbench devices` lists the GPUs)")
    threads = threads or default_threads()
    dtypes = sorted({PRECISION_DTYPES[p] for p in precisions} | {"float32"})
    command = [sys.executable, "-m", "vitbench.timemodel.calibration", "--threads", str(threads), "--dtypes", ",".join(dtypes)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    try:
        from vitbench.measure.children import preexec

        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env, preexec_fn=preexec())
    except subprocess.TimeoutExpired:
        raise CalibrationError(f"calibration took over {timeout_s:.0f} s and was stopped") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        raise CalibrationError(f"calibration failed: {last}")
    return Calibration.from_json(done.stdout)


def calibrate_here(threads: int, dtypes: tuple[str, ...] = ("float32",), block_s: float = 0.002) -> Calibration:
    """The measurements, in this process (:func:`calibrate` runs this in a worker)."""
    import torch

    from vitbench.measure.allocator import apply_allocator
    from vitbench.measure.env import environment
    from vitbench.timemodel.probes import median_seconds, time_kernels, time_probes

    malloc = apply_allocator("steady")
    torch.set_num_threads(threads)
    threads = torch.get_num_threads()
    torch.set_flush_denormal(True)  # repeated in-place optimizer updates must not go subnormal (this is a worker)
    started = time.perf_counter()

    def timed(run: Callable[[], Any], block: float = block_s) -> float:
        return median_seconds(run, time.process_time, threads, block)

    gemm: dict[str, list[list[float]]] = {}
    for dtype_name in dtypes:
        dtype = getattr(torch, dtype_name)
        rows = []
        for m in GEMM_M:
            for k in GEMM_KN:
                for n in GEMM_KN:
                    a, b = torch.randn(m, k, dtype=dtype), torch.randn(k, n, dtype=dtype)
                    rows.append([m, k, n, m * k * n / timed(lambda: torch.mm(a, b))])
        gemm[dtype_name] = rows
    gemm_s = time.perf_counter() - started

    sizes, times = [], []
    for numel in (100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000):
        a, b = torch.randn(numel), torch.randn(numel)
        times.append(timed(lambda: torch.add(a, b)))
        sizes.append(3 * 4 * numel)
    overhead_s, bandwidth = fit_affine(sizes, times)

    probe_started = time.perf_counter()
    samples, steps = time_probes(time.process_time, threads, block_s)
    samples = samples + time_kernels(time.process_time, threads, block_s)
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
        notes={"malloc": malloc, "gemm_s": round(gemm_s, 2), "probes_s": round(probe_s, 2),
               "probe_steps": [[s.probe, s.mode, s.step_s, s.ops_s, s.compute_s, s.ops, s.optimizer_ops] for s in steps]},
    )


def fit_affine(sizes: list[float], times: list[float]) -> tuple[float, float]:
    """Least squares ``t = a + s / bandwidth`` on relative error (weights 1/t); returns
    (a, bandwidth) with a >= 0 and bandwidth > 0. One distinct size: a = 0."""
    if len(set(sizes)) < 2:
        return 0.0, max(sizes) / max(statistics.median(times), 1e-12) if max(sizes) > 0 else 1e12
    weights = [1 / max(t, 1e-12) ** 2 for t in times]
    sw = sum(weights)
    sx = sum(w * s for w, s in zip(weights, sizes))
    sy = sum(w * t for w, t in zip(weights, times))
    sxx = sum(w * s * s for w, s in zip(weights, sizes))
    sxy = sum(w * s * t for w, s, t in zip(weights, sizes, times))
    slope = (sw * sxy - sx * sy) / (sw * sxx - sx * sx)
    if slope <= 0:  # no growth with size: a constant time
        return statistics.median(times), 1e15
    intercept = (sy - slope * sx) / sw
    if intercept < 0:  # through the origin instead
        slope = sum(w * s * t for w, s, t in zip(weights, sizes, times)) / sxx
        intercept = 0.0
    return intercept, 1 / slope


def fit_efficiency(samples: list[tuple[Any, float]], partial: Calibration) -> dict[str, list[list[float]]]:
    """Achieved MAC/s / gemm rate of every compute call, by kernel, with its (m, k, n); calls of
    the same kernel and shape are merged (median)."""
    ratios: dict[str, dict[tuple[int, ...], list[float]]] = defaultdict(lambda: defaultdict(list))
    for op, seconds in samples:
        if op.macs and len(op.shape) == 3 and min(op.shape) > 0 and op.kernel in COMPUTE_KERNELS and op.dtype in partial.gemm:
            ratios[op.kernel][op.shape].append((op.macs / seconds) / partial.gemm_rate(op.shape, op.dtype))
    return {kernel: [[*shape, statistics.median(values)] for shape, values in sorted(by_shape.items())]
            for kernel, by_shape in sorted(ratios.items())}


#: an operator the probes ran only on less than this many bytes keeps the default bandwidth
#: (a scalar loss's ones_like says nothing about a large tensor's)
MIN_FIT_BYTES = 1 << 20


def fit_ops(samples: list[tuple[Any, float]], bandwidth: float) -> dict[str, list[float]]:
    """``[overhead_s, bandwidth]`` per memory-bound operator name, from the probes' calls;
    ``bandwidth``: the default, for operators seen only on small tensors."""
    points: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for op, seconds in samples:
        if op.kernel not in COMPUTE_KERNELS and op.bytes > 0:
            points[op.kernel].append((op.bytes, seconds))
    out = {}
    for name, pairs in sorted(points.items()):
        sizes, times = [p[0] for p in pairs], [p[1] for p in pairs]
        if max(sizes) < MIN_FIT_BYTES:
            overhead = max(0.0, statistics.median(t - s / bandwidth for s, t in pairs))
            out[name] = [overhead, bandwidth]
        else:
            out[name] = list(fit_affine(sizes, times))
    return out


def fit_steps(steps: list[Any]) -> tuple[float, dict[str, float]]:
    """(in_step_factor, framework seconds per operator) by least squares on relative error over
    the probes' steps:

        step = compute_s + factor x (ops_s - compute_s) + sum over groups g of framework[g] x ops in g

    compute_s: the matrix products, convolutions and attention kernels (as fast in a step as on
    their own); the rest run colder in a step (``factor``); the groups are an inference step's
    operators (``infer``), a training step's forward and backward ones (``train``) and its
    optimizer's (``optimizer``)."""
    import numpy as np

    groups = ("infer", "train", "optimizer")
    rows, target = [], []
    for s in steps:
        weight = 1 / s.step_s
        counts = {"infer": s.ops if s.mode == "infer" else 0, "train": s.ops - s.optimizer_ops if s.mode == "train" else 0,
                  "optimizer": s.optimizer_ops}
        rows.append([(s.ops_s - s.compute_s) * weight] + [counts[g] * weight for g in groups])
        target.append((s.step_s - s.compute_s) * weight)
    solution, *_ = np.linalg.lstsq(np.array(rows), np.array(target), rcond=None)
    factor = float(solution[0]) if solution[0] > 0 else 1.0
    framework = {g: max(0.0, float(v)) for g, v in zip(groups, solution[1:])}
    return factor, framework


def _main() -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m vitbench.timemodel.calibration")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--dtypes", default="float32")
    args = parser.parse_args()
    calibration = calibrate_here(args.threads, tuple(args.dtypes.split(",")))
    sys.stdout.write(calibration.to_json())
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())


def summary(calibration: Calibration) -> dict[str, Any]:
    """One record that describes a calibration (what ``vitbench calibrate`` prints)."""
    peak = {dtype: max(r[3] for r in rows) for dtype, rows in calibration.gemm.items()}
    return {
        "device": calibration.device, "device_name": calibration.device_name, "threads": calibration.threads,
        "torch": calibration.torch, "basis": calibration.basis, "calibration_s": calibration.seconds,
        "gemm_peak_macs_per_s": peak.get("float32"), "bandwidth_bytes_s": calibration.bandwidth_bytes_s,
        "framework_infer_s": calibration.framework_s.get("infer"), "framework_train_s": calibration.framework_s.get("train"),
        "in_step_factor": calibration.in_step_factor, "operators_fitted": len(calibration.ops),
    }
