"""The known columns of a result record, checked once for every record read (a CSV or JSON file,
a store's rows, records in memory, a DataFrame: :func:`vitbench.reading.read_results`):
``model`` text, and on every row that ran (status ok, or no status: a failed row is shown with
its error, its other cells never used) ``batch_size`` a whole number from 1 (never a boolean) and
every measurement, prediction and count column (``*_s``, ``*_bytes``, ``throughput*``,
``pred_*``, ``macs``, ...) a number a float holds (a float, an infinity too, or an integer
within a float's range), a list of them (``samples_s``) or empty. Each violation is one line
naming the row, the column and the value (:class:`InputFileError`, exit code 2): a number
written as text, a batch size of ``"4"``, ``0`` or ``false``, an integer of 310 digits, never an
internal error further on.

:func:`require_columns` and :func:`require_finite` are a consumer's own requirements
(``report``: every row's model and batch size, no infinity), in the same form."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from vitbench.errors import InputFileError, shown
from vitbench.row_status import has_result

#: columns whose name marks a measurement, a prediction or a count, by suffix or prefix
_NUMBER_SUFFIXES = ("_s", "_bytes", "_share", "_ratio", "_cv", "_fraction", "_pct", "_per_image", "mfu")
_NUMBER_PREFIXES = ("throughput", "pred_", "measured_", "macs_")
_NUMBER_NAMES = frozenset({"macs", "params", "flops", "tokens", "elementwise_ops"})
#: ... unless the rest of its name says it is text (``pred_basis``, ``macs_source``, a GPU
#: prediction's ``pred_bound`` and ``pred_warning``)
_TEXT_SUFFIXES = ("_basis", "_source", "_note", "_method", "_name", "_key", "_id", "_version", "_kind", "_unit", "_bound",
                  "_warning")
#: the largest batch size a row may hold (as :data:`vitbench.settings.MAX_BATCH_SIZE`, a layer above)
MAX_BATCH_SIZE = 2**31 - 1


@functools.lru_cache(maxsize=4096)
def _kind(column: str) -> str | None:
    """'batch' / 'model' / 'number' / 'count' for a column this module checks, else None."""
    if column == "batch_size":
        return "batch"
    if column == "model":
        return "model"
    if column.startswith("env_") or column.endswith(_TEXT_SUFFIXES):
        return None
    if column in _NUMBER_NAMES or column.endswith("_bytes"):
        return "count"  # a count or a size: a number, never negative
    if column.endswith(_NUMBER_SUFFIXES) or column.startswith(_NUMBER_PREFIXES):
        return "number"
    return None


def _number(value: Any) -> bool:
    """A number a float holds: a float (an infinity too: the gate marks it INVALID), an int (or
    a numpy or Decimal number) within a float's range; never a bool or text."""
    kind = type(value)
    if kind is float:
        return True
    if kind is int:
        return -1e308 < value < 1e308 or _fits_float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return _fits_float(value)


def _fits_float(value: Any) -> bool:
    try:
        float(value)  # an integer of 310 digits: OverflowError
    except (OverflowError, TypeError, ValueError):
        return False
    return True


def _numbers(value: Any, depth: int = 0) -> bool:
    """A list (``samples_s``, ``run_samples_s``: lists of lists) of numbers a float holds."""
    if depth > 3:
        return False
    return all(v is None or _number(v) or (isinstance(v, list) and _numbers(v, depth + 1)) for v in value)


def _problem(column: str, kind: str, value: Any) -> str | None:
    """Why ``value`` cannot be ``column``'s, or None."""
    if value is None:
        return None
    if kind in ("number", "count"):
        if _number(value) or (isinstance(value, list) and _numbers(value)):
            return None
        return "must be a number (within a float's range) or empty"
    if kind == "model":
        return None if isinstance(value, str) else "must be a model name (text)"
    if type(value) is int and 1 <= value <= MAX_BATCH_SIZE:
        return None
    return f"must be a whole number from 1 to {MAX_BATCH_SIZE:,} (a batch size)"


def _ran(record: Mapping[str, Any]) -> bool:
    """Whether the row ran: status ok, or none given (an analysis, a hand-made file)."""
    return has_result(record)


def check_record(record: Mapping[str, Any], where: str, number: int) -> None:
    """Raise :class:`InputFileError` for the first known column of ``record`` (row ``number``,
    from 1) whose value it cannot hold: ``'{where}: row N: column=value: must be ...'``."""
    ran = _ran(record)
    for column, value in record.items():
        kind = _kind(column)
        if kind is None or value is None or (not ran and kind != "model"):
            continue  # a row that failed is shown with its error, its other cells never used
        if type(value) is float and kind in ("number", "count"):
            continue  # the common case, decided at once
        why = _problem(column, kind, value)
        if why is not None:
            raise InputFileError(f"{where}: row {number}: {column}={shown(value, 60)}: {why}")


def _plain(value: Any) -> bool:
    """A float, or an int a float holds: a number cleared at once."""
    return type(value) is float or (type(value) is int and -1e308 < value < 1e308)


def _suspects(kind: str, values: list[Any]) -> list[int]:
    """The indices of ``values`` the common cases do not clear at once (in one pass)."""
    if kind in ("number", "count"):
        return [i for i, v in enumerate(values) if v is not None and not _plain(v)]
    if kind == "model":
        return [i for i, v in enumerate(values) if v is not None and type(v) is not str]
    return [i for i, v in enumerate(values) if type(v) is not int or not 1 <= v <= MAX_BATCH_SIZE]


def check_records(records: Iterable[Mapping[str, Any]], where: str) -> None:
    """:func:`check_record` for every record, numbered from 1: the first row (and its first
    column) at fault is named. Checked column by column, the common cells (a float, an int a
    float holds) decided in one pass: a 10^6-row file's cells in a few seconds."""
    rows = records if isinstance(records, Sequence) else list(records)
    first: int | None = None
    for column in set().union(*rows) if rows else ():
        kind = _kind(column)
        if kind is None:
            continue
        values = [r.get(column) for r in rows]
        for i in _suspects(kind, values):
            if first is not None and i >= first:
                break
            if values[i] is not None and (kind == "model" or _ran(rows[i])) and _problem(column, kind, values[i]):
                first = i
                break
    if first is not None:
        check_record(rows[first], where, first + 1)


def require_columns(records: Sequence[Mapping[str, Any]], where: str, columns: Sequence[str], purpose: str) -> None:
    """Every record that ran (status ok, or no status) holds each of ``columns``: else one
    :class:`InputFileError`, naming the column missing from the file, or the first row without it."""
    present = {c for r in records for c in r}
    for column in columns:
        if column not in present:
            raise InputFileError(f"{where}: no {column!r} column; {purpose}")
    for number, record in enumerate(records, 1):
        if not _ran(record):
            continue
        for column in columns:
            value = record.get(column)
            if value is None or value == "":
                raise InputFileError(f"{where}: row {number}: {column} is empty; {purpose}")


def require_finite(records: Sequence[Mapping[str, Any]], where: str, purpose: str) -> None:
    """No measurement, prediction or count of a row that ran is infinite, and no count or size
    (``params``, ``macs``, ``*_bytes``, ...) is negative (an infinity is a
    float, which :func:`check_records` lets through for the gate to mark INVALID; a report or a
    plot has no place for it): else one :class:`InputFileError` naming the row, column and value."""
    for number, record in enumerate(records, 1):
        if not _ran(record):
            continue
        for column, value in record.items():
            kind = _kind(column) if value is not None else None
            if kind in ("number", "count") and _infinite(value):
                raise InputFileError(f"{where}: row {number}: {column}={shown(value, 60)}: is infinite; {purpose}")
            if kind == "count" and _plain(value) and value < 0:  # (the gate marks it INVALID, exit 1)
                raise InputFileError(f"{where}: row {number}: {column}={shown(value, 60)}: must be a count or a "
                                     f"size (0 or more); {purpose}")


def _infinite(value: Any, depth: int = 0) -> bool:
    if type(value) is float:
        return value - value != 0.0
    return isinstance(value, list) and depth < 4 and any(_infinite(v, depth + 1) for v in value)


__all__ = ["MAX_BATCH_SIZE", "check_record", "check_records", "require_columns", "require_finite"]
