"""The Python face of the CLI: the same operations under the same names, returning records."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from vitbench import counters as counting
from vitbench.analytic.identity import identity_record
from vitbench.analytic.memory import plan_records as replayed
from vitbench.analytic.memory.plan_settings import PlanSettings
from vitbench.counters import counted_record
from vitbench.counters.fill import counted_identity, fill_counted
from vitbench.counters.limits import CountingRefused
from vitbench.counters.memory_trace import trace_target
from vitbench.errors import ModelError, SpecError
from vitbench.models.references import resolve_all
from vitbench.models.target import Target, is_module
from vitbench.results import Records
from vitbench.row_status import RowStatus
from vitbench.settings import COUNT_METHODS as COUNTERS
from vitbench.typed_rows import Row, typed


def resolve_models(
    models: Iterable[Any], overrides: dict[str, Any] | None = None, *, input_size: Any = None
) -> list[Target]:
    """Models -> :class:`~vitbench.models.target.Target` objects, the one resolution every command uses.

    Args:
        models: preset names, references (``torchvision:swin_t``, ``timm:convnext_tiny``,
            ``hf:dinov2``, ``py:pkg.mod:factory``, with ``+key=value`` keyword arguments), specs or
            live ``nn.Module`` objects.
        overrides: spec fields to change on every model that has them; a ``list`` holds
            alternatives (one Target per combination, per model).
        input_size: ``(C, H, W)`` of a live module that does not say.

    Returns:
        The Targets, in order: ``target.spec`` is the analytic spec or None
        (``target.analytic_note`` says why); ``vitbench.build_model(target)`` builds it.

    Raises:
        SpecError: an unknown model or reference, or a field that none of the models has.
        UnknownModelError: a preset name that does not exist (the closest suggested).
        ModelError: a ``py:`` factory or a library's model fails to build.
    """
    return resolve_all(models, overrides, input_size=input_size)


def analyze(
    models: Any,
    *,
    batch_size: int = 1,
    counters: Sequence[str] = ("analytic",),
    input_size: Any = None,
    on_progress: Callable[[int, int, str], None] | None = None,
    module_table: int | None = None,
    **overrides: Any,
) -> Records:
    """Parameters and MACs of each model: analytic where a formula exists, counted otherwise.

    Presets and specs: the analytic figures, plus traced counters on request. References and
    live modules: also always ``module_params`` (counted from the built module) and
    ``dispatch_macs`` (the dispatch counter on meta); when no formula covers the model, the
    analytic columns are empty and ``analytic_note`` says why. Each model is resolved once.

    Args:
        models: one model or several (as :func:`resolve_models` takes them).
        batch_size: images per forward pass (``macs`` is for the whole batch).
        counters: ``analytic``, ``fvcore``, ``dispatch``: the traced counters besides the formulas.
        input_size: ``(C, H, W)`` of a live module that does not say.
        on_progress: called ``(done, total, label)`` as each model starts.
        module_table: a depth: each row also has ``fvcore_table``, fvcore's per-module table
            (parameters, MACs, activations) to that depth.
        **overrides: spec fields to change (``img_size=384``; a list: one row per value).

    Returns:
        :class:`~vitbench.results.Records` of :class:`~vitbench.typed_rows.Row`, one per model
        and override: ``row.params``, ``row.macs`` and the counters' columns; a model whose own
        code fails, or too large to trace, is a row with ``status`` refused and ``error``.

    Raises:
        SpecError: an unknown counter, model or spec field, or a wrong batch size.

    >>> analyze("vit-b/16", img_size=384).to_frame()  # doctest: +SKIP
    >>> analyze(torchvision.models.resnet50(), input_size=(3, 224, 224))  # doctest: +SKIP
    """
    if isinstance(models, str) or not isinstance(models, Iterable) or is_module(models):
        models = [models]
    counters = check_counters(counters)
    records = Records()
    targets = resolve_models(models, overrides, input_size=input_size)
    for index, target in enumerate(targets):
        traced = [c for c in counters if c != "analytic"]
        if target.source not in ("preset", "spec") and "dispatch" not in traced:
            traced.append("dispatch")  # the counted answer for any model
        if on_progress is not None:
            on_progress(index, len(targets), f"{target.label}: {', '.join(traced) or 'analytic'}")
        records.append(Row(_analyzed(target, batch_size, traced, module_table)))
    return records



def check_counters(counters: Sequence[str] | str) -> list[str]:
    """The counters asked for, checked.

    Args:
        counters: one name or several, each of ``analytic``, ``fvcore``, ``dispatch``.

    Returns:
        The names as a list, in order.

    Raises:
        SpecError: none given, or an unknown one.
    """
    counters = [counters] if isinstance(counters, str) else list(counters)
    if not counters:
        raise SpecError("counters", "", f"give at least one of {', '.join(COUNTERS)}")
    unknown = [c for c in counters if c not in COUNTERS]
    if unknown:
        raise SpecError("counters", ",".join(unknown), f"must be among {', '.join(COUNTERS)}")
    return counters


def _analyzed(target: Target, batch_size: int, traced: list[str], table_depth: int | None = None) -> dict[str, Any]:
    """One model's row for :func:`analyze`: identity, analytic figures, the ``traced`` counters
    (and fvcore's module table to ``table_depth``). The batch size is checked once, here."""
    record = identity_record(target, batch_size)  # checks batch_size
    try:
        if traced:
            record.update(counted_record(target, batch_size, traced, record, table_depth=table_depth if "fvcore" in traced else None))
        if table_depth is not None and "fvcore" not in traced:
            record["fvcore_table"] = counting.count_target(target, batch_size, ("fvcore",), table_depth=table_depth).fvcore_table
    except ModelError as exc:  # the model's own code failed: the user's to fix (exit 2), not a bug
        record.update(status=RowStatus.REFUSED, error=exc.detail)
    except CountingRefused as exc:  # too large to trace: said from the analytic size, nothing built
        record.update(status=RowStatus.REFUSED, error=str(exc).split(": ", 1)[-1])
    # anything else is vitbench's own bug: it ends the command (exit 3, the traceback kept)
    fill_counted(record)
    if target.analytic_note:
        record["analytic_note"] = target.analytic_note
    if target.overrides:
        record["overrides"] = target.overrides_text
    return record

def plan_records(models: Iterable[Any], settings: PlanSettings | None = None, *,
                 on_progress: Callable[[int, int, str], None] | None = None, **keywords: Any) -> Records:
    """:func:`vitbench.analytic.memory.plan_records` as ``vitbench plan`` runs it: the largest
    batch in a memory budget and the predicted peak and breakdown at a batch, per model.

    Args:
        models: Targets (:func:`resolve_models`), specs, or anything :func:`resolve_models` takes.
        settings: what to predict (:class:`~vitbench.analytic.memory.plan_settings.PlanSettings`:
            ``memory_bytes``, ``batch_size``, ``mode``, ``precision``, ``optimizer``,
            ``attention``, ``trace``).
        on_progress: called ``(done, total, label)`` as each model starts.
        **keywords: fields of :class:`PlanSettings` (``memory_bytes=24 * 2**30``,
            ``batch_size=8``): the keyword form builds the same object, validated in the same place.

    Returns:
        :class:`~vitbench.results.Records` of :class:`~vitbench.typed_rows.Row`, one per model:
        ``max_batch_size`` (with a budget), ``pred_peak_memory_bytes`` and its breakdown, and
        ``fits`` (with both); a model the memory replay does not cover is traced on fake tensors
        (its ``warnings`` say so), or, with ``trace=False``, has empty predictions and the reason.
        ``params`` and ``macs`` of a model without a formula are counted, as ``analyze`` counts them.

    Raises:
        SpecError: a setting or a model is wrong (one line naming it).
        TypeError: a keyword that names no field of :class:`PlanSettings`.
    """
    unknown = sorted(set(keywords) - set(PlanSettings.field_names()))
    if unknown:
        raise TypeError(f"plan_records() got an unexpected keyword argument {unknown[0]!r}")
    settings, _ = PlanSettings.split(settings, keywords)
    if isinstance(models, str) or not isinstance(models, Iterable) or is_module(models):
        models = [models]
    targets = [m if isinstance(m, Target) else resolve_models([m])[0] for m in models]
    step = (settings.memory_bytes, settings.batch_size, settings.mode, settings.precision, settings.optimizer,
            settings.attention)
    trace = trace_target if settings.trace else None
    if on_progress is None:
        return _counted(targets, replayed(targets, *step, trace=trace))
    records = Records()
    for index, target in enumerate(targets):
        on_progress(index, len(targets), target.label)
        records.extend(replayed([target], *step, trace=trace))
    return _counted(targets, records)


def _counted(targets: Sequence[Target], records: Records) -> Records:
    """Planned rows of models no formula covers with ``params`` and ``macs`` counted, as
    ``analyze`` counts them (:func:`vitbench.counters.fill.counted_identity`)."""
    counts: dict = {}
    for target, record in zip(targets, records):
        counted = counted_identity(target, record.get("batch_size"), counts)
        record.update({k: v for k, v in counted.items() if k in ("params", "macs") and record.get(k) is None})
    return Records(typed(records))
