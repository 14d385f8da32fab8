"""Measured cost: ``measure(model, settings)`` times one configuration on a real device and
returns one flat record; ``profile(models, settings, **changes)`` does it for several models and
settings (what ``vitbench profile`` runs).

Before anything runs, each configuration is checked against the memory model: one predicted
over the memory cap or over the device's memory becomes a row with ``status='refused'`` (see
:mod:`vitbench.measure.budget`). The machine's state is sampled (``machine_*`` columns) and, when
``threads`` is not set, the CPU thread count is ``settings.default_threads`` of the machine's
CPUs (recorded as ``threads``, with ``threads_auto``). The configuration then runs
``settings.runs`` times, each in a fresh worker process (:mod:`vitbench.measure.runs`), pooled
into one row. A configuration that runs out of memory or fails at run time becomes a row with
``status='oom'`` or ``status='error'`` (and the message in ``error``): the next configuration
still runs. Bad input (an unknown device, fp16 on the CPU) raises :class:`SpecError`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from vitbench.errors import SpecError
from vitbench.measure.budget import prediction_columns, refusal
from vitbench.measure.env import choose_threads, validate_settings
from vitbench.measure.machine import machine_state, state_warnings
from vitbench.measure.record import TABLE_COLUMNS, failed_row, unique_warnings
from vitbench.measure.runs import measure_runs, roofline_columns
from vitbench.measure.target import measured, resolve_measured
from vitbench.measure.workload import effective_target
from vitbench.models.references import resolve_all as resolve_models
from vitbench.models.target import is_module
from vitbench.results import Records, check_output_dir
from vitbench.row_status import RowStatus
from vitbench.settings import RunSettings, settings_fields
from vitbench.typed_rows import MeasuredRow

__all__ = ["TABLE_COLUMNS", "RunSettings", "measure", "profile", "settings_and_alternatives", "settings_grid", "validate_settings"]


def measure(model: Any, settings: RunSettings | None = None, *,
            on_run: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Measure one configuration; one flat record (raw units: seconds, bytes, FLOP/s).
    ``model``: a preset name, a spec, a reference (``timm:...``) or an ``nn.Module``.
    ``on_run(index)`` is called as each run starts (0-based; none for a refused configuration).

    Never raises for an OOM or a run-time failure (``status`` = 'oom' | 'error' | 'refused');
    raises :class:`SpecError` for settings the device cannot run."""
    settings = settings or RunSettings()
    device = validate_settings(settings)
    target = effective_target(resolve_measured(model), settings)
    state = machine_state(device)
    threads, thread_warnings = choose_threads(settings, device, state)
    run_settings = settings.replace(threads=threads)
    reason = refusal(target, run_settings, device)
    if reason is not None:
        record = failed_row(target, run_settings, device, RowStatus.REFUSED, reason)
    else:
        record = measure_runs(target, run_settings, device, on_run)
    record.update(state)
    record["threads"] = threads
    record["threads_auto"] = settings.threads is None and threads is not None
    extra: list[str] = []
    if record.get("status") == RowStatus.OK:
        roof = roofline_columns(target, run_settings, record)
        extra = roof.pop("warnings", [])
        record.update(roof)

        record.update(prediction_columns(target, run_settings, record["batch_size"], record["device"]))
    used = threads or state.get("machine_cpus") or 1
    record["warnings"] = unique_warnings(
        thread_warnings, state_warnings(state, used, settings.clock), list(target.notes), record.get("warnings"), extra,
    )
    return record


def settings_grid(settings: RunSettings, **alternatives: Sequence[Any]) -> list[RunSettings]:
    """One RunSettings per combination of the listed values of RunSettings fields (the last
    field varying fastest), each validated: ``settings_grid(s, mode=["infer", "train"],
    batch_size=[1, 8])`` gives four."""
    names = list(alternatives)
    unknown = [n for n in names if n not in settings_fields()]
    if unknown:
        raise SpecError(unknown[0], alternatives[unknown[0]], "unknown run setting")
    out = [settings.replace(**dict(zip(names, values))) for values in itertools.product(*(alternatives[n] for n in names))]
    for each in out:
        validate_settings(each)
    return out


def split_overrides(overrides: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Keyword arguments -> (run-setting changes, spec-field overrides). ``attention`` is a run
    setting (it applies to every ViT)."""
    names = set(settings_fields())
    return (
        {k: v for k, v in overrides.items() if k in names},
        {k: v for k, v in overrides.items() if k not in names},
    )


def profile(
    models: Iterable[Any] | Any,
    settings: RunSettings | None = None,
    *,
    overrides: dict[str, Any] | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    on_progress: Callable[[int, int, str], None] | None = None,
    input_size: Any = None,
    **changes: Any,
) -> Records:
    """Measure every model under ``settings`` on this machine, each configuration in fresh
    worker processes, pooled (see the module's docstring).

    Args:
        models: one model or several: preset names, references, specs or ``nn.Module`` objects.
        settings: how each configuration is measured (:class:`~vitbench.settings.RunSettings`:
            device, mode, batch size, precision, threads, runs ...); None: the defaults.
        overrides: spec fields to change (a field name -> value(s), as on the command line or
            typed; a list: one model per value).
        on_row: called with each row as it is measured.
        on_progress: called ``(done, total, label)`` as each run starts (``total`` =
            configurations x runs).
        input_size: ``(C, H, W)`` of a live module that does not say (as in :func:`vitbench.analyze`).
        **changes: a :class:`RunSettings` field changes ``settings`` (a list: one configuration
            per value, ``mode=["infer", "train"]``: :func:`settings_and_alternatives`); any
            other name is a spec field to override, as in ``overrides``.

    Returns:
        :class:`~vitbench.results.Records` of :class:`~vitbench.typed_rows.MeasuredRow`,
        settings-major (every model at the first settings, then the next): ``row.latency_p50_s``,
        ``row.throughput_img_s``, ``row.peak_memory_bytes``, ``row.run_medians_s``; a
        configuration that runs out of memory, fails, or is refused from the memory model is a
        row with its ``status`` (``oom``, ``error``, ``refused``) and ``error``.

    Raises:
        SpecError: a setting the device cannot run, an unknown model or spec field.
        OutputFileError: ``trace_dir`` cannot be written.

    >>> profile(["vit-s/16", "resnet18"], mode="train", batch_size=8)  # doctest: +SKIP
    """
    if isinstance(models, str) or not isinstance(models, Iterable) or is_module(models):
        models = [models]
    setting_changes, spec_overrides = split_overrides(changes)
    base, lists = settings_and_alternatives(settings, setting_changes)
    all_settings = settings_grid(base, **lists)
    if base.trace_dir is not None:  # before any model is resolved (a py: module imported) and measured
        check_output_dir(base.trace_dir, "trace_dir")
    targets = [measured(t) for t in resolve_models(models, {**spec_overrides, **(overrides or {})}, input_size=input_size)]
    records = Records()
    configurations = [(s, t) for s in all_settings for t in targets]
    total = sum(s.runs for s, _ in configurations)
    done = 0
    for run_settings, target in configurations:
        row = MeasuredRow(measure(target, run_settings, on_run=_run_reporter(on_progress, done, total, target, run_settings)))
        done += run_settings.runs
        records.append(row)
        if on_row is not None:
            on_row(row)
    return records


def settings_and_alternatives(settings: RunSettings | None, changes: dict[str, Any]) -> tuple[RunSettings, dict[str, list]]:
    """``(settings with the single-valued changes, {field: values} of the listed ones)``: what
    :func:`profile` measures is :func:`settings_grid` of the two (``vitbench profile`` builds its
    RunSettings with this).

    Raises:
        SpecError: a value the settings refuse.
    """
    lists = {k: list(v) for k, v in changes.items() if isinstance(v, (list, tuple))}
    base = (settings or RunSettings()).replace(**{k: v for k, v in changes.items() if k not in lists})
    return base, lists


def _run_reporter(on_progress: Callable[[int, int, str], None] | None, done: int, total: int, target: Any,
                  settings: RunSettings) -> Callable[[int], None] | None:
    """``on_run`` for one configuration, as ``on_progress(done + index, total, label)``."""
    if on_progress is None:
        return None
    name = f"{target.name} {target.overrides}" if target.overrides else target.name
    label = f"{name} batch {settings.batch_size} {settings.mode} {settings.precision}"

    def on_run(index: int) -> None:
        on_progress(done + index, total, f"{label}: run {index + 1} of {settings.runs}")

    return on_run
