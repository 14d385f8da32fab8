"""The Python face of the CLI: the same operations under the same names, returning records."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from vitbench.errors import SpecError
from vitbench.presets import get_preset
from vitbench.results import Records
from vitbench.settings import COUNT_METHODS as COUNTERS
from vitbench.specs import ModelSpec, override_combinations, spec_fields, with_overrides


def resolve_models(
    models: Iterable[str | ModelSpec], overrides: dict[str, Any] | None = None
) -> list[ModelSpec]:
    """Preset names or specs -> specs, with overrides applied to every model that has the field.
    An override given as a ``list`` holds alternatives: one spec per combination, per model.

    A field that none of the models has is an error (it would otherwise be silently ignored)."""
    overrides = dict(overrides or {})
    specs = []
    for model in models:
        base = get_preset(model).spec if isinstance(model, str) else model
        applicable = {k: v for k, v in overrides.items() if k in spec_fields(type(base))}
        for combination in override_combinations(applicable):
            specs.append(with_overrides(base, **combination))
    for name, value in overrides.items():
        if not any(name in spec_fields(type(s)) for s in specs):
            kinds = sorted({s.kind for s in specs})
            shown = ",".join(map(str, value)) if isinstance(value, list) else value
            raise SpecError(name, shown, f"unknown field for {'/'.join(kinds)} models")
    return specs


def analyze(
    models: Iterable[str | ModelSpec] | str | ModelSpec,
    *,
    batch_size: int = 1,
    counters: Sequence[str] = ("analytic",),
    **overrides: Any,
) -> Records:
    """Parameters and MACs of each model: analytic always, plus traced counters on request.

    >>> analyze("vit-b/16", img_size=384).to_frame()  # doctest: +SKIP
    """
    if isinstance(models, (str,)) or not isinstance(models, Iterable):
        models = [models]
    unknown = [c for c in counters if c not in COUNTERS]
    if unknown:
        raise SpecError("counters", ",".join(unknown), f"must be among {', '.join(COUNTERS)}")
    from vitbench.analytic import complexity

    records = Records()
    for spec in resolve_models(models, overrides):
        record = complexity(spec, batch_size).as_record()
        if any(c != "analytic" for c in counters):
            from vitbench.counters import count_record

            record.update(count_record(spec, batch_size, [c for c in counters if c != "analytic"], record))
        records.append(record)
    return records
