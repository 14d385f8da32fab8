"""Counted complexity: trace the real module and count its multiply-accumulates.

Two independent counters, each extended to see fused attention kernels:
- ``fvcore``: fvcore's JIT-trace analysis with vitbench's operator handles (runs the model once on
  uninitialised CPU storage; fvcore cannot trace meta tensors). Gives ``fvcore_macs``,
  ``fvcore_flops`` (fvcore's own convention, which calls a MAC a "flop" and adds norms) and
  ``fvcore_activations``.
- ``dispatch``: torch's FlopCounterMode on the meta device (no memory, no compute); ``dispatch_macs``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vitbench.errors import SpecError
from vitbench.settings import COUNTERS
from vitbench.specs import ModelSpec


@dataclass(frozen=True)
class CountResult:
    model: str
    batch_size: int
    fvcore_macs: int | None = None
    fvcore_flops: int | None = None
    fvcore_activations: int | None = None
    fvcore_unsupported: dict[str, int] = field(default_factory=dict, hash=False)
    fvcore_by_group: dict[str, int] = field(default_factory=dict, hash=False)
    fvcore_table: str = field(default="", hash=False)
    dispatch_macs: int | None = None
    dispatch_by_group: dict[str, int] = field(default_factory=dict, hash=False)

    def as_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {}
        if self.fvcore_macs is not None:
            record.update(
                fvcore_macs=self.fvcore_macs,
                fvcore_flops=self.fvcore_flops,
                fvcore_activations=self.fvcore_activations,
                fvcore_unsupported=";".join(f"{k}:{v}" for k, v in sorted(self.fvcore_unsupported.items())),
            )
        if self.dispatch_macs is not None:
            record["dispatch_macs"] = self.dispatch_macs
        return record


def _check_counters(counters) -> tuple[str, ...]:
    counters = tuple(counters)
    unknown = [c for c in counters if c not in COUNTERS]
    if unknown:
        raise SpecError("counters", ",".join(unknown), f"must be among {', '.join(COUNTERS)}")
    return counters


def count_detailed(
    model: ModelSpec | str,
    batch_size: int = 1,
    counters=COUNTERS,
    *,
    activations: bool = True,
    table_depth: int | None = None,
) -> CountResult:
    """Count ``model`` (a spec, or a reference such as ``torchvision:vit_b_16``) for a batch."""
    import torch

    from vitbench.counters.components import counted_by_group
    from vitbench.counters.dispatch import dispatch_count
    from vitbench.counters.fvcore_counter import fvcore_count
    from vitbench.models import build_model

    counters = _check_counters(counters)
    if isinstance(model, str):
        from vitbench.counters.reference import get_reference

        reference = get_reference(model)
        spec, layout, build, label = reference.spec, reference.layout, reference.build, reference.name
    else:
        spec, layout, label = model, "vitbench", model.name

        def build():
            return build_model(spec)

    shape = (batch_size, spec.in_chans, *spec.img_size)
    result: dict[str, Any] = {"model": label, "batch_size": batch_size}
    with torch.device("meta"):
        module = build().eval()  # one construction, no weight initialisation, for both counters
    if "dispatch" in counters:
        counted = dispatch_count(module, (torch.empty(shape, device="meta"),))
        result.update(dispatch_macs=counted.macs, dispatch_by_group=counted_by_group(counted.by_module, spec, layout))
    if "fvcore" in counters:
        module = module.to_empty(device="cpu")  # real storage for tracing, never initialised
        counted = fvcore_count(
            module, (torch.zeros(shape),), activations=activations, table_depth=table_depth
        )
        result.update(
            fvcore_macs=counted.macs,
            fvcore_flops=counted.flops,
            fvcore_activations=counted.activations if activations else None,
            fvcore_unsupported=counted.unsupported,
            fvcore_by_group=counted_by_group(counted.by_module, spec, layout),
            fvcore_table=counted.table,
        )
        del module
    return CountResult(**result)


def count(model: ModelSpec | str, batch_size: int = 1, counters=COUNTERS) -> dict[str, Any]:
    """Traced counts as a flat record: fvcore_macs, fvcore_flops, fvcore_activations,
    fvcore_unsupported, dispatch_macs (only the requested counters' columns)."""
    return count_detailed(model, batch_size, counters).as_record()


def count_record(
    spec: ModelSpec, batch_size: int, counters, analytic_record: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Counter columns for a spec, plus ``agree`` (every counter's MACs == analytic MACs)."""
    record = count(spec, batch_size, counters)
    if analytic_record is not None and "macs" in analytic_record:
        counted = [record[k] for k in ("fvcore_macs", "dispatch_macs") if k in record]
        record["agree"] = all(value == analytic_record["macs"] for value in counted)
    return record
