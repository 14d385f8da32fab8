"""Exports of a results store: CSV (the exchange format) and Parquet, written atomically.
Integers are exact digits in both; list columns are JSON text in the CSV, lists in Parquet."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from vitbench.results import csv_text
from vitbench.store.atomic import write_atomic
from vitbench.store.layout import CSV_NAME, FILE_MODE, PARQUET_NAME, ROWS_NAME, StoreError
from vitbench.store.reader import read_definition, read_store, stored_ids, stream_latest
from vitbench.store.writer import check_path, fs_error

EXPORTS = ("csv", "parquet")


def check_formats(formats: Sequence[str]) -> None:
    """Refuse, before anything runs, an export format this module does not write."""
    unknown = [f for f in formats if f not in EXPORTS]
    if unknown or not formats:
        raise StoreError(f"--export={','.join(formats)}: unknown format {(unknown or [''])[0]!r} (choose from {', '.join(EXPORTS)})")


def export_store(source: str | os.PathLike, out: str | os.PathLike, formats: Sequence[str] = ("csv",)) -> list[Path]:
    """Write ``out``/results.csv (and results.parquet) from the store at ``source``,
    atomically. Integers are written as exact digits; list columns as JSON text in the CSV and
    as list columns in Parquet."""
    check_formats(formats)
    out = check_path(out)
    source = Path(source)
    if source.is_file() and source.name == ROWS_NAME:
        source = source.parent
    streamed = (source / ROWS_NAME).is_file()
    records: Sequence[dict[str, Any]] = []
    info: dict[str, Any] = {}
    if not streamed or "parquet" in formats:
        records, info = read_store(source)
    else:
        info = read_definition(source)
    written = []
    target = out
    try:
        out.mkdir(parents=True, exist_ok=True)
        if "csv" in formats:
            target = out / CSV_NAME
            write_atomic(target, _streamed_csv(source, info) if streamed else csv_bytes(records), mode=FILE_MODE)
            written.append(target)
        if "parquet" in formats:
            target = out / PARQUET_NAME
            write_atomic(target, parquet_bytes(records, info), mode=FILE_MODE)
            written.append(target)
    except OSError as exc:
        saved = len(stored_ids(source)) if streamed else len(records)
        raise fs_error("write", target, exc, saved, out) from None
    return written


def _streamed_csv(directory: Path, info: dict[str, Any], chunk: int = 10_000) -> Iterator[bytes]:
    """The CSV of a store's rows.jsonl, a chunk of rows at a time (memory flat in the rows)."""
    columns, rows, _ = stream_latest(directory / ROWS_NAME, single_definition=len(info.get("fingerprints") or []) <= 1)
    if not columns:
        return
    header, batch = True, []
    for row in rows:
        batch.append(row)
        if len(batch) == chunk:
            yield _csv_chunk(csv_text(batch, columns), header)
            header, batch = False, []
    if batch or header:
        yield _csv_chunk(csv_text(batch, columns), header)


def _csv_chunk(text: str, header: bool) -> bytes:
    return (text if header else text.split("\n", 1)[1]).encode("utf-8", "backslashreplace")


def csv_bytes(records: Sequence[dict[str, Any]], chunk: int = 10_000) -> bytes:
    """Records as CSV (:func:`vitbench.results.csv_text`: exact integers, lists as JSON text),
    a chunk of rows at a time; columns in first-seen order."""
    if not records:
        return b""
    columns = list(dict.fromkeys(key for row in records for key in row))
    parts = []
    for start in range(0, len(records), chunk):
        text = csv_text(records[start:start + chunk], columns)
        parts.append(text if start == 0 else text.split("\n", 1)[1])
    return "".join(parts).encode("utf-8", "backslashreplace")


def parquet_bytes(records: Sequence[dict[str, Any]], info: dict[str, Any]) -> bytes:
    """Records as Parquet: a column pyarrow cannot type (mixed types, integers beyond 64 bits)
    becomes JSON text, so every value survives exactly."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise StoreError("--export parquet needs pyarrow: pip install 'vitbench[parquet]'") from None
    arrays, names = [], []
    for key in dict.fromkeys(key for row in records for key in row):
        values = [r.get(key) for r in records]
        try:
            array = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            array = _wide_integers(pa, values)
            if array is None:
                array = pa.array([None if v is None else json.dumps(v) if not isinstance(v, str) else v for v in values], pa.string())
        arrays.append(array)
        names.append(key)
    table = pa.Table.from_arrays(arrays, names=names)
    table = table.replace_schema_metadata({"vitbench": json.dumps({k: info.get(k) for k in ("fingerprint", "sweep")}, default=str)})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def _wide_integers(pa: Any, values: list[Any]) -> Any:
    """A column of integers beyond int64 (MACs of a huge grid point) as numbers still: uint64
    when none is negative and all fit, else decimal(38, 0); None when that is not the case."""
    import decimal

    ints = [v for v in values if v is not None]
    if not ints or not all(isinstance(v, int) and not isinstance(v, bool) for v in ints):
        return None
    if min(ints) >= 0 and max(ints) < 2**64:
        return pa.array(values, pa.uint64())
    if max(abs(v) for v in ints) < 10**38:
        return pa.array([None if v is None else decimal.Decimal(v) for v in values], pa.decimal128(38, 0))
    return None


__all__ = ["EXPORTS", "check_formats", "csv_bytes", "export_store", "parquet_bytes"]
