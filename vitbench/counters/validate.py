"""Agreement of analytic, fvcore and dispatch MACs over presets, resolutions and batch sizes.

Resolutions per model, by default: the preset's own, a small square one and a small non-square
one, in steps that every layer accepts (the patch size for ViTs, 32 px for ImageNet ResNets,
8 px for the CIFAR models). fvcore executes the model to trace it, so it is skipped (and the row
says so) when one trace would exceed ``fvcore_budget_macs``; the dispatch counter runs on the meta
device and is never skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from vitbench.results import Records
from vitbench.specs import ModelSpec, PlainCNNSpec, ViTSpec

DEFAULT_FVCORE_BUDGET_MACS = 20_000_000_000


def resolution_step(spec: ModelSpec) -> int:
    if isinstance(spec, ViTSpec):
        return spec.patch_size
    if isinstance(spec, PlainCNNSpec):
        return 2 ** len(spec.stages)
    return 32 if spec.stem == "imagenet" else 8


def default_resolutions(spec: ModelSpec) -> list[tuple[int, int]]:
    """The preset's size plus small ones (one non-square): at least three distinct sizes."""
    step = resolution_step(spec)
    sizes = list(dict.fromkeys([spec.img_size, (2 * step, 2 * step), (3 * step, 5 * step)]))
    if len(sizes) < 3:
        sizes.append((4 * step, 4 * step))
    return sizes


@dataclass(frozen=True)
class Target:
    label: str
    spec: ModelSpec
    reference: str | None = None  # torchvision:/timm: name, built by its own library


def _targets(models: Iterable[str | ModelSpec] | None) -> list[Target]:
    from vitbench.counters.reference import get_reference, is_reference
    from vitbench.presets import get_preset, list_presets

    if not models:
        return [Target(p.name, p.spec) for p in list_presets()]
    targets = []
    for model in models:
        if isinstance(model, str) and is_reference(model):
            targets.append(Target(model, get_reference(model).spec, model))
        elif isinstance(model, str):
            targets.append(Target(model, get_preset(model).spec))
        else:
            targets.append(Target(model.name, model))
    return targets


def validate(
    models: Iterable[str | ModelSpec] | None = None,
    resolutions: Sequence[int | tuple[int, int]] | None = None,
    batch_sizes: Sequence[int] = (1, 2),
    counters: Sequence[str] = ("fvcore", "dispatch"),
    fvcore_budget_macs: int = DEFAULT_FVCORE_BUDGET_MACS,
    progress=None,
) -> Records:
    """One record per (model, resolution, batch size): analytic, fvcore and dispatch MACs, whether
    they agree, and the components that differ. References (``torchvision:vit_b_16``) are built
    by their own library; their resolution is fixed by the library (224)."""
    from vitbench.analytic import complexity
    from vitbench.counters import count_detailed
    from vitbench.counters.components import analytic_by_group

    records = Records()
    for target in _targets(models):
        sizes = [target.spec.img_size] if target.reference else (
            [(r, r) if isinstance(r, int) else tuple(r) for r in resolutions] if resolutions else default_resolutions(target.spec)
        )
        for size in sizes:
            spec = replace(target.spec, img_size=size)
            for batch in batch_sizes:
                analytic = complexity(spec, batch)
                active = [c for c in counters if c != "fvcore" or analytic.macs <= fvcore_budget_macs]
                counted = count_detailed(target.reference or spec, batch, active, activations=False)
                record: dict[str, Any] = {
                    "model": target.label,
                    "img_size": f"{size[0]}x{size[1]}",
                    "batch_size": batch,
                    "macs": analytic.macs,
                    "fvcore_macs": counted.fvcore_macs,
                    "dispatch_macs": counted.dispatch_macs,
                }
                layout = "torchvision" if target.reference and target.reference.startswith("torchvision:vit") else "vitbench"
                expected = analytic_by_group(analytic.macs_by_component, spec, layout)
                differing = []
                for name, groups in (("fvcore", counted.fvcore_by_group), ("dispatch", counted.dispatch_by_group)):
                    if name not in active:
                        continue
                    for group in sorted(set(expected) | set(groups)):
                        if expected.get(group, 0) != groups.get(group, 0):
                            differing.append(f"{name}:{group} {groups.get(group, 0)} vs {expected.get(group, 0)}")
                totals = [v for v in (counted.fvcore_macs, counted.dispatch_macs) if v is not None]
                record["agree"] = all(v == analytic.macs for v in totals) and not differing
                record["differing_components"] = "; ".join(differing)
                notes = []
                if "fvcore" in counters and "fvcore" not in active:
                    notes.append(f"fvcore skipped: {analytic.macs:.3g} MACs over the budget")
                if counted.fvcore_unsupported:
                    notes.append("fvcore unsupported: " + ", ".join(f"{k} x{v}" for k, v in counted.fvcore_unsupported.items()))
                record["notes"] = "; ".join(notes)
                records.append(record)
                if progress:
                    progress(record)
    return records
