"""The calibration's fits and interpolation on synthetic data, nothing measured: each fit
recovers the parameters the data were made from, each interpolation gives the value worked out
by hand at grid points, between them and beyond them (the comments carry the arithmetic)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from vitbench.timemodel.calibration.fitting import MIN_FIT_BYTES, fit_affine, fit_efficiency, fit_ops, fit_steps
from vitbench.timemodel.calibration.schema import Calibration, CalibrationError, summary
from vitbench.timemodel.ops import Op
from vitbench.timemodel.probes import StepTiming


def calibration(gemm: dict | None = None, efficiency: dict | None = None) -> Calibration:
    """A calibration whose GEMM rate is 1e10 MAC/s everywhere unless ``gemm`` says otherwise."""
    rows = [[m, k, n, 1e10] for m in (1, 4096) for k in (1, 4096) for n in (1, 4096)]
    return Calibration("cpu", "synthetic", 1, "2.0", "calibration", gemm or {"float32": rows}, efficiency or {},
                       {}, 1e-6, 1e9, {"infer": 0.0}, 1.0)


def compute_op(kernel: str, shape: tuple[int, ...], macs: int = 10**6, dtype: str = "float32") -> Op:
    return Op("op", "linear", macs, 0, shape, dtype, kernel)


def memory_op(kernel: str, moved: int, name: str = "op") -> Op:
    return Op(name, "elementwise", 0, moved, (), "float32", kernel)


# ---- validation ---------------------------------------------------------------------------------

def test_a_grid_need_not_be_square_but_must_be_full():
    # 2 values of m x 3 of k x 1 of n = 6 rows: a grid; without its last row, not one
    rows = [[m, k, 1, 1e10] for m in (1, 8) for k in (1, 8, 64)]
    calibration({"float32": rows}).check()  # no error
    # and a 1 x 2 x 3 one, each axis of another length
    calibration({"float32": [[1, k, n, 1e10] for k in (1, 8) for n in (1, 8, 64)]}).check()
    with pytest.raises(CalibrationError, match=r"^gemm\['float32'\]: the rows do not fill a grid$"):
        calibration({"float32": rows[:-1]}).check()


@pytest.mark.parametrize("change, message", [
    (dict(threads=True), "threads=True: must be a positive integer"),
    (dict(device="cuda"), "device='cuda': a CPU calibration is for device 'cpu' (a GPU is priced by the GPU model)"),
    (dict(device="h100"), "device='h100': a CPU calibration is for device 'cpu' (a GPU is priced by the GPU model)"),
    (dict(device="CPU\n"), "device='CPU\\n': a CPU calibration is for device 'cpu' (a GPU is priced by the GPU model)"),
    (dict(overhead_s=0), "overhead_s=0: must be a positive number"),
    (dict(gemm={}), "gemm: needs rates for at least one dtype"),
    (dict(gemm={"float32": [[1, 1, 1]]}), "gemm['float32']: needs rows of [m, k, n, macs_per_s], all positive"),
    (dict(framework_s={"infer": -1.0}), "framework_s: needs modes with non-negative seconds"),
    (dict(efficiency={"conv": []}), "efficiency: needs kernels with rows of [m, k, n, efficiency], all positive"),
    (dict(ops={"gelu": [-1e-6, 1e9]}), "ops: needs names with [overhead_s >= 0, bandwidth_bytes_s > 0]"),
])
def test_each_check_names_what_is_wrong(change, message):
    with pytest.raises(CalibrationError) as refused:
        replace(calibration(), **change).check()
    assert str(refused.value) == message


def test_gemm_sizes_up_to_a_trillion_are_taken_and_a_calibration_made_in_code_took_no_time():
    grid = [[m, 1, 1, 1e10] for m in (1, 1e12)]
    calibration({"float32": grid}).check()
    with pytest.raises(CalibrationError, match=r"^gemm\['float32'\]: needs sizes from 1 to 1e\+12 and rates"):
        calibration({"float32": [[1, 1, 1, 1e10], [1e12 + 1, 1, 1, 1e10]]}).check()
    assert calibration().seconds == 0.0


def test_summary_reports_the_float32_peak_and_the_fits():
    rows = [[m, 1, 1, 2e10 if m == 8 else 1e10] for m in (1, 8)]
    cal = replace(calibration({"float32": rows, "bfloat16": [[1, 1, 1, 9e10]]}), ops={"gelu": [0.0, 1e9]},
                  framework_s={"infer": 3e-6}, in_step_factor=1.5, seconds=12.0)
    assert summary(cal) == {
        "device": "cpu", "device_name": "synthetic", "threads": 1, "torch": "2.0", "basis": "calibration",
        "calibration_s": 12.0, "gemm_peak_macs_per_s": 2e10, "bandwidth_bytes_s": 1e9, "framework_infer_s": 3e-6,
        "framework_train_s": None, "in_step_factor": 1.5, "operators_fitted": 1}


def test_the_label_names_what_a_prediction_rests_on():
    assert calibration().label == "calibration:cpu:synthetic:1 threads:torch 2.0"
    assert replace(calibration(), device_name="").label == "calibration:cpu:unknown:1 threads:torch 2.0"
    assert replace(calibration(), basis="datasheet", device_name="Xeon 8480").label == "datasheet:Xeon 8480"


def test_a_json_value_that_is_not_an_object_is_refused():
    with pytest.raises(CalibrationError, match="^damaged: not a JSON object$"):
        Calibration.from_json("[1, 2]")


# ---- fit_affine ---------------------------------------------------------------------------------

def test_fit_affine_through_the_origin_when_the_intercept_would_be_negative():
    # t = s / 1e9 exactly except the small size, faster than the line: the free fit's intercept is
    # negative, so the fit goes through the origin: slope = sum(w s t) / sum(w s^2), w = 1 / t^2
    # w = 4e12, 1e6: slope = (4e12 x 1e3 x 0.5e-6 + 1e6 x 1e6 x 1e-3) / (4e12 x 1e6 + 1e6 x 1e12) = 3e9 / 5e18
    assert fit_affine([1e3, 1e6], [0.5e-6, 1e-3]) == (0.0, pytest.approx(1 / 6e-10, rel=1e-12))


def test_fit_affine_constant_and_single_size():
    # slower on less data (a negative slope): the median time, and a bandwidth that makes bytes free
    assert fit_affine([1e3, 1e6, 1e9], [5e-6, 4e-6, 3e-6]) == (4e-6, 1e15)
    # one distinct size: no overhead, bandwidth = size / median time
    assert fit_affine([8e6, 8e6, 8e6], [1e-3, 4e-3, 2e-3]) == (0.0, pytest.approx(4e9, rel=1e-12))
    # ... a time of 0 counts as 1 ps (8 bytes / 1e-12 s); no bytes at all: 1e12 bytes/s
    assert fit_affine([8.0], [0.0]) == (0.0, pytest.approx(8e12, rel=1e-12))
    assert fit_affine([0.0, 0.0], [1e-6, 2e-6]) == (0.0, 1e12)
    # one byte moved in 0.5 s: 2 bytes/s, however small the size (only a size of 0 has no rate)
    assert fit_affine([1.0, 1.0], [0.5, 0.5]) == (0.0, pytest.approx(2.0, rel=1e-12))


def test_fit_affine_weights_relative_error():
    # three points off any line: t = 1, 2, 6 (s = 1, 2, 3). Weighted by 1/t^2 (relative error),
    # the normal equations are sw = 1 + 1/4 + 1/36 = 46/36, sx = 1 + 1/2 + 1/12 = 19/12,
    # sy = 1 + 1/2 + 1/6 = 5/3, sxx = 1 + 1 + 1/4 = 9/4, sxy = 1 + 1 + 1/2 = 5/2:
    # slope = (sw sxy - sx sy) / (sw sxx - sx^2) = (115/36 - 95/36) / (414/144 - 361/144) = (20/36) / (53/144) = 80/53
    # intercept = (sy - slope sx) / sw = (5/3 - 380/159) * 36/46 = (-115/159) * (18/23) < 0: through the origin,
    # slope = sxy / sxx = (5/2) / (9/4) = 10/9
    assert fit_affine([1, 2, 3], [1, 2, 6]) == (0.0, pytest.approx(9 / 10, rel=1e-12))
    # t = 2, 2, 6: sw = 1/4 + 1/4 + 1/36 = 19/36, sx = 1/4 + 1/2 + 1/12 = 5/6, sy = 1/2 + 1/2 + 1/6 = 7/6,
    # sxx = 1/4 + 1 + 1/4 = 3/2, sxy = 1/2 + 1 + 1/2 = 2: slope = (38/36 - 35/36) / (57/72 - 50/72) = (1/12) / (7/72) = 6/7;
    # intercept = (7/6 - 5/7) * 36/19 = (19/42) * (36/19) = 6/7
    overhead, bandwidth = fit_affine([1, 2, 3], [2, 2, 6])
    assert overhead == pytest.approx(6 / 7, rel=1e-12) and bandwidth == pytest.approx(7 / 6, rel=1e-12)


# ---- fit_ops ------------------------------------------------------------------------------------

def test_fit_ops_recovers_each_operators_line_from_its_calls():
    # gelu: t = 3 us + bytes / 2e10, at 1, 4 and 16 MiB (above MIN_FIT_BYTES): fitted, not the default
    sizes = [1 << 20, 1 << 22, 1 << 24]
    samples = [(memory_op("gelu", s), 3e-6 + s / 2e10) for s in sizes]
    # layer_norm: t = 1 us + bytes / 5e9 (named by its kernel, not by the operator's name)
    samples += [(memory_op("layer_norm", s, name="native_layer_norm"), 1e-6 + s / 5e9) for s in sizes]
    # compute kernels and calls that move nothing are not memory-bound operators
    samples += [(compute_op("gemm", (8, 8, 8)), 1.0), (memory_op("zero_bytes", 0), 1.0)]
    fits = fit_ops(samples, bandwidth=1e9)
    assert set(fits) == {"gelu", "layer_norm"}
    assert fits["gelu"] == [pytest.approx(3e-6, rel=1e-9), pytest.approx(2e10, rel=1e-9)]
    assert fits["layer_norm"] == [pytest.approx(1e-6, rel=1e-9), pytest.approx(5e9, rel=1e-9)]


def test_fit_ops_small_operators_keep_the_default_bandwidth_and_the_median_overhead():
    # seen only under MIN_FIT_BYTES: bandwidth = the default 1e9; overhead = median(t - bytes / 1e9)
    # of 5, 9 and 4 us = 5 us (the mean would be 6 us)
    samples = [(memory_op("ones_like", 1000), 5e-6 + 1e-6), (memory_op("ones_like", 2000), 9e-6 + 2e-6),
               (memory_op("ones_like", 4000), 4e-6 + 4e-6)]
    # faster than the default bandwidth: the overhead is clamped at 0, not negative
    samples += [(memory_op("fill", 8000), 1e-6), (memory_op("fill", 8000), 2e-6)]
    fits = fit_ops(samples, bandwidth=1e9)
    assert fits["ones_like"] == [pytest.approx(5e-6, rel=1e-9), 1e9]
    assert fits["fill"] == [0.0, 1e9]


def test_fit_ops_fits_an_operator_whose_largest_call_is_exactly_min_fit_bytes():
    # MIN_FIT_BYTES itself is large enough to fit: t = 2 us + bytes / 4e9 at 2^19 and 2^20 bytes
    assert MIN_FIT_BYTES == 1 << 20
    sizes = [1 << 19, 1 << 20]
    fits = fit_ops([(memory_op("mul", s), 2e-6 + s / 4e9) for s in sizes], bandwidth=1e9)
    assert fits["mul"] == [pytest.approx(2e-6, rel=1e-9), pytest.approx(4e9, rel=1e-9)]
    # one byte less: the default bandwidth, overhead = median(t - bytes / 1e9)
    small = [(1 << 19) - 1, (1 << 20) - 1]
    fits = fit_ops([(memory_op("mul", s), 2e-6 + s / 4e9) for s in small], bandwidth=1e9)
    # t - s / 1e9 = 2e-6 - s * 3 / 4e9: median of the two = 2e-6 - mean(s) * 0.75e-9, below zero: clamped
    assert fits["mul"] == [0.0, 1e9]


# ---- fit_efficiency -----------------------------------------------------------------------------

def test_fit_efficiency_is_the_median_ratio_to_the_gemm_rate_per_kernel_and_shape():
    # the GEMM rate doubles along m: 1e10 at m = 1, 2e10 at m = 4096 (k, n free)
    rows = [[m, k, n, 1e10 if m == 1 else 2e10] for m in (1, 4096) for k in (1, 4096) for n in (1, 4096)]
    partial = calibration({"float32": rows})
    macs = 10**8
    samples = [
        # conv at (4096, 64, 64), rate 2e10: three calls at 5e9, 1e10 and 6e9 MAC/s -> ratios 0.25, 0.5, 0.3 -> median 0.3
        (compute_op("conv", (4096, 64, 64), macs), macs / 5e9),
        (compute_op("conv", (4096, 64, 64), macs), macs / 1e10),
        (compute_op("conv", (4096, 64, 64), macs), macs / 6e9),
        # conv at (1, 64, 64), rate 1e10: 8e9 MAC/s -> 0.8
        (compute_op("conv", (1, 64, 64), macs), macs / 8e9),
        # attention at (1, 16, 16): 2.5e9 MAC/s -> 0.25
        (compute_op("attention", (1, 16, 16), macs), macs / 2.5e9),
        # left out: no MACs, not an (m, k, n), a zero dimension, not a compute kernel, a dtype not calibrated
        (compute_op("conv", (8, 8, 8), 0), 1.0),
        (compute_op("conv", (8, 8), macs), 1.0),
        (compute_op("conv", (0, 8, 8), macs), 1.0),
        (compute_op("gelu", (8, 8, 8), macs), 1.0),
        (compute_op("conv", (8, 8, 8), macs, dtype="bfloat16"), 1.0),
    ]
    fitted = fit_efficiency(samples, partial)
    assert fitted == {"attention": [[1, 16, 16, pytest.approx(0.25, rel=1e-12)]],
                      "conv": [[1, 64, 64, pytest.approx(0.8, rel=1e-12)], [4096, 64, 64, pytest.approx(0.3, rel=1e-12)]]}


# ---- fit_steps ----------------------------------------------------------------------------------

def step(mode: str, step_s: float, ops_s: float, ops: int, optimizer_ops: int = 0, compute_s: float = 0.0) -> StepTiming:
    return StepTiming("p", mode, step_s, ops_s, ops, optimizer_ops, compute_s)


def test_fit_steps_weighs_each_step_by_its_relative_error():
    # no operators counted, so only the factor is fitted: step - compute = factor x (ops_s - compute)
    # with (ops_s - compute, step - compute) = (1, 2) and (1, 4). On relative error (rows / step_s):
    # minimise (1 - f / 2)^2 + (1 - f / 4)^2 -> f (1/4 + 1/16) = 1/2 + 1/4 -> f = 2.4
    # (unweighted: 3; weighted by step_s: 3.6)
    factor, framework = fit_steps([step("infer", 2.0, 1.0, 0), step("infer", 4.0, 1.0, 0)])
    assert factor == pytest.approx(2.4, rel=1e-12)
    assert framework == pytest.approx({"infer": 0.0, "train": 0.0, "optimizer": 0.0}, abs=1e-15)


def test_fit_steps_the_compute_kernels_are_not_scaled():
    # compute_s = 1 s of the operators' 3 s and 5 s; steps of 1 + 1.5 x 2 = 4 s and 1 + 1.5 x 4 = 7 s:
    # the factor is 1.5 (were the compute kernels scaled too, 4 = f x 3 and 7 = f x 5 would disagree)
    steps = [step("infer", 4.0, 3.0, 0, compute_s=1.0), step("infer", 7.0, 5.0, 0, compute_s=1.0)]
    factor, _ = fit_steps(steps)
    assert factor == pytest.approx(1.5, rel=1e-12)


def test_fit_steps_counts_each_group_of_operators():
    # factor 1; infer 1 ms / op; train 2 ms / op (forward and backward: ops - optimizer_ops); optimizer 0.5 ms / op
    def made(mode: str, ops_s: float, ops: int, optimizer_ops: int = 0) -> StepTiming:
        per_op = 1e-3 if mode == "infer" else 2e-3
        return step(mode, ops_s + per_op * (ops - optimizer_ops) + 0.5e-3 * optimizer_ops, ops_s, ops, optimizer_ops)

    steps = [made("infer", 0.1, 10), made("infer", 0.2, 30), made("train", 0.3, 50, 20), made("train", 0.1, 40, 5)]
    factor, framework = fit_steps(steps)
    assert factor == pytest.approx(1.0, rel=1e-9)
    assert framework == {"infer": pytest.approx(1e-3, rel=1e-9), "train": pytest.approx(2e-3, rel=1e-9),
                         "optimizer": pytest.approx(0.5e-3, rel=1e-9)}


def test_fit_steps_a_factor_not_above_zero_is_one_and_a_negative_framework_is_zero():
    # step = compute: the fitted factor is exactly 0, which is not a factor: 1
    factor, _ = fit_steps([step("infer", 2.0, 3.0, 0, compute_s=2.0)])
    assert factor == 1.0
    # an exact fit with factor 1 and -10 ms per inference operator: the framework cost is clamped at 0
    factor, framework = fit_steps([step("infer", 1.0 - 0.1, 1.0, 10), step("infer", 2.0 - 0.1, 2.0, 10)])
    assert factor == pytest.approx(1.0, rel=1e-9)
    assert framework["infer"] == 0.0


# ---- gemm_rate ----------------------------------------------------------------------------------

def grid_on_axis(axis: int, low: float, high: float) -> list[list[float]]:
    """A 2 x 2 x 2 grid at sizes 1 and 8 whose rate is ``low`` at size 1 and ``high`` at size 8
    on ``axis``, whatever the other two."""
    return [[m, k, n, high if (m, k, n)[axis] == 8 else low] for m in (1, 8) for k in (1, 8) for n in (1, 8)]


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_gemm_rate_along_each_axis(axis):
    cal = calibration({"float32": grid_on_axis(axis, 1e9, 8e9)})

    def at(size: int) -> float:
        shape = [1, 1, 1]
        shape[axis] = size
        return cal.gemm_rate(tuple(shape))

    assert at(1) == 1e9 and at(8) == 8e9  # grid points: the measured rates themselves
    # log(rate) linear in log(size): at 2, w = log 2 / log 8 = 1/3 -> 1e9^(2/3) x 8e9^(1/3) = 2e9; at 4: 4e9
    assert at(2) == pytest.approx(2e9, rel=1e-12)
    assert at(4) == pytest.approx(4e9, rel=1e-12)
    # beyond the grid: the edge's rate (0 counts as 1)
    assert at(64) == 8e9 and at(0) == 1e9


def test_gemm_rate_is_multilinear_in_all_three_axes():
    # every corner 1e9 but (8, 8, 8) at 8e9: at (2, 2, 2), w = 1/3 on each axis, so the corner's
    # weight is 1/27: 1e9 x 8^(1/27) = 1e9 x 2^(1/9); at (8, 8, 2): 1e9 x 8^(1/3) = 2e9
    rows = [[m, k, n, 8e9 if (m, k, n) == (8, 8, 8) else 1e9] for m in (1, 8) for k in (1, 8) for n in (1, 8)]
    cal = calibration({"float32": rows})
    assert cal.gemm_rate((2, 2, 2)) == pytest.approx(1e9 * 2 ** (1 / 9), rel=1e-12)
    assert cal.gemm_rate((8, 8, 2)) == pytest.approx(2e9, rel=1e-12)
    assert cal.gemm_rate((2, 8, 8)) == pytest.approx(2e9, rel=1e-12)


# ---- efficiency_at ------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, 2])
def test_efficiency_at_along_each_axis(axis):
    def shape(size: int) -> tuple[int, ...]:
        out = [1, 1, 1]
        out[axis] = size
        return tuple(out)

    cal = calibration(efficiency={"gemm": [[*shape(4), 0.2], [*shape(16), 0.8]]})
    assert cal.efficiency_at("gemm", shape(4)) == 0.2 and cal.efficiency_at("gemm", shape(16)) == 0.8
    # at 8, both (log 2)^2 away: equal weights, the geometric mean sqrt(0.2 x 0.8) = 0.4
    assert cal.efficiency_at("gemm", shape(8)) == pytest.approx(0.4, rel=1e-12)
    # at 2: (log 2)^2 and (3 log 2)^2 away, weights 1 and 1/9: exp((9 ln 0.2 + ln 0.8) / 10)
    assert cal.efficiency_at("gemm", shape(2)) == pytest.approx(0.2 ** 0.9 * 0.8 ** 0.1, rel=1e-12)
    # a zero dimension counts as 1: (2 log 2)^2 and (4 log 2)^2 away, weights 1 and 1/4: 0.2^0.8 x 0.8^0.2
    assert cal.efficiency_at("gemm", shape(0)) == pytest.approx(0.2 ** 0.8 * 0.8 ** 0.2, rel=1e-12)


def test_efficiency_at_uses_the_four_nearest_calls_only():
    # along n at 1, 4, 16, 64 and 4096; at n = 2 they are (log 2)^2 x 1, 1, 9, 25 and 121 away:
    # the last is left out, the others weigh 1, 1, 1/9, 1/25
    effs = {1: 0.1, 4: 0.2, 16: 0.4, 64: 0.8, 4096: 0.05}
    cal = calibration(efficiency={"gemm": [[1, 1, n, e] for n, e in effs.items()]})
    weights = {1: 1.0, 4: 1.0, 16: 1 / 9, 64: 1 / 25}
    expected = math.exp(sum(w * math.log(effs[n]) for n, w in weights.items()) / sum(weights.values()))
    assert cal.efficiency_at("gemm", (1, 1, 2)) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("kernel, m_scale", [("attention", 0.25), ("attention_backward", 0.25), ("bmm", 1.0)])
def test_efficiency_at_weighs_m_less_for_attention(kernel, m_scale):
    # calls at m = 4 (0.2) and at k = 4 (0.8), asked at (1, 1, 1): (2 log 2)^2 x m_scale and (2 log 2)^2 away
    cal = calibration(efficiency={kernel: [[4, 1, 1, 0.2], [1, 4, 1, 0.8]]})
    w_m, w_k = 1 / m_scale, 1.0
    expected = math.exp((w_m * math.log(0.2) + w_k * math.log(0.8)) / (w_m + w_k))  # attention: 0.2^0.8 x 0.8^0.2
    assert cal.efficiency_at(kernel, (1, 1, 1)) == pytest.approx(expected, rel=1e-12)


def test_efficiency_without_calls_is_one_and_compute_rate_multiplies():
    cal = calibration(efficiency={"conv": [[1, 1, 1, 0.5]]})
    assert cal.efficiency_at("gemm", (8, 8, 8)) == 1.0
    assert cal.compute_rate("conv", (1, 1, 1), "float32") == 0.5e10
    assert cal.compute_rate("gemm", (8, 8, 8), "float32") == pytest.approx(1e10, rel=1e-12)


def test_op_cost_falls_back_to_the_default_line():
    cal = Calibration("cpu", "synthetic", 1, "2.0", "calibration", {"float32": [[1, 1, 1, 1e10]]}, {},
                      {"gelu": [2e-6, 5e8]}, 1e-6, 1e9, {}, 1.0)
    assert cal.op_cost("gelu") == (2e-6, 5e8) and cal.op_cost("silu") == (1e-6, 1e9)
    # a one-point grid: its rate everywhere
    assert cal.gemm_rate((5, 5, 5)) == 1e10 and cal.gemm_rate((1, 1, 1)) == 1e10


# issue 46: a calibration made while other processes held the cores was cached and reused
# silently (predictions off by a median 15% on the quiet machine); it now records the machine's
# load and carries a warning.


def _with_load(busy_cores, loadavg=None, cpus=2, threads=2) -> Calibration:
    cal = calibration()
    cal.notes["machine"] = {"cpus": cpus, "threads": threads, "busy_cores": busy_cores,
                            "loadavg_1m_start": loadavg, "loadavg_1m_end": loadavg}
    return cal


@pytest.mark.slow
def test_a_calibration_records_the_cpu_time_other_processes_took_while_it_ran():
    import subprocess
    import sys
    import time

    from vitbench.timemodel.calibration.worker import load_finish, load_start

    quiet_from = load_start()
    time.sleep(0.3)
    quiet = load_finish(quiet_from, threads=1)
    assert set(quiet) >= {"cpus", "threads", "busy_cores", "loadavg_1m_start", "loadavg_1m_end"}
    assert quiet["threads"] == 1 and quiet["cpus"] >= 1
    spinner = subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 1.5\nwhile time.time() < end: pass"])
    try:
        time.sleep(0.3)  # the spinner's interpreter has started
        busy_from = load_start()
        time.sleep(0.8)
        busy = load_finish(busy_from, threads=1)
    finally:
        spinner.wait()
    assert busy["busy_cores"] > 0.6  # the spinner held about one core (and other processes, if any, more)


def test_a_calibration_measured_on_a_busy_machine_carries_a_warning_through_a_save_and_load(tmp_path):
    from vitbench.row_warnings import CODES
    from vitbench.timemodel.calibration.cache import load, save
    from vitbench.timemodel.calibration.schema import busy_warnings

    assert CODES["calibration-busy"] == "prediction"
    busy = load(save(_with_load(busy_cores=1.4, loadavg=3.4), tmp_path / "busy.json"))
    (found,) = busy_warnings(busy)
    assert found["code"] == "calibration-busy"
    assert "1.4 of 2 cores" in found["message"] and "load average 3.4" in found["message"]
    assert "--recalibrate" in found["advice"]
    # the load average alone (no CPU times from /proc) still tells a busy machine
    assert [w["code"] for w in busy_warnings(_with_load(busy_cores=None, loadavg=3.0))] == ["calibration-busy"]
    assert busy_warnings(_with_load(busy_cores=0.1, loadavg=2.1)) == []  # quiet: its own threads only
    assert busy_warnings(_with_load(busy_cores=0.2, threads=1)) == []  # one thread, the other core was free


def test_the_machine_load_is_other_processes_cpu_time_over_the_wall_time(monkeypatch):
    """busy_cores = (machine-wide CPU ticks - the worker's own) / ticks per second / wall seconds:
    300 ticks in all, 100 of them the worker's, over 2 s at 100 ticks a second -> 1.0 core."""
    import os
    import time

    import vitbench.timemodel.calibration.worker as worker

    monkeypatch.setattr(os, "sysconf", lambda name: 100)
    monkeypatch.setattr(worker, "load_average", lambda: (0.5, 0.5, 0.5))
    monkeypatch.setattr(worker, "_cpu_jiffies", lambda: 1_300)
    monkeypatch.setattr(worker, "_own_jiffies", lambda: 200)
    monkeypatch.setattr(time, "monotonic", lambda: 12.0)
    machine = worker.load_finish({"all": 1_000, "own": 100, "at": 10.0, "load": 0.25}, threads=2)
    assert machine["busy_cores"] == 1.0 and machine["threads"] == 2
    assert machine["loadavg_1m_start"] == 0.25 and machine["loadavg_1m_end"] == 0.5


def test_a_failed_calibration_worker_says_its_last_line_or_its_exit_code(monkeypatch):
    import vitbench.timemodel.calibration.worker as worker

    answers = iter([(1, "", "Traceback (most recent call last):\n  ...\nMemoryError: out of memory\n"), (3, "", "")])
    monkeypatch.setattr(worker, "_run_worker", lambda *args: next(answers))
    with pytest.raises(CalibrationError, match=r"^calibration failed: MemoryError: out of memory$"):
        worker.calibrate(threads=1)
    with pytest.raises(CalibrationError, match=r"^calibration failed: exit code 3$"):
        worker.calibrate(threads=1)


def test_without_an_affinity_mask_the_default_threads_are_the_cpus_or_one(monkeypatch):
    import os

    import vitbench.timemodel.calibration.worker as worker

    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert worker.default_threads() == 6
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # "undetermined" (Python's docs)
    assert worker.default_threads() == 1


def test_the_worker_process_writes_the_calibration_and_its_progress(monkeypatch, capsys):
    import sys

    import vitbench.timemodel.calibration.worker as worker

    asked = []

    def measured(threads, dtypes, on_step):
        asked.append((threads, dtypes))
        on_step(0, 2, "matrix products")
        return calibration()

    monkeypatch.setattr(worker, "calibrate_here", measured)
    monkeypatch.setattr(sys, "argv", ["worker", "--threads", "3"])
    worker._main()
    out, err = capsys.readouterr()
    assert asked == [(3, ("float32",))]  # float32 unless told
    assert Calibration.from_json(out).gemm == calibration().gemm
    assert worker._progress(err.splitlines()[0] + "\n") == (0, 2, "matrix products")


def test_a_calibration_file_without_the_machine_load_still_loads_and_is_not_flagged(tmp_path):
    from vitbench.timemodel.calibration.cache import load, save
    from vitbench.timemodel.calibration.schema import busy_warnings

    old = calibration()
    assert "machine" not in old.notes
    path = save(old, tmp_path / "old.json")
    assert "machine" not in path.read_text()
    assert busy_warnings(load(path)) == []


@pytest.mark.slow  # a calibration on a 2 x 2 x 2 GEMM grid and the full probes: ~25 s on 2 cores
def test_calibrate_here_saves_the_machine_load_in_the_file(monkeypatch):
    import torch

    import vitbench.timemodel.calibration.worker as worker

    monkeypatch.setattr(worker, "GEMM_M", (1, 8))
    monkeypatch.setattr(worker, "GEMM_KN", (16, 64))
    fitted = []
    real_fit_affine = worker.fit_affine
    monkeypatch.setattr(worker, "fit_affine", lambda sizes, times: fitted.append(list(sizes)) or real_fit_affine(sizes, times))
    steps = []
    threads = torch.get_num_threads()
    try:
        made = Calibration.from_json(worker.calibrate_here(1, on_step=lambda *step: steps.append(step)).to_json())
        # a worker flushes subnormal floats to zero (repeated in-place updates must not go subnormal)
        assert (torch.tensor([1e-39]) * 1.0).item() == 0.0
    finally:
        # calibrate_here is a worker's body: it flushes denormals to zero and sets the thread count
        # for its whole process; this test's process goes on (hypothesis refuses to run under FTZ)
        torch.set_flush_denormal(False)
        torch.set_num_threads(threads)
    machine = made.notes["machine"]
    assert machine["threads"] == 1 and machine["cpus"] >= 1
    assert machine["busy_cores"] is None or machine["busy_cores"] >= 0
    labels = worker.calibration_steps(("float32",))
    assert steps == [(i, len(labels), label) for i, label in enumerate(labels)]  # every step, in order, once
    # the bandwidth line: torch.add of float32 vectors of 10^2..10^7 elements reads two and writes one
    assert fitted == [[12 * n for n in (100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000)]]


def test_the_gemm_grid_is_powers_of_two_that_reach_a_vit_larges_mlp():
    """Rates measured at tile-aligned sizes (a size like 255 would time a ragged tile, not its
    neighbours' rate), from a single row to ViT-L/16's MLP (1,024 x 4,096): no priced shape of a
    preset lies beyond the grid's edge."""
    from vitbench.models.references import resolve
    from vitbench.timemodel.calibration.worker import GEMM_KN, GEMM_M

    for sizes in (GEMM_M, GEMM_KN):
        assert list(sizes) == sorted(sizes) and all(size & (size - 1) == 0 for size in sizes)
    large = resolve("vit-l/16").spec
    assert max(GEMM_KN) >= large.mlp_ratio * large.embed_dim == 4096
    assert min(GEMM_KN) <= 16 and min(GEMM_M) == 1
