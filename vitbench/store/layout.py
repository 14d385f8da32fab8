"""The store's layout on disk: its file names, schema version, sync policies and errors. The
writer (:mod:`~vitbench.store.writer`) and the readers (:mod:`~vitbench.store.reader`) both
import this module; it imports neither."""

from __future__ import annotations

import os

from vitbench.errors import InputFileError, VitbenchError

FORMAT = "vitbench-store"
SCHEMA_VERSION = 2
ROWS_NAME = "rows.jsonl"
DAMAGED_NAME = "rows.damaged.jsonl"
DEFINITION_NAME = "sweep.json"
CSV_NAME = "results.csv"
PARQUET_NAME = "results.parquet"
LEGACY_SIDECAR = "results.json"
LOCK_NAME = ".lock"
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # every file the store writes: never through a symlink
FILE_MODE = 0o644  # the permissions of the files the store writes (less the umask)
#: ``interval``: group commit (fsync every ``sync_interval_s`` or ``sync_every`` records);
#: ``always``: one fsync per record
SYNC_POLICIES = ("interval", "always")
DEFAULT_SYNC_INTERVAL_S = 1.0
DEFAULT_SYNC_EVERY = 10_000


class StoreError(InputFileError):
    """A results store that cannot be opened, read or written as asked (exit code 2)."""


class StoreBusyError(VitbenchError):
    exit_code = 2


__all__ = [
    "CSV_NAME",
    "DAMAGED_NAME",
    "DEFAULT_SYNC_EVERY",
    "DEFAULT_SYNC_INTERVAL_S",
    "DEFINITION_NAME",
    "FILE_MODE",
    "FORMAT",
    "LEGACY_SIDECAR",
    "LOCK_NAME",
    "NOFOLLOW",
    "PARQUET_NAME",
    "ROWS_NAME",
    "SCHEMA_VERSION",
    "SYNC_POLICIES",
    "StoreBusyError",
    "StoreError",
]
