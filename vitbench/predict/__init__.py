"""Predicted step time (work in progress: the CPU time model; see docs in the module files).

- :mod:`vitbench.predict.ops`: every operator of one step of any model, traced on fake tensors;
- :mod:`vitbench.predict.calibration`: this machine's micro-benchmarks, saved as versioned JSON;
- :mod:`vitbench.predict.model`: per-operator roofline plus a fixed per-operator cost.
"""

from __future__ import annotations

from typing import Any


def predict_step(model: Any, calibration: Any, batch_size: int = 1, mode: str = "infer", precision: str = "fp32",
                 optimizer: str = "adamw") -> dict[str, Any]:
    """``pred_*`` columns for one step of ``model`` (a preset, reference, spec or live module)
    at ``batch_size``, from ``calibration`` (:func:`vitbench.predict.calibration.calibrate`)."""
    from vitbench.models.references import resolve
    from vitbench.predict.model import predict_ops
    from vitbench.predict.ops import trace_target_ops

    target = resolve(model)
    prediction = predict_ops(trace_target_ops(target, batch_size, mode, precision, optimizer), calibration)
    row = {"model": str(model) if isinstance(model, str) else getattr(target, "name", type(model).__name__),
           "batch_size": batch_size, "mode": mode, "precision": precision,
           "pred_basis": f"calibration:{calibration.device}:{calibration.device_name}:t{calibration.threads}"}
    row.update(prediction.columns(batch_size))
    return row
