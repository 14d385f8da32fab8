"""The CPU time model's pricing (vitbench.timemodel.model) on a synthetic calibration with round
numbers, operator by operator: every expected time is worked out by hand in the comments."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from vitbench.timemodel.calibration.schema import Calibration
from vitbench.timemodel.model import BREAKDOWN, Prediction, kernel_time, predict_ops
from vitbench.timemodel.ops import Op


def calibration(**changes) -> Calibration:
    """GEMM 1e10 MAC/s in float32 and 4e10 in bfloat16 at every shape (one-point grids);
    convolutions at half of it; gelu 2 us + bytes / 5e8; any other operator 1 us + bytes / 1e9;
    framework 3 us (infer), 4 us (train), 0.5 us (optimizer) per operator; colder by 2 in a step."""
    fields = dict(device="cpu", device_name="synthetic", threads=1, torch="2.0", basis="calibration",
                  gemm={"float32": [[1, 1, 1, 1e10]], "bfloat16": [[1, 1, 1, 4e10]]},
                  efficiency={"conv": [[1, 1, 1, 0.5]]}, ops={"gelu": [2e-6, 5e8]}, overhead_s=1e-6,
                  bandwidth_bytes_s=1e9, framework_s={"infer": 3e-6, "train": 4e-6, "optimizer": 5e-7},
                  in_step_factor=2.0)
    fields.update(changes)
    return Calibration(**fields)


def op(kernel: str, macs: int, moved: int, shape: tuple[int, ...] = (10, 10, 10), dtype: str = "float32",
       component: str = "linear", name: str = "op") -> Op:
    return Op(name, component, macs, moved, shape, dtype, kernel)


@pytest.mark.parametrize("call, expected", [
    # compute-bound: macs / rate = 1e8 / 1e10; the bytes would take 1e6 / 1e9 = 1e-3
    (op("gemm", 10**8, 10**6), (0.0, 1e-2)),
    # the dtype's own rate: 1e8 / 4e10; a dtype not calibrated is priced at float32's
    (op("gemm", 10**8, 10**6, dtype="bfloat16"), (0.0, 2.5e-3)),
    (op("gemm", 10**8, 10**6, dtype="float16"), (0.0, 1e-2)),
    # memory-bound product: bytes / bandwidth = 1e8 / 1e9 beats 10 / 1e10
    (op("gemm", 10, 10**8), (0.0, 1e-1)),
    # a convolution at efficiency 0.5: 1e8 / 5e9
    (op("conv", 10**8, 10**6, component="conv"), (0.0, 2e-2)),
    # a compute kernel without MACs or without a shape: a memory-bound operator at the default line
    (op("gemm", 0, 10**6), (1e-6, 1e-3)),
    (op("gemm", 10**8, 10**6, shape=()), (1e-6, 1e-3)),
    # memory-bound: its own fit (2 us, 4e6 / 5e8), found by kernel, or by name without one
    (op("gelu", 0, 4 * 10**6, shape=(), component="elementwise"), (2e-6, 8e-3)),
    (op("", 0, 4 * 10**6, shape=(), component="elementwise", name="gelu"), (2e-6, 8e-3)),
    (op("silu", 0, 4 * 10**6, shape=(), component="elementwise"), (1e-6, 4e-3)),
])
def test_kernel_time(call, expected):
    fixed, variable = kernel_time(call, calibration())
    assert fixed == pytest.approx(expected[0], rel=1e-12) and variable == pytest.approx(expected[1], rel=1e-12)


def test_a_step_charges_framework_per_operator_and_scales_only_memory_bound_kernels():
    ops = [
        op("gemm", 10**8, 10**6),                                                   # linear 1e-2, not scaled
        op("gemm", 0, 10**6),                                                       # no MACs: 2 x (1 us + 1e-3)
        op("gelu", 0, 4 * 10**6, shape=(), component="elementwise"),                # 2 x (2 us + 8e-3)
        op("add_", 0, 10**3, shape=(), component="optimizer"),                      # 2 x (1 us + 1e-6)
    ]
    p = predict_ops(ops, calibration(), "train")
    assert p.components_s["linear"] == pytest.approx(1e-2 + 2e-3, rel=1e-12)
    assert p.components_s["elementwise"] == pytest.approx(1.6e-2, rel=1e-12)
    assert p.components_s["optimizer"] == pytest.approx(2e-6, rel=1e-12)
    assert p.components_s["attention"] == 0.0 and p.components_s["conv"] == 0.0
    # framework: 3 operators of the train step at 4 us, 1 of the optimizer at 0.5 us; fixed: 2 x (1 + 2 + 1) us
    assert p.components_s["overhead"] == pytest.approx(3 * 4e-6 + 5e-7 + 2 * 4e-6, rel=1e-12)
    assert p.latency_s == pytest.approx(1.2e-2 + 1.6e-2 + 2e-6 + 12e-6 + 5e-7 + 8e-6, rel=1e-12)
    assert (p.ops, p.macs, p.bytes) == (4, 10**8, 10**6 + 10**6 + 4 * 10**6 + 10**3)


def test_framework_defaults():
    # no optimizer entry: its operators pay the step's (train: 4 us); a mode not calibrated pays none
    cal = calibration(framework_s={"train": 4e-6}, in_step_factor=1.0)
    step = [op("add_", 0, 10**3, shape=(), component="optimizer")]
    assert predict_ops(step, cal, "train").components_s["overhead"] == pytest.approx(4e-6 + 1e-6, rel=1e-12)
    assert predict_ops(step, cal, "infer").components_s["overhead"] == pytest.approx(1e-6, rel=1e-12)


def test_an_empty_step_and_the_row_columns():
    p = predict_ops([], calibration(), "infer")
    assert p == Prediction(0.0, dict.fromkeys(BREAKDOWN, 0.0), 0, 0, 0)
    with pytest.raises(FrozenInstanceError):  # a record
        p.latency_s = 1.0  # type: ignore[misc]
    assert p.columns(8)["pred_throughput_img_s"] == 0.0
    row = Prediction(0.5, {**dict.fromkeys(BREAKDOWN, 0.0), "linear": 0.5}, 3, 7, 11).columns(8)
    assert row["pred_latency_s"] == 0.5 and row["pred_throughput_img_s"] == 16.0  # 8 images / 0.5 s
    assert row["pred_linear_s"] == 0.5 and row["pred_overhead_s"] == 0.0
    assert (row["pred_ops"], row["pred_macs"], row["pred_bytes"]) == (3, 7, 11)
