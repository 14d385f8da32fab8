"""The store's line format: one JSON object per line with a CRC-32 of its text (encoding,
decoding, scanning a rows file). The file-system primitives it is written with are in
:mod:`vitbench.store.atomic`."""

from __future__ import annotations

import json
import math
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vitbench import input_files
from vitbench.input_files import MAX_SIZELESS_BYTES, WOULD_BLOCK, loads_bounded
from vitbench.store.layout import StoreError

CRC_KEY = "_crc32"
_TAIL = len(f',"{CRC_KEY}":"') + 8 + 2  # ,"_crc32":"xxxxxxxx"}


# --- records -----------------------------------------------------------------------------------
def _clean(value: Any) -> Any:
    """JSON-ready: non-finite floats -> null, tuples/sets -> lists, numpy scalars -> numbers."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, (set, frozenset)):
        return sorted(_clean(v) for v in value)
    if hasattr(value, "item"):  # numpy scalar
        return _clean(value.item())
    return str(value)


def encode_record(row: dict[str, Any]) -> bytes:
    """One line: the row as compact JSON with ``"_crc32"`` (CRC-32 of the rest) appended."""
    body = json.dumps({k: _clean(v) for k, v in row.items() if k != CRC_KEY}, separators=(",", ":"), ensure_ascii=True)
    if body == "{}":
        raise ValueError("a store record needs at least one column")
    crc = zlib.crc32(body.encode("ascii"))
    return f'{body[:-1]},"{CRC_KEY}":"{crc:08x}"}}\n'.encode("ascii")


def decode_record(line: bytes) -> dict[str, Any] | None:
    """The row of one line (without its newline), or None when it is damaged or torn."""
    if len(line) <= _TAIL or not line.endswith(b'"}') or line[-_TAIL:-10] != f',"{CRC_KEY}":"'.encode():
        return None
    body = line[:-_TAIL] + b"}"
    try:
        if zlib.crc32(body) != int(line[-10:-2], 16):
            return None
        row = loads_bounded(body)  # integers of at most 1,000 digits, no NaN or infinity
    except (ValueError, RecursionError):  # RecursionError: a CRC-valid body nested too deeply to parse
        return None
    return row if isinstance(row, dict) else None


def scan(path: Path, decode: Any = None) -> Iterator[tuple[int, int, bytes, dict[str, Any] | None]]:
    """(line number, byte offset, raw line, row or None if damaged) for every line but blank
    ones (an empty line, or only whitespace: nothing was lost there, so it is no damaged
    record); a last line without its newline (a torn write) is yielded as damaged, and so is a
    line over :data:`~vitbench.input_files.MAX_ROW_LINE_BYTES` (its first bytes as the raw line).
    The file passes the one gate first (:func:`~vitbench.input_files.open_input`): a FIFO, a
    device or a folder is refused (StoreError) without blocking and without reading forever."""
    decode = decode or decode_record
    offset = 0
    where = f"file={str(path)!r}"
    with input_files.open_input(path, where, StoreError) as handle:
        sizeless = os.fstat(handle.fileno()).st_size == 0
        number = 0
        while line := _readline(handle, where, sizeless, offset, input_files.MAX_ROW_LINE_BYTES + 1):
            number += 1
            length = len(line)
            if length > input_files.MAX_ROW_LINE_BYTES and not line.endswith(b"\n"):  # overlong: damaged, skipped whole
                _check_sized(where, sizeless, offset + length)  # (no skipping through a pseudo-file's gigabytes)
                length += _skip_line(handle)
                yield number, offset, line, None
            else:
                complete = line.endswith(b"\n")
                body = line[:-1] if complete else line
                if body.strip():
                    yield number, offset, line, decode(body) if complete else None
            offset += length


def _check_sized(where: str, sizeless: bool, offset: int) -> None:
    """StoreError when a file that reported size 0 has yielded over MAX_SIZELESS_BYTES."""
    if sizeless and offset > MAX_SIZELESS_BYTES:
        raise StoreError(f"{where}: cannot be read (it reports no size yet yields over {MAX_SIZELESS_BYTES:,} bytes: "
                         "not a file's contents)")


def _readline(handle: Any, where: str, sizeless: bool, offset: int, limit: int) -> bytes:
    """The next line (at most ``limit`` bytes); at its apparent end, a descriptor
    whose read would block (a procfs file such as ``/proc/kmsg``: the buffered reader says b"")
    is a StoreError, and so is a file that reported size 0 yet yields over
    :data:`~vitbench.input_files.MAX_SIZELESS_BYTES` (``/proc/self/pagemap``: not a file's contents)."""
    if sizeless:
        _check_sized(where, sizeless, offset)
    try:
        line = handle.readline(limit)
        if not line:
            os.read(handle.fileno(), 1)  # at the end of a regular file: b""; a would-block file raises
    except OSError as exc:
        why = WOULD_BLOCK if isinstance(exc, BlockingIOError) else f"cannot be read ({exc.strerror or type(exc).__name__})"
        raise StoreError(f"{where}: {why}") from None
    return line


def _skip_line(handle: Any) -> int:
    """Read on to the end of the line (its newline included); the bytes read."""
    skipped = 0
    while True:
        chunk = handle.readline(1 << 20)
        skipped += len(chunk)
        if not chunk or chunk.endswith(b"\n"):
            return skipped


__all__ = ["CRC_KEY", "decode_record", "encode_record", "scan"]
