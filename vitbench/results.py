"""Result records: flat dicts with stable, unit-explicit column names, and their on-disk form.

Every stage (analytic, counted, measured) produces records; reports, sweeps and compare consume
them. Units are raw: integer counts, seconds, bytes. Formatting belongs to the report layer.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import os
import stat
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vitbench import hooks, input_files
from vitbench.csv_records import _list_or_text, records_from_csv
from vitbench.errors import InputFileError, OutputFileError
from vitbench.escape import csv_cell
from vitbench.input_files import load_json
from vitbench.store import atomic

#: Bumped when a column changes meaning; readers refuse files of a newer schema.
SCHEMA_VERSION = 1

#: Columns that identify a configuration (rows of two result sets match on these).
KEY_COLUMNS = ("model", "spec_key", "batch_size", "device", "mode", "precision")


#: Columns every command's rows carry, so that ``compare`` can match and gate any of them.
IDENTITY_COLUMNS = ("model", "kind", "spec_key", "img_size", "patch_size", "batch_size", "params", "macs")


def identity_columns(
    *,
    model: str,
    kind: str | None,
    spec_key: str | None,
    img_size: int | str | None,
    patch_size: int | None,
    batch_size: int | str | None,
    params: int | None,
    macs_per_image: int | None,
) -> dict[str, Any]:
    """The identity columns of a row, in :data:`IDENTITY_COLUMNS` order.

    ``macs`` = ``macs_per_image * batch_size`` (exact integers) when both are known integers,
    else None (no count, or a batch size still to be chosen, such as ``"auto"``)."""
    whole_batch = isinstance(batch_size, int) and not isinstance(batch_size, bool)
    macs = macs_per_image * batch_size if macs_per_image is not None and whole_batch else None
    return {
        "model": model, "kind": kind, "spec_key": spec_key, "img_size": img_size,
        "patch_size": patch_size, "batch_size": batch_size, "params": params, "macs": macs,
    }


#: how :class:`Records` show themselves: :data:`vitbench.hooks.DISPLAY` (the reporting layer's
#: functions, registered by the package root: this bottom layer imports nothing above it)
DISPLAY = hooks.DISPLAY


class Records(list):
    """A list of record dicts that converts to a pandas DataFrame (``to_frame``), to CSV, shows
    itself in Jupyter as an HTML table (``_repr_html_``) and draws itself (``plot``)."""

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(list(self))

    def to_csv(self, path: str | os.PathLike | None = None) -> str | None:
        """CSV text (exact integers, lists as JSON), or write it to ``path``."""
        if path is None:
            return csv_text(self)
        write_csv(self, path)
        return None

    def _repr_html_(self) -> str:
        """Jupyter's display: an HTML table, units formatted by the report layer, every cell
        escaped; a long list shows its head and tail and says how many rows are hidden."""
        return DISPLAY["html"](self)

    def plot(self, x: str | None = None, y: str | None = None, by: str | None = "model", ax: Any = None) -> Any:
        """A matplotlib Axes: ``y`` against ``x``, one line per value of ``by`` (``None``: one
        line). Defaults: ``x`` the first of img_size, batch_size, patch_size, depth that varies,
        ``y`` the first of macs, throughput_img_s, pred_latency_s, latency_p50_s,
        peak_memory_bytes, params the rows have. Draws on ``ax`` when given (in Jupyter the
        figure shows inline). Needs matplotlib."""
        return DISPLAY["plot"](self, x=x, y=y, by=by, ax=ax)


def check_output_path(path: str | os.PathLike, field: str = "file") -> Path:
    """``path`` if vitbench may write it: absent or a regular file (never a device node, FIFO,
    socket, folder or symlink: replacing /dev/null with a file would break the machine), in a
    folder that exists or can be made and is writable. Checked before any work is done;
    raises :class:`OutputFileError` (exit code 2) naming ``field``."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputFileError(f"{field}={str(path)!r}: cannot be written ({exc.strerror or exc.__class__.__name__})") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        kind = ("a folder" if stat.S_ISDIR(st.st_mode) else "a symlink" if stat.S_ISLNK(st.st_mode)
                else "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "a device")
        raise OutputFileError(f"{field}={str(path)!r}: is {kind}, not a regular file; vitbench writes only regular files")
    if st is not None and not os.access(path, os.W_OK):
        raise OutputFileError(f"{field}={str(path)!r}: is read-only; vitbench does not replace a file its owner protected")
    folder = path.parent
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise OutputFileError(f"{field}={str(path)!r}: {str(folder)!r} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputFileError(f"{field}={str(path)!r}: the folder {str(folder)!r} is not writable")
    try:  # what access() cannot tell (/proc, a read-only mount, a full disk's inodes): try it
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".vitbench-probe.", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OutputFileError(f"{field}={str(path)!r}: cannot write in {str(folder)!r} ({exc.strerror or exc.__class__.__name__})") from None
    return path


def check_output_dir(path: str | os.PathLike, field: str = "out") -> Path:
    """``path`` if vitbench may make or fill it: an existing folder this process may list,
    enter and write, or an absent one whose nearest existing parent it may enter and write.
    Checked before any work; raises :class:`OutputFileError` (exit code 2) naming ``field``
    (a mode-000 parent used to surface as an internal PermissionError from deep inside)."""
    path = Path(path)
    nearest = path
    while True:
        try:
            st = os.stat(nearest)
            break
        except FileNotFoundError:
            if nearest == nearest.parent:
                raise OutputFileError(f"{field}={str(path)!r}: no directory on its way exists") from None
            nearest = nearest.parent
        except OSError as exc:  # a parent that may not be entered, a file where a folder should be
            raise OutputFileError(f"{field}={str(path)!r}: cannot be reached ({exc.strerror or type(exc).__name__})") from None
    if not stat.S_ISDIR(st.st_mode):
        where = "exists and is" if nearest == path else f"is under {str(nearest)!r}, which is"
        raise OutputFileError(f"{field}={str(path)!r}: {where} not a directory")
    needed = os.W_OK | os.X_OK | (os.R_OK if nearest == path else 0)
    if not os.access(nearest, needed):
        raise OutputFileError(f"{field}={str(path)!r}: the directory {str(nearest)!r} is not writable (or not readable) by this user")
    return path


def atomic_write_text(path: str | os.PathLike, text: str | Iterable[str], field: str = "file") -> None:
    """Write ``text`` (or its chunks, each written as it comes) through :func:`vitbench.store.atomic.write_atomic` (a temporary file in the
    same folder, fsync, rename over ``path``, fsync the folder): a reader (or a crash) sees the
    old file or the new one, never half of one. The file gets the usual permissions (0666 less
    the umask). Only a regular file is ever replaced (:func:`check_output_path`, checked again
    just before the rename); a file-system failure is one :class:`OutputFileError` naming
    ``field``."""
    path = check_output_path(path, field)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # a lone surrogate (a file name that is not UTF-8, quoted in a report) as its escape, \udcfe
        data = (text.encode("utf-8", "backslashreplace") if isinstance(text, str)
                else (chunk.encode("utf-8", "backslashreplace") for chunk in text))
        atomic.write_atomic(path, data, before_replace=lambda: check_output_path(path, field))
    except OSError as exc:
        raise OutputFileError(f"{field}={str(path)!r}: cannot be written ({exc.strerror or exc.__class__.__name__})") from None


def _csv_cell(value: Any) -> str:
    """One CSV cell, exactly: integers in full (never through float), floats as their shortest
    round-trip text, lists and dicts as compact JSON, None and NaN empty."""
    kind = type(value)
    if kind is str:  # the common cells first: a report's names and verdicts repeat
        return _text_cell(value)
    if kind is float:
        return "" if value != value else repr(value)
    if kind is int:
        return str(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, sort_keys=isinstance(value, dict), default=str, separators=(",", ":"))
    if isinstance(value, float):
        return "" if value != value else repr(float(value))
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        return _csv_cell(value.item())
    return csv_cell(str(value))  # text: a leading = + - @ neutralised (vitbench.escape)


@functools.lru_cache(maxsize=65_536)
def _text_cell(text: str) -> str:
    return csv_cell(text)


class _Lines(list):
    """A file for ``csv.writer`` that keeps each row's text, its ``"\\r\\n"`` ended by ``"\\n"``."""

    def write(self, text: str) -> None:
        self.append(text[:-2] + "\n")


def csv_text(records: Iterable[Mapping[str, Any]], columns: Sequence[str] | None = None, header: bool = True) -> str:
    """Records as CSV text: ``columns``, else the union of keys in first-seen order. Every text
    cell and column name passes :func:`vitbench.escape.csv_cell` (a leading ``= + - @``, tab or
    carriage return neutralised with a ``'``, which the reader takes off again). ``header=False``:
    the rows alone (a later chunk of a file written in chunks)."""
    rows = list(records)
    if columns is None:
        columns = list(dict.fromkeys(key for row in rows for key in row))
    table = [[csv_cell(str(c)) for c in columns]] if header else []
    table += [[_csv_cell(row.get(c)) for c in columns] for row in rows]
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(table)
    text = buffer.getvalue()
    if "\r" not in text:
        return text
    # csv quotes a cell for the line terminator's characters only: a carriage return in a cell (a
    # model name's) is quoted with "\r\n" rows, each row's then ended by "\n"
    lines = _Lines()
    csv.writer(lines, lineterminator="\r\n").writerows(table)
    return "".join(lines)


def write_csv(records: Iterable[Mapping[str, Any]], path: str | os.PathLike) -> None:
    """Atomically write records as CSV (union of columns, first-seen order; exact integers)."""
    atomic_write_text(path, csv_text(records))


def read_input_text(path: str | os.PathLike, where: str, error: type[Exception] = InputFileError,
                    max_bytes: int | None = None) -> str:
    """The text of an input file, or one clear ``error`` naming ``where`` (missing, not a regular
    file, too large, unreadable, a Parquet file, not UTF-8, empty): through the one gate,
    :mod:`vitbench.input_files` (``max_bytes``: a results file's cap unless given)."""
    data = input_files.read_input_bytes(path, where, max_bytes=max_bytes or input_files.MAX_RESULTS_BYTES, error=error)
    if data[:4] == b"PAR1":
        raise error(f"{where}: is a Parquet file; give the results CSV (or the store folder) instead")
    try:  # utf-8-sig: a byte-order mark (Excel's CSVs) is not part of the first column's name
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise error(f"{where}: cannot be read (not UTF-8 text)") from None
    if not text or text.isspace():  # (no stripped copy of a large file)
        raise error(f"{where}: the file is empty")
    return text


def write_json(data: Any, path: str | os.PathLike) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def to_json(records: Iterable[dict[str, Any]]) -> str:
    return json.dumps(
        {"schema_version": SCHEMA_VERSION, "records": list(records)}, indent=2, default=str
    )


# --------------------------------------------------------------------------- reading
# ONE reader for every results format. Integers stay exact: CSV cells are read as text and
# typed per column (never through float: vitbench.csv_records), JSON keeps Python ints.

def read_csv_records(path: str | os.PathLike) -> Records:
    """The records of a results CSV file (typed as :func:`records_from_csv` says)."""
    path = Path(path)
    where = f"file={str(path)!r}"
    return Records(normalize_record(r) for r in records_from_csv(read_input_text(path, where), where))


def records_from_json(text: str, where: str) -> tuple[list[Any], dict[str, Any]]:
    """The records of a JSON results document and its other members (schema_version, ...)."""
    # bounded numbers (NaN: a missing cell, as in a CSV); nesting as deep as the parser goes
    data = load_json(text, where, max_depth=None, allow_nan=True)
    if isinstance(data, list):
        return data, {}
    if not isinstance(data, dict):
        raise InputFileError(f"{where}: expected a JSON object with 'records', got {type(data).__name__}")
    if "benchmarks" in data and "machine_info" in data:
        raise InputFileError(
            f"{where}: this is a pytest-benchmark file; compare those with "
            "`pytest benchmarks/ --benchmark-compare` or `pytest-benchmark compare`"
        )
    version = data.get("schema_version")
    if version is not None:
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise InputFileError(f"{where}: schema_version={version!r} is not a valid schema version")
        if version > SCHEMA_VERSION:
            raise InputFileError(
                f"{where}: schema_version={version} is newer than this vitbench reads "
                f"({SCHEMA_VERSION}); upgrade vitbench"
            )
    records = data.get("records")
    if not isinstance(records, list):
        raise InputFileError(f"{where}: no 'records' list (not a vitbench results file)")
    return records, {k: v for k, v in data.items() if k != "records"}


def normalize_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record with plain Python cells: NaN -> None, numpy scalars -> int/float, JSON-encoded
    list text -> list."""
    out = {}
    for key, value in record.items():
        if hasattr(value, "item") and not isinstance(value, (str, bytes, list, tuple, dict)):
            try:
                value = value.item()  # numpy scalar
            except (TypeError, ValueError):
                pass
        if isinstance(value, float) and value != value:
            value = None
        elif isinstance(value, str):
            value = _list_or_text(value)
        elif key == "batch_size" and type(value) is float and value.is_integer():
            value = int(value)  # a DataFrame's column of batch sizes with a gap holds floats
        out[str(key)] = value
    return out
