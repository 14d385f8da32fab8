"""The GPU catalogue as rows (``vitbench devices``): each card's published numbers, what it was
measured to sustain, and the parameters that price it."""

from __future__ import annotations

from vitbench.errors import SpecError
from vitbench.results import Records
from vitbench.timemodel.gpu_model import profile_for
from vitbench.timemodel.gpus import CATALOGUE, GENERATIONS
from vitbench.timemodel.interconnect import link


def devices(generation: str | None = None) -> Records:
    """The GPU catalogue as rows (``vitbench devices``).

    Args:
        generation: only this generation's cards (``hopper``, ``ampere`` ...); None: every card.

    Returns:
        :class:`~vitbench.results.Records`, one per card: its published numbers
        (``*_flops_per_s`` in FLOP/s, ``memory_bytes``, ``bandwidth_bytes_per_s``), what it was
        measured to sustain, its links, its source, and what prices it (``params_from``).

    Raises:
        SpecError: an unknown generation.
    """
    if generation is not None and generation not in GENERATIONS:
        raise SpecError("generation", generation, f"must be one of {', '.join(GENERATIONS)}")
    rows = Records()
    for spec in CATALOGUE:
        if generation is not None and spec.generation != generation:
            continue
        profile = profile_for(spec)
        sustained = spec.sustained
        wire = link(spec.key)
        rows.append({
            "device": spec.key, "name": spec.name, "generation": spec.generation, "sms": spec.sms,
            "boost_clock_hz": spec.boost_mhz * 1_000_000, "fp32_flops_per_s": spec.peak_flops("float32"),
            "tf32_flops_per_s": spec.peak_flops("float32", tf32=True) if spec.tf32_tflops else None,
            "fp16_flops_per_s": spec.peak_flops("float16"), "bf16_flops_per_s": spec.peak_flops("bfloat16"),
            "bandwidth_bytes_per_s": spec.bandwidth_bytes_s, "l2_bytes": int(spec.l2_bytes),
            "memory_bytes": int(spec.memory_gb * 1e9), "market": spec.market,
            "sustained_tensor_flops_per_s": sustained.tensor_tflops * 1e12 if sustained else None,
            "sustained_bandwidth_bytes_per_s": sustained.copy_gb_s * 1e9 if sustained else None,
            "sustained_source": (("derived: " if sustained.derived else "") + sustained.source) if sustained else None,
            "nvlink": wire.nvlink, "nvlink_bytes_per_s": wire.nvlink_gb_s * 1e9 if wire.nvlink_gb_s else None,
            "nvlink_group": wire.nvlink_group, "pcie": wire.pcie, "pcie_bytes_per_s": wire.pcie_gb_s * 1e9,
            "params_from": profile.params_from, "rates": profile.rates,
            "validated": spec.key in (profile.validation.get("datacenter", {}).get("cards", ())
                                      if profile.params_from == "datacenter" else profile.validation.get("infer", {})), "aliases": ", ".join(spec.aliases),
            "source": spec.source,
        })
    return rows


__all__ = ["devices"]
