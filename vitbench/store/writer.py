"""The results store: append-only JSON Lines, one checksummed record per completed configuration.

A store is a directory::

    rows.jsonl       one JSON object per line, one line per completed configuration, written
                     (``write``) before the next configuration starts and fsynced by group
                     commit (below); its last member is "_crc32": the CRC-32 (8 hex digits) of
                     the line's text without that member
    sweep.json       the sweep's definition: its fingerprint, name, grid size, shard, the
                     environment (replaced atomically: temporary file, fsync, rename)
    results.csv      exports, written at the end of a sweep, on interruption and by
    results.parquet  `vitbench merge` (CSV always; Parquet with --export csv,parquet)
    .lock            flock-ed (holding the writer's pid) while a sweep writes

Durability (group commit, as databases do it). Each record is handed to the kernel with one
``write`` as soon as its configuration completes, so a process kill (kill -9, the OOM killer,
Ctrl-C) loses no completed row: the page cache outlives the process. fsync, which only matters
when the machine itself goes down, is batched: at most every ``sync_interval_s`` seconds
(default 1) or ``sync_every`` records (default 10,000), and always on :meth:`Store.flush`,
on close, before an export or merge and on interruption. A power failure or kernel crash
loses at most the rows of the last interval; the store stays valid (a torn last record is
caught by its checksum and runs again on ``--resume``). ``sync="always"`` (``--sync always``)
fsyncs every record before :meth:`Store.add` returns.

Why JSON Lines and not SQLite: appending one line costs the same at row 10 and
row 10^6 (no file is rewritten per row); a record is text whose integers are exact at any size
(MACs above 2^53 included) and whose lists (raw samples per run) need no schema; a torn or
damaged record is one line, found by its checksum and skipped without losing its neighbours
(SQLite keeps no per-row checksum); and pandas and DuckDB read it with no vitbench and no
database driver::

    pandas.read_json("DIR/rows.jsonl", lines=True, dtype_backend="pyarrow")
    duckdb.sql("SELECT * FROM read_json_auto('DIR/rows.jsonl')")

Reading (:func:`read_store`) keeps, for each configuration id, the last record whose checksum
holds. On resume, a damaged record (flipped byte, torn last line) is reported, moved to
``rows.damaged.jsonl`` and its configuration runs again. The fingerprint in ``sweep.json``
makes resuming with a different sweep definition a one-line error (``--allow-foreign``
overrides). Every file-system failure (disk full, read-only, unwritable, a path that is not
UTF-8) is a one-line :class:`StoreError` (exit code 2) saying how many rows are saved.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from vitbench.results import check_output_dir
from vitbench.store.atomic import fsync_dir, write_all, write_atomic
from vitbench.store.format import decode_record, encode_record, scan
from vitbench.store.layout import (
    CSV_NAME,
    DAMAGED_NAME,
    DEFAULT_SYNC_EVERY,
    DEFAULT_SYNC_INTERVAL_S,
    DEFINITION_NAME,
    FILE_MODE,
    FORMAT,
    LEGACY_SIDECAR,
    LOCK_NAME,
    NOFOLLOW,
    PARQUET_NAME,
    ROWS_NAME,
    SCHEMA_VERSION,
    SYNC_POLICIES,
    StoreBusyError,
    StoreError,
)
from vitbench.store.reader import read_definition


def now_iso() -> str:
    """UTC time with microseconds: distinct for rows written in quick succession."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def fs_error(action: str, path: Path, exc: OSError, saved: int | None, directory: Path) -> StoreError:
    reason = "it is a symlink; vitbench writes only regular files" if exc.errno == errno.ELOOP else exc.strerror or exc.__class__.__name__
    hint = {errno.ENOSPC: "free some space", errno.EDQUOT: "free some space", errno.EROFS: "use a writable --out"}.get(exc.errno or 0, "fix the path")
    if saved is None:
        return StoreError(f"out={str(directory)!r}: cannot {action} {path.name} ({reason}); nothing was run")
    return StoreError(
        f"out={str(directory)!r}: cannot {action} {path.name} ({reason}): {saved} rows are saved; {hint} and rerun with --resume"
    )


def check_path(directory: str | os.PathLike) -> Path:
    """``directory`` as a Path, refused when its name is not valid UTF-8 (it could not be
    written into the store's files or shown in a message)."""
    text = os.fspath(directory)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise StoreError(f"out={text!r}: the path is not valid UTF-8; choose a UTF-8 name") from None
    return Path(text)


def check_sync(policy: str, interval_s: float, every: int) -> tuple[str, float, int]:
    """The fsync policy, refused with the field and value when it makes no sense."""
    if policy not in SYNC_POLICIES:
        raise StoreError(f"--sync={policy!r}: must be one of {', '.join(SYNC_POLICIES)}")
    if isinstance(interval_s, bool) or not isinstance(interval_s, (int, float)) or not 0 <= interval_s <= 3600:
        raise StoreError(f"--sync-interval={interval_s!r}: must be a number of seconds from 0 to 3600")
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise StoreError(f"sync_every={every!r}: must be a positive integer (records between fsyncs)")
    return policy, float(interval_s), every


def _shard_text(meta: dict[str, Any]) -> str:
    count = meta.get("shard_count")
    return "the whole grid" if count is None else f"shard {meta.get('shard_index')}/{count}"


# --- the writer --------------------------------------------------------------------------------
class Store:
    """An open store: :meth:`add` appends one record (written when it returns; fsynced by group
    commit, or before it returns with ``sync="always"``).

    The methods ``_append``, ``_sync``, ``_replace``, ``_recover``, ``_check_definition``,
    ``_clean_temporaries`` and ``decode`` are the store's safety mechanisms (the fault tests replace each with a broken one
    and check that the tests notice)."""

    decode = staticmethod(decode_record)

    def __init__(
        self, directory: Path, *, sync: str = "interval", sync_interval_s: float = DEFAULT_SYNC_INTERVAL_S,
        sync_every: int = DEFAULT_SYNC_EVERY,
    ):
        self.directory = directory
        self.statuses: dict[str, str] = {}  # id -> status of its last valid record when opened
        self.problems: list[str] = []
        self.info: dict[str, Any] = {}
        self.sync_policy, self.sync_interval_s, self.sync_every = check_sync(sync, sync_interval_s, sync_every)
        self.syncs = 0  # fsyncs of rows.jsonl since opening
        self._added = 0  # new ids appended since opening (ids already in statuses not counted)
        self._pending = 0  # records written since the last fsync
        self._last_sync = time.monotonic()
        self._fd: int | None = None
        self._size = 0
        self._lock: Any = None

    rows_path = property(lambda self: self.directory / ROWS_NAME)
    definition_path = property(lambda self: self.directory / DEFINITION_NAME)

    @property
    def saved(self) -> int:
        """Configurations with a record in the store (the memory held does not grow per row)."""
        return len(self.statuses) + self._added

    # -- opening ------------------------------------------------------------------------------
    @classmethod
    def open(
        cls, directory: str | os.PathLike, *, sweep: dict[str, Any] | None = None, resume: bool = False,
        force: bool = False, allow_foreign: bool = False, lock: bool = True, sync: str = "interval",
        sync_interval_s: float = DEFAULT_SYNC_INTERVAL_S, sync_every: int = DEFAULT_SYNC_EVERY,
    ) -> Store:
        """Open ``directory`` for appending, creating it. ``sweep`` (its ``fingerprint``, name,
        grid size...) is written to sweep.json. A store holding rows is refused unless
        ``resume`` (keep them; the fingerprint must match unless ``allow_foreign``) or ``force``
        (start over). ``sync``, ``sync_interval_s``, ``sync_every``: the fsync policy (module
        docstring). Every path check happens here, before any configuration runs."""
        check_sync(sync, sync_interval_s, sync_every)
        directory = check_path(directory)
        check_output_dir(directory, "out")
        if directory.exists() and not directory.is_dir():
            raise StoreError(f"out={str(directory)!r}: exists and is not a directory")
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise fs_error("create", directory, exc, None, directory) from None
        store = cls(directory, sync=sync, sync_interval_s=sync_interval_s, sync_every=sync_every)
        try:
            if lock:
                store._acquire()
            store._load(sweep or {}, resume=resume, force=force, allow_foreign=allow_foreign)
        except BaseException:
            store.close()
            raise
        return store

    def _load(self, sweep: dict[str, Any], *, resume: bool, force: bool, allow_foreign: bool) -> None:
        if os.path.islink(self.rows_path):  # refused before anything is written (sweep.json's updated_at)
            raise StoreError(f"out={str(self.directory)!r}: {ROWS_NAME} is a symlink; vitbench appends only to a regular file")
        lines, damaged = self._read_rows()
        self._refuse_unasked(lines, resume=resume, force=force)
        previous = read_definition(self.directory) if resume else {}
        if force:
            self._start_over()
            damaged = []
        elif lines and sweep.get("fingerprint") and not allow_foreign:
            self._check_definition(previous, sweep)
        if damaged:
            self._set_aside(damaged)
        self.info = self._definition(previous, sweep)
        self._replace(self.definition_path, (json.dumps(self.info, indent=1, sort_keys=True, default=str) + "\n").encode())
        self._open_rows()
        self._clean_temporaries()

    def _read_rows(self) -> tuple[int, list[tuple[int, bytes]]]:
        """The records already stored: each valid one's status goes to :attr:`statuses`; returns
        how many lines there are and the damaged ones (line number, raw line)."""
        lines, damaged = 0, []
        if os.path.lexists(self.rows_path):  # scan refuses a FIFO or a device (appending to one would block)
            for number, _, raw, row in scan(self.rows_path, self.decode):
                lines += 1
                if row is None or "id" not in row:
                    damaged.append((number, raw))
                else:
                    self.statuses[str(row["id"])] = str(row.get("status", ""))
        return lines, damaged

    def _refuse_unasked(self, lines: int, *, resume: bool, force: bool) -> None:
        """Results already in the directory are kept only on ``resume`` and dropped only on ``force``."""
        if not lines and (self.directory / CSV_NAME).exists() and not self.definition_path.exists() and not force:
            raise StoreError(
                f"out={str(self.directory)!r}: holds a results.csv from an earlier vitbench (no {ROWS_NAME}); "
                "use another --out, or --force to start over"
            )
        if lines and not (resume or force):
            raise StoreError(
                f"out={str(self.directory)!r}: already holds {lines} result rows; "
                "pass --resume to continue that sweep or --force to start over"
            )

    def _start_over(self) -> None:
        for name in (ROWS_NAME, DAMAGED_NAME, CSV_NAME, PARQUET_NAME, LEGACY_SIDECAR, DEFINITION_NAME):
            with contextlib.suppress(FileNotFoundError):
                (self.directory / name).unlink()
        self.statuses = {}

    def _set_aside(self, damaged: list[tuple[int, bytes]]) -> None:
        """Move damaged records to rows.damaged.jsonl (their configurations run again) and say so."""
        self._recover([raw for _, raw in damaged])
        numbers = ", ".join(str(n) for n, _ in damaged[:10]) + (" ..." if len(damaged) > 10 else "")
        self.problems.append(
            f"{len(damaged)} damaged record(s) in {ROWS_NAME} (line {numbers}: checksum mismatch or torn write) "
            f"moved to {DAMAGED_NAME}; their configurations run again"
        )

    def _clean_temporaries(self) -> None:
        """Remove temporary files a kill left between a write and its rename."""
        for tmp in self.directory.glob(".*.tmp"):
            with contextlib.suppress(OSError):
                tmp.unlink()

    def _check_definition(self, previous: dict[str, Any], sweep: dict[str, Any]) -> None:
        known = previous.get("fingerprints") or [previous.get("fingerprint")]
        if sweep["fingerprint"] not in known and sweep.get("legacy_fingerprint") not in known:
            name = (previous.get("sweep") or {}).get("name", "?")
            raise StoreError(
                f"out={str(self.directory)!r}: holds rows of another sweep definition ({name}, fingerprint "
                f"{previous.get('fingerprint') or 'none recorded'}; this one is {sweep['fingerprint']}): use another --out, "
                "--force to start over, or --allow-foreign to add to it anyway"
            )
        held, given = _shard_text(previous.get("sweep") or {}), _shard_text(sweep)
        if held != given:
            raise StoreError(
                f"out={str(self.directory)!r}: holds {held} of this sweep, not {given}: "
                "give each shard its own --out (or --allow-foreign to add to it anyway)"
            )

    def _definition(self, previous: dict[str, Any], sweep: dict[str, Any]) -> dict[str, Any]:
        fingerprints = list(previous.get("fingerprints") or [])
        if sweep.get("fingerprint") and sweep["fingerprint"] not in fingerprints:
            fingerprints.append(sweep["fingerprint"])
        meta = {k: v for k, v in sweep.items() if k not in ("fingerprint", "legacy_fingerprint", "environment")}
        return {
            "format": FORMAT, "schema_version": SCHEMA_VERSION,
            "comment": f"vitbench results store: {ROWS_NAME} holds one checksummed JSON record per configuration",
            "fingerprint": sweep.get("fingerprint") or previous.get("fingerprint"),
            "fingerprints": fingerprints,
            "sweep": meta or previous.get("sweep") or {},
            "environment": previous.get("environment") or sweep.get("environment") or {},
            "created_at": previous.get("created_at") or now_iso(),
            "updated_at": now_iso(),
        }

    def _open_rows(self) -> None:
        created = not self.rows_path.exists()
        try:
            # O_NONBLOCK: a FIFO put there since it was read fails at once (ENXIO) instead of waiting for a reader
            self._fd = os.open(self.rows_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | NOFOLLOW | getattr(os, "O_NONBLOCK", 0),
                               FILE_MODE)
            self._size = os.fstat(self._fd).st_size
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise StoreError(f"out={str(self.directory)!r}: {ROWS_NAME} is a symlink; vitbench appends only to a regular file") from None
            raise fs_error("open", self.rows_path, exc, None, self.directory) from None
        if not stat.S_ISREG(os.fstat(self._fd).st_mode):
            os.close(self._fd)
            self._fd = None
            raise StoreError(f"out={str(self.directory)!r}: {ROWS_NAME} is not a regular file; vitbench appends only to a regular file")
        if created:
            fsync_dir(self.directory)

    def _acquire(self) -> None:
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock
            return
        path = self.directory / LOCK_NAME
        for _ in range(3):
            try:  # never through a symlink: its target would be truncated and overwritten
                handle = os.fdopen(os.open(path, os.O_RDWR | os.O_CREAT | NOFOLLOW, FILE_MODE), "r+")  # noqa: SIM115 - held until close()
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise StoreError(f"out={str(self.directory)!r}: {LOCK_NAME} is a symlink; remove it (vitbench writes only regular files)") from None
                raise fs_error("create", path, exc, None, self.directory) from None
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.close()
                raise StoreBusyError(
                    f"out={str(self.directory)!r}: another vitbench sweep is writing this directory "
                    "(give each shard its own --out)"
                ) from None
            try:  # the previous holder removes the file on close: ours must still be the one there
                same = os.fstat(handle.fileno()).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                with contextlib.suppress(OSError):
                    handle.truncate(0)
                    handle.write(f"{os.getpid()}\n")
                    handle.flush()
                self._lock = handle
                return
            handle.close()
        raise StoreBusyError(f"out={str(self.directory)!r}: could not lock the directory (busy)")

    def close(self) -> None:
        """fsync what is pending, release the file and the lock. A failing fsync here is noted in
        :attr:`problems` (the rows are written: only a power failure could still lose them)."""
        if self._fd is not None:
            try:
                self.flush()
            except StoreError as exc:
                self.problems.append(str(exc))
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        if self._lock is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.directory / LOCK_NAME)  # while still holding it: no stray file left
            with contextlib.suppress(OSError):
                self._lock.close()
            self._lock = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ------------------------------------------------------------------------------
    def add(self, row: dict[str, Any]) -> None:
        """Append one completed row (it must have an ``id``): written to the file (safe from a
        process kill) when this returns, fsynced by the store's policy."""
        self.add_many((row,))

    def add_many(self, rows: Sequence[dict[str, Any]]) -> None:
        """Append several rows with one write (merging stores uses it, then :meth:`flush`)."""
        if self._fd is None:
            raise StoreError(f"out={str(self.directory)!r}: the store is closed")
        if not rows:
            return
        data = b"".join(encode_record(r) for r in rows)
        try:
            self._append(self._fd, data)
        except OSError as exc:
            with contextlib.suppress(OSError):  # drop a partial line, if any
                os.ftruncate(self._fd, self._size)
            raise fs_error("append to", self.rows_path, exc, self.saved, self.directory) from None
        self._size += len(data)
        for row in rows:
            key = str(row["id"])
            if key in self.statuses:
                self.statuses[key] = str(row.get("status", ""))
            else:
                self._added += 1
        self._pending += len(rows)
        if (
            self.sync_policy == "always" or self._pending >= self.sync_every
            or time.monotonic() - self._last_sync >= self.sync_interval_s
        ):
            self.flush()

    def flush(self) -> None:
        """fsync the rows written since the last fsync (nothing to do when none are pending)."""
        if self._fd is None or not self._pending:
            return
        try:
            self._sync(self._fd)
        except OSError as exc:
            raise fs_error("sync", self.rows_path, exc, self.saved, self.directory) from None
        self._pending = 0
        self._last_sync = time.monotonic()
        self.syncs += 1

    def _append(self, fd: int, data: bytes) -> None:
        write_all(fd, data)

    def _sync(self, fd: int) -> None:
        os.fsync(fd)

    def _replace(self, path: Path, data: bytes) -> None:
        try:
            write_atomic(path, data, mode=FILE_MODE)
        except OSError as exc:
            raise fs_error("write", path, exc, self.saved, self.directory) from None

    def _recover(self, damaged: list[bytes]) -> None:
        """Set damaged lines aside (appended to rows.damaged.jsonl) and rewrite rows.jsonl with
        the good ones (atomically): the only time the store rewrites its rows."""
        good = b"".join(raw for _, _, raw, row in scan(self.rows_path, self.decode) if row is not None and "id" in row)
        try:
            fd = os.open(self.directory / DAMAGED_NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND | NOFOLLOW, FILE_MODE)
            try:
                write_all(fd, b"".join(d if d.endswith(b"\n") else d + b"\n" for d in damaged))
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise fs_error("write", self.directory / DAMAGED_NAME, exc, self.saved, self.directory) from None
        self._replace(self.rows_path, good)


__all__ = [
    "Store",
    "check_path",
    "check_sync",
    "fs_error",
    "now_iso",
]
