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

A data-centre card's datasheet peak is not what it sustains (an H200 runs a large bf16 matrix
product at about 80% of its 989 TFLOP/s, power-capped cards such as the L4 or T4 at about 60%),
so each card also carries what it was *measured* to sustain, from a published measurement
(:data:`SUSTAINED`): the largest dense fp16/bf16 matrix product (``torch.mm``, best of square
sizes) and a device-to-device copy (read + write bytes). The GPU cost model's efficiencies for
data-centre generations are relative to these, so a fit on one card transfers to another
through what each really does; consumer cards keep their datasheet figures (their fits are
relative to the boost clock, which GeForce cards exceed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

#: architecture generations, oldest first
GENERATIONS = ("volta", "turing", "ampere", "ada", "hopper", "blackwell")
#: what a card is sold for: its datasheet's peak means something different in each
MARKETS = ("datacenter", "workstation", "consumer")


@dataclass(frozen=True)
class Sustained:
    """What a card was measured to sustain: a dense fp16/bf16 tensor-core matrix product
    (FLOP/s, FP32 accumulate) and a device-to-device copy (bytes read + written per second),
    with the measurement's source; ``derived`` when it is another card's measured fraction of
    the datasheet applied to this one (no measurement of this card was found)."""

    tensor_tflops: float
    copy_gb_s: float
    source: str
    derived: bool = False


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
    market: str = "datacenter"      # one of MARKETS: datacenter, workstation or consumer
    half_cuda_ratio: float = 1.0    # half-precision FLOP/s on CUDA cores (half2, not tensor cores) over FP32's,
    #                                 as the architecture whitepaper gives them (1: the same rate)

    @property
    def sustained(self) -> Sustained | None:
        """The card's measured sustained rates (:data:`SUSTAINED`), or None (consumer cards)."""
        return SUSTAINED.get(self.key)

    def at_sustained_rates(self) -> GpuSpec:
        """This card with its peaks and bandwidth scaled to what it sustains: every precision's
        peak x (sustained tensor rate / datasheet fp16 peak), the bandwidth set to the measured
        copy. Itself when no measurement is known."""
        measured = self.sustained
        if measured is None:
            return self
        scale = measured.tensor_tflops / self.fp16_tflops

        def scaled(value: float | None) -> float | None:
            return None if value is None else value * scale

        return replace(self, fp32_tflops=self.fp32_tflops * scale, tf32_tflops=scaled(self.tf32_tflops),
                       fp16_tflops=self.fp16_tflops * scale, bf16_tflops=scaled(self.bf16_tflops),
                       bandwidth_gb_s=measured.copy_gb_s)

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
            ("v100-sxm2",), ("v100-sxm2",), half_cuda_ratio=2.0),
    GpuSpec("v100-pcie", "Tesla V100 PCIe", "volta", 80, 1380, 14.0, None, 112.0, None, 900, 6, 32, _V100,
            (), ("v100-pcie",), half_cuda_ratio=2.0),
    GpuSpec("t4", "T4", "turing", 40, 1590, 8.1, None, 65.0, None, 320, 4, 16, _T4, (), ("t4",), half_cuda_ratio=2.0),
    GpuSpec("a10", "A10", "ampere", 72, 1695, 31.2, 62.5, 125.0, 125.0, 600, 6, 24, _A10, (), ("a10",)),
    GpuSpec("a100", "A100 80GB SXM", "ampere", 108, 1410, 19.5, 156.0, 312.0, 312.0, 2039, 40, 80, _A100,
            ("a100-80gb", "a100-sxm"), ("a100-sxm4-80gb", "a100 80gb"), half_cuda_ratio=4.0),
    GpuSpec("a100-40gb", "A100 40GB SXM", "ampere", 108, 1410, 19.5, 156.0, 312.0, 312.0, 1555, 40, 40, _A100,
            ("a100-40gb-sxm",), ("a100-sxm4-40gb", "a100"), half_cuda_ratio=4.0),
    GpuSpec("a100-pcie", "A100 80GB PCIe", "ampere", 108, 1410, 19.5, 156.0, 312.0, 312.0, 1935, 40, 80, _A100,
            ("a100-80gb-pcie",), ("a100 80gb pcie", "a100-pcie-80gb"), half_cuda_ratio=4.0),
    GpuSpec("a100-40gb-pcie", "A100 40GB PCIe", "ampere", 108, 1410, 19.5, 156.0, 312.0, 312.0, 1555, 40, 40, _A100,
            (), ("a100-pcie-40gb",), half_cuda_ratio=4.0),
    GpuSpec("a6000", "RTX A6000", "ampere", 84, 1800, 38.7, 77.4, 154.8, 154.8, 768, 6, 48, _A6000,
            ("rtx-a6000",), ("rtx a6000",), market="workstation"),
    GpuSpec("l4", "L4", "ada", 58, 2040, 30.3, 60.0, 121.0, 121.0, 300, 48, 24, _L4, (), ("l4",)),
    GpuSpec("l40s", "L40S", "ada", 142, 2520, 91.6, 183.0, 362.05, 362.05, 864, 96, 48, _L40S, (), ("l40s",)),
    GpuSpec("h100", "H100 SXM", "hopper", 132, 1980, 67.0, 494.7, 989.4, 989.4, 3350, 50, 80, _H100,
            ("h100-sxm",), ("h100 80gb hbm3", "h100-sxm", "h100 sxm"), half_cuda_ratio=2.0),
    GpuSpec("h100-pcie", "H100 PCIe", "hopper", 114, 1755, 51.2, 378.0, 756.0, 756.0, 2000, 50, 80, _H100,
            (), ("h100 pcie", "h100-pcie"), half_cuda_ratio=2.0),
    GpuSpec("h100-nvl", "H100 NVL", "hopper", 132, 1785, 60.0, 417.5, 835.0, 835.0, 3900, 50, 94, _H100,
            (), ("h100 nvl",), half_cuda_ratio=2.0),
    GpuSpec("h200", "H200 SXM", "hopper", 132, 1980, 67.0, 494.7, 989.4, 989.4, 4800, 50, 141, _H200,
            ("h200-sxm",), ("h200",), half_cuda_ratio=2.0),
    GpuSpec("b200", "B200 (HGX)", "blackwell", 148, 1965, 75.0, 1100.0, 2250.0, 2250.0, 8000, 126, 180, _B200,
            (), ("b200",)),
    GpuSpec("rtx3090", "GeForce RTX 3090", "ampere", 82, 1695, 35.6, 35.6, 71.0, 71.0, 936, 6, 24, _GA102,
            ("3090", "rtx-3090"), ("rtx 3090",), market="consumer"),
    GpuSpec("rtx4090", "GeForce RTX 4090", "ada", 128, 2520, 82.6, 82.6, 165.2, 165.2, 1008, 72, 24, _AD102,
            ("4090", "rtx-4090"), ("rtx 4090",), market="consumer"),
    GpuSpec("rtx5090", "GeForce RTX 5090", "blackwell", 170, 2407, 104.8, 104.8, 209.5, 209.5, 1792, 96, 32, _GB202,
            ("5090", "rtx-5090"), ("rtx 5090",), market="consumer"),
    GpuSpec("rtx-pro-6000", "RTX PRO 6000 Blackwell Workstation Edition", "blackwell", 188, 2617, 125.0, 251.9, 503.8,
            503.8, 1792, 128, 96, _PRO6000, ("pro6000", "rtx-pro-6000-workstation"), ("rtx pro 6000 blackwell workstation",), market="workstation"),
    GpuSpec("rtx-pro-6000-maxq", "RTX PRO 6000 Blackwell Max-Q Workstation Edition", "blackwell", 188, 2287, 110.0,
            220.0, 440.0, 440.0, 1792, 128, 96, _PRO6000, ("pro6000maxq", "rtx-pro-6000-max-q"),
            ("rtx pro 6000 blackwell max-q",), market="workstation"),
)

_MAMF = ("stas00/ml-engineering, compute/accelerator/README.md, 'Maximum Achievable Matmul FLOPS' table "
         "(commit 744d01e; torch.mm, best shape of a search)")
_ZZC = ("zzc0721/torch-performance-test-data, database.md (commit 9d82827; torch.mm, square 1024-10240, "
        "the best size, CUDA events)")
_CHS = "chsasank/device-benchmarks, README.md (commit 7ccc883; one timed torch.matmul and copy_: lower bounds)"
_RRZE = "RRZE-HPC/gpu-benches, gpu-stream (commit 1038c5d; the 'scale' kernel, one load + one store, best occupancy)"
_BABEL = "BabelStream 5.0 CUDA copy, FP64, 268 MB arrays"
_OWN_H200 = ("measured by vitbench on a lent H200 (issue 43 of this project): 8192^3 bf16 torch.mm 769-798 "
             "TFLOP/s, device-to-device copy 4.3 TB/s")
_P2P = "NVIDIA/nccl issue #1264: p2pBandwidthLatencyTest's diagonal (copy-engine memcpy) on 8x HGX H100 SXM"

#: what each data-centre card was measured to sustain (see :class:`Sustained`); sources in full in
#: docs/time.md. Consumer and workstation cards are priced from their datasheets.
SUSTAINED: dict[str, Sustained] = {
    "v100": Sustained(94.84, 809.0, f"GEMM: {_ZZC}, Tesla V100-SXM2-16GB; copy: {_RRZE}, v100.txt"),
    "v100-pcie": Sustained(112.0 * 94.84 / 125.0, 809.0, "the V100 SXM2's measured fractions (no PCIe card measured)",
                           derived=True),
    "t4": Sustained(42.71, 240.0, f"GEMM: {_ZZC}, T4 (Kaggle); copy: {_CHS}, T4"),
    "a10": Sustained(56.0, 469.0, f"GEMM and copy: {_CHS}, A10 (lower bounds)"),
    "a100": Sustained(271.2, 1709.0, f"GEMM: {_MAMF}, A100 SXM; copy: {_BABEL}, A100-SXM4-80GB "
                      "(aturner-epcc/uknss-benchmark-babelstream, commit 448cffa)"),
    "a100-40gb": Sustained(271.2, 1400.0, f"GEMM: {_MAMF}, A100 SXM (the same chip and clocks); copy: {_BABEL}, "
                           "A100-SXM4-40GB (argonne-lcf/ALCFBeginnersGuide polaris/02_profiling.md, commit c5b2265)"),
    "a100-pcie": Sustained(252.9, 1490.0, f"GEMM: {_MAMF}, A100 PCIe; copy: {_CHS}, A100 PCIe 80GB (a lower bound)"),
    "a100-40gb-pcie": Sustained(234.14, 1400.0, f"GEMM: {_ZZC}, A100-PCIE-40GB; copy: the A100-SXM4-40GB's "
                                "(the same memory; no PCIe card measured)", derived=True),
    "l4": Sustained(70.89, 235.0, f"GEMM: {_ZZC}, NVIDIA L4; copy: {_CHS}, L4 (a lower bound)"),
    "l40s": Sustained(269.15, 800.0, f"GEMM: {_ZZC}, NVIDIA L40S; copy: {_RRZE}, l40.txt (the L40: the same "
                      "864 GB/s memory; no L40S copy measured)", derived=True),
    # the one H100 copy measurement found is the copy engine's (2.5 TB/s), below what a kernel's
    # copy reaches; the H200's measured fraction (the same GH100 chip) is used instead
    "h100": Sustained(794.5, 3350.0 * 4300.0 / 4800.0, f"GEMM: {_MAMF}, H100 SXM; copy: the H200's measured fraction "
                      f"of its datasheet (the same chip; the only H100 copy found is a copy-engine memcpy, 2.5 TB/s: {_P2P})",
                      derived=True),
    "h100-pcie": Sustained(495.93, 1704.0, f"GEMM: {_ZZC}, H100 PCIe; copy: {_RRZE}, h100_pcie.txt"),
    "h100-nvl": Sustained(835.0 * 794.5 / 989.4, 3900.0 * 4300.0 / 4800.0,
                          "the H100 SXM's measured fractions (no H100 NVL measurement found)", derived=True),
    "h200": Sustained(790.29, 4300.0, f"GEMM: {_ZZC}, NVIDIA H200 (790 TFLOP/s; {_OWN_H200}); copy: {_OWN_H200}"),
    "b200": Sustained(1745.0, 7120.0, f"GEMM: {_MAMF}, B200; copy: about 89% of 8 TB/s from NVIDIA/cccl PRs #9481 "
                      "and #9210 (nvbench babelstream, a fraction of nvbench's own peak)", derived=True),
}

_BY_NAME = {name: spec for spec in CATALOGUE for name in (spec.key, *spec.aliases)}
GPU_DEVICES = tuple(spec.key for spec in CATALOGUE)


def gpu(name: str) -> GpuSpec | None:
    """The catalogue entry for a ``--device`` name or alias (case-insensitive), or None."""
    return _BY_NAME.get(str(name).strip().lower())


def match_device_name(device_name: str) -> GpuSpec | None:
    """The entry for a name as ``torch.cuda.get_device_name()`` gives it ('NVIDIA H100 80GB HBM3');
    the longest matching name wins, so 'A100-SXM4-40GB' is not taken for any A100."""
    lowered = str(device_name).lower()
    best: tuple[int, GpuSpec] | None = None
    for spec in CATALOGUE:
        for needle in spec.names:
            found = re.search(rf"(?<![a-z0-9]){re.escape(needle)}(?![0-9a-z])", lowered)
            if found and (best is None or len(needle) > best[0]):
                best = (len(needle), spec)
    return best[1] if best else None


__all__ = ["CATALOGUE", "GENERATIONS", "GPU_DEVICES", "MARKETS", "SUSTAINED", "GpuSpec", "Sustained", "gpu", "match_device_name"]
