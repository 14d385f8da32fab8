"""The one results reader: records and metadata from any results source (a CSV or JSON file, a
sweep store directory, records in memory, a pandas DataFrame).

It sits above :mod:`vitbench.results` (the record format) and :mod:`vitbench.store` (the
store's layout), so neither of those imports the other's reader.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from vitbench.errors import InputFileError
from vitbench.record_schema import check_records
from vitbench.results import Records, normalize_record, read_input_text, records_from_csv, records_from_json
from vitbench.store.reader import read_store


def read_results(source: Any, role: str = "results", columns: Collection[str] | None = None) -> tuple[Records, dict[str, Any]]:
    """Records and metadata from any results source.

    ``source``: a CSV file, a JSON results file (``{"schema_version", "records"}`` or a list of
    records), a sweep store directory, a list of record dicts, or a pandas DataFrame. Returns
    (records, metadata): the JSON object's other members, the store's information, else {}.
    Cells: integers exact, JSON-encoded lists (``samples_s``, ``run_medians_s``) as lists, empty
    and NaN as None. Errors: one-line :class:`InputFileError` naming ``role`` and the file.
    ``columns``: a CSV file's columns to read (the others are skipped, which keeps a 10^6-row
    file's records small); every column of other sources.
    """
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        where = f"{role} file={str(path)!r}"
        try:
            os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            pass  # read_input_text says it is missing
        except OSError as exc:  # a folder on the way that may not be searched, a name too long...
            raise InputFileError(f"{where}: cannot be read ({exc.strerror or type(exc).__name__})") from None
        if path.is_dir():
            records, metadata = _read_store_dir(path, role)
            return _checked(Records(normalize_record(r) for r in records), where), metadata
        text = read_input_text(path, where)
        first = next((c for c in text if not c.isspace()), "")  # no copy of a large file's text
        if path.suffix.lower() == ".json" or first in ("{", "["):
            records, metadata = records_from_json(text, where)
        else:
            # typed and normalised by the reader itself: no second copy of every row
            return _checked(Records(records_from_csv(text, where, columns)), where), {}
    elif hasattr(source, "to_dict") and hasattr(source, "columns"):  # a pandas DataFrame
        where = f"{role} records"
        records, metadata = source.to_dict(orient="records"), {}
    elif isinstance(source, Mapping):
        raise InputFileError(f"{role} records: expected a list of records, got one mapping")
    else:
        where = f"{role} records"
        records, metadata = list(source), {}
    if not all(isinstance(r, Mapping) for r in records):
        raise InputFileError(f"{where}: records must be objects (column -> value)")
    return _checked(Records(normalize_record(r) for r in records), where), metadata


def _checked(records: Records, where: str) -> Records:
    """``records`` once every known column holds what it may (:mod:`vitbench.record_schema`:
    batch sizes, model names, numbers a float holds), else one line naming row, column, value."""
    check_records(records, where)
    return records


def _read_store_dir(path: Path, role: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A sweep store directory: the store module reads its own layout (rows, raw samples)."""
    try:
        return read_store(path)
    except InputFileError as exc:
        if role == "results":
            raise
        raise InputFileError(f"{role} {exc}") from None
