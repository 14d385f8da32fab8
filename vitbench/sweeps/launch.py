"""``vitbench.sweep``: the public entry of a sweep. Resolves the plan (a sweep file, a
:class:`~vitbench.sweeps.plan.SweepPlan`, or models x grid) and hands it to a launcher: this
process (:func:`vitbench.sweeps.run.execute`), one worker per GPU or a Slurm job array
(:mod:`vitbench.sweeps.launchers`)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vitbench.settings import COUNTERS, LAUNCHERS
from vitbench.store.layout import DEFAULT_SYNC_EVERY, DEFAULT_SYNC_INTERVAL_S
from vitbench.store.options import StoreOptions
from vitbench.sweeps import launchers
from vitbench.sweeps.grid import parse_shard
from vitbench.sweeps.launchers import ArrayOptions, visible_gpus
from vitbench.sweeps.plan import SweepPlan
from vitbench.sweeps.run import SweepResult, default_out, execute, resolve_plan
from vitbench.sweeps.schema import SweepFileError


def sweep(
    source: str | os.PathLike | SweepPlan | None = None,
    *,
    models: Sequence[str] | str | None = None,
    grid: Mapping[str, Any] | None = None,
    batch_sizes: Sequence[int] | int = (1,),
    stages: Sequence[str] | str = ("analytic",),
    counters: Sequence[str] | str = COUNTERS,
    measure: Mapping[str, Any] | None = None,
    name: str | None = None,
    out: str | os.PathLike | None = None,
    resume: bool = False,
    force: bool = False,
    allow_foreign: bool = False,
    retry_failed: bool = False,
    shard: str | tuple[int, int] | None = None,
    yes: bool = False,
    export: Sequence[str] = ("csv",),
    launcher: str = "local",
    launcher_options: Mapping[str, Any] | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    on_calibrate: Callable[[str], None] | None = None,
    sync: str = "interval",
    sync_interval_s: float = DEFAULT_SYNC_INTERVAL_S,
    sync_every: int = DEFAULT_SYNC_EVERY,
) -> SweepResult:
    """Run a sweep (a sweep file, a :class:`SweepPlan`, or ``models`` x ``grid``) into a store.

    Each completed row is on disk before the next configuration starts. ``on_start(todo,
    skipped)`` and ``on_row(row)`` let a caller show progress. Raises :class:`SweepInterrupted`
    (exit code 130) on Ctrl-C after saving; ``on_calibrate(message)`` hears when the predict
    stage calibrates the device first (about 30 s, once per machine); never raises for a failing configuration.
    ``sync``: ``interval`` (default: group commit, fsync every ``sync_interval_s`` seconds; no
    row is lost when the process is killed, at most the last interval on a power failure) or
    ``always`` (one fsync per row); ``sync_every``: at most this many rows between fsyncs.
    ``launcher``: ``local`` (this process), ``gpus`` (one worker per visible GPU) or
    ``submitit`` (a Slurm job array); see :mod:`vitbench.sweeps.launchers`.

    >>> sweep(models=["vit-b/16", "resnet50"], grid={"img_size": [224, 384]}, out="results/x")  # doctest: +SKIP
    """
    shard_t = parse_shard(shard)
    check_arguments(launcher=launcher, shard=shard_t, resume=resume, retry_failed=retry_failed)
    plan = resolve_plan(
        source, models=models, grid=grid, name=name, batch_sizes=batch_sizes, stages=stages,
        counters=counters, measure=measure,
    )
    directory = Path(out) if out is not None else default_out(plan, shard_t)
    options = StoreOptions(
        resume=resume, force=force, allow_foreign=allow_foreign, retry_failed=retry_failed, export=export,
        sync=sync, sync_interval_s=sync_interval_s, sync_every=sync_every,
    )
    if launcher == "submitit":
        return launchers.run_submitit(plan, directory, options=options, array=ArrayOptions(**dict(launcher_options or {})), yes=yes)
    compute = None
    if launcher == "gpus":
        visible_gpus((launcher_options or {}).get("gpus"))  # checked before the store is touched

        compute = functools.partial(launchers.run_gpus, **dict(launcher_options or {}))
    return execute(
        plan, directory, shard=shard_t, options=options, yes=yes, compute=compute, on_start=on_start, on_row=on_row,
        on_calibrate=on_calibrate,
    )


def check_arguments(*, launcher: str, shard: tuple[int, int] | None, resume: bool, retry_failed: bool) -> None:
    """Combinations of arguments that make no sense, refused before anything is read or run."""
    if launcher not in LAUNCHERS:
        raise SweepFileError(f"--launcher={launcher!r}: must be one of {', '.join(LAUNCHERS)}")
    if retry_failed and not resume:
        raise SweepFileError("--retry-failed: only makes sense with --resume")
    if launcher != "local" and shard:
        raise SweepFileError(f"--shard: runs one shard locally; --launcher {launcher} splits the grid itself")


__all__ = ["LAUNCHERS", "check_arguments", "sweep"]
