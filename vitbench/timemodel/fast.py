"""Predicting many configurations quickly (a sweep's grid): the same predictions as tracing each
configuration, from a few traces per architecture.

- Batch: every operator's bytes, MACs and (m, k, n) are affine in the batch size (activations
  scale with it, parameters do not), so one architecture is traced at batches 2 and 3 and any
  batch B is ``x(B) = x(2) + (B - 2) x (x(3) - x(2))``, exactly. (When the two traces do not
  run the same operators, each batch is traced.)
- Depth (vitbench's own ViTs): blocks are identical, so a step's predicted time, and each
  component of it, is affine in the depth: ``T(d) = T(1) + (d - 1) x (T(2) - T(1))``, exactly.

A library's model (``timm:``, ``hf:``, ``torchvision:``, ``py:``, a live module) is traced per
configuration; only vitbench's own builders take the shortcuts, which the tests check against
a full trace.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from vitbench.models.references import resolve
from vitbench.specs import with_overrides
from vitbench.timemodel import ops as step_ops
from vitbench.timemodel.calibration.schema import Calibration
from vitbench.timemodel.gpu_model import predict_gpu
from vitbench.timemodel.model import Prediction, predict_ops
from vitbench.timemodel.ops import Op

ANCHORS = (2, 3)


def _aligned(low: list[Op], high: list[Op]) -> bool:
    return len(low) == len(high) and all(
        a.name == b.name and a.kernel == b.kernel and a.component == b.component and len(a.shape) == len(b.shape)
        for a, b in zip(low, high))


def ops_at(low: list[Op], high: list[Op], batch: int) -> list[Op]:
    """The operators at ``batch`` from the traces at the two anchor batches."""
    step = batch - ANCHORS[0]
    out = []
    for a, b in zip(low, high):
        out.append(Op(a.name, a.component, a.macs + step * (b.macs - a.macs), a.bytes + step * (b.bytes - a.bytes),
                      tuple(x + step * (y - x) for x, y in zip(a.shape, b.shape)), a.dtype, a.kernel, a.aliases))
    return out


def _scaled(one: Prediction, two: Prediction, depth: int) -> Prediction:
    k = depth - 1
    components = {name: one.components_s[name] + k * (two.components_s[name] - one.components_s[name]) for name in one.components_s}
    return Prediction(sum(components.values()), components, one.ops + k * (two.ops - one.ops),
                      one.macs + k * (two.macs - one.macs), one.bytes + k * (two.bytes - one.bytes))


class Predictor:
    """Predictions of many configurations against one calibration, sharing traces."""

    def __init__(self, calibration: Any, optimizer: str = "adamw") -> None:
        """``calibration``: a CPU :class:`Calibration` or a GPU profile
        (:class:`~vitbench.timemodel.gpu_model.GpuProfile`; traced for CUDA then)."""
        self.calibration = calibration
        self.optimizer = optimizer
        self.device_type = "cpu" if isinstance(calibration, Calibration) else "cuda"
        self._anchors: dict[Any, tuple[list[Op], list[Op]] | None] = {}
        self._traced: dict[Any, list[Op]] = {}
        self._predictions: dict[Any, Prediction] = {}

    def predict(self, target: Any, batch: int, mode: str, precision: str = "fp32") -> Prediction:
        """One step of ``target`` (a resolved Target) at ``batch``."""
        ours = target.source in ("preset", "spec") and target.spec is not None and target.module is None
        depth = getattr(target.spec, "depth", None) if ours else None
        if isinstance(depth, int) and depth > 2 and self.device_type == "cpu":  # the GPU's host/kernel overlap is not affine

            one, two = (self._one(replace(resolve(with_overrides(target.spec, depth=d)), overrides=target.overrides),
                                  batch, mode, precision, True) for d in (1, 2))
            return _scaled(one, two, depth)
        return self._one(target, batch, mode, precision, ours)

    def _one(self, target: Any, batch: int, mode: str, precision: str, ours: bool) -> Prediction:
        key = (target, id(target.module), batch, mode, precision)
        if key not in self._predictions:
            ops = self._ops(target, batch, mode, precision, ours)
            if isinstance(self.calibration, Calibration):
                self._predictions[key] = predict_ops(ops, self.calibration, mode)
            else:
                self._predictions[key] = predict_gpu(ops, self.calibration, mode, tf32=precision == "tf32")
        return self._predictions[key]

    def _ops(self, target: Any, batch: int, mode: str, precision: str, ours: bool) -> list[Op]:
        structure = (target, id(target.module), mode, precision)
        key = (*structure, batch)
        if ours and structure not in self._anchors:
            # one build traces the anchors and batch 1, which can run other operators (squeezed
            # dimensions), so it is never extrapolated
            traced = step_ops.trace_target_batches(target, (1, *ANCHORS), mode, precision, self.optimizer, self.device_type)
            low, high = traced[ANCHORS[0]], traced[ANCHORS[1]]
            self._anchors[structure] = (low, high) if _aligned(low, high) else None
            self._traced[(*structure, 1)] = traced[1]
        if ours and batch > 1 and self._anchors[structure] is not None:
            return ops_at(*self._anchors[structure], batch)
        if key not in self._traced:
            if len(self._traced) > 512:
                self._traced.clear()
            self._traced[key] = step_ops.trace_target_ops(target, batch, mode, precision, self.optimizer, self.device_type)
        return self._traced[key]


__all__ = ["Predictor", "ops_at"]
