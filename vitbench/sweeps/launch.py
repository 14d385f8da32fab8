"""``vitbench.sweep``: the public entry of a sweep. Resolves the plan (a sweep file, a
:class:`~vitbench.sweeps.plan.SweepPlan`, or models x grid) and hands it to a launcher: this
process (:func:`vitbench.sweeps.run.execute`), one worker per GPU or a Slurm job array
(:mod:`vitbench.sweeps.launchers`)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vitbench.settings import LAUNCHERS
from vitbench.sweeps import launchers
from vitbench.sweeps.launchers import ArrayOptions, visible_gpus
from vitbench.sweeps.plan import SweepPlan
from vitbench.sweeps.run import SweepResult, default_out, execute, resolve_plan
from vitbench.sweeps.settings import PLAN_KEYWORDS, SweepSettings, check_arguments


def sweep(
    source: str | os.PathLike | SweepPlan | None = None,
    settings: SweepSettings | None = None,
    *,
    on_start: Callable[[int, int], None] | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    on_calibrate: Callable[[str], None] | None = None,
    on_progress: Mapping[str, Callable[..., None]] | None = None,
    **keywords: Any,
) -> SweepResult:
    """Run a sweep (a sweep file, a :class:`SweepPlan`, or ``models`` x ``grid``) into a store.

    Each completed row is on disk before the next configuration starts; a failing configuration
    is a row with its ``status`` and ``error``, never an exception.

    Args:
        source: a sweep file (TOML or YAML), a :class:`~vitbench.sweeps.plan.SweepPlan`, or None
            to make the plan from ``models`` and ``grid`` (keywords below).
        settings: how it runs (:class:`~vitbench.sweeps.settings.SweepSettings`: the store's
            folder and options, the shard, the launcher); None: the defaults.
        on_start: called ``(todo, skipped)`` once the configurations to run are known.
        on_row: called with each row as it is stored.
        on_calibrate: hears ``(message)`` when the predict stage calibrates the CPU first
            (once per machine: :data:`~vitbench.timemodel.calibration.CPU_CALIBRATION_TIME`) and
            as each of its steps starts.
        on_progress: more progress callbacks, by name: ``on_estimate(costs)`` hears the rows'
            expected costs (:func:`~vitbench.sweeps.rows.row_costs`, for an ETA that weighs the
            measured rows), ``on_note(text)`` a phase starting (re-measuring the unfit rows).
        **keywords: a field of :class:`SweepSettings` (``out=``, ``resume=True``, ``launcher=``)
            changes ``settings`` (the keyword form builds the same object, validated in the same
            place); the plan's (:data:`~vitbench.sweeps.settings.PLAN_KEYWORDS`): ``models``,
            ``grid`` (spec field -> values), ``batch_sizes``, ``stages``, ``counters``, ``measure``
            (RunSettings fields of the measured stage), and ``name`` (renames a file's plan too).

    Returns:
        A :class:`~vitbench.sweeps.run.SweepResult`: the store's folder, the counts run and
        skipped, the statuses, and ``records`` (the store's rows, read on first use).

    Raises:
        SweepFileError: the plan or a setting is wrong (one line naming it).
        StoreError: the store cannot be written, or holds rows neither resumed nor forced.
        SweepInterrupted: Ctrl-C (exit code 130), after the rows so far are saved.
        TypeError: a keyword that names neither a setting nor a part of the plan.

    >>> sweep(models=["vit-b/16", "resnet50"], grid={"img_size": [224, 384]}, out="results/x")  # doctest: +SKIP
    """
    settings, plan_keywords = SweepSettings.split(settings, keywords)
    unknown = sorted(set(plan_keywords) - set(PLAN_KEYWORDS))
    if unknown:
        raise TypeError(f"sweep() got an unexpected keyword argument {unknown[0]!r}")
    plan = resolve_plan(source, **plan_keywords)
    directory = Path(settings.out) if settings.out is not None else default_out(plan, settings.shard)
    options = settings.store_options()
    if settings.launcher == "submitit":
        return launchers.run_submitit(plan, directory, options=options, array=ArrayOptions(**settings.launcher_options),
                                      yes=settings.yes)
    compute = None
    if settings.launcher == "gpus":
        visible_gpus(settings.launcher_options.get("gpus"))  # checked before the store is touched
        compute = functools.partial(launchers.run_gpus, **settings.launcher_options)
    return execute(plan, directory, shard=settings.shard, options=options, yes=settings.yes, compute=compute,
                   on_start=on_start, on_row=on_row, on_calibrate=on_calibrate, **_progress_callbacks(on_progress))


def _progress_callbacks(on_progress: Mapping[str, Callable[..., None]] | None) -> dict[str, Callable[..., None]]:
    """``on_progress`` checked: only ``on_estimate`` and ``on_note``."""
    callbacks = dict(on_progress or {})
    unknown = sorted(set(callbacks) - {"on_estimate", "on_note"})
    if unknown:
        raise TypeError(f"sweep() on_progress: unknown callback {unknown[0]!r} (on_estimate, on_note)")
    return callbacks


# check_arguments lives in sweeps.settings (where the settings are validated); kept importable here
__all__ = ["LAUNCHERS", "SweepSettings", "check_arguments", "sweep"]
