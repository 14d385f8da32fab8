"""The Python face of the CLI: the same operations under the same names, returning records."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from vitbench import counters as counting
from vitbench.analytic.identity import identity_record
from vitbench.analytic.memory import plan_records as replayed
from vitbench.counters import counted_record
from vitbench.counters.fill import counted_identity, fill_counted
from vitbench.counters.limits import CountingRefused
from vitbench.counters.memory_trace import trace_target
from vitbench.errors import ModelError, SpecError
from vitbench.models.references import resolve_all
from vitbench.models.target import Target, is_module
from vitbench.results import Records
from vitbench.settings import COUNT_METHODS as COUNTERS


def resolve_models(
    models: Iterable[Any], overrides: dict[str, Any] | None = None, *, input_size: Any = None
) -> list[Target]:
    """Models -> :class:`~vitbench.models.target.Target` objects, the one resolution every command
    uses: preset names, references (``torchvision:swin_t``, ``timm:convnext_tiny``, ``hf:dinov2``,
    ``py:pkg.mod:factory``, with ``+key=value`` keyword arguments), specs or live ``nn.Module`` objects
    (``input_size=(C, H, W)`` when the module does not say). Overrides apply to every model that
    has the field; a ``list`` holds alternatives (one Target per combination, per model); a field
    that none of the models has is an error. ``target.spec`` is the analytic spec or None
    (``target.analytic_note`` says why); ``vitbench.models.build_model(target)`` builds it."""
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
    analytic columns are empty and ``analytic_note`` says why. ``on_progress(done, total, label)``
    is called as each model starts. ``module_table=DEPTH``: each row also has ``fvcore_table``,
    fvcore's per-module table (parameters, MACs, activations) to that depth, from the row's own
    fvcore count when ``counters`` has fvcore. Each model is resolved once.

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
        records.append(_analyzed(target, batch_size, traced, module_table))
    return records



def check_counters(counters: Sequence[str] | str) -> list[str]:
    """``counters`` as a list, each one of analytic, fvcore, dispatch (a SpecError otherwise)."""
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
        record.update(status="refused", error=exc.detail)
    except CountingRefused as exc:  # too large to trace: said from the analytic size, nothing built
        record.update(status="refused", error=str(exc).split(": ", 1)[-1])
    # anything else is vitbench's own bug: it ends the command (exit 3, the traceback kept)
    fill_counted(record)
    if target.analytic_note:
        record["analytic_note"] = target.analytic_note
    if target.overrides:
        record["overrides"] = target.overrides_text
    return record

def plan_records(models: Iterable[Any], memory_bytes: int | None = None, batch_size: int | None = None,
                 mode: str = "train", precision: str = "fp32", optimizer: str = "adamw", attention: str | None = None,
                 *, trace: bool = True, on_progress: Callable[[int, int, str], None] | None = None) -> Records:
    """:func:`vitbench.analytic.memory.plan_records` as ``vitbench plan`` runs it: a model the
    memory replay does not cover is traced on fake tensors (``trace=False``: its row stays
    empty, with the reason). ``models``: Targets (``resolve_models``), specs, or anything
    ``resolve_models`` takes. ``on_progress(done, total, label)`` is called as each model starts."""
    if isinstance(models, str) or not isinstance(models, Iterable) or is_module(models):
        models = [models]
    targets = [m if isinstance(m, Target) else resolve_models([m])[0] for m in models]
    if on_progress is None:
        return _counted(targets, replayed(targets, memory_bytes, batch_size, mode, precision, optimizer, attention,
                                          trace=trace_target if trace else None))
    records = Records()
    for index, target in enumerate(targets):
        on_progress(index, len(targets), target.label)
        records.extend(replayed([target], memory_bytes, batch_size, mode, precision, optimizer, attention,
                                trace=trace_target if trace else None))
    return _counted(targets, records)


def _counted(targets: Sequence[Target], records: Records) -> Records:
    """Planned rows of models no formula covers with ``params`` and ``macs`` counted, as
    ``analyze`` counts them (:func:`vitbench.counters.fill.counted_identity`)."""
    counts: dict = {}
    for target, record in zip(targets, records):
        counted = counted_identity(target, record.get("batch_size"), counts)
        record.update({k: v for k, v in counted.items() if k in ("params", "macs") and record.get(k) is None})
    return records
