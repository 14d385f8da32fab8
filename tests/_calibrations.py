"""A synthetic CPU calibration for tests that need one without the real 35 s measurement."""

from __future__ import annotations

from vitbench.timemodel.calibration.schema import Calibration

RATE = 1e10  # MAC/s everywhere in the synthetic calibration


def synthetic(**changes) -> Calibration:
    """A calibration with round numbers: every product at RATE, convolutions at half of it,
    attention at a quarter, memory at 1 GB/s, 1 us per operator, gelu with its own fit."""
    import torch

    rows = [[m, k, n, RATE] for m in (1, 10**6) for k in (1, 10**6) for n in (1, 10**6)]
    fields = dict(
        device="cpu", device_name="synthetic", threads=1, torch=torch.__version__, basis="calibration",
        gemm={"float32": rows}, efficiency={"conv": [[1, 1, 1, 0.5]], "attention": [[1, 1, 1, 0.25]]},
        ops={"gelu": [2e-6, 5e8]}, overhead_s=1e-6, bandwidth_bytes_s=1e9,
        framework_s={"infer": 3e-6, "train": 4e-6, "optimizer": 5e-7}, in_step_factor=1.0,
    )
    fields.update(changes)
    return Calibration(**fields)
