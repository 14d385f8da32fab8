"""How the cards of a data-parallel run talk to each other, and what the gradients' all-reduce
costs a training step. Pure Python (no torch).

**The links** (:data:`LINKS`), per catalogue card, from NVIDIA's datasheets (``source``):
NVLink's generation and its per-GPU bandwidth (the datasheet's figure: both directions
together), how many cards one NVLink domain joins (8 on an HGX / DGX board through NVSwitch or
the DGX-1's hybrid cube mesh, 2 for an NVLink bridge, 0 for none), the PCIe generation and its
x16 bandwidth (both directions), and, for cards sold in a DGX, that system's network per node
(its InfiniBand adapters for compute traffic).

**The all-reduce** (NCCL's ring, hierarchical across nodes): S gradient bytes over G cards per
node and M nodes take

    t = 2 (G - 1) / G x S / B_node  +  2 (M - 1) / M x S / B_net  +  latency

``B_node`` is the ring's bus bandwidth inside a node: half the NVLink figure (one direction) x
:data:`NVLINK_EFFICIENCY` when the G cards share one NVLink domain, else half the PCIe figure x
:data:`PCIE_EFFICIENCY`; ``B_net`` is the node's network (bits / 8) x
:data:`NETWORK_EFFICIENCY`. Across nodes, NCCL reduce-scatters inside each node, all-reduces
each card's 1/G shard across nodes on that card's own adapter, and all-gathers inside the
node again: the network term carries S bytes over the whole node's network. ``latency`` is
2 (G - 1) ring steps of :data:`NODE_STEP_S` and 2 (M - 1) of :data:`NETWORK_STEP_S`, per
all-reduce.

**The overlap** (:func:`data_parallel_step`, PyTorch DDP): DDP groups the gradients into
buckets (the first 1 MiB, then 25 MiB: ``bucket_cap_mb``), in the reverse order of the
parameters, which is the order backward produces them, and all-reduces each bucket as soon as
all its gradients exist, on a stream of its own, one bucket after another. The model: backward
produces gradient bytes at an even rate over the backward time ``T_b`` (true of a ViT's
identical blocks; a CNN's early layers, few parameters and much compute, make it optimistic
there), so bucket i is ready at ``r_i = T_b x (bytes up to i) / S``; the communication stream
finishes it at ``f_i = max(f_(i-1), r_i) + c_i`` with ``c_i`` its all-reduce time. What is
left after backward, ``max(0, f_last - T_b)``, is added to the one-GPU step (the optimizer
waits for it). At least the last bucket is always exposed. Not modelled: NCCL's kernels taking
SMs from backward's kernels, stragglers, the data loader, gradient accumulation
(``no_sync``).

Gradients are all-reduced in the parameters' dtype: fp32 (4 bytes per parameter), also under
bf16 / fp16 autocast (the weights stay fp32).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: achieved ring bus bandwidth / one direction of NVLink: 8x A100 SXM 80GB all-reduce reaches
#: about 200-210 GB/s busbw of 300 GB/s (NVIDIA/nccl-tests issues #149 and #178)
NVLINK_EFFICIENCY = 0.70
#: achieved ring bus bandwidth / one direction of PCIe x16: 8x RTX 5090 on PCIe Gen5 reach
#: 28 GB/s busbw of 64 GB/s, 4 cards 35 GB/s (NVIDIA/nccl issue #1639: the CPU's memory and
#: switches, not the slot, limit it)
PCIE_EFFICIENCY = 0.45
#: achieved all-reduce bandwidth across nodes / the adapters' line rate: 84.8 GB/s average,
#: 96 GB/s peak of 100 GB/s on 3 nodes of 8x A100 with HDR InfiniBand (NVIDIA/nccl-tests #119)
NETWORK_EFFICIENCY = 0.85
#: one ring step's latency inside a node and across nodes (assumed, typical of NCCL's simple
#: protocol; at 25 MiB buckets under a tenth of a bucket's time on NVLink)
NODE_STEP_S = 2e-6
NETWORK_STEP_S = 5e-6
#: DDP's buckets: the first (the last layers' gradients, started early) and the rest
FIRST_BUCKET_BYTES = 1 << 20
BUCKET_BYTES = 25 << 20
#: bytes per gradient value all-reduced (fp32 gradients of fp32 master weights)
GRADIENT_BYTES_PER_PARAM = 4
#: the most cards one node holds (a DGX-2's 16 V100s) and the most nodes a run is priced for
MAX_GPUS_PER_NODE = 16
MAX_NODES = 10_000


@dataclass(frozen=True)
class Link:
    nvlink: str | None          # NVLink generation ("NVLink 4"), or None
    nvlink_gb_s: float | None   # per GPU, both directions together (the datasheet's figure)
    nvlink_group: int           # cards one NVLink domain joins: 8 (NVSwitch / DGX board), 2 (bridge), 0
    pcie: str                   # "PCIe Gen4 x16"
    pcie_gb_s: float            # x16, both directions together
    network_gbit_s: float | None  # the reference system's network per node (DGX), or None
    source: str

    def node_bus_bytes_s(self, gpus: int) -> float:
        """The ring's bus bandwidth inside a node of ``gpus`` cards (bytes/s, one direction)."""
        if self.nvlink_gb_s and gpus <= self.nvlink_group:
            return self.nvlink_gb_s / 2 * 1e9 * NVLINK_EFFICIENCY
        return self.pcie_gb_s / 2 * 1e9 * PCIE_EFFICIENCY

    def path(self, gpus: int) -> str:
        """What the ring inside a node runs over, in words."""
        if self.nvlink_gb_s and gpus <= self.nvlink_group:
            return f"{self.nvlink} {self.nvlink_gb_s:g} GB/s" + (" (bridge)" if self.nvlink_group == 2 else "")
        return f"{self.pcie} {self.pcie_gb_s:g} GB/s"


_G3, _G4, _G5 = "PCIe Gen3 x16", "PCIe Gen4 x16", "PCIe Gen5 x16"
_DGX1 = "; network: DGX-1 datasheet (4x 100 Gb/s EDR InfiniBand)"
_DGXA100 = "; network: DGX A100 datasheet (8x 200 Gb/s HDR InfiniBand, ConnectX-6)"
_DGXH = "; network: DGX H100 / H200 datasheet (8x 400 Gb/s ConnectX-7, OSFP)"
_DGXB = "; network: DGX B200 datasheet (8x 400 Gb/s ConnectX-7)"

#: per catalogue card (vitbench.timemodel.gpus): the datasheet's interconnect
LINKS: dict[str, Link] = {
    "v100": Link("NVLink 2", 300, 8, _G3, 32, 400, "NVIDIA Tesla V100 datasheet (SXM2: NVLink 300 GB/s, PCIe Gen3 32 GB/s)" + _DGX1),
    "v100-pcie": Link(None, None, 0, _G3, 32, None, "NVIDIA Tesla V100 datasheet (PCIe: 32 GB/s, no NVLink)"),
    "t4": Link(None, None, 0, _G3, 32, None, "NVIDIA T4 datasheet (PCIe Gen3 x16, 32 GB/s)"),
    "a10": Link(None, None, 0, _G4, 64, None, "NVIDIA A10 datasheet (PCIe Gen4 64 GB/s, no NVLink)"),
    "a100": Link("NVLink 3", 600, 8, _G4, 64, 1600, "NVIDIA A100 datasheet (SXM: NVLink 600 GB/s, PCIe Gen4 64 GB/s)" + _DGXA100),
    "a100-40gb": Link("NVLink 3", 600, 8, _G4, 64, 1600, "NVIDIA A100 datasheet (SXM: NVLink 600 GB/s, PCIe Gen4 64 GB/s)" + _DGXA100),
    "a100-pcie": Link("NVLink 3", 600, 2, _G4, 64, None, "NVIDIA A100 datasheet (PCIe: NVLink bridge for 2 GPUs 600 GB/s, "
                      "PCIe Gen4 64 GB/s)"),
    "a100-40gb-pcie": Link("NVLink 3", 600, 2, _G4, 64, None, "NVIDIA A100 datasheet (PCIe: NVLink bridge for 2 GPUs "
                           "600 GB/s, PCIe Gen4 64 GB/s)"),
    "a6000": Link("NVLink 3", 112.5, 2, _G4, 64, None, "NVIDIA RTX A6000 datasheet (2-way NVLink bridge 112.5 GB/s, PCIe Gen4 x16)"),
    "l4": Link(None, None, 0, _G4, 64, None, "NVIDIA L4 datasheet (PCIe Gen4 x16 64 GB/s, no NVLink)"),
    "l40s": Link(None, None, 0, _G4, 64, None, "NVIDIA L40S datasheet (PCIe Gen4 x16 64 GB/s, no NVLink)"),
    "h100": Link("NVLink 4", 900, 8, _G5, 128, 3200, "NVIDIA H100 datasheet (SXM: NVLink 900 GB/s, PCIe Gen5 128 GB/s)" + _DGXH),
    "h100-pcie": Link("NVLink 4", 600, 2, _G5, 128, None, "NVIDIA H100 datasheet (PCIe: NVLink bridge 600 GB/s, "
                      "PCIe Gen5 128 GB/s)"),
    "h100-nvl": Link("NVLink 4", 600, 2, _G5, 128, None, "NVIDIA H100 datasheet (NVL: NVLink bridge 600 GB/s, "
                     "PCIe Gen5 128 GB/s)"),
    "h200": Link("NVLink 4", 900, 8, _G5, 128, 3200, "NVIDIA H200 datasheet (SXM: NVLink 900 GB/s, PCIe Gen5 128 GB/s)" + _DGXH),
    "b200": Link("NVLink 5", 1800, 8, _G5, 128, 3200, "NVIDIA HGX B200 datasheet (NVLink 1.8 TB/s per GPU, PCIe Gen5)" + _DGXB),
    "rtx3090": Link("NVLink 3", 112.5, 2, _G4, 64, None, "NVIDIA Ampere GA102 whitepaper (RTX 3090: 2-way NVLink bridge "
                    "112.5 GB/s, PCIe Gen4 x16)"),
    "rtx4090": Link(None, None, 0, _G4, 64, None, "NVIDIA Ada whitepaper (RTX 4090: PCIe Gen4 x16, no NVLink)"),
    "rtx5090": Link(None, None, 0, _G5, 128, None, "NVIDIA RTX Blackwell whitepaper (RTX 5090: PCIe Gen5 x16, no NVLink)"),
    "rtx-pro-6000": Link(None, None, 0, _G5, 128, None, "NVIDIA RTX PRO 6000 Blackwell datasheet (PCIe Gen5 x16, no NVLink)"),
    "rtx-pro-6000-maxq": Link(None, None, 0, _G5, 128, None, "NVIDIA RTX PRO 6000 Blackwell Max-Q datasheet (PCIe Gen5 x16, "
                              "no NVLink)"),
}


def link(device: str) -> Link:
    """The interconnect of a catalogue card (its key); KeyError for any other."""
    return LINKS[device]


def allreduce_s(nbytes: float, gpus: int, nodes: int, card: Link, network_gbit_s: float | None = None) -> float:
    """Seconds to all-reduce ``nbytes`` over ``gpus`` cards in each of ``nodes`` nodes (the
    module's formula; 0 for one card). ``network_gbit_s``: the network per node, else the card's
    reference system's."""
    if gpus * nodes <= 1:
        return 0.0
    seconds = 0.0
    if gpus > 1:
        seconds += 2 * (gpus - 1) / gpus * nbytes / card.node_bus_bytes_s(gpus) + 2 * (gpus - 1) * NODE_STEP_S
    if nodes > 1:
        network = network_gbit_s if network_gbit_s is not None else card.network_gbit_s
        if not network:
            raise ValueError("no network figure for this card: give the network per node")
        seconds += 2 * (nodes - 1) / nodes * nbytes / (network * 1e9 / 8 * NETWORK_EFFICIENCY) + 2 * (nodes - 1) * NETWORK_STEP_S
    return seconds


def buckets(gradient_bytes: int, first: int = FIRST_BUCKET_BYTES, size: int = BUCKET_BYTES) -> list[int]:
    """DDP's buckets of ``gradient_bytes``, in the order backward fills them: ``first``, then
    ``size`` each, the last one what is left."""
    out: list[int] = []
    left = gradient_bytes
    cap = first
    while left > 0:
        out.append(min(cap, left))
        left -= out[-1]
        cap = size
    return out


@dataclass(frozen=True)
class DataParallelStep:
    step_s: float          # one step with every card (the one-card step + the exposed all-reduce)
    allreduce_s: float     # every bucket's all-reduce, end to end
    exposed_s: float       # what backward did not hide
    gradient_bytes: int
    buckets: int


def data_parallel_step(step_s: float, backward_s: float, gradient_bytes: int, gpus: int, nodes: int, card: Link,
                       network_gbit_s: float | None = None, first_bucket: int = FIRST_BUCKET_BYTES,
                       bucket: int = BUCKET_BYTES) -> DataParallelStep:
    """One data-parallel training step from the one-card step (``step_s``, of which
    ``backward_s`` is backward) and the gradients' bytes: the bucketed all-reduce overlapped with
    backward as the module says."""
    sizes = buckets(gradient_bytes, first_bucket, bucket)
    if gpus * nodes <= 1 or not sizes:
        return DataParallelStep(step_s, 0.0, 0.0, gradient_bytes, len(sizes))
    done = 0.0  # when the communication stream finishes the bucket before
    produced = 0
    total = 0.0
    for size in sizes:
        produced += size
        ready = backward_s * produced / gradient_bytes
        cost = allreduce_s(size, gpus, nodes, card, network_gbit_s)
        total += cost
        done = max(done, ready) + cost
    exposed = max(0.0, done - backward_s)
    return DataParallelStep(step_s + exposed, total, exposed, gradient_bytes, len(sizes))


def steps_per_epoch(dataset_size: int, global_batch: int) -> int:
    """ceil(images / global batch): a last, partial batch is a full step."""
    return math.ceil(dataset_size / global_batch)


__all__ = [
    "BUCKET_BYTES", "FIRST_BUCKET_BYTES", "GRADIENT_BYTES_PER_PARAM", "LINKS", "MAX_GPUS_PER_NODE", "MAX_NODES",
    "NETWORK_EFFICIENCY", "NETWORK_STEP_S", "NODE_STEP_S", "NVLINK_EFFICIENCY", "PCIE_EFFICIENCY", "DataParallelStep",
    "Link", "allreduce_s", "buckets", "data_parallel_step", "link", "steps_per_epoch",
]
