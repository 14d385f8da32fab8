"""A machine's calibration for the time model: micro-benchmarks, timed on this device and thread
count, saved as versioned JSON.

    gemm:        MAC/s of ``torch.mm`` on a grid of (m, k, n) shapes, per dtype
    conv, attention: efficiency of a convolution / fused attention kernel relative to the GEMM of
                 the same (m, k, n) (median over a few shapes)
    elementwise: ``t = overhead_s + bytes / bandwidth`` fitted (least squares) to ``torch.add``
                 over sizes from 10^2 to 10^7 elements; ``overhead_s`` is the fixed cost of one
                 operator, charged to every operator of a step

A calibration is tied to what it measured: the device, its name, the thread count and the torch
version (:func:`calibration_key`); one made under another torch version is refused.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
GEMM_M = (8, 64, 256, 1024, 4096)
GEMM_KN = (64, 256, 768, 3072)
CONV_SHAPES = ((8, 64, 56, 64, 3), (8, 128, 28, 128, 3), (8, 256, 14, 256, 1), (8, 64, 56, 256, 1), (8, 3, 224, 64, 7))
ATTENTION_SHAPES = ((8, 3, 197, 64), (4, 12, 197, 64), (2, 6, 577, 64))


class CalibrationError(ValueError):
    """A calibration file that cannot be used: damaged, another schema or torch version."""


@dataclass(frozen=True)
class Calibration:
    device: str
    device_name: str
    threads: int
    torch: str
    gemm: dict[str, list[list[float]]]  # dtype -> [[m, k, n, macs_per_s], ...]
    conv_efficiency: float
    attention_efficiency: float
    overhead_s: float
    bandwidth_bytes_s: float
    seconds: float = 0.0
    schema_version: int = SCHEMA_VERSION
    notes: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Calibration:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise CalibrationError(f"not JSON ({exc})") from None
        if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
            raise CalibrationError(f"schema_version must be {SCHEMA_VERSION}")
        try:
            calibration = cls(**data)
        except TypeError as exc:
            raise CalibrationError(f"damaged ({exc})") from None
        for name in ("conv_efficiency", "attention_efficiency", "overhead_s", "bandwidth_bytes_s"):
            value = getattr(calibration, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise CalibrationError(f"{name}={value!r}: must be a positive number")
        if not calibration.gemm or any(len(p) != 4 or p[3] <= 0 for rows in calibration.gemm.values() for p in rows):
            raise CalibrationError("gemm: needs rows of [m, k, n, macs_per_s > 0]")
        return calibration

    def gemm_rate(self, shape: tuple[int, ...], dtype: str = "float32") -> float:
        """MAC/s for an (m, k, n) product: inverse-distance-weighted in log space over the four
        nearest calibrated shapes (the rate itself interpolated in log space)."""
        rows = self.gemm.get(dtype) or self.gemm["float32"]
        point = [math.log(max(1, d)) for d in shape]
        nearest = sorted(rows, key=lambda r: sum((math.log(r[i]) - point[i]) ** 2 for i in range(3)))[:4]
        weights, total = [], 0.0
        for row in nearest:
            distance = math.sqrt(sum((math.log(row[i]) - point[i]) ** 2 for i in range(3)))
            if distance < 1e-9:
                return row[3]
            weights.append((1 / distance**2, math.log(row[3])))
            total += 1 / distance**2
        return math.exp(sum(w * log_rate for w, log_rate in weights) / total)


def calibration_key(device: str, device_name: str, threads: int, torch_version: str) -> str:
    safe = "".join(c if c.isalnum() else "-" for c in device_name).strip("-")[:48]
    return f"{device}-{safe}-t{threads}-torch{torch_version.split('+')[0]}"


def cache_dir() -> Path:
    root = os.environ.get("VITBENCH_CACHE_DIR") or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "vitbench")
    return Path(root) / "calibrations"


def _median_time(run: Callable[[], Any], min_time_s: float, clock: Callable[[], float] = time.perf_counter,
                 threads: int = 1) -> float:
    """Median seconds of one call: calls in blocks that last about a tenth of ``min_time_s``.
    ``clock=time.process_time`` (divided by ``threads``) matches ``profile --clock cpu``: CPU time
    per thread, which other processes on a shared machine inflate far less than wall time."""
    run()
    start = clock()
    run()
    once = max((clock() - start) / threads, 1e-7)
    per_block = max(1, int(min_time_s / 10 / once))
    samples = []
    deadline = time.perf_counter() + 2 * min_time_s
    while len(samples) < 3 or time.perf_counter() < deadline:
        start = clock()
        for _ in range(per_block):
            run()
        samples.append((clock() - start) / threads / per_block)
        if len(samples) >= 25:
            break
    return statistics.median(samples)


def calibrate(device: str = "cpu", threads: int | None = None, dtypes: tuple[str, ...] = ("float32",),
              min_time_s: float = 0.05) -> Calibration:
    """Time the micro-benchmarks on ``device`` with ``threads`` threads (CPU; default torch's)."""
    import torch
    import torch.nn.functional as F

    from vitbench.measure.env import environment

    if device != "cpu":
        from vitbench.errors import SpecError

        raise SpecError("device", device, "calibration runs on the CPU in this version; GPUs use the datasheet profiles")
    if threads is not None:
        torch.set_num_threads(threads)
    n_threads = torch.get_num_threads()

    def timed(run: Callable[[], Any]) -> float:
        return _median_time(run, min_time_s, time.process_time, n_threads)

    started = time.perf_counter()
    gemm: dict[str, list[list[float]]] = {}
    for dtype_name in dtypes:
        dtype = getattr(torch, dtype_name)
        rows = []
        for m in GEMM_M:
            for k in GEMM_KN:
                for n in GEMM_KN:
                    a, b = torch.randn(m, k, dtype=dtype), torch.randn(k, n, dtype=dtype)
                    seconds = timed(lambda: torch.mm(a, b))
                    rows.append([m, k, n, m * k * n / seconds])
        gemm[dtype_name] = rows
    partial = Calibration(device, "", 1, "", gemm, 1.0, 1.0, 1e-6, 1e10)

    ratios = []
    for batch, channels, size, out_channels, kernel in CONV_SHAPES:
        x = torch.randn(batch, channels, size, size)
        w = torch.randn(out_channels, channels, kernel, kernel)
        padding = kernel // 2
        seconds = timed(lambda: F.conv2d(x, w, padding=padding))
        m, k, n = batch * size * size, channels * kernel * kernel, out_channels
        ratios.append((m * k * n / seconds) / partial.gemm_rate((m, k, n)))
    conv_efficiency = statistics.median(ratios)

    ratios = []
    for batch, heads, tokens, head_dim in ATTENTION_SHAPES:
        q = torch.randn(batch, heads, tokens, head_dim)
        seconds = timed(lambda: F.scaled_dot_product_attention(q, q, q))
        macs = batch * heads * tokens * tokens * 2 * head_dim
        ratios.append((macs / seconds) / partial.gemm_rate((batch * heads * tokens, head_dim, tokens)))
    attention_efficiency = statistics.median(ratios)

    sizes, times = [], []  # process_time ticks in about 1 us here: blocks make small ops measurable
    for numel in (100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000):
        a, b = torch.randn(numel), torch.randn(numel)
        out = torch.empty(numel)
        times.append(timed(lambda: torch.add(a, b, out=out)))
        sizes.append(3 * 4 * numel)
    overhead_s, bandwidth = _fit_affine(sizes, times)

    env = environment(device)
    return Calibration(
        device=device, device_name=str(env.get("env_device_name") or ""), threads=torch.get_num_threads(),
        torch=torch.__version__, gemm=gemm, conv_efficiency=conv_efficiency,
        attention_efficiency=attention_efficiency, overhead_s=overhead_s, bandwidth_bytes_s=bandwidth,
        seconds=time.perf_counter() - started,
    )


def _fit_affine(sizes: list[float], times: list[float]) -> tuple[float, float]:
    """Least squares t = a + s / bandwidth, weighted by 1/t (relative error); a, bandwidth > 0."""
    weights = [1 / t for t in times]
    sw = sum(w * w for w in weights)
    sx = sum(w * w * s for w, s in zip(weights, sizes))
    sy = sum(w * w * t for w, t in zip(weights, times))
    sxx = sum(w * w * s * s for w, s in zip(weights, sizes))
    sxy = sum(w * w * s * t for w, s, t in zip(weights, sizes, times))
    slope = (sw * sxy - sx * sy) / (sw * sxx - sx * sx)
    intercept = (sy - slope * sx) / sw
    return max(intercept, min(times) * 0.5), 1 / max(slope, 1e-15)


def save(calibration: Calibration, path: str | os.PathLike | None = None) -> Path:
    target = Path(path) if path else cache_dir() / (calibration_key(calibration.device, calibration.device_name, calibration.threads, calibration.torch) + ".json")
    from vitbench.results import atomic_write_text

    atomic_write_text(target, calibration.to_json())
    return target


def load(path: str | os.PathLike, torch_version: str | None = None) -> Calibration:
    """A calibration file; refused (CalibrationError) when damaged or made under another torch."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise CalibrationError(f"cannot read {path}: {exc.strerror or exc}") from None
    calibration = Calibration.from_json(text)
    if torch_version is not None and calibration.torch.split("+")[0] != torch_version.split("+")[0]:
        raise CalibrationError(f"made under torch {calibration.torch}, this is torch {torch_version}")
    return calibration
