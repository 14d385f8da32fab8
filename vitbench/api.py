"""The Python face of the CLI: the same operations under the same names, returning records."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from vitbench.analytic.identity import identity_record
from vitbench.counters.fill import fill_counted
from vitbench.errors import SpecError
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
    from vitbench.models.references import resolve_all

    return resolve_all(models, overrides, input_size=input_size)


def analyze(
    models: Any,
    *,
    batch_size: int = 1,
    counters: Sequence[str] = ("analytic",),
    input_size: Any = None,
    **overrides: Any,
) -> Records:
    """Parameters and MACs of each model: analytic where a formula exists, counted otherwise.

    Presets and specs: the analytic figures, plus traced counters on request. References and
    live modules: also always ``module_params`` (counted from the built module) and
    ``dispatch_macs`` (the dispatch counter on meta); when no formula covers the model, the
    analytic columns are empty and ``analytic_note`` says why.

    >>> analyze("vit-b/16", img_size=384).to_frame()  # doctest: +SKIP
    >>> analyze(torchvision.models.resnet50(), input_size=(3, 224, 224))  # doctest: +SKIP
    """
    if isinstance(models, str) or not isinstance(models, Iterable) or is_module(models):
        models = [models]
    counters = [counters] if isinstance(counters, str) else list(counters)
    if not counters:
        raise SpecError("counters", "", f"give at least one of {', '.join(COUNTERS)}")
    unknown = [c for c in counters if c not in COUNTERS]
    if unknown:
        raise SpecError("counters", ",".join(unknown), f"must be among {', '.join(COUNTERS)}")
    from vitbench.counters import count_record
    from vitbench.counters.limits import CountingRefused

    records = Records()
    for target in resolve_models(models, overrides, input_size=input_size):
        record = identity_record(target, batch_size)
        traced = [c for c in counters if c != "analytic"]
        if target.source not in ("preset", "spec") and "dispatch" not in traced:
            traced.append("dispatch")  # the counted answer for any model
        try:
            if traced:
                record.update(count_record(target, batch_size, traced, record))
        except (KeyboardInterrupt, SystemExit):
            raise
        except CountingRefused as exc:  # too large to trace: said from the analytic size, nothing built
            record.update(status="refused", error=str(exc).split(": ", 1)[-1])
        except Exception as exc:  # noqa: BLE001 - one model's failure is its row, not the command's
            record.update(status="error", error=f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500])
        fill_counted(record)
        if target.analytic_note:
            record["analytic_note"] = target.analytic_note
        if target.overrides:
            record["overrides"] = target.overrides_text
        records.append(record)
    return records


def plan_records(models: Iterable[Any], memory_bytes: int | None = None, batch_size: int | None = None,
                 mode: str = "train", precision: str = "fp32", optimizer: str = "adamw", attention: str | None = None,
                 *, trace: bool = True) -> Records:
    """:func:`vitbench.analytic.memory.plan_records` as ``vitbench plan`` runs it: a model the
    memory replay does not cover is traced on fake tensors (``trace=False``: its row stays
    empty, with the reason). ``models``: Targets (``resolve_models``), specs, or anything
    ``resolve_models`` takes."""
    from vitbench.analytic.memory import plan_records as replayed
    from vitbench.counters.memory_trace import trace_target

    if isinstance(models, str) or not isinstance(models, Iterable) or is_module(models):
        models = [models]
    targets = [m if isinstance(m, Target) else resolve_models([m])[0] for m in models]
    return replayed(targets, memory_bytes, batch_size, mode, precision, optimizer, attention,
                    trace=trace_target if trace else None)
