"""The calibration's fits, from timed operator calls and timed steps (pure functions).

    fit_affine       t = a + s / bandwidth, least squares on relative error
    fit_efficiency   achieved MAC/s / gemm rate per compute call, median per (kernel, shape)
    fit_ops          fit_affine per memory-bound operator name
    fit_steps        step = compute_s + factor x (ops_s - compute_s) + sum_g framework[g] x ops_g
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from vitbench.timemodel.calibration.schema import Calibration
from vitbench.timemodel.ops import COMPUTE_KERNELS


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
    ``bandwidth``: the default, for operators seen only on small tensors (under
    :data:`MIN_FIT_BYTES`), whose overhead is then ``max(0, median(t - bytes / bandwidth))``."""
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
