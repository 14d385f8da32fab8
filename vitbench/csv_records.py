"""A results CSV's records: cells typed per column, exactly (integers never through float),
numbers bounded, parsed as a stream and typed once per distinct cell (:func:`records_from_csv`;
:mod:`vitbench.results` re-exports it)."""

from __future__ import annotations

import bisect
import csv
import json
import re
from collections.abc import Callable, Collection, Iterable
from typing import Any

from vitbench import record_schema
from vitbench.errors import InputFileError, shown
from vitbench.escape import csv_unquote
from vitbench.row_status import RowStatus

_INTEGER = re.compile(r"^[+-]?\d+$")
#: a plain decimal number (``0.0004``, ``1e-3``, ``2500.0``): Decimal and float read it alike
_DECIMAL_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_MISSING_TEXT = frozenset({"", "nan", "NaN", "NAN", "None", "null"})
#: Columns read as text whatever they hold (versions, identifiers of the environment).
_TEXT_PREFIXES = ("env_",)
_TEXT_SUFFIXES = ("_version", "_key", "_id")
#: Columns whose whole-valued numbers are still measurements, never counts.
_FLOAT_SUFFIXES = ("_s", "_share", "_ratio", "_cv", "_fraction", "_pct", "mfu", "_per_image")


def records_from_csv(text: str, where: str, columns: Collection[str] | None = None) -> list[dict[str, Any]]:
    """Rows of CSV text with cells typed per column: a column of integers gives ints (exact, any
    size; whole numbers written as ``16.0`` too, unless the column is a measurement such as
    ``*_s``), other numbers floats, true/false bools, ``[...]`` cells lists; empty cells None;
    ``id``, ``env_*``, ``*_version``, ``*_key``, ``*_id`` columns stay text.

    ``columns``: read only the header's columns among these (the others are skipped, never
    typed: ``compare`` reads the columns it matches and gates on). Bounded numbers: a cell
    written as an integer of more than :data:`MAX_CSV_INT_DIGITS` digits is refused, and so is
    an infinite or overflowing value (``inf``, ``1e9999999``) in a column of whole numbers (a
    count); ``nan`` is a missing cell in every column; in a measurement column (``*_s``, mixed
    numbers) ``1e9999999`` and ``inf`` read as infinity. Errors are one line naming the file,
    the row and the column. Text in a column of numbers (``macs``, ``*_s``, ``batch_size``) of
    a row that ran is refused by its data row, its line in the file and its own text; the
    column's other cells stay numbers (a failed row's text never makes them text). Rows are parsed as a stream (blocks of rows transposed into
    columns), each column typed once from its distinct cells."""
    quoted = "'" in text  # a cell csv_cell neutralised ('=...) is read as the text it was given
    reader = csv.reader(_lines(text))
    try:
        header = next(reader, [])
        if quoted:
            header = [csv_unquote(c) for c in header]
        _check_header(header, where)
        keep = [i for i, name in enumerate(header) if columns is None or name in columns]
        cells, blank, count, jumps = _csv_columns(reader, keep, len(header), where)
    except csv.Error as exc:
        raise InputFileError(f"{where}: not a readable CSV ({exc})") from None
    names = [header[i] for i in keep]
    typed: list[list[Any]] = [[] for _ in names]
    ran: list[bool] | None = None  # which rows ran (status ok or none): only theirs are checked
    fault: tuple[int, str, Any, str] | None = None  # (index, column, value, why): the first text cell
    order = sorted(range(len(names)), key=lambda k: names[k] != "status")  # status first
    for k in order:
        name = names[k]
        column, cells[k] = cells[k], []  # each column's text is freed once typed
        if quoted:
            column = [csv_unquote(c) if c[:1] == "'" else c for c in column]
        typed[k] = _typed_column(name, column, where, blank)
        if name == "status":
            ran = [v in (RowStatus.OK, None) for v in typed[k]]
        fault = _first_fault(name, typed[k], ran, fault)
    if fault is not None:
        index, name, value, why = fault
        raise InputFileError(f"{where}: row {index + 1}: {name}={shown(value, 60)}: {why} "
                             f"(data row {index + 1}, on line {_line_of(index, jumps)} of the file; the header is line 1)")
    return [dict(zip(names, values)) for values in zip(*typed)] if typed else [{} for _ in range(count)]


def _first_fault(name: str, values: list[Any], ran: list[bool] | None,
                 fault: tuple[int, str, Any, str] | None) -> tuple[int, str, Any, str] | None:
    """``fault``, or this column's first cell (in a row that ran) that is text in a column of
    numbers (``macs``, ``*_s``, ``batch_size``...), when it comes before ``fault``'s row (a column
    earlier in the header wins a tie). The record checks (:mod:`vitbench.record_schema`) refuse
    every such cell; it is named here, by its data row and its line in the file, while the
    lines are known. Other faults (a batch size of 0, a number beyond a float) are left to
    those checks, which name the data row and the value."""
    kind = record_schema._kind(name)
    if kind not in ("number", "count", "batch"):
        return fault
    for i in record_schema._suspects(kind, values):
        if fault is not None and i >= fault[0]:
            break
        value = values[i]
        if type(value) is not str or (ran is not None and not ran[i]):
            continue
        why = record_schema._problem(name, kind, value)
        if why is not None:
            return i, name, value, why
    return fault


def _shown_cell(cell: str) -> str:
    """A cell's text for a one-line message: quoted, a long one shortened."""
    return repr(cell if len(cell) <= 24 else f"{cell[:12]}...{cell[-6:]}")


def _lines(text: str) -> Iterable[str]:
    """The lines of ``text``, each with its ``\n``, as ``io.StringIO(text)`` gives them, without
    its copy of the text (four bytes a character: 1.5 GB for a 377 MB file)."""
    find, start, end = text.find, 0, len(text)
    while start < end:
        stop = find("\n", start)
        stop = end if stop < 0 else stop + 1
        yield text[start:stop]
        start = stop


def _check_header(header: list[str], where: str) -> None:
    if not any(c.strip() for c in header):
        raise InputFileError(f"{where}: no header line (not a results CSV)")
    seen: set[str] = set()
    duplicates = sorted({c for c in header if c in seen or seen.add(c)})
    if duplicates:
        raise InputFileError(f"{where}: column {duplicates[0]!r} appears more than once in the header")


def _csv_columns(reader: Iterable[list[str]], keep: list[int], width: int,
                 where: str) -> tuple[list[list[str]], list[int], int, list[tuple[int, int]]]:
    """The cells of the ``keep`` columns, column by column, the row numbers of blank lines
    (skipped), the number of rows read and where the file's lines part from the rows read (see
    :func:`_line_of`); a row whose field count is not the header's is refused. Blocks of rows are
    transposed as they come, so only the kept columns' cells are held."""
    cells: list[list[str]] = [[] for _ in keep]
    blank: list[int] = []
    jumps: list[tuple[int, int]] = []
    block: list[list[str]] = []
    rows = 0

    def flush() -> None:
        for k, i in enumerate(keep):
            cells[k].extend([row[i] for row in block])

    counted = hasattr(reader, "line_num")  # a csv reader: the file's line it has read up to
    end = reader.line_num if counted else 1  # the header's last line
    expected = 2  # the line the next row starts on by :func:`_line_of` (the jumps so far)
    for line, row in enumerate(reader, start=2):
        start, end = end + 1, (reader.line_num if counted else end + 1)
        if not row:
            blank.append(line)
            continue
        if len(row) != width:
            raise InputFileError(f"{where}: row {line} has {len(row)} fields, the header (row 1) has {width}")
        if start != expected:  # a blank line or a cell of several lines came before this row
            jumps.append((rows, start))
        expected = start + 1
        block.append(row)
        rows += 1
        if len(block) == 10_000:
            flush()
            block = []
    flush()
    return cells, blank, rows, jumps


#: digits of an integer cell a CSV may hold (as in a JSON document: Python refuses to read an
#: integer of over 4,300 digits, and no count vitbench records has a hundred)
MAX_CSV_INT_DIGITS = 1000
#: a whole number beyond this many digits is read as a float: converting ``1e9999999`` to an
#: exact integer would take hours
_MAX_WHOLE_DIGITS = MAX_CSV_INT_DIGITS


def _row_of(index: int, blank: list[int]) -> int:
    """The row number (header: row 1) of the ``index``-th row read, blank lines counted."""
    line = index + 2
    for skipped in blank:
        if skipped <= line:
            line += 1
    return line


def _line_of(index: int, jumps: list[tuple[int, int]]) -> int:
    """The file's line (the header: line 1) on which the ``index``-th row read (data row
    ``index + 1``) starts: ``jumps`` holds (index, line) wherever a blank line or a cell of
    several lines moved the rows off the lines (a few entries, never one per row)."""
    k = bisect.bisect_right(jumps, (index, float("inf"))) - 1
    first, line = jumps[k] if k >= 0 else (0, 2)
    return line + index - first


def _typed_column(name: str, cells: list[str], where: str = "file", blank: list[int] | None = None) -> list[Any]:
    """A column's cells typed (see :func:`records_from_csv`): the type is decided from the
    distinct non-missing cells, and each distinct cell is converted once."""
    distinct = set(cells)
    present = {c: c.strip() for c in distinct}
    present = {c: t for c, t in present.items() if t not in _MISSING_TEXT}
    if not present:
        return [None] * len(cells)
    try:
        convert = _converter(name, list(present.values()))
        if convert is _list_or_text and _counted(name):
            return _mixed_column(name, cells, present)
        if convert is _list_or_text and any(t[:1] == "[" for t in present.values()):
            return [_list_or_text(c) if c in present else None for c in cells]  # one list per cell, never shared
        values = {c: convert(c) for c in present}
    except _BadCell as exc:
        cell = next(c for c in present if present[c] == exc.args[0])
        index = cells.index(cell)
        raise InputFileError(f"{where}: row {_row_of(index, blank or [])}, column {name!r}: {_shown_cell(exc.args[0])} "
                             f"{exc.args[1]} (data row {index + 1}; the header is row 1)") from None
    get = values.get
    return list(map(get, cells))


def _counted(name: str) -> bool:
    """A column the record checks require numbers of (``macs``, ``*_s``, ``batch_size``...)."""
    return record_schema._kind(name) in ("number", "count", "batch")


def _mixed_column(name: str, cells: list[str], present: dict[str, str]) -> list[Any]:
    """A column of numbers holding some other text (a typo, a failed row's note): its numbers
    typed as they would be alone, every other cell as text (or a list), so that the record checks
    name the cell at fault, never a number that the text made text."""
    numbers = [t for t in present.values() if t.lower() not in ("true", "false") and _number_text(t) is not None]
    convert = _converter(name, numbers) if numbers else _list_or_text
    numeric = set(numbers)
    values = {c: convert(c) for c, t in present.items() if t in numeric}
    return [values[c] if c in values else _list_or_text(c) if c in present else None for c in cells]


class _BadCell(ValueError):
    """(cell text, why): a cell no column may hold."""


def _cell_converter(name: str, present: list[str]) -> Callable[[str], Any]:
    """How every cell of a column is read, decided from its non-missing cells (stripped): text
    for ids and text-named columns (``13.0`` is a version), booleans, exact integers, floats,
    else lists or text. Raises :class:`_BadCell` for an integer of too many digits, or an
    infinite or overflowing value in a column of whole numbers."""
    if name in ("id", "model") or name.startswith(_TEXT_PREFIXES) or name.endswith(_TEXT_SUFFIXES):
        return _list_or_text  # as normalize_record reads any text cell
    if all(c.lower() in ("true", "false") for c in present):
        return lambda cell: cell.strip().lower() == "true"
    _check_digits(present)
    if all(map(_INTEGER.match, present)):  # the common case, decided without Decimal
        return lambda cell: int(cell.strip())
    if name.endswith(_FLOAT_SUFFIXES) and all(map(_DECIMAL_TEXT.fullmatch, present)):
        return lambda cell: int(cell.strip()) if _INTEGER.match(cell.strip()) else float(cell.strip())
    numbers = [_number_text(c) for c in present]
    if not all(n is not None for n in numbers):
        return _list_or_text
    if not name.endswith(_FLOAT_SUFFIXES) and all(not n.is_finite() or n == n.to_integral_value() for n in numbers):
        _check_counts(present, numbers)
        return lambda cell: int(_number_text(cell.strip()))
    return lambda cell: int(cell.strip()) if _INTEGER.match(cell.strip()) else float(cell.strip())


def _converter(name: str, present: list[str]) -> Callable[[str], Any]:
    """:func:`_cell_converter`, but a batch size column's ``auto`` (a row of ``--batch-size
    auto`` that did not run) is kept as text and the other cells read as they would be alone."""
    if name != "batch_size" or "auto" not in present or len(present) == 1:
        return _cell_converter(name, present)
    convert = _cell_converter(name, [c for c in present if c != "auto"])
    return lambda cell: "auto" if cell.strip() == "auto" else convert(cell)


def _check_digits(present: list[str]) -> None:
    """An integer cell of more than :data:`MAX_CSV_INT_DIGITS` digits: :class:`_BadCell`."""
    for c in present:
        if len(c) > MAX_CSV_INT_DIGITS and _INTEGER.match(c) and len(c.lstrip("+-")) > MAX_CSV_INT_DIGITS:
            raise _BadCell(c, f"is an integer of {len(c.lstrip('+-')):,} digits; at most {MAX_CSV_INT_DIGITS:,} are read")


def _check_counts(present: list[str], numbers: list[Any]) -> None:
    """A column of counts holds no infinity and no whole number too large to be exact."""
    for c, n in zip(present, numbers):
        if not n.is_finite() or n.adjusted() >= _MAX_WHOLE_DIGITS:
            raise _BadCell(c, "is not a count (infinite or too large) in a column of whole numbers")


def _number_text(text: str):
    """The exact decimal value of a number's text (``1e3``, ``16.0``, ``inf``), or None."""
    from decimal import Decimal, InvalidOperation

    if "_" in text:  # Decimal (and int, float) read ``1_000``: no file's number is written so
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    return None if value.is_nan() else value


#: a JSON list of floats written with a fraction or an exponent (``run_medians_s``,
#: ``samples_s``): read with ``float`` per item, as ``json.loads`` reads it, five times faster
_FLOAT_LIST = re.compile(r"\[[ \t\n\r]*(?:-?(?:0|[1-9]\d*)(?:\.\d+(?:[eE][+-]?\d+)?|[eE][+-]?\d+)[ \t\n\r]*,[ \t\n\r]*)*"
                         r"-?(?:0|[1-9]\d*)(?:\.\d+(?:[eE][+-]?\d+)?|[eE][+-]?\d+)[ \t\n\r]*\]")


def _list_or_text(text: str) -> Any:
    stripped = text.strip()
    if _FLOAT_LIST.fullmatch(stripped):
        return list(map(float, stripped[1:-1].split(",")))
    if stripped.startswith("[") and stripped.endswith("]"):
        try:
            return json.loads(stripped)
        except (ValueError, RecursionError):
            return text
    return text
