"""Reading a results store (:mod:`vitbench.store.writer` writes it): its definition
(sweep.json, type-checked), the last valid record of each id in grid order, as a list or as a
stream of one row at a time for exports of any size, and the ids it holds."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vitbench import input_files
from vitbench.errors import shown
from vitbench.input_files import MAX_DEFINITION_BYTES, MAX_ROW_LINE_BYTES, load_json, open_input, read_input_bytes
from vitbench.results import Records, read_csv_records
from vitbench.store.format import decode_record, scan
from vitbench.store.layout import (
    CSV_NAME,
    DEFINITION_NAME,
    LEGACY_SIDECAR,
    ROWS_NAME,
    SCHEMA_VERSION,
    StoreError,
)


def read_definition(directory: Path) -> dict[str, Any]:
    """The store's sweep.json, its schema version and member types checked; {} when there is none."""
    path = directory / DEFINITION_NAME
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except (OSError, ValueError):
        pass  # the gate says why it cannot be read
    where = f"file={str(path)!r}"  # the one gate: a FIFO or device refused, the size capped, the numbers bounded
    data = load_json(read_input_bytes(path, where, max_bytes=MAX_DEFINITION_BYTES, error=StoreError), where, error=StoreError)
    if not isinstance(data, dict):
        raise StoreError(f"file={str(path)!r}: not a store definition (top level is not an object)")
    _check_version(path, data.get("schema_version", SCHEMA_VERSION))
    _check_types(path, data, DEFINITION_TYPES, "")
    fingerprints = data.get("fingerprints") or []
    if not all(isinstance(f, str) for f in fingerprints):
        raise StoreError(f"file={str(path)!r}: fingerprints={_short(fingerprints)}: must be a list of strings")
    _check_types(path, data.get("sweep") or {}, SWEEP_TYPES, "sweep.")
    _check_counts(path, data.get("sweep") or {})
    return data


#: the most configurations and shards a store's definition may claim (a larger claim is a
#: damaged or forged sweep.json: merge and report would count to it)
MAX_GRID_SIZE = 10**12
MAX_SHARDS = 1_000_000


def _check_counts(path: Path, sweep: dict[str, Any]) -> None:
    """The grid's size and the shard within bounds (absent or null is allowed)."""
    size, index, count = sweep.get("grid_size"), sweep.get("shard_index"), sweep.get("shard_count")
    if size is not None and not 0 <= size <= MAX_GRID_SIZE:
        raise StoreError(f"file={str(path)!r}: sweep.grid_size={_short(size)}: must be from 0 to {MAX_GRID_SIZE:,}")
    if count is not None and not 1 <= count <= MAX_SHARDS:
        raise StoreError(f"file={str(path)!r}: sweep.shard_count={_short(count)}: must be from 1 to {MAX_SHARDS:,}")
    if index is not None and not 1 <= index <= (count or MAX_SHARDS):
        raise StoreError(f"file={str(path)!r}: sweep.shard_index={_short(index)}: must be from 1 to the shard count")


def _check_version(path: Path, version: Any) -> None:
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise StoreError(f"file={str(path)!r}: schema_version={version!r}: must be a whole number (this vitbench writes {SCHEMA_VERSION})")
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"file={str(path)!r}: schema_version {version} is newer than this vitbench reads ({SCHEMA_VERSION}); upgrade vitbench"
        )


def _check_types(path: Path, data: dict[str, Any], types: tuple[tuple[str, type, str], ...], prefix: str) -> None:
    """Each member of ``types`` present in ``data`` (not null) has its type (a bool is no number)."""
    for key, kind, what in types:
        value = data.get(key)
        if value is not None and not (isinstance(value, kind) and not isinstance(value, bool)):
            raise StoreError(f"file={str(path)!r}: {prefix}{key}={_short(value)}: must be {what}")


#: members of sweep.json and their types (absent or null is allowed: an earlier vitbench)
DEFINITION_TYPES = (
    ("fingerprint", str, "a string"), ("fingerprints", list, "a list of strings"), ("sweep", dict, "an object"),
    ("environment", dict, "an object"), ("created_at", str, "a string"), ("updated_at", str, "a string"),
)


SWEEP_TYPES = (
    ("name", str, "a string"), ("grid_size", int, "a whole number"), ("shard_index", int, "a whole number"),
    ("shard_count", int, "a whole number"), ("definition", list, "a list"), ("id_hex_digits", int, "a whole number"),
)


def _short(value: Any) -> str:
    return shown(value, 80)


def is_store(path: str | os.PathLike) -> bool:
    path = Path(path)
    return path.is_dir() and ((path / ROWS_NAME).exists() or (path / DEFINITION_NAME).exists() or (path / CSV_NAME).exists())


def _valid_records(path: Path, damaged: list[int]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(byte offset, record) of each valid record of a rows file (no checksum member: decode_record
    parses the body without it); the line numbers of damaged records (or records without an id)
    go to ``damaged``."""
    for number, offset, _, row in scan(path):
        if row is None or "id" not in row:
            damaged.append(number)
            continue
        yield offset, row


def _damage_report(path: Path, damaged: list[int]) -> list[str]:
    if not damaged:
        return []
    return [f"{path}: {len(damaged)} damaged record(s) skipped (line {', '.join(map(str, damaged[:10]))})"]


def latest_rows(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The last valid record of each id, in grid order (index, then id), each with every column
    of the store (None where a row has none, as in the CSV), and the problems found."""
    kept: dict[str, dict[str, Any]] = {}
    columns: dict[str, None] = {}
    damaged: list[int] = []
    for _, row in _valid_records(path, damaged):
        columns.update(dict.fromkeys(row))
        key = str(row["id"])
        kept.pop(key, None)
        kept[key] = row
    problems = _damage_report(path, damaged)
    rows = [{c: row.get(c) for c in columns} for row in sorted(kept.values(), key=grid_order)]
    return rows, problems


def stream_latest(path: Path, *, single_definition: bool = True) -> tuple[list[str], Iterator[dict[str, Any]], list[str]]:
    """What :func:`latest_rows` gives (the columns, the last valid record of each id in grid
    order, the problems), with the rows as an iterator that holds one row at a time, for
    exports of any size. One pass finds the columns and whether the file is in grid order
    already (as a sweep writes it); if it is, and one sweep definition wrote it
    (``single_definition``: an id then has one grid index), the rows stream from the file;
    otherwise the byte offset of each id's last record is kept (not the record) and the rows
    are read back by offset in grid order."""
    columns: dict[str, None] = {}
    damaged: list[int] = []
    in_order, previous = True, None
    for _, row in _valid_records(path, damaged):
        columns.update(dict.fromkeys(row))
        key = grid_order(row)
        in_order = in_order and (previous is None or key > previous)
        previous = key
    problems = _damage_report(path, damaged)
    names = list(columns)

    def in_file_order() -> Iterator[dict[str, Any]]:
        for _, row in _valid_records(path, []):  # damage already counted by the first pass
            yield {c: row.get(c) for c in names}

    def by_offset() -> Iterator[dict[str, Any]]:
        last: dict[str, tuple[tuple, int]] = {}
        for offset, row in _valid_records(path, []):
            key = str(row["id"])
            last.pop(key, None)
            last[key] = (grid_order(row), offset)
        offsets = [offset for _, offset in sorted(last.values())]
        del last
        with open_input(path, f"file={str(path)!r}", StoreError) as handle:
            for offset in offsets:
                handle.seek(offset)
                row = decode_record(handle.readline(MAX_ROW_LINE_BYTES + 1)[:-1])
                if row is not None:
                    yield {c: row.get(c) for c in names}

    return names, in_file_order() if in_order and single_definition else by_offset(), problems


def stored_id_digits(directory: str | os.PathLike) -> int | None:
    """How many hex digits the ids of the store at ``directory`` have (its sweep.json says, else
    its first valid record; a store of an earlier vitbench has 12): a sweep resumed into it
    keeps that length. None when there is no store or no record."""
    directory = Path(directory)
    try:
        digits = (read_definition(directory).get("sweep") or {}).get("id_hex_digits")
    except StoreError:
        digits = None
    if isinstance(digits, int) and not isinstance(digits, bool) and 8 <= digits <= 40:
        return digits
    path = directory / ROWS_NAME
    if not path.is_file():
        return None
    for _, _, _, row in scan(path):
        if row is not None and isinstance(row.get("id"), str):
            return len(row["id"])
    return None


def stored_ids(directory: str | os.PathLike) -> set[str]:
    """The ids of the valid records in a store (what a reader finds on disk now)."""
    path = Path(directory) / ROWS_NAME
    if not path.exists():
        return set()
    return {str(row["id"]) for _, _, _, row in scan(path) if row is not None and "id" in row}


def grid_order(row: dict[str, Any]) -> tuple:
    """Sort key of a stored row: its grid index (a float that is an integer counts, as a CSV
    read back gives it), rows without one last, then its id."""
    index = row.get("index")
    if isinstance(index, float) and index.is_integer():
        index = int(index)
    return (index if isinstance(index, int) and not isinstance(index, bool) else 1 << 62, str(row.get("id", "")))


def read_store(path: str | os.PathLike) -> tuple[Records, dict[str, Any]]:
    """Typed records (exact integers, lists) and metadata of a store directory: its
    ``sweep.json`` (``schema_version``, ``sweep``, ``environment``, ``fingerprint``) plus
    ``problems`` (damaged records skipped). Also reads an earlier vitbench's store
    (results.csv + results.json), attaching its raw samples."""
    path = Path(path)
    if path.is_file() and path.name == ROWS_NAME:
        path = path.parent
    if not path.is_dir():
        raise StoreError(f"results={str(path)!r}: no such results store")
    info = read_definition(path)
    if (path / ROWS_NAME).exists():
        try:
            rows, problems = latest_rows(path / ROWS_NAME)
        except OSError as exc:
            raise StoreError(f"results={str(path)!r}: cannot read {ROWS_NAME} ({exc.strerror})") from None
        return Records(rows), {**info, "problems": problems}
    if (path / CSV_NAME).exists():
        return _read_legacy(path)
    raise StoreError(f"results={str(path)!r}: no results store here (no {ROWS_NAME} or {CSV_NAME})")


def _read_legacy(path: Path) -> tuple[Records, dict[str, Any]]:
    records = read_csv_records(path / CSV_NAME)
    sidecar: dict[str, Any] = {}
    if (path / LEGACY_SIDECAR).exists():
        where = f"file={str(path / LEGACY_SIDECAR)!r}"
        sidecar = load_json(read_input_bytes(path / LEGACY_SIDECAR, where, max_bytes=input_files.MAX_RESULTS_BYTES, error=StoreError),
                            where, max_depth=None, allow_nan=True, error=StoreError)
        if not isinstance(sidecar, dict):
            raise StoreError(f"file={str(path / LEGACY_SIDECAR)!r}: not a results JSON (top level is not an object)")
        version = sidecar.get("schema_version", 1)
        if isinstance(version, int) and version > SCHEMA_VERSION:
            raise StoreError(f"file={str(path / LEGACY_SIDECAR)!r}: schema_version {version} is newer than this vitbench reads; upgrade vitbench")
    samples = sidecar.get("samples_s") or {}
    for record in records:
        if str(record.get("id")) in samples:
            record["samples_s"] = samples[str(record.get("id"))]
    return records, {**{k: v for k, v in sidecar.items() if k != "samples_s"}, "problems": []}


def store_info(path: str | os.PathLike) -> dict[str, Any] | None:
    """The definition of the store at ``path`` (sweep.json) without reading its rows; None when
    there is no store there."""
    path = Path(path)
    return read_definition(path) if (path / DEFINITION_NAME).exists() else None


__all__ = ["DEFINITION_TYPES", "SWEEP_TYPES", "is_store", "latest_rows", "read_definition", "read_store", "store_info", "stored_id_digits", "stored_ids", "stream_latest"]
