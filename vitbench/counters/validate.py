"""Agreement of analytic and counted parameters and MACs (fvcore, dispatch) over models,
resolutions and batch sizes.

Resolutions per preset, by default: the preset's own, a small square one and a small non-square
one, in steps that every layer accepts (the patch size for ViTs, 32 px for ImageNet ResNets,
8 px for the CIFAR models). References (``torchvision:``, ``timm:``, ``hf:``, ``py:``) and
modules are checked at their own input size, or at the resolutions given. fvcore executes the
model to trace it, so it is skipped (and the row says so) when one trace would exceed
``fvcore_budget_macs``; the dispatch counter runs on the meta device and is never skipped.
A model without an analytic formula is checked counter against counter (the row says why).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from vitbench import analytic as formulas
from vitbench.counters import check_counters, count_detailed
from vitbench.counters.components import analytic_by_group
from vitbench.models.references import check_before_import, resolve
from vitbench.models.target import Target
from vitbench.presets import list_presets
from vitbench.results import Records
from vitbench.specs import ModelSpec, PlainCNNSpec, ResNetSpec, ViTSpec
from vitbench.specs.identity import RowIdentity

DEFAULT_FVCORE_BUDGET_MACS = 20_000_000_000


def resolution_step(spec: ModelSpec) -> int:
    if isinstance(spec, ViTSpec):
        return spec.patch_size
    if isinstance(spec, PlainCNNSpec):
        return 2 ** len(spec.stages)
    if isinstance(spec, ResNetSpec):
        return 32 if spec.stem == "imagenet" else 8
    return 32


def default_resolutions(spec: ModelSpec) -> list[tuple[int, int]]:
    """The preset's size plus small ones (one non-square): at least three distinct sizes."""
    step = resolution_step(spec)
    sizes = list(dict.fromkeys([spec.img_size, (2 * step, 2 * step), (3 * step, 5 * step)]))
    if len(sizes) < 3:
        sizes.append((4 * step, 4 * step))
    return sizes


def _targets(models: Iterable[Any] | None, resolutions) -> list[Target]:
    """Every (model, resolution) to check."""
    models = check_before_import(models) if models else [p.name for p in list_presets()]  # all, before a py: import
    sizes = [(r, r) if isinstance(r, int) else tuple(r) for r in resolutions] if resolutions else None
    targets = []
    for model in models:
        base = resolve(model)
        if sizes is None and base.source in ("preset", "spec"):
            chosen = default_resolutions(base.spec)
        else:
            chosen = sizes or [base.img_size]
        for size in chosen:
            if size == base.img_size:
                targets.append(base)
            elif base.module is not None:
                targets.append(resolve(model, input_size=(base.in_chans, *size)))
            else:
                targets.append(resolve(model, {"img_size": size}))
    return targets


def _differing(target: Target, analytic, counted, active) -> list[str]:
    """Components whose counted MACs differ from the analytic ones ('fvcore:qkv 10 vs 12')."""
    by_module = counted.dispatch_by_module or counted.fvcore_by_module
    expected = analytic_by_group(analytic.macs_by_component, target.spec, by_module)
    if not expected:
        return []
    out = []
    for name, groups in (("fvcore", counted.fvcore_by_group), ("dispatch", counted.dispatch_by_group)):
        if name not in active:
            continue
        for group in sorted(set(expected) | set(groups)):
            if expected.get(group, 0) != groups.get(group, 0):
                out.append(f"{name}:{group} {groups.get(group, 0)} vs {expected.get(group, 0)}")
    return out


def check(target: Target, batch: int, counters: Sequence[str], fvcore_budget_macs: int) -> dict[str, Any]:
    """One row: analytic vs counted parameters and MACs for one target and batch size."""
    analytic = formulas.complexity(target.spec, batch) if target.spec is not None else None
    notes: list[str] = []
    active = list(counters)
    if "fvcore" in active:
        expected = analytic.macs if analytic else count_detailed(target, batch, ("dispatch",)).dispatch_macs
        if expected > fvcore_budget_macs:
            active.remove("fvcore")
            notes.append(f"fvcore skipped: {expected:.3g} MACs over the budget")
    counted = count_detailed(target, batch, active or ("dispatch",), activations=False)
    record: dict[str, Any] = {
        **{k: v for k, v in RowIdentity.of(target, batch).columns(keyed=False).items() if k != "overrides"},
        "params": analytic.params if analytic else None,
        "module_params": counted.module_params,
        "macs": analytic.macs if analytic else None,
        "fvcore_macs": counted.fvcore_macs,
        "dispatch_macs": counted.dispatch_macs,
    }
    totals = [v for v in (counted.fvcore_macs, counted.dispatch_macs) if v is not None]
    if analytic is not None:
        differing = _differing(target, analytic, counted, active)
        if counted.module_params != analytic.params:
            differing.insert(0, f"params {counted.module_params} vs {analytic.params}")
        agree = all(v == analytic.macs for v in totals) and not differing
    else:
        differing = []
        agree = len(set(totals)) <= 1
        notes.append(f"analytic: {target.analytic_note}; counters compared with each other")
    record["agree"] = agree
    record["differing_components"] = "; ".join(differing)
    if counted.fvcore_unsupported:
        notes.append("fvcore unsupported: " + ", ".join(f"{k} x{v}" for k, v in counted.fvcore_unsupported.items()))
    notes += counted.warnings
    if target.overrides:
        record["overrides"] = target.overrides_text
    record["notes"] = "; ".join(notes)
    return record


def validate(
    models: Iterable[Any] | None = None,
    resolutions: Sequence[int | tuple[int, int]] | None = None,
    batch_sizes: Sequence[int] = (1, 2),
    counters: Sequence[str] = ("fvcore", "dispatch"),
    fvcore_budget_macs: int = DEFAULT_FVCORE_BUDGET_MACS,
    progress=None,
) -> Records:
    """Check the analytic counts against the traced counters: one record per (model, resolution,
    batch size) with analytic and counted parameters (``params`` vs ``module_params``) and MACs
    (``macs`` vs ``fvcore_macs``, ``dispatch_macs``), whether they all agree, and the components
    that differ.

    Args:
        models: preset names, specs or references (None: every preset).
        resolutions: input sides to check each model at (an int, or ``(H, W)``); None: a
            preset's or spec's usual resolutions, a reference's own.
        batch_sizes: the batch sizes to trace.
        counters: the traced counters to compare: ``fvcore``, ``dispatch``.
        fvcore_budget_macs: a configuration above this many MACs is not counted by fvcore (its
            cells stay empty and ``notes`` says so).
        progress: called with each record as it is made.

    Returns:
        :class:`~vitbench.results.Records`, one per configuration: the analytic and counted
        columns, ``agree`` and ``notes``.

    Raises:
        SpecError: an unknown counter, model, spec field or resolution (one line naming it).
    """
    counters = check_counters(counters)
    records = Records()
    for target in _targets(models, resolutions):
        for batch in batch_sizes:
            record = check(target, batch, counters, fvcore_budget_macs)
            records.append(record)
            if progress:
                progress(record)
    return records
