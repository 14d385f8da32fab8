"""The time model: one step's time from its traced operators (:mod:`vitbench.timemodel.ops`) and
a calibration (:mod:`vitbench.timemodel.calibration.schema`).

Every operator pays the framework's fixed cost for the step's mode, then its kernel's time,
scaled by how much colder operators run inside a step than on their own:

    t_op     = framework_s[group] + factor x kernel(op)
               (group: the step's mode, infer or train, or ``optimizer`` for the optimizer's
               operators; factor: 1 for compute kernels, in_step_factor for the rest)
    kernel   = max(macs / (gemm_rate(m, k, n, dtype) x efficiency[kernel](m, k, n)), bytes / bandwidth)
                                       (matrix products, convolutions, attention kernels)
             = overhead[name] + bytes / bandwidth[name]          (every other operator)
    t_step   = sum over the step's operators of t_op

The breakdown charges the fixed costs (framework, and ``in_step_factor x overhead[name]``) to
``pred_overhead_s`` and the rest of each operator to its component, so that the components sum
to ``pred_latency_s`` exactly.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from vitbench.timemodel.calibration.schema import Calibration
from vitbench.timemodel.ops import COMPONENTS, COMPUTE_KERNELS, Op

BREAKDOWN = (*COMPONENTS, "overhead")


@dataclass(frozen=True)
class Prediction:
    latency_s: float
    components_s: dict[str, float]
    ops: int
    macs: int
    bytes: int

    def columns(self, batch_size: int) -> dict[str, float | int]:
        row: dict[str, float | int] = {"pred_latency_s": self.latency_s,
                                       "pred_throughput_img_s": batch_size / self.latency_s if self.latency_s > 0 else 0.0}
        row.update({f"pred_{name}_s": self.components_s[name] for name in BREAKDOWN})
        row.update({"pred_ops": self.ops, "pred_macs": self.macs, "pred_bytes": self.bytes})
        return row


def kernel_time(op: Op, calibration: Calibration) -> tuple[float, float]:
    """(fixed, variable) seconds of an operator's kernel on its own."""
    if op.kernel in COMPUTE_KERNELS and op.macs and op.shape:
        dtype = op.dtype if op.dtype in calibration.gemm else "float32"
        rate = calibration.compute_rate(op.kernel, op.shape, dtype)
        return 0.0, max(op.macs / rate, op.bytes / calibration.bandwidth_bytes_s)
    overhead, bandwidth = calibration.op_cost(op.kernel or op.name)
    return overhead, op.bytes / bandwidth


def predict_ops(ops: Iterable[Op], calibration: Calibration, mode: str) -> Prediction:
    """The step time of ``ops`` (one step in ``mode``: infer or train)."""
    step_framework = calibration.framework_s.get(mode, 0.0)
    optimizer_framework = calibration.framework_s.get("optimizer", step_framework)
    components = dict.fromkeys(BREAKDOWN, 0.0)
    count = macs = moved = 0
    for op in ops:
        fixed, variable = kernel_time(op, calibration)
        factor = 1.0 if op.kernel in COMPUTE_KERNELS and op.macs else calibration.in_step_factor
        components[op.component] += factor * variable
        framework = optimizer_framework if op.component == "optimizer" else step_framework
        components["overhead"] += framework + factor * fixed
        count += 1
        macs += op.macs
        moved += op.bytes
    # the total is the sum of the components, so the breakdown adds up to it exactly
    return Prediction(sum(components.values()), components, count, macs, moved)
