"""A large results CSV read into typed columns (numpy arrays), not row dicts: the reader behind
``compare``'s columnar gate (:mod:`vitbench.gate.columnar`), which compares two 10^6-row files
in seconds and a few hundred MB.

Every cell reads as :func:`vitbench.csv_records.records_from_csv` reads it, value for value and
type for type (:meth:`ColumnTable.record` rebuilds its record exactly). That is not argued cell by
cell; :func:`read_csv_columns` answers only for files where it holds and returns None for every
other file, which then takes the record reader (and gets its exact errors):

- the file is split by Arrow's CSV parser, which agrees with Python's ``csv`` module on every text
  Python reads with one field count (and refuses the others); a file holding ``\\r``, NUL, ``'``
  (cells :func:`~vitbench.escape.csv_cell` quoted) or a byte-order mark is left to the record
  reader, as is any file Arrow refuses;
- a column of few distinct cells is typed by the record reader's own rule, once per distinct cell
  (exact by construction); a column of many (timings, memory, per-run lists) must be plain
  numbers or lists of floats, parsed by Arrow (correctly rounded, as ``float`` parses), else the
  file is left to the record reader;
- every record check of :mod:`vitbench.record_schema` is met (the batch size a whole number from
  1, measurements numbers a float holds, the model text), else the record reader names the fault.
"""

from __future__ import annotations

import codecs
import csv
import os
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np

from vitbench import csv_records, input_files, record_schema
from vitbench.errors import InputFileError, VitbenchError
from vitbench.row_status import RowStatus

#: a column with at most this many distinct cells is typed per distinct cell by the record reader
DISTINCT_LIMIT = 65_536
#: a file smaller than this is read by the record reader (the columnar gate pays off on large files)
COLUMNAR_MIN_BYTES = 8 * 1024 * 1024
#: bytes of CSV text Arrow parses at a time, and whether it parses blocks in threads
BLOCK_BYTES = 1 << 20
USE_THREADS = False  # threads read ahead of the typing: 0.3 GB more at the peak, no faster
#: integers beyond this are not all exact as floats: the gate's arithmetic on them is left to Python
EXACT_FLOAT_INT = 2**53

_INTEGER = r"^[+-]?\d{1,18}$"
_DECIMAL = r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$"
_NUMBER = r"-?(?:0|[1-9]\d*)(?:\.\d+(?:[eE][+-]?\d+)?|[eE][+-]?\d+)"
_FLOAT_LIST = r"^\[[ \t\n]*(?:" + _NUMBER + r"[ \t\n]*,[ \t\n]*)*" + _NUMBER + r"[ \t\n]*\]$"


@dataclass(frozen=True)
class Column:
    """One typed column of ``n`` cells.

    ``kind``: ``"values"`` (``codes`` index ``values``, the distinct typed cells; -1 is None),
    ``"int"`` (``ints``), ``"mixed"`` (``floats``, read as ints where ``is_int``: integers below
    2**53, exact as floats) or ``"floats"`` (lists of floats: ``flat[offsets[i]:offsets[i + 1]]``); ``present``
    marks the cells that hold a value (None elsewhere)."""

    kind: str
    present: np.ndarray | None  # None for a ``values`` column: its codes say it (:meth:`has`)
    codes: np.ndarray | None = None
    values: tuple[Any, ...] = ()
    ints: np.ndarray | None = None
    floats: np.ndarray | None = None
    is_int: np.ndarray | None = None
    flat: np.ndarray | None = None
    offsets: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.codes if self.kind == "values" else self.present)

    def has(self) -> np.ndarray:
        """Which cells hold a value."""
        return self.codes >= 0 if self.kind == "values" else self.present

    def value(self, i: int) -> Any:
        """Cell ``i`` as the record reader gives it (a fresh list for a list cell)."""
        if self.kind == "values":
            code = int(self.codes[i])
            value = None if code < 0 else self.values[code]
            return list(value) if isinstance(value, list) else value
        if not self.present[i]:
            return None
        if self.kind == "int":
            return int(self.ints[i])
        if self.kind == "mixed" and self.is_int[i]:
            return int(self.floats[i])  # an integer below 2**53: exact as a float
        if self.kind == "floats":
            return self.flat[self.offsets[i]:self.offsets[i + 1]].tolist()
        return float(self.floats[i])

    def numbers(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(float64 values, mask of numbers) as :func:`vitbench.gate.matching.number` reads each
        cell (a bool, text or list is no number), or None when a number is an integer a float
        does not hold exactly, or a cell is text (its reading as a number is left to Python)."""
        if self.kind == "values":
            numbers = np.full(len(self.values) + 1, np.nan)
            for code, value in enumerate(self.values):
                if isinstance(value, (bool, list)) or value is None:
                    continue
                if isinstance(value, str) or (isinstance(value, int) and abs(value) >= EXACT_FLOAT_INT):
                    return None
                numbers[code] = value
            out = numbers[self.codes]  # code -1 reads the last slot: nan
            return out, ~np.isnan(out)
        if self.kind == "floats":
            return np.full(len(self.present), np.nan), np.zeros(len(self.present), bool)
        if self.kind == "int":
            if self.ints.size and int(np.abs(self.ints).max()) >= EXACT_FLOAT_INT:
                return None
            values = self.ints.astype(np.float64)
        else:
            values = self.floats.copy()
        values[~self.present] = np.nan
        mask = self.present & ~np.isnan(values)
        return values, mask

    def texts(self) -> tuple[np.ndarray, list[Any]] | None:
        """(codes, distinct values) of a ``values`` column, else None."""
        return (self.codes, list(self.values)) if self.kind == "values" else None


@dataclass(frozen=True)
class ColumnTable:
    """A results CSV's kept columns (``names``, in the header's order) over ``n`` rows; ``header``:
    every column the file has."""

    names: tuple[str, ...]
    header: tuple[str, ...]
    n: int
    columns: dict[str, Column]

    def record(self, i: int) -> dict[str, Any]:
        """Row ``i`` as the record reader gives it."""
        return {name: self.columns[name].value(i) for name in self.names}

    def records(self, rows: Collection[int]) -> list[dict[str, Any]]:
        return [self.record(int(i)) for i in rows]


def read_csv_columns(path: str | os.PathLike, where: str, wanted: Any, *, min_bytes: int = COLUMNAR_MIN_BYTES,
                     distinct_limit: int = DISTINCT_LIMIT) -> ColumnTable | None:
    """The columns ``name in wanted`` of the results CSV at ``path``, or None when this reader
    does not answer for the file (see the module's notes: the record reader reads it). Errors
    about the file itself (missing, not a regular file, over the size cap) are one-line
    :class:`InputFileError`, as the record reader's. ``min_bytes``: a smaller file is left to the
    record reader; ``distinct_limit``: see :data:`DISTINCT_LIMIT`. Without pyarrow (an extra:
    ``vitbench[parquet]``) every file is left to the record reader."""
    # Arrow's first allocation picks its allocator: the C one gives freed blocks back
    # (malloc_trim), mimalloc keeps them (0.2 GB more a 10^6-row file)
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    try:
        import pyarrow.csv  # noqa: F401 (Arrow's CSV parser: the columnar path's one need)
    except ImportError:
        return None

    with input_files.open_input(path, where) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > input_files.MAX_RESULTS_BYTES:
            raise InputFileError(input_files.too_large(where, size, input_files.MAX_RESULTS_BYTES))
        if size < min_bytes or not _plain_bytes(handle, where):
            return None
        handle.seek(0)
        header = _header(handle)
        if header is None:
            return None
        keep = [name for name in header if name in wanted]
        if not keep:
            return None
        try:
            # pass 1: each column's distinct cells (few: typed once each); pass 2, only when a
            # column has many: those columns as numbers or lists of floats, batch by batch
            few = _stream(handle, keep, lambda name: _Distinct(name, distinct_limit))
            many = [name for name in keep if few[name].overflowed]
            _trim()
            numeric = _stream(handle, many, _Numbers) if many else {}
        except VitbenchError:
            raise
        except _not_columnar():  # Arrow refused the file, or numbers it cannot hold: the record reader reads it
            return None
    columns = _columns(keep, few, numeric)
    if columns is None:
        return None
    _trim()
    n = len(columns[keep[0]])
    if n == 0:
        return None
    result = ColumnTable(tuple(keep), tuple(header), n, columns)
    return result if _meets_schema(result) else None


def _not_columnar() -> tuple[type[BaseException], ...]:
    """What makes a file not the columnar reader's (the record reader then reads it): Arrow's
    refusal, a cell no number of numpy's holds. Anything else is a bug, raised."""
    import pyarrow as pa

    return (pa.ArrowException, ValueError, ArithmeticError)


def _columns(keep: list[str], few: dict[str, Any], numeric: dict[str, Any]) -> dict[str, Column] | None:
    """Each kept column typed from what the passes gathered, or None when one is not the
    columnar reader's to type."""
    columns: dict[str, Column] = {}
    for name in keep:
        try:
            column = numeric[name].column() if name in numeric else few[name].column()
        except VitbenchError:
            raise
        except _not_columnar():  # cells numpy cannot hold: the record reader reads the file
            return None
        if column is None:
            return None
        columns[name] = column
    return columns


def _stream(handle: Any, names: list[str], accumulator: Any) -> dict[str, Any]:
    """The ``names`` columns of the CSV on ``handle``, read in blocks of rows by Arrow's parser and
    handed, block by block, to one ``accumulator(name)`` per column."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    handle.seek(0)
    reader = pa_csv.open_csv(
        handle,
        read_options=pa_csv.ReadOptions(block_size=BLOCK_BYTES, use_threads=USE_THREADS),
        parse_options=pa_csv.ParseOptions(newlines_in_values=True, ignore_empty_lines=True),
        convert_options=pa_csv.ConvertOptions(
            include_columns=names, column_types={name: pa.string() for name in names},
            strings_can_be_null=False, quoted_strings_can_be_null=False, null_values=[]),
    )
    if reader.schema.names != names:
        raise ValueError("columns")
    out = {name: accumulator(name) for name in names}
    for batch in reader:
        for name, cells in zip(names, batch.columns):
            out[name].add(cells)
    return out


class _Distinct:
    """A column's distinct cells (at most ``limit``) and each row's index among them. A text
    column of more (10^6 distinct model names, issue 45) is kept as Arrow strings from then on
    (``chunks``) and dictionary-encoded by Arrow once, at the end: no Python dict of every cell."""

    def __init__(self, name: str, limit: int) -> None:
        self.name, self.limit = name, limit
        self.index: dict[str, int] = {}
        self.codes: list[np.ndarray] = []
        self.overflowed = False
        self.chunks: list[Any] | None = None

    def add(self, cells: Any) -> None:
        import pyarrow.compute as pc

        if self.overflowed:
            return
        if self.chunks is not None:
            self.chunks.append(cells)
            return
        encoded = pc.dictionary_encode(cells)
        index = self.index
        mapping = np.array([index.setdefault(cell, len(index)) for cell in encoded.dictionary.to_pylist()] or [0],
                           dtype=np.int32)
        if len(index) > self.limit and self.name != "batch_size":
            if _text_named(self.name):
                self._to_arrow(cells)
            else:
                self.overflowed, self.index, self.codes = True, {}, []
            return
        self.codes.append(mapping[encoded.indices.to_numpy(zero_copy_only=False)])

    def _to_arrow(self, cells: Any) -> None:  # the rows so far, from their codes, then ``cells``
        import pyarrow as pa

        before = np.concatenate(self.codes) if self.codes else np.zeros(0, np.int32)
        self.chunks = [pa.array(list(self.index), pa.string()).take(pa.array(before)), cells]
        self.index, self.codes = {}, []

    def column(self) -> Column | None:
        if self.chunks is not None:
            import pyarrow as pa
            import pyarrow.compute as pc

            encoded = pc.dictionary_encode(pa.concat_arrays([pa.array(c, pa.string()) for c in self.chunks]))
            self.chunks = None
            codes, distinct = encoded.indices.to_numpy(zero_copy_only=False), encoded.dictionary.to_pylist()
            del encoded
            return _many_texts(self.name, distinct, codes)
        codes = np.concatenate(self.codes) if self.codes else np.zeros(0, np.int32)
        return _by_distinct(self.name, list(self.index), codes)


class _Numbers:
    """A column of many distinct cells, block by block: plain integers, plain decimal numbers, or
    lists of floats (each block's kind; the column's is decided at the end)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.blocks: list[tuple[str, dict[str, np.ndarray]]] = []

    def add(self, cells: Any) -> None:
        self.blocks.append(_block(cells))

    def column(self) -> Column | None:
        kinds = {kind for kind, _ in self.blocks} - {"empty"}  # a block of missing cells joins any kind
        if not kinds or None in kinds:
            return None
        def join(key: str) -> np.ndarray:  # each block's array is freed as it is joined
            return np.concatenate([arrays.pop(key) for _, arrays in self.blocks])

        present = join("present")
        if kinds == {"int"}:
            return Column("int", present, ints=join("ints"))
        if kinds <= {"int", "decimal"}:
            if any(arrays["too_long"] for _, arrays in self.blocks):
                return None  # an integer of 2**53 or more: the record reader's exact ints
            floats, is_int = join("floats"), join("is_int")
            if not self.name.endswith(csv_records._FLOAT_SUFFIXES):
                whole = ~np.isfinite(floats) | (np.floor(floats) == floats)  # (Decimal: an infinity is whole)
                if bool(np.all(whole[present & ~is_int])):
                    return None  # every number whole ("16.0" is 16): the record reader's Decimal rule
            return Column("mixed", present, floats=floats, is_int=is_int)
        if kinds == {"list"}:
            lengths = np.concatenate([np.diff(arrays["offsets"]) for _, arrays in self.blocks])
            offsets = np.zeros(len(present) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            return Column("floats", present, flat=join("flat"), offsets=offsets)
        return None


def _block(cells: Any) -> tuple[str | None, dict[str, Any]]:
    """One block of a column of many distinct cells: its kind (``int``, ``decimal``, ``list``,
    ``empty``: every cell missing; None: anything else) and arrays."""
    import pyarrow as pa
    import pyarrow.compute as pc

    missing_array = pc.is_in(cells, value_set=pa.array(sorted(csv_records._MISSING_TEXT)))
    missing = missing_array.to_numpy(zero_copy_only=False)
    present = ~missing
    n = len(present)
    if not present.any():
        return "empty", {"present": present, "ints": np.zeros(n, np.int64), "floats": np.zeros(n),
                         "is_int": np.zeros(n, bool), "too_long": False, "flat": np.zeros(0),
                         "offsets": np.zeros(n + 1, np.int64)}
    filled = pc.if_else(missing_array, pa.scalar("0"), cells)
    unsigned = pc.replace_substring_regex(filled, r"^\+", "")  # Arrow reads no "+5" as an integer
    is_int_array = pc.match_substring_regex(filled, _INTEGER)
    if pc.all(is_int_array).as_py():
        ints = np.where(present, pc.cast(unsigned, pa.int64()).to_numpy(zero_copy_only=False), 0)
        too_long = bool(ints.size) and int(np.abs(ints).max()) >= EXACT_FLOAT_INT
        return "int", {"present": present, "ints": ints, "floats": ints.astype(np.float64), "is_int": present,
                       "too_long": too_long}
    if pc.all(pc.match_substring_regex(filled, _DECIMAL)).as_py():
        is_int = is_int_array.to_numpy(zero_copy_only=False) & present
        floats = pc.cast(filled, pa.float64()).to_numpy(zero_copy_only=False)
        ints = pc.cast(pc.if_else(is_int_array, unsigned, pa.scalar("0")), pa.int64()).to_numpy(zero_copy_only=False)
        too_long = (bool(ints.size) and int(np.abs(ints).max()) >= EXACT_FLOAT_INT) or bool(
            pc.any(pc.match_substring_regex(filled, r"^[+-]?\d{19,}$")).as_py())  # an integer _INTEGER leaves out
        return "decimal", {"present": present, "floats": floats, "is_int": is_int, "too_long": too_long}
    if pc.all(pc.or_(missing_array, pc.match_substring_regex(cells, _FLOAT_LIST))).as_py():
        inner = pc.utf8_slice_codeunits(pc.if_else(missing_array, pa.scalar("[0.5]"), cells), 1, -1)
        parts = pc.split_pattern(inner, ",")
        lengths = np.where(present, pc.list_value_length(parts).to_numpy(zero_copy_only=False), 0)
        items = pc.utf8_trim_whitespace(pc.list_flatten(pc.filter(parts, pa.array(present))))
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return "list", {"present": present, "flat": pc.cast(items, pa.float64()).to_numpy(zero_copy_only=False),
                        "offsets": offsets}
    return None, {}


def _trim() -> None:
    """Give the C heap's free memory back to the system (glibc keeps the many small blocks a
    file's columns were built from: 0.3 GB over a 10^6-row file); a no-op elsewhere."""
    import ctypes
    import ctypes.util

    try:
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _plain_bytes(handle: Any, where: str) -> bool:
    """Whether the file holds none of the bytes left to the record reader (``\\r``, NUL, ``'``, a
    byte-order mark) and is UTF-8 text: one pass in 16 MB blocks."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    first = True
    while True:
        block = input_files.read_handle(handle, 1 << 24, where)
        if first and (block.startswith(codecs.BOM_UTF8) or not block.strip() or block.lstrip()[:1] in (b"[", b"{")):
            return False  # (a first "[" or "{": the results reader reads the file as JSON)
        first = False
        if not block:
            break
        if b"\r" in block or b"\0" in block or b"'" in block:
            return False
        if not block.isascii():
            try:
                decoder.decode(block)
            except UnicodeDecodeError:
                return False
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def _header(handle: Any) -> list[str] | None:
    """The header's names (Python's ``csv`` reads them), or None when the record reader would
    refuse it (no names, a name twice) or it spans lines."""
    line = handle.readline(1 << 20).decode("utf-8")
    if not line.endswith("\n") or line.count('"') % 2:
        return None
    header = next(csv.reader([line]), [])
    if not any(c.strip() for c in header) or len(set(header)) != len(header):
        return None
    return header


def _text_named(name: str) -> bool:
    """Columns the record reader reads as text whatever they hold."""
    return name in ("id", "model") or name.startswith(csv_records._TEXT_PREFIXES) \
        or name.endswith(csv_records._TEXT_SUFFIXES)


def _many_texts(name: str, distinct: list[str], indices: np.ndarray) -> Column | None:
    """A text column of many distinct cells as :func:`_by_distinct` types it, when no cell may
    read as a list: a present cell's value is then the cell itself (``csv_records._list_or_text``),
    distinct cells distinct values; a missing cell (``""``, ``nan``... stripped) is None."""
    if any(c.lstrip()[:1] == "[" for c in distinct):
        return _by_distinct(name, distinct, indices)  # a cell that may be a list: the record reader's own typing
    present = np.fromiter((c.strip() not in csv_records._MISSING_TEXT for c in distinct), bool, len(distinct))
    code_of = np.append(np.where(present, np.cumsum(present) - 1, -1), -1).astype(np.int32)
    values = tuple(distinct) if present.all() else tuple(c for c, keep in zip(distinct, present.tolist()) if keep)
    return Column("values", None, codes=code_of[indices.astype(np.int64)], values=values)


def _by_distinct(name: str, distinct: list[str], indices: np.ndarray) -> Column | None:
    """The record reader's own typing (:func:`vitbench.csv_records._typed_column`), once per
    distinct cell."""
    try:
        typed = csv_records._typed_column(name, distinct)
    except InputFileError:
        return None  # a refused cell: the record reader names its row
    values: list[Any] = []
    where: dict[Any, int] = {}
    code_of = np.empty(len(distinct) + 1, dtype=np.int32)
    code_of[-1] = -1
    for k, value in enumerate(typed):
        if value is None:
            code_of[k] = -1
            continue
        marker = (type(value), repr(value))
        if marker not in where:
            where[marker] = len(values)
            values.append(value)
        code_of[k] = where[marker]
    codes = code_of[indices.astype(np.int64)]
    # the smallest integer type that holds the codes: most columns have a few distinct values
    for small in (np.int8, np.int16):
        if len(values) < np.iinfo(small).max:
            codes = codes.astype(small)
            break
    return Column("values", None, codes=codes, values=tuple(values))


def _meets_schema(table: ColumnTable) -> bool:
    """Whether every record meets :mod:`vitbench.record_schema` (else the record reader names the
    first fault): checked on the distinct values of ``values`` columns and on the kinds of the
    others, for the rows that ran."""
    status = table.columns.get("status")
    ran = np.ones(table.n, bool)
    if status is not None:
        if status.kind != "values":
            return False
        ok = np.array([v in (RowStatus.OK, None) for v in status.values] + [True])
        ran = ok[status.codes]
    for name, column in table.columns.items():
        kind = record_schema._kind(name)
        if kind is None:
            continue
        if column.kind != "values":
            if kind == "model":
                return False
            if kind == "batch":
                return False  # (never: batch_size is typed per distinct cell)
            continue  # ints of at most 18 digits, floats, lists of floats: numbers a float holds
        for code, value in enumerate(column.values):
            if record_schema._problem(name, kind, value) is None:
                continue
            rows = column.codes == code
            if kind == "model" or bool(np.any(rows & ran)):
                return False
    return True
