"""Counted complexity: trace the real module and count its multiply-accumulates.

Works for any model: a preset or spec, a reference (``torchvision:swin_t``, ``timm:...``,
``hf:...``, ``py:pkg.mod:factory``) or a live ``nn.Module`` (give ``input_size``).
Two independent counters, each extended to see fused attention kernels:
- ``dispatch``: torch's FlopCounterMode on the meta device (no memory, no compute); ``dispatch_macs``.
- ``fvcore``: fvcore's JIT-trace analysis with vitbench's operator handles. It executes the model
  on the CPU with zero-filled weights (no initialiser runs); buffers (relative-position indices, RoPE
  tables) hold their real values. Gives ``fvcore_macs``, ``fvcore_flops`` (fvcore's own
  convention, which calls a MAC a "flop" and adds norms) and ``fvcore_activations``.
Parameters are counted from the built module (``module_params``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vitbench.counters import run
from vitbench.counters.components import by_depth, comparison, counted_by_group
from vitbench.counters.limits import CountingRefused, counting_refusal, executed_macs_refusal
from vitbench.counters.run import params_by_path
from vitbench.errors import SpecError
from vitbench.models.references import resolve
from vitbench.results import Records
from vitbench.row_warnings import warning
from vitbench.settings import COUNTERS, check_batch_size


@dataclass(frozen=True)
class CountResult:
    model: str
    batch_size: int
    module_params: int | None = None
    fvcore_macs: int | None = None
    fvcore_flops: int | None = None
    fvcore_activations: int | None = None
    fvcore_unsupported: dict[str, int] = field(default_factory=dict, hash=False)
    fvcore_by_group: dict[str, int] = field(default_factory=dict, hash=False)
    fvcore_by_module: dict[str, int] = field(default_factory=dict, hash=False)
    fvcore_table: str = field(default="", hash=False)
    dispatch_macs: int | None = None
    dispatch_by_group: dict[str, int] = field(default_factory=dict, hash=False)
    dispatch_by_module: dict[str, int] = field(default_factory=dict, hash=False)  # children included
    warnings: tuple[str, ...] = ()

    def as_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {}
        if self.module_params is not None:
            record["module_params"] = self.module_params
        if self.fvcore_macs is not None:
            record.update(
                fvcore_macs=self.fvcore_macs,
                fvcore_flops=self.fvcore_flops,
                fvcore_activations=self.fvcore_activations,
                fvcore_unsupported=";".join(f"{k}:{v}" for k, v in sorted(self.fvcore_unsupported.items())),
            )
        if self.dispatch_macs is not None:
            record["dispatch_macs"] = self.dispatch_macs
        if self.warnings:
            record["count_warnings"] = list(self.warnings)
        return record


def check_counters(counters) -> tuple[str, ...]:
    counters = (counters,) if isinstance(counters, str) else tuple(counters)
    unknown = [c for c in counters if c not in COUNTERS]
    if unknown:
        raise SpecError("counters", ",".join(unknown), f"must be among {', '.join(COUNTERS)}")
    return counters


def count_detailed(
    model: Any,
    batch_size: int = 1,
    counters=COUNTERS,
    *,
    activations: bool = True,
    table_depth: int | None = None,
    input_size: tuple[int, int, int] | None = None,
) -> CountResult:
    """Count ``model`` (spec, preset name, reference, Target or nn.Module) for a batch."""
    counters = check_counters(counters)
    check_batch_size(batch_size)
    return count_target(resolve(model, input_size=input_size), batch_size, counters, activations=activations, table_depth=table_depth)


def count_target(
    target: Any, batch_size: int, counters: tuple[str, ...], *, activations: bool = True, table_depth: int | None = None
) -> CountResult:
    """:func:`count_detailed` of a resolved Target, for checked ``batch_size`` and ``counters``."""
    refusal = counting_refusal(target, batch_size, counters)
    if refusal:
        raise CountingRefused(f"{target.label}: {refusal}")
    result: dict[str, Any] = {"model": target.label, "batch_size": batch_size}
    warnings: list[str] = []
    if "dispatch" in counters:
        counted, params, note = run.run_dispatch(target, batch_size)
        result.update(
            module_params=params,
            dispatch_macs=counted.macs,
            dispatch_by_module=counted.by_module,
            dispatch_by_group=counted_by_group(counted.by_module, target.spec),
        )
        warnings += [note] if note else []
    executed = executed_macs_refusal(target, batch_size, result.get("dispatch_macs")) if "fvcore" in counters else None
    if executed:
        raise CountingRefused(f"{target.label}: refused: {executed}")
    if "fvcore" in counters:
        counted, params, note = run.run_fvcore(target, batch_size, activations=activations, table_depth=table_depth)
        warnings += [note] if note else []
        if counted is not None:
            result.setdefault("module_params", params)
            result.update(
                fvcore_macs=counted.macs,
                fvcore_flops=counted.flops,
                fvcore_activations=counted.activations if activations else None,
                fvcore_unsupported=counted.unsupported,
                fvcore_by_group=counted_by_group(counted.by_module, target.spec),
                fvcore_by_module=counted.by_module,
                fvcore_table=counted.table,
            )
    return CountResult(**result, warnings=tuple(warnings))


def count(
    model: Any, batch_size: int = 1, counters=COUNTERS, *, input_size: tuple[int, int, int] | None = None
) -> dict[str, Any]:
    """Traced counts of one model as a flat record.

    Args:
        model: a preset name, spec, reference or ``nn.Module``.
        batch_size: images in the traced forward pass.
        counters: ``fvcore``, ``dispatch`` (FlopCounterMode on meta tensors), or both.
        input_size: ``(C, H, W)`` of a live module that does not say.

    Returns:
        A dict with ``module_params`` and the requested counters' columns: ``fvcore_macs``,
        ``fvcore_flops`` (fvcore's own convention), ``fvcore_activations``, ``fvcore_unsupported``,
        ``dispatch_macs``.

    Raises:
        SpecError: an unknown counter or model, or a model too large to trace.
        ModelError: the model's own code fails (its factory, its forward).

    >>> count(torchvision.models.resnet50(), input_size=(3, 224, 224))  # doctest: +SKIP
    """
    return count_detailed(model, batch_size, counters, input_size=input_size).as_record()


def module_table(
    model: Any, depth: int = 2, batch_size: int = 1, *, input_size: tuple[int, int, int] | None = None
):
    """Per-module parameters and MACs of any model, like fvcore's by-module table.

    Args:
        model: a preset name, spec, reference or ``nn.Module``.
        depth: levels below the root to list.
        batch_size: images in the traced forward pass (the dispatch counter, children included).
        input_size: ``(C, H, W)`` of a live module that does not say.

    Returns:
        :class:`~vitbench.results.Records`, one per module path (``''`` = the whole model), in
        module order: ``module``, ``depth``, ``params``, ``macs``, and ``component`` (the analytic
        component it computes) when the model is a ViT, Swin, ConvNeXt or ResNet vitbench recognises.

    Raises:
        SpecError: an unknown model, or a model too large to trace.
        ModelError: the model's own code fails.
    """
    target = resolve(model, input_size=input_size)
    counted, _, note = run.run_dispatch(target, batch_size)
    macs = by_depth(counted.by_module, depth)
    params = params_by_path(target, depth)
    layout = comparison(target.spec, counted.by_module)
    records = Records()
    for path in dict.fromkeys([*params, *macs]):
        record = {"model": target.label, "module": path, "depth": path.count(".") + 1 if path else 0,
                  "params": params.get(path, 0), "macs": macs.get(path, 0)}
        component = layout[0](path) if layout is not None and path else ""
        if component and not component.startswith("other:"):
            record["component"] = component  # the analytic component this module computes
        if note:
            record["warnings"] = [warning("counter-note", note)]
        records.append(record)
    return records


def count_record(
    model: Any, batch_size: int, counters, analytic_record: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Counter columns for a model, plus ``agree``: every counter's MACs == analytic MACs and the
    module's parameters == analytic parameters (absent when there is no analytic figure)."""
    counters = check_counters(counters)
    check_batch_size(batch_size)
    return counted_record(resolve(model), batch_size, counters, analytic_record)


def counted_record(
    target: Any, batch_size: int, counters, analytic_record: dict[str, Any] | None = None, *, table_depth: int | None = None
) -> dict[str, Any]:
    """:func:`count_record` of a resolved Target for a batch size the caller has checked (as
    :func:`vitbench.analytic.identity.identity_record` checks it). ``table_depth``: also
    ``fvcore_table``, fvcore's per-module table to that depth, from the same count."""
    counted = count_target(target, batch_size, check_counters(counters), table_depth=table_depth)
    record = counted.as_record()
    if table_depth is not None:
        record["fvcore_table"] = counted.fvcore_table
    if analytic_record is not None and analytic_record.get("macs") is not None:
        counted = [record[k] for k in ("fvcore_macs", "dispatch_macs") if k in record]
        same_params = record.get("module_params") in (None, analytic_record.get("params"))
        record["agree"] = same_params and all(value == analytic_record["macs"] for value in counted)
    return record
