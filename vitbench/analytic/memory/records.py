"""The rows of ``vitbench plan`` (also ``vitbench.plan_records``): per model, the identity
columns every command's output carries (model, kind, img_size, patch_size, spec_key, batch_size,
params, macs), the predicted breakdown (``pred_*_bytes``) and, with a budget, the largest batch
that fits. Nothing is run. Pure Python, no torch import.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from vitbench import analytic
from vitbench.analytic.memory.closed_forms import check_batch, check_run
from vitbench.analytic.memory.planner import largest_batch, memory_estimate, plan, spec_of, unsupported_reason
from vitbench.analytic.memory.replay import Profile
from vitbench.errors import SpecError, VitbenchError, error_reason
from vitbench.results import Records
from vitbench.row_warnings import warning
from vitbench.specs.identity import RowIdentity
from vitbench.specs.limits import MAX_REPLAYED_BLOCKS, too_many_blocks
from vitbench.specs.target import Target
from vitbench.units import binary_bytes

#: the predicted breakdown (bytes), in MemoryEstimate.as_record's order
PREDICTED = (
    "pred_weights_bytes", "pred_gradients_bytes", "pred_optimizer_bytes",
    "pred_activations_bytes", "pred_attention_matrix_bytes", "pred_peak_memory_bytes",
)


def identity_record(model: Any, batch_size: int | None) -> dict[str, Any]:
    """The row's identity (:class:`~vitbench.specs.identity.RowIdentity`: model, source, kind,
    spec_key, img_size, patch_size, batch_size, overrides) of ``model`` (a Target or a spec) at
    ``batch_size``, with params and MACs from the analytic formulas (None where there is no spec,
    MACs None without a batch)."""
    identity = RowIdentity.of(model, batch_size)
    spec = model.spec if isinstance(model, Target) else model
    out: dict[str, Any] = {k: v for k, v in identity.columns().items() if k != "overrides"}
    out.update(params=None, macs=None)
    if spec is not None:
        figures = analytic.complexity(spec, batch_size or 1)
        out["params"] = figures.params
        out["macs"] = figures.macs if batch_size is not None else None
    if identity.overrides:
        out["overrides"] = identity.overrides
    return out


def plan_records(
    models: Iterable[Any],
    memory_bytes: int | None = None,
    batch_size: int | None = None,
    mode: str = "train",
    precision: str = "fp32",
    optimizer: str = "adamw",
    attention: str | None = None,
    trace: Callable[[Any, str, str, str], Profile] | None = None,
) -> Records:
    """One record per model: Targets as ``vitbench.resolve_models`` gives them, or specs.

    With ``memory_bytes``: ``max_batch_size`` (0 if one image does not fit, with a warning),
    ``memory_bytes`` and, with ``batch_size`` too, ``fits``. The breakdown is predicted at
    ``batch_size``, else at ``max(max_batch_size, 1)``.

    A model the replay does not cover: with ``trace`` (e.g.
    ``vitbench.counters.memory_trace.trace_target``: (target, mode, precision, optimizer) ->
    Profile), its peak is traced on fake tensors and ``warnings`` says so; else (or when tracing
    fails) the row has its identity, empty predictions and the reason in ``warnings``."""
    if memory_bytes is None and batch_size is None:
        raise SpecError("memory_bytes", None, "give a memory budget, a batch size, or both")
    if batch_size is not None:
        check_batch(batch_size)
    check_run(mode, precision, optimizer)
    records = Records()
    for model in models:
        spec = spec_of(model)
        reason = unsupported_reason(spec) if spec is not None else _no_spec_reason(model)
        refusal = too_many_blocks(spec, MAX_REPLAYED_BLOCKS, "the memory replay")
        if refusal is not None:  # decided from the spec: a depth of 10^12 hung the replay
            record = _unsupported_record(model, [warning("too-large", refusal)], memory_bytes, batch_size, mode, precision, optimizer)
        elif reason is None:
            record = _replayed_record(model, spec, memory_bytes, batch_size, mode, precision, optimizer, attention)
        elif trace is not None and isinstance(model, Target):
            record = _traced_record(model, reason, trace, memory_bytes, batch_size, mode, precision, optimizer)
        else:
            record = _unsupported_record(model, [warning("memory-unavailable", reason)], memory_bytes, batch_size, mode, precision, optimizer)
        records.append(record)
    return records


def _no_spec_reason(target: Target) -> str:
    why = f" ({target.analytic_note})" if target.analytic_note else ""
    return (f"no memory formula for {target.name}{why}: the memory model replays vitbench's ViT, "
            "ResNet and plain-CNN specs; measure it with `vitbench profile`")


def _run_columns(mode: str, precision: str, optimizer: str, attention: str | None) -> dict[str, Any]:
    return {"mode": mode, "precision": precision,
            "optimizer": optimizer if mode == "train" else None, "attention": attention}


def _budget(record: dict[str, Any], memory_bytes: int | None, max_batch: int | None,
            peak_of: Callable[[int], int], warnings: list[dict[str, str]]) -> None:
    """memory_bytes, max_batch_size, fits (and the warning when not one image fits)."""
    if memory_bytes is None:
        return

    if max_batch == 0:
        warnings.append(warning("does-not-fit", f"does not fit: batch size 1 needs {binary_bytes(peak_of(1))}, "
                                f"more than {binary_bytes(memory_bytes)}"))
    record["memory_bytes"] = memory_bytes
    record["max_batch_size"] = max_batch
    record["fits"] = record["pred_peak_memory_bytes"] <= memory_bytes


def _replayed_record(model, spec, memory_bytes, batch_size, mode, precision, optimizer, attention):
    max_batch = None
    if memory_bytes is not None:
        max_batch = plan(spec, memory_bytes, mode, precision, optimizer, attention)
    shown = batch_size if batch_size is not None else max(max_batch or 0, 1)
    estimate = memory_estimate(spec, shown, mode, precision, optimizer, attention)
    record = identity_record(model, shown)
    record.update(_run_columns(mode, precision, optimizer, estimate.attention))
    record.update(estimate.as_record())
    warnings: list[dict[str, str]] = []
    if isinstance(model, Target) and model.source not in ("preset", "spec"):
        warnings.append(warning("memory-equivalent-module", f"memory prediction of vitbench's equivalent {spec.kind} module, replayed "
                                f"(the {model.source} module's allocations may differ)"))
    _budget(record, memory_bytes, max_batch,
            lambda b: memory_estimate(spec, b, mode, precision, optimizer, attention).peak_bytes, warnings)
    record["warnings"] = warnings
    return record


def _traced_record(model, reason, trace, memory_bytes, batch_size, mode, precision, optimizer):
    try:
        profile = trace(model, mode, precision, optimizer)
    except VitbenchError as exc:  # a model fake tensors cannot run (a ModelError): say so, predict nothing
        failed = f"tracing it on fake tensors failed: {error_reason(exc)}".splitlines()[0]
        return _unsupported_record(model, [warning("memory-unavailable", reason), warning("memory-unavailable", failed)],
                                   memory_bytes, batch_size, mode, precision, optimizer)
    max_batch = largest_batch(profile, memory_bytes) if memory_bytes is not None else None
    shown = batch_size if batch_size is not None else max(max_batch or 0, 1)
    record = _unsupported_record(model, [], memory_bytes, shown, mode, precision, optimizer)
    record["pred_peak_memory_bytes"] = profile.peak(shown)
    warnings = [warning("memory-traced", "memory prediction traced on fake tensors (no formula): the tensors operators "
                        "return, without kernel workspaces: a lower bound, within about 5% of measured CPU training "
                        "peaks (docs/memory.md)")]
    _budget(record, memory_bytes, max_batch, profile.peak, warnings)
    record["warnings"] = warnings
    return record


def _unsupported_record(model, warnings, memory_bytes, batch_size, mode, precision, optimizer):
    record = identity_record(model, batch_size)
    record.update(_run_columns(mode, precision, optimizer, None))
    record.update(dict.fromkeys(PREDICTED))
    if memory_bytes is not None:
        record.update({"memory_bytes": memory_bytes, "max_batch_size": None, "fits": None})
    record["warnings"] = list(warnings)
    return record
