"""Datasheet profiles: a time-model calibration for a GPU one does not have, from its published
dense peak per precision and its memory bandwidth (the roofline prior, ``basis=datasheet``).

Every operator is priced at the device's peak (efficiency 1: a lower bound on time),
memory-bound operators at the full bandwidth, and each operator pays a fixed
:data:`LAUNCH_S` (a kernel launch; the framework's own per-operator cost is not modelled,
which is why a small batch is predicted faster than eager PyTorch runs it). fp32 matrix
products use the FP32 (not TF32) peak: PyTorch's default for matmul. Calibrating on the GPU
itself replaces all of this (the GPU issue).
"""

from __future__ import annotations

from vitbench.measure.roofline import GPU_PEAKS, DevicePeak
from vitbench.timemodel.calibration import Calibration

#: seconds a GPU operator costs however small (a kernel launch)
LAUNCH_S = 5e-6

#: --device name -> the peak table's device name
DATASHEET_DEVICES = {
    "h100": "H100 SXM", "h100-pcie": "H100 PCIe", "h100-nvl": "H100 NVL", "h200": "H200 SXM",
    "a100": "A100 80GB SXM", "a100-40gb": "A100 40GB", "a100-pcie": "A100 80GB PCIe",
    "l4": "L4", "t4": "T4", "rtx4090": "RTX 4090",
}

_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def peak_of(name: str) -> DevicePeak:
    for _, peak in GPU_PEAKS:
        if peak.name == name:
            return peak
    raise KeyError(name)


def datasheet_calibration(device: str, torch_version: str = "") -> Calibration:
    """The roofline prior for a ``DATASHEET_DEVICES`` key, or for a peak-table device name."""
    peak = peak_of(DATASHEET_DEVICES.get(device, device))
    gemm = {_DTYPES[p]: [[1, 1, 1, flops / 2]] for p, flops in peak.flops.items() if p in _DTYPES}
    return Calibration(
        device=device, device_name=peak.name, threads=1, torch=torch_version, basis="datasheet", gemm=gemm,
        efficiency={}, ops={}, overhead_s=1e-12, bandwidth_bytes_s=peak.bandwidth or 1e12,
        framework_s={"infer": LAUNCH_S, "train": LAUNCH_S, "optimizer": LAUNCH_S}, in_step_factor=1.0,
        notes={"source": "vendor dense peaks (vitbench.measure.roofline.GPU_PEAKS)", "launch_s": LAUNCH_S},
    )
