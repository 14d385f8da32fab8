"""The time model: one step's time from its traced operators (:mod:`vitbench.predict.ops`) and a
calibration (:mod:`vitbench.predict.calibration`).

Every operator pays the fixed per-operator cost, then the larger of its compute time and its
memory time (a roofline per operator):

    t_op      = overhead_s + max(macs / rate(op), bytes / bandwidth)
    rate(op)  = gemm_rate(m, k, n) x efficiency(component)   (linear: 1; conv, attention: calibrated)
    t_step    = sum over the step's operators of t_op

The breakdown charges ``overhead_s`` per operator to ``pred_overhead_s`` and the rest to the
operator's component, so the components sum to ``pred_latency_s`` exactly.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from vitbench.predict.calibration import Calibration
from vitbench.predict.ops import COMPONENTS, Op

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
        row.update({"pred_ops": self.ops, "pred_bytes": self.bytes})
        return row


def op_time(op: Op, calibration: Calibration) -> float:
    """Seconds of one operator beyond the fixed per-operator cost."""
    memory_s = op.bytes / calibration.bandwidth_bytes_s
    if not op.macs or not op.shape:
        return memory_s
    rate = calibration.gemm_rate(op.shape, "bfloat16" if op.dtype == "bfloat16" else "float32")
    if op.component == "conv":
        rate *= calibration.conv_efficiency
    elif op.component == "attention" and not op.name.endswith("bmm"):
        rate *= calibration.attention_efficiency
    return max(op.macs / rate, memory_s)


def predict_ops(ops: Iterable[Op], calibration: Calibration) -> Prediction:
    components = dict.fromkeys(BREAKDOWN, 0.0)
    count = macs = moved = 0
    for op in ops:
        components[op.component] += op_time(op, calibration)
        components["overhead"] += calibration.overhead_s
        count += 1
        macs += op.macs
        moved += op.bytes
    # the total is the sum of the components, so the breakdown adds up to it exactly
    return Prediction(sum(components.values()), components, count, macs, moved)
