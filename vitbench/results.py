"""Result records: flat dicts with stable, unit-explicit column names, and their on-disk form.

Every stage (analytic, counted, measured) produces records; reports, sweeps and compare consume
them. Units are raw: integer counts, seconds, bytes. Formatting belongs to the report layer.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from vitbench.errors import InputFileError

#: Bumped when a column changes meaning; readers refuse files of a newer schema.
SCHEMA_VERSION = 1

#: Columns that identify a configuration (rows of two result sets match on these).
KEY_COLUMNS = ("model", "spec_key", "batch_size", "device", "mode", "precision")


class Records(list):
    """A list of record dicts that converts to a pandas DataFrame."""

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(list(self))

    def to_csv(self, path: str | os.PathLike | None = None) -> str | None:
        return self.to_frame().to_csv(path, index=False)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over ``path``: a reader
    (or a crash) sees the old file or the new one, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_csv(records: Sequence[dict[str, Any]], path: str | os.PathLike) -> None:
    """Atomically write records as CSV (union of columns, first-seen order)."""
    import pandas as pd

    atomic_write_text(path, pd.DataFrame(list(records)).to_csv(index=False))


def read_input_text(path: str | os.PathLike, where: str, error: type[Exception] = InputFileError) -> str:
    """The text of an input file, or one clear ``error`` naming ``where`` (missing, a folder,
    unreadable, not UTF-8, empty)."""
    path = Path(path)
    if not path.exists():
        raise error(f"{where}: no such file")
    if not path.is_file():
        raise error(f"{where}: not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{where}: cannot be read ({exc.__class__.__name__})") from None
    if not text.strip():
        raise error(f"{where}: the file is empty")
    return text


def read_csv(path: str | os.PathLike) -> Records:
    """Read a results CSV back into records; one clear error for a missing or unreadable file."""
    import pandas as pd

    path = Path(path)
    if not path.exists():
        raise InputFileError(f"file={str(path)!r}: no such results file")
    try:
        frame = pd.read_csv(path)
    except Exception as exc:  # pandas raises many types for bad files
        raise InputFileError(f"file={str(path)!r}: not a readable CSV ({exc.__class__.__name__})") from None
    frame = frame.astype(object).where(frame.notna(), None)
    return Records(frame.to_dict(orient="records"))


def write_json(data: Any, path: str | os.PathLike) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def to_json(records: Iterable[dict[str, Any]]) -> str:
    return json.dumps(
        {"schema_version": SCHEMA_VERSION, "records": list(records)}, indent=2, default=str
    )
