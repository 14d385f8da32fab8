"""Roofline context: achieved FLOP/s, model FLOPs utilisation (MFU) against the device's peak,
and the compute-bound / memory-bound label. Pure Python (no torch).

Peak figures are the vendors' dense (no structured sparsity) numbers for the precision a
PyTorch step actually runs at: fp32 = FP32 CUDA cores (TF32 tensor cores when
``torch.backends.cuda.matmul`` allows TF32), bf16 / fp16 = tensor cores with FP32 accumulate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TRAIN_FLOPS_FACTOR = 3


@dataclass(frozen=True)
class DevicePeak:
    """Peak dense FLOP/s per precision and peak memory bandwidth (bytes/s) of one device."""

    name: str
    flops: dict[str, float]
    bandwidth: float | None

    def flops_for(self, precision: str) -> float | None:
        return self.flops.get(precision)


def _tf(x: float) -> float:
    return x * 1e12


#: (substrings that must all occur in the device name, case-insensitive) -> peak. First match
#: wins, so specific variants (PCIe, NVL, 80GB) come before the generic name.
GPU_PEAKS: list[tuple[tuple[str, ...], DevicePeak]] = [
    (("h100", "pcie"), DevicePeak("H100 PCIe", {"fp32": _tf(51.2), "tf32": _tf(378), "bf16": _tf(756), "fp16": _tf(756)}, 2.0e12)),
    (("h100", "nvl"), DevicePeak("H100 NVL", {"fp32": _tf(60), "tf32": _tf(417.5), "bf16": _tf(835), "fp16": _tf(835)}, 3.9e12)),
    (("h100",), DevicePeak("H100 SXM", {"fp32": _tf(67), "tf32": _tf(494.7), "bf16": _tf(989.4), "fp16": _tf(989.4)}, 3.35e12)),
    (("h200",), DevicePeak("H200 SXM", {"fp32": _tf(67), "tf32": _tf(494.7), "bf16": _tf(989.4), "fp16": _tf(989.4)}, 4.8e12)),
    (("a100", "80gb", "pcie"), DevicePeak("A100 80GB PCIe", {"fp32": _tf(19.5), "tf32": _tf(156), "bf16": _tf(312), "fp16": _tf(312)}, 1.935e12)),
    (("a100", "80gb"), DevicePeak("A100 80GB SXM", {"fp32": _tf(19.5), "tf32": _tf(156), "bf16": _tf(312), "fp16": _tf(312)}, 2.039e12)),
    (("a100",), DevicePeak("A100 40GB", {"fp32": _tf(19.5), "tf32": _tf(156), "bf16": _tf(312), "fp16": _tf(312)}, 1.555e12)),
    (("l4",), DevicePeak("L4", {"fp32": _tf(30.3), "tf32": _tf(60), "bf16": _tf(121), "fp16": _tf(121)}, 300e9)),
    # Turing: no bf16 and no TF32 tensor cores.
    (("t4",), DevicePeak("T4", {"fp32": _tf(8.1), "fp16": _tf(65)}, 320e9)),
    (("4090",), DevicePeak("RTX 4090", {"fp32": _tf(82.6), "tf32": _tf(82.6), "bf16": _tf(165.2), "fp16": _tf(165.2)}, 1008e9)),
]


def lookup_device(device_name: str | None) -> DevicePeak | None:
    """The table entry whose substrings all occur in ``device_name`` ('NVIDIA H100 80GB HBM3')."""
    if not device_name:
        return None
    lowered = device_name.lower()
    for needles, peak in GPU_PEAKS:
        if all(_word_in(n, lowered) for n in needles):
            return peak
    return None


def _word_in(needle: str, text: str) -> bool:
    """Substring match that keeps 'l4' from matching inside e.g. 'rtx a4000 l40s'."""
    return re.search(rf"(?<![a-z0-9]){re.escape(needle)}(?![0-9])", text) is not None


def step_flops(macs: int, mode: str) -> int:
    """FLOPs of one step: 2 * MACs for a forward pass; x3 for a training step (the backward pass
    costs about two forward passes: gradients w.r.t. inputs and w.r.t. weights)."""
    return 2 * macs * (TRAIN_FLOPS_FACTOR if mode == "train" else 1)


def achieved_flops_per_s(macs: int, mode: str, step_seconds: float) -> float:
    """step_flops / step time."""
    return step_flops(macs, mode) / step_seconds


def mfu(achieved: float, peak: float | None) -> float | None:
    """Model FLOPs utilisation = achieved FLOP/s / peak FLOP/s (None without a peak)."""
    return achieved / peak if peak else None


def ridge_point(peak_flops: float | None, peak_bandwidth: float | None) -> float | None:
    """Arithmetic intensity (FLOP/byte) where the roofline turns: peak FLOP/s / peak bytes/s."""
    if not peak_flops or not peak_bandwidth:
        return None
    return peak_flops / peak_bandwidth


def bound(intensity: float | None, ridge: float | None) -> str | None:
    """'compute' when the intensity reaches the ridge point, else 'memory' (None if unknown)."""
    if intensity is None or ridge is None:
        return None
    return "compute" if intensity >= ridge else "memory"


def peak_precision_key(precision: str, device: str, tf32: bool) -> str:
    """Table key for a run: fp32 runs on TF32 tensor cores when TF32 matmuls are allowed."""
    if precision == "fp32" and device.startswith("cuda") and tf32:
        return "tf32"
    return precision


@dataclass(frozen=True)
class Roofline:
    flops_per_s: float
    peak_flops_per_s: float | None
    peak_bandwidth_bytes_per_s: float | None
    peak_source: str | None

    @property
    def mfu(self) -> float | None:
        return mfu(self.flops_per_s, self.peak_flops_per_s)

    @property
    def ridge(self) -> float | None:
        return ridge_point(self.peak_flops_per_s, self.peak_bandwidth_bytes_per_s)


def roofline(
    macs: int,
    mode: str,
    step_seconds: float,
    precision_key: str,
    device_name: str | None,
    peak_flops: float | None = None,
    peak_bandwidth: float | None = None,
) -> Roofline:
    """Achieved FLOP/s and the peak to compare it with: user-given peaks win over the table."""
    entry = lookup_device(device_name)
    source = None
    table_flops = entry.flops_for(precision_key) if entry else None
    if peak_flops is not None:
        source = "user"
    elif table_flops is not None:
        source = f"table:{entry.name}"
    return Roofline(
        flops_per_s=achieved_flops_per_s(macs, mode, step_seconds),
        peak_flops_per_s=peak_flops if peak_flops is not None else table_flops,
        peak_bandwidth_bytes_per_s=peak_bandwidth if peak_bandwidth is not None else (entry.bandwidth if entry else None),
        peak_source=source,
    )
