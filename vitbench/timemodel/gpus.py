"""The GPU catalogue: each card's published numbers, what ``vitbench predict --device NAME``
prices a step with (:mod:`vitbench.timemodel.gpu_model`). Pure Python (no torch).

Every figure is the vendor's, dense (no structured sparsity), at the boost clock, from the
document named in ``source``:

- ``fp32``: FP32 on CUDA cores (PyTorch's default for fp32 matrix products);
- ``tf32``: TF32 tensor cores (``--precision tf32``: ``torch.backends.cuda.matmul.allow_tf32``);
- ``fp16`` / ``bf16``: tensor cores **with FP32 accumulate**, which is what PyTorch's cuBLAS and
  cuDNN calls use under autocast. GeForce cards (RTX 3090, 4090, 5090) run FP16 with FP32
  accumulate at half their FP16-accumulate rate, the figure their marketing quotes; the
  workstation and data-centre cards run both at the same rate. Volta and Turing have no bf16
  (and no TF32) tensor cores: None.

``sms`` and ``boost_mhz`` let a reader check a peak: peak = SMs x boost clock x the
architecture's operations per SM per clock (``tests/test_gpus.py`` does, for every card).
"""

from __future__ import annotations

from dataclasses import dataclass

#: architecture generations, oldest first
GENERATIONS = ("volta", "turing", "ampere", "ada", "hopper", "blackwell")


@dataclass(frozen=True)
class GpuSpec:
    key: str                 # the --device name
    name: str                # the vendor's product name
    generation: str          # one of GENERATIONS
    sms: int                 # streaming multiprocessors
    boost_mhz: int           # boost clock
    fp32_tflops: float       # dense FP32 (CUDA cores)
    tf32_tflops: float | None
    fp16_tflops: float       # dense FP16 tensor, FP32 accumulate
    bf16_tflops: float | None
    bandwidth_gb_s: float    # DRAM bandwidth, GB/s (10^9 bytes)
    l2_mb: float             # L2 cache, MB (2^20 bytes)
    memory_gb: float         # DRAM, GB as the vendor states it
    source: str              # the vendor document the numbers are from
    aliases: tuple[str, ...] = ()   # other --device spellings
    names: tuple[str, ...] = ()     # substrings of torch.cuda.get_device_name() that identify it

    def peak_flops(self, dtype: str, tf32: bool = False) -> float | None:
        """FLOP/s of a dense matrix product in ``dtype`` (float32 on CUDA cores unless ``tf32``)."""
        tflops = {"float16": self.fp16_tflops, "bfloat16": self.bf16_tflops,
                  "float32": self.tf32_tflops if tf32 else self.fp32_tflops}.get(dtype, self.fp32_tflops)
        return tflops * 1e12 if tflops else None

    @property
    def bandwidth_bytes_s(self) -> float:
        return self.bandwidth_gb_s * 1e9

    @property
    def l2_bytes(self) -> float:
        return self.l2_mb * 2**20


_V100 = "NVIDIA Tesla V100 GPU Accelerator datasheet (2020); Volta architecture whitepaper (2017)"
_T4 = "NVIDIA T4 Tensor Core GPU datasheet; Turing architecture whitepaper (2018)"
_A10 = "NVIDIA A10 Tensor Core GPU datasheet (2021)"
_A100 = "NVIDIA A100 Tensor Core GPU datasheet (2021); Ampere GA100 architecture whitepaper"
_A6000 = "NVIDIA RTX A6000 datasheet (2021); Ampere GA102 architecture whitepaper v2"
_L4 = "NVIDIA L4 Tensor Core GPU datasheet (2023); Ada Lovelace architecture whitepaper v1.1"
_L40S = "NVIDIA L40S GPU datasheet (2023); Ada Lovelace architecture whitepaper v1.1"
_H100 = "NVIDIA H100 Tensor Core GPU datasheet (2023); Hopper architecture whitepaper"
_H200 = "NVIDIA H200 Tensor Core GPU datasheet (2024)"
_B200 = "NVIDIA HGX B200 datasheet (2024; per GPU); Blackwell architecture technical brief"
_GA102 = "NVIDIA Ampere GA102 GPU architecture whitepaper v2 (2021), Table 9 (GeForce RTX 3090)"
_AD102 = "NVIDIA Ada GPU architecture whitepaper v2.1 (2023), Appendix A Table 2 (GeForce RTX 4090)"
_GB202 = "NVIDIA RTX Blackwell GPU architecture whitepaper v1.1 (2025), Appendix A (GeForce RTX 5090)"
_PRO6000 = "NVIDIA RTX PRO 6000 Blackwell Workstation / Max-Q Workstation Edition datasheets (2025); RTX Blackwell whitepaper"

CATALOGUE: tuple[GpuSpec, ...] = (
    GpuSpec("v100", "Tesla V100 SXM2", "volta", 80, 1530, 15.7, None, 125.0, None, 900, 6, 32, _V100,
            ("v100-sxm2",), ("v100-sxm2",)),
    GpuSpec("v100-pcie", "Tesla V100 PCIe", "volta", 80, 1380, 14.0, None, 112.0, None, 900, 6, 32, _V100,
            (), ("v100-pcie",)),
    GpuSpec("t4", "T4", "turing", 40, 1590, 8.1, None, 65.0, None, 320, 4, 16, _T4, (), ("t4",)),
    GpuSpec("a10", "A10", "ampere", 72, 1695, 31.2, 62.5, 125.0, 125.0, 600, 6, 24, _A10, (), ("a10",)),
    GpuSpec("a100", "A100 80GB SXM", "ampere", 108, 1410, 19.5, 156.0, 312.0, 312.0, 2039, 40, 80, _A100,
            ("a100-80gb", "a100-sxm"), ("a100-sxm4-80gb", "a100 80gb")),
    GpuSpec("a100-40gb", "A100 40GB SXM", "ampere", 108, 1410, 19.5, 156.0, 312.0, 312.0, 1555, 40, 40, _A100,
            ("a100-40gb-sxm",), ("a100-sxm4-40gb", "a100")),
    GpuSpec("a100-pcie", "A100 80GB PCIe", "ampere", 108, 1410, 19.5, 156.0, 312.0, 312.0, 1935, 40, 80, _A100,
            ("a100-80gb-pcie",), ("a100 80gb pcie", "a100-pcie-80gb")),
    GpuSpec("a100-40gb-pcie", "A100 40GB PCIe", "ampere", 108, 1410, 19.5, 156.0, 312.0, 312.0, 1555, 40, 40, _A100,
            (), ("a100-pcie-40gb",)),
    GpuSpec("a6000", "RTX A6000", "ampere", 84, 1800, 38.7, 77.4, 154.8, 154.8, 768, 6, 48, _A6000,
            ("rtx-a6000",), ("rtx a6000",)),
    GpuSpec("l4", "L4", "ada", 58, 2040, 30.3, 60.0, 121.0, 121.0, 300, 48, 24, _L4, (), ("l4",)),
    GpuSpec("l40s", "L40S", "ada", 142, 2520, 91.6, 183.0, 362.05, 362.05, 864, 96, 48, _L40S, (), ("l40s",)),
    GpuSpec("h100", "H100 SXM", "hopper", 132, 1980, 67.0, 494.7, 989.4, 989.4, 3350, 50, 80, _H100,
            ("h100-sxm",), ("h100 80gb hbm3", "h100-sxm", "h100 sxm")),
    GpuSpec("h100-pcie", "H100 PCIe", "hopper", 114, 1755, 51.2, 378.0, 756.0, 756.0, 2000, 50, 80, _H100,
            (), ("h100 pcie", "h100-pcie")),
    GpuSpec("h100-nvl", "H100 NVL", "hopper", 132, 1785, 60.0, 417.5, 835.0, 835.0, 3900, 50, 94, _H100,
            (), ("h100 nvl",)),
    GpuSpec("h200", "H200 SXM", "hopper", 132, 1980, 67.0, 494.7, 989.4, 989.4, 4800, 50, 141, _H200,
            ("h200-sxm",), ("h200",)),
    GpuSpec("b200", "B200 (HGX)", "blackwell", 148, 1965, 75.0, 1100.0, 2250.0, 2250.0, 8000, 126, 180, _B200,
            (), ("b200",)),
    GpuSpec("rtx3090", "GeForce RTX 3090", "ampere", 82, 1695, 35.6, 35.6, 71.0, 71.0, 936, 6, 24, _GA102,
            ("3090", "rtx-3090"), ("rtx 3090",)),
    GpuSpec("rtx4090", "GeForce RTX 4090", "ada", 128, 2520, 82.6, 82.6, 165.2, 165.2, 1008, 72, 24, _AD102,
            ("4090", "rtx-4090"), ("rtx 4090",)),
    GpuSpec("rtx5090", "GeForce RTX 5090", "blackwell", 170, 2407, 104.8, 104.8, 209.5, 209.5, 1792, 96, 32, _GB202,
            ("5090", "rtx-5090"), ("rtx 5090",)),
    GpuSpec("rtx-pro-6000", "RTX PRO 6000 Blackwell Workstation Edition", "blackwell", 188, 2617, 125.0, 251.9, 503.8,
            503.8, 1792, 128, 96, _PRO6000, ("pro6000", "rtx-pro-6000-workstation"), ("rtx pro 6000 blackwell workstation",)),
    GpuSpec("rtx-pro-6000-maxq", "RTX PRO 6000 Blackwell Max-Q Workstation Edition", "blackwell", 188, 2287, 110.0,
            220.0, 440.0, 440.0, 1792, 128, 96, _PRO6000, ("pro6000maxq", "rtx-pro-6000-max-q"),
            ("rtx pro 6000 blackwell max-q",)),
)

_BY_NAME = {name: spec for spec in CATALOGUE for name in (spec.key, *spec.aliases)}
GPU_DEVICES = tuple(spec.key for spec in CATALOGUE)


def gpu(name: str) -> GpuSpec | None:
    """The catalogue entry for a ``--device`` name or alias (case-insensitive), or None."""
    return _BY_NAME.get(str(name).strip().lower())


def match_device_name(device_name: str) -> GpuSpec | None:
    """The entry for a name as ``torch.cuda.get_device_name()`` gives it ('NVIDIA H100 80GB HBM3');
    the longest matching name wins, so 'A100-SXM4-40GB' is not taken for any A100."""
    import re

    lowered = str(device_name).lower()
    best: tuple[int, GpuSpec] | None = None
    for spec in CATALOGUE:
        for needle in spec.names:
            found = re.search(rf"(?<![a-z0-9]){re.escape(needle)}(?![0-9a-z])", lowered)
            if found and (best is None or len(needle) > best[0]):
                best = (len(needle), spec)
    return best[1] if best else None


__all__ = ["CATALOGUE", "GENERATIONS", "GPU_DEVICES", "GpuSpec", "gpu", "match_device_name"]
