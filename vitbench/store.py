"""A results store that never loses a completed row.

A store is a directory::

    results.csv    one row per completed configuration (``id`` column = the configuration's id)
    results.json   sidecar: schema_version, sweep metadata, environment, raw per-row samples
    .lock          exists (and is flock-ed) only while a sweep writes: two sweeps cannot share it

Both files are rewritten atomically (temporary file, fsync, rename) after every row, the JSON
first: a crash, ``kill -9`` or out-of-memory kill at any moment leaves the previous complete
files, and at worst loses the one configuration that was running. Rows read back from disk are
kept as the exact text they were written with, so resuming never rewrites old values.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vitbench.errors import InputFileError, VitbenchError
from vitbench.results import SCHEMA_VERSION, Records, atomic_write_text

CSV_NAME = "results.csv"
JSON_NAME = "results.json"
LOCK_NAME = ".lock"

#: Columns that never enter the CSV (lists of raw values go to the JSON sidecar).
SIDECAR_COLUMNS = ("samples_s",)
#: Columns ignored when deciding whether two rows of the same id conflict.
VOLATILE_COLUMNS = ("completed_at", "elapsed_s", "index", "study")


class StoreError(InputFileError):
    """A results store that cannot be opened, read or written as asked."""


class StoreBusyError(VitbenchError):
    exit_code = 2


def now_iso() -> str:
    """UTC time with microseconds: distinct for rows written in quick succession."""
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _cell(value: Any) -> Any:
    """A CSV-safe cell: lists and dicts become compact JSON text; None stays empty."""
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, sort_keys=isinstance(value, dict), default=str, separators=(",", ":"))
    return value


def store_paths(path: str | os.PathLike) -> tuple[Path, Path]:
    """(results.csv, results.json) for a store directory or a CSV file path."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        return path, path.with_suffix(".json")
    return path / CSV_NAME, path / JSON_NAME


def read_raw_csv(path: Path) -> list[dict[str, str]]:
    """Rows as exact text (empty string for a missing cell), in file order."""
    import pandas as pd

    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
    except pd.errors.EmptyDataError:
        return []
    except Exception as exc:  # pandas raises many types for bad files
        raise StoreError(f"file={str(path)!r}: not a readable results CSV ({exc.__class__.__name__}: {exc})") from None
    return frame.to_dict(orient="records")


def read_sidecar(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StoreError(f"file={str(path)!r}: not a readable results JSON ({exc.__class__.__name__})") from None
    if not isinstance(data, dict):
        raise StoreError(f"file={str(path)!r}: not a results JSON (top level is not an object)")
    version = data.get("schema_version", SCHEMA_VERSION)
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise StoreError(
            f"file={str(path)!r}: schema_version {version} is newer than this vitbench reads ({SCHEMA_VERSION}); upgrade vitbench"
        )
    return data


@dataclass
class Store:
    """Rows in memory mirrored to disk after every :meth:`add`."""

    directory: Path
    rows: list[dict[str, Any]] = field(default_factory=list)
    samples: dict[str, list[float]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    _lock: Any = None

    @property
    def csv_path(self) -> Path:
        return self.directory / CSV_NAME

    @property
    def json_path(self) -> Path:
        return self.directory / JSON_NAME

    # -- opening --------------------------------------------------------------------------
    @classmethod
    def open(cls, directory: str | os.PathLike, *, resume: bool = False, force: bool = False, lock: bool = True) -> Store:
        """Open ``directory`` for writing.

        A directory already holding rows is refused unless ``resume`` (keep them, add the rest)
        or ``force`` (start over) is given: results are never discarded silently."""
        directory = Path(directory)
        if directory.exists() and not directory.is_dir():
            raise StoreError(f"out={str(directory)!r}: exists and is not a directory")
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"out={str(directory)!r}: cannot create ({exc.strerror})") from None
        store = cls(directory)
        if lock:
            store._acquire()
        try:
            existing = read_raw_csv(store.csv_path) if store.csv_path.exists() else []
            sidecar = read_sidecar(store.json_path)
            if existing and not (resume or force):
                raise StoreError(
                    f"out={str(directory)!r}: already holds {len(existing)} result rows; "
                    "pass --resume to continue that sweep or --force to start over"
                )
            if existing and "id" not in existing[0]:
                raise StoreError(f"file={str(store.csv_path)!r}: has no 'id' column, so it cannot be resumed")
            if resume:
                store.rows = existing
                store.samples = {k: v for k, v in (sidecar.get("samples_s") or {}).items() if isinstance(v, list)}
                store.meta = dict(sidecar.get("sweep") or {})
                store.environment = dict(sidecar.get("environment") or {})
            store._remove_stale_temporaries()
        except BaseException:
            store.close()
            raise
        return store

    def _acquire(self) -> None:
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock, still atomic writes
            return
        path = self.directory / LOCK_NAME
        for _ in range(3):
            handle = open(path, "a+")  # noqa: SIM115 - held until close()
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.close()
                raise StoreBusyError(
                    f"out={str(self.directory)!r}: another vitbench sweep is writing this directory "
                    "(give each shard its own --out)"
                ) from None
            # The previous holder removes the file on close: make sure ours is still the one there.
            try:
                same = os.fstat(handle.fileno()).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self._lock = handle
                return
            handle.close()
        raise StoreBusyError(f"out={str(self.directory)!r}: could not lock the directory (busy)")

    def close(self) -> None:
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

    def _remove_stale_temporaries(self) -> None:
        # Left behind only by a kill between mkstemp and rename; we hold the lock.
        for name in (CSV_NAME, JSON_NAME):
            for tmp in self.directory.glob(f".{name}.*.tmp"):
                with contextlib.suppress(OSError):
                    tmp.unlink()

    # -- contents ---------------------------------------------------------------------------
    def completed_ids(self, *, retry_statuses: Sequence[str] = ()) -> set[str]:
        return {str(r.get("id")) for r in self.rows if str(r.get("status", "")) not in retry_statuses}

    def drop(self, ids: Iterable[str]) -> None:
        """Forget rows (for rerunning failed configurations); the next write makes it durable."""
        ids = set(ids)
        self.rows = [r for r in self.rows if str(r.get("id")) not in ids]
        for key in ids:
            self.samples.pop(key, None)

    def add(self, row: dict[str, Any]) -> None:
        """Append one completed row and make it durable before returning."""
        row = dict(row)
        samples = row.pop("samples_s", None)
        if isinstance(samples, (list, tuple)) and samples:
            self.samples[str(row["id"])] = [float(s) for s in samples]
        for column in SIDECAR_COLUMNS:
            row.pop(column, None)
        self.rows.append({k: _cell(v) for k, v in row.items()})
        self.flush()

    def flush(self) -> None:
        """Write the JSON sidecar, then the CSV, each atomically."""
        self.write_json()
        self.write_csv()

    def write_csv(self) -> None:
        import pandas as pd

        columns: dict[str, None] = {}
        for row in self.rows:
            for key in row:
                columns.setdefault(key, None)
        frame = pd.DataFrame(self.rows, columns=list(columns))
        atomic_write_text(self.csv_path, frame.to_csv(index=False))

    def write_json(self) -> None:
        data = {
            "schema_version": SCHEMA_VERSION,
            "comment": "vitbench results sidecar: results.csv holds one row per configuration; "
            "samples_s maps a row id to its raw per-step times in seconds",
            "sweep": self.meta,
            "environment": self.environment,
            "rows": len(self.rows),
            "updated_at": now_iso(),
            "samples_s": self.samples,
        }
        atomic_write_text(self.json_path, json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")


# --- reading finished stores -----------------------------------------------------------------
def load_results(path: str | os.PathLike) -> tuple[Records, dict[str, Any]]:
    """Typed records (ints, floats, None) and the sidecar of a store directory or results CSV."""
    csv_path, json_path = store_paths(path)
    if not csv_path.exists():
        what = "results store (no results.csv in it)" if Path(path).is_dir() else "results file"
        raise StoreError(f"results={str(path)!r}: no such {what}")
    records = _read_typed(csv_path)
    sidecar = read_sidecar(json_path)
    samples = sidecar.get("samples_s") or {}
    for record in records:
        key = record.get("id")
        if key is not None and str(key) in samples:
            record["samples_s"] = samples[str(key)]
    return records, sidecar


def _read_typed(path: Path) -> Records:
    """Rows with numbers typed. pandas reads an integer column with gaps as floats; a float
    column whose values are all whole numbers (counts, bytes) is given back as integers."""
    import pandas as pd

    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return Records()
    except Exception as exc:
        raise StoreError(f"file={str(path)!r}: not a readable results CSV ({exc.__class__.__name__}: {exc})") from None
    integral = set()
    for column in frame.columns:
        values = frame[column].dropna()
        if frame[column].dtype.kind == "f" and len(values) and not column.endswith(("_s", "_share", "_ratio", "_cv")):
            if ((values % 1) == 0).all() and (values.abs() < 2**53).all():
                integral.add(column)
    frame = frame.astype(object).where(frame.notna(), None)
    records = Records()
    for row in frame.to_dict(orient="records"):
        for column in integral:
            if row[column] is not None:
                row[column] = int(row[column])
        records.append(row)
    return records


# --- merging shards --------------------------------------------------------------------------
@dataclass
class MergeResult:
    out: Path
    rows: int
    sources: list[str]
    warnings: list[str]


def _comparable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in VOLATILE_COLUMNS and not k.startswith("env_") and v != ""}


def _sort_key(row: dict[str, Any]) -> tuple:
    try:
        index = int(float(row.get("index", "")))
    except (TypeError, ValueError):
        index = 1 << 62
    return (index, str(row.get("id", "")))


def merge(sources: Sequence[str | os.PathLike], out: str | os.PathLike, *, force: bool = False) -> MergeResult:
    """Union of shard stores (directories or results CSVs), de-duplicated by row id.

    Rows are ordered by their grid index, then id, whatever the order of ``sources``. When two
    sources hold different rows with the same id, the first with status ``ok`` (else the first
    in argument order) is kept and a warning says so."""
    if not sources:
        raise StoreError("merge: give at least one results store")
    warnings: list[str] = []
    kept: dict[str, dict[str, Any]] = {}
    origin: dict[str, str] = {}
    samples: dict[str, list[float]] = {}
    environments: list[dict[str, Any]] = []
    shard_meta: list[dict[str, Any]] = []
    names: list[str] = []
    out_path = Path(out).resolve()
    for source in sources:
        csv_path, json_path = store_paths(source)
        if not csv_path.exists():
            raise StoreError(f"source={str(source)!r}: no results.csv there")
        if csv_path.parent.resolve() == out_path and Path(source).suffix.lower() != ".csv":
            raise StoreError(f"source={str(source)!r}: is the --out directory itself")
        rows = read_raw_csv(csv_path)
        if rows and "id" not in rows[0]:
            raise StoreError(f"file={str(csv_path)!r}: has no 'id' column (not a vitbench sweep store)")
        sidecar = read_sidecar(json_path)
        meta = sidecar.get("sweep") or {}
        if meta:
            shard_meta.append(meta)
            if meta.get("name") and meta["name"] not in names:
                names.append(meta["name"])
        if sidecar.get("environment"):
            environments.append({"source": str(source), **sidecar["environment"]})
        source_samples = sidecar.get("samples_s") or {}
        for row in rows:
            key = row["id"]
            if key in kept:
                if _comparable(kept[key]) != _comparable(row):
                    replace = kept[key].get("status") != "ok" and row.get("status") == "ok"
                    keep_from = str(source) if replace else origin[key]
                    warnings.append(
                        f"id {key} ({row.get('model', '?')}): different rows in {origin[key]} and {source}; kept the one from {keep_from}"
                    )
                    if replace:
                        kept[key], origin[key] = row, str(source)
                        if key in source_samples:
                            samples[key] = source_samples[key]
                continue
            kept[key], origin[key] = row, str(source)
            if key in source_samples:
                samples[key] = source_samples[key]
    totals = {(m.get("grid_size"), m.get("shard_count")) for m in shard_meta if m.get("shard_count")}
    if len(totals) == 1:
        grid_size, count = next(iter(totals))
        present = {m.get("shard_index") for m in shard_meta}
        missing = [f"{i}/{count}" for i in range(1, int(count) + 1) if i not in present]
        if missing:
            warnings.append(f"shards missing from the merge: {', '.join(missing)} (their rows are absent)")
    rows_sorted = sorted(kept.values(), key=_sort_key)
    store = Store.open(out, force=force)
    try:
        store.rows = rows_sorted
        store.samples = samples
        store.meta = {
            "name": "+".join(names) if names else Path(out).name,
            "merged_from": [str(s) for s in sources],
            "grid_size": next((m.get("grid_size") for m in shard_meta if m.get("grid_size")), None),
        }
        store.environment = {"sources": environments} if environments else {}
        store.flush()
    finally:
        store.close()
    return MergeResult(out=Path(out), rows=len(rows_sorted), sources=[str(s) for s in sources], warnings=warnings)


__all__ = ["Store", "StoreError", "load_results", "merge", "MergeResult", "read_raw_csv", "now_iso"]
