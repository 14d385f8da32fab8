"""How a sweep opens and writes its store: one record instead of eight flags threaded through
``vitbench.sweep``, the launchers and the runner."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

from vitbench.store.export import check_formats
from vitbench.store.layout import DEFAULT_SYNC_EVERY, DEFAULT_SYNC_INTERVAL_S
from vitbench.store.writer import Store, check_sync


@dataclass(frozen=True)
class StoreOptions:
    """``resume``: keep the rows already stored and run only the missing configurations (the
    store's fingerprint must match unless ``allow_foreign``); ``force``: start over;
    ``retry_failed``: on resume, run again the rows whose status is error or oom; ``export``:
    the formats written at the end (``csv``, ``parquet``); ``sync``, ``sync_interval_s``,
    ``sync_every``: the fsync policy (:mod:`vitbench.store.writer`)."""

    resume: bool = False
    force: bool = False
    allow_foreign: bool = False
    retry_failed: bool = False
    export: tuple[str, ...] = ("csv",)
    sync: str = "interval"
    sync_interval_s: float = DEFAULT_SYNC_INTERVAL_S
    sync_every: int = DEFAULT_SYNC_EVERY

    def __post_init__(self) -> None:
        if isinstance(self.export, str):
            object.__setattr__(self, "export", (self.export,))
        elif not isinstance(self.export, tuple):
            object.__setattr__(self, "export", tuple(self.export))

    def check(self) -> None:
        """Refuse, before anything runs, an export format or an fsync policy that makes no sense."""
        check_formats(self.export)
        check_sync(self.sync, self.sync_interval_s, self.sync_every)

    def open(self, directory: str | os.PathLike, sweep: dict[str, Any]) -> Any:
        """The :class:`~vitbench.store.writer.Store` at ``directory``, opened as these options say."""
        return Store.open(
            directory, sweep=sweep, resume=self.resume, force=self.force, allow_foreign=self.allow_foreign,
            sync=self.sync, sync_interval_s=self.sync_interval_s, sync_every=self.sync_every,
        )

    def resuming(self) -> StoreOptions:
        """The options of a job that continues its own store (a shard of a job array, rerun after
        preemption): resume, never start over, never take another definition's rows."""
        return replace(self, resume=True, force=False, allow_foreign=False)


__all__ = ["StoreOptions"]
