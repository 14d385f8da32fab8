"""How a sweep runs, as frozen settings validated once: :class:`SweepSettings` (where its store
is and how it is written, the shard, the launcher). What it runs is the plan: a sweep file, a
:class:`~vitbench.sweeps.plan.SweepPlan`, or models x grid (:func:`vitbench.sweeps.plan.plan_from_grid`).
The CLI builds the settings from its flags; :func:`vitbench.sweep` takes them, or builds them
from its keyword arguments."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vitbench.settings import LAUNCHERS, KeywordSettings
from vitbench.store.layout import DEFAULT_SYNC_EVERY, DEFAULT_SYNC_INTERVAL_S
from vitbench.store.options import StoreOptions
from vitbench.sweeps.grid import parse_shard
from vitbench.sweeps.schema import SweepFileError

#: the keyword arguments of :func:`vitbench.sweep` that make the plan (models x grid), with a
#: sweep file or plan's ``name`` changed by ``name``
PLAN_KEYWORDS = ("models", "grid", "batch_sizes", "stages", "counters", "measure", "name")


def check_arguments(*, launcher: str, shard: tuple[int, int] | None, resume: bool, retry_failed: bool) -> None:
    """Combinations of arguments that make no sense, refused before anything is read or run.

    Raises:
        SweepFileError: an unknown launcher, ``retry_failed`` without ``resume``, a shard with a
            launcher that splits the grid itself.
    """
    if launcher not in LAUNCHERS:
        raise SweepFileError(f"--launcher={launcher!r}: must be one of {', '.join(LAUNCHERS)}")
    if retry_failed and not resume:
        raise SweepFileError("--retry-failed: only makes sense with --resume")
    if launcher != "local" and shard:
        raise SweepFileError(f"--shard: runs one shard locally; --launcher {launcher} splits the grid itself")


@dataclass(frozen=True)
class SweepSettings(KeywordSettings):
    """How :func:`vitbench.sweep` runs a plan. Validated on construction (``shard`` holds
    ``(index, count)`` after it, ``export`` a tuple).

    Attributes:
        out: the store's folder (None: the plan's ``out``, else ``results/<name>``, with the shard).
        resume: keep the rows already stored and run only the missing configurations.
        force: start the store over.
        allow_foreign: with ``resume``, add to a store another sweep definition wrote.
        retry_failed: with ``resume``, run again the rows whose status is error or oom.
        shard: ``"I/N"`` or ``(I, N)``: run the I-th of N parts of the grid (1-based), locally.
        yes: run a grid larger than the confirmation threshold.
        export: the formats written at the end: ``csv``, ``parquet``.
        launcher: ``local`` (this process), ``gpus`` (one worker per visible GPU) or
            ``submitit`` (a Slurm job array): :mod:`vitbench.sweeps.launchers`.
        launcher_options: the launcher's options (``gpus``: ``{"gpus": ...}``; ``submitit``:
            :class:`~vitbench.sweeps.launchers.ArrayOptions` fields).
        sync: ``interval`` (group commit: fsync every ``sync_interval_s``; a killed process
            loses no row, a power failure at most the last interval) or ``always`` (one fsync a row).
        sync_interval_s: seconds between fsyncs (``interval``).
        sync_every: at most this many rows between fsyncs.
    """

    out: str | os.PathLike | None = None
    resume: bool = False
    force: bool = False
    allow_foreign: bool = False
    retry_failed: bool = False
    shard: str | tuple[int, int] | None = None
    yes: bool = False
    export: Sequence[str] = ("csv",)
    launcher: str = "local"
    launcher_options: Mapping[str, Any] = field(default_factory=dict)
    sync: str = "interval"
    sync_interval_s: float = DEFAULT_SYNC_INTERVAL_S
    sync_every: int = DEFAULT_SYNC_EVERY

    def __post_init__(self) -> None:
        object.__setattr__(self, "shard", parse_shard(self.shard))
        object.__setattr__(self, "export", (self.export,) if isinstance(self.export, str) else tuple(self.export))
        object.__setattr__(self, "launcher_options", dict(self.launcher_options or {}))
        check_arguments(launcher=self.launcher, shard=self.shard, resume=self.resume, retry_failed=self.retry_failed)
        self.store_options().check()

    def store_options(self) -> StoreOptions:
        """How the store is opened and written (:class:`~vitbench.store.options.StoreOptions`)."""
        return StoreOptions(resume=self.resume, force=self.force, allow_foreign=self.allow_foreign,
                            retry_failed=self.retry_failed, export=self.export, sync=self.sync,
                            sync_interval_s=self.sync_interval_s, sync_every=self.sync_every)


__all__ = ["PLAN_KEYWORDS", "SweepSettings", "check_arguments"]
