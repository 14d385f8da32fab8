"""The one gate every file vitbench reads passes through (issue 33: "one reader").

Before a byte is read, the path is checked to be a regular file (a symlink to one is followed):
a FIFO, a character or block device (``/dev/zero``, ``/dev/urandom``), a socket or a folder is
refused without opening it for reading, so nothing blocks and nothing reads forever; the file is
then opened non-blocking and checked again on the opened descriptor (a file swapped for a FIFO
in between cannot block either). At most ``max_bytes`` are read: a larger file is refused with
its size and the cap. Text must be UTF-8 and not empty; JSON is parsed with bounded numbers
(integers of at most ``max_int_digits`` digits, floats that stay finite, NaN and Infinity only
where allowed) and bounded nesting. Each violation is one line and ``error`` (an
:class:`~vitbench.errors.InputFileError` unless the caller names another), exit code 2.

The caps per kind of file are named below: results files may be large; calibrations, store
definitions, sweep files and cache entries are small.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO

from vitbench.errors import InputFileError

MIB = 1 << 20
#: a results CSV or JSON file (a million rows of a sweep are a few hundred MB)
MAX_RESULTS_BYTES = 1024 * MIB
#: a CPU or GPU calibration file (the cache's or ``--calibration FILE``: tens of kB)
MAX_CALIBRATION_BYTES = 4 * MIB
#: a store's ``sweep.json`` (its definition: the grid's axes, not its configurations)
MAX_DEFINITION_BYTES = 16 * MIB
#: a sweep file (YAML or TOML: a grid's axes, a few kB)
MAX_SWEEP_FILE_BYTES = 1 * MIB
#: a claims catalogue (``audit --catalogue FILE``; the packaged one is about 55 kB)
MAX_CATALOGUE_BYTES = 16 * MIB
#: one line of a store's ``rows.jsonl`` (one row: its raw samples included)
MAX_ROW_LINE_BYTES = 16 * MIB
#: what a regular file whose size reads 0 may yield (a /proc or /sys pseudo-file yields more)
MAX_SIZELESS_BYTES = 1 * MIB
#: the verdict on a read that would block (a regular-type procfs file such as ``/proc/kmsg``)
WOULD_BLOCK = "cannot be read (it would block: not a file's contents)"
#: digits of an integer in a JSON document (Python refuses over 4,300 with a ValueError)
MAX_INT_DIGITS = 1000
#: nesting of a JSON document (arrays and objects)
MAX_JSON_DEPTH = 64

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def kind_of(mode: int) -> str:
    """What a file of ``st_mode`` is, in words ("a FIFO", "a folder", ...)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def check_regular(path: str | os.PathLike, where: str, error: type[Exception] = InputFileError) -> os.stat_result:
    """The ``os.stat`` of ``path`` (symlinks followed) when it is a regular file; else one-line
    ``error``: missing, not searchable, a folder, a FIFO, a device, a socket. Opens nothing."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise error(f"{where}: no such file") from None
    except OSError as exc:
        raise error(f"{where}: cannot be read ({_reason(exc)})") from None
    except ValueError:  # a NUL byte in the name
        raise error(f"{where}: not a valid file name") from None
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{where}: not a regular file ({kind_of(info.st_mode)}); give a file")
    return info


@contextmanager
def open_input(path: str | os.PathLike, where: str, error: type[Exception] = InputFileError) -> Iterator[BinaryIO]:
    """``path`` opened for reading in binary, once :func:`check_regular` passed; opened with
    ``O_NONBLOCK`` and checked again on the descriptor, so a FIFO put there in between is
    refused instead of waited on."""
    check_regular(path, where, error)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise error(f"{where}: no such file") from None
    except OSError as exc:
        raise error(f"{where}: cannot be read ({_reason(exc)})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{where}: not a regular file ({kind_of(info.st_mode)}); give a file")
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle


def too_large(where: str, size: int, max_bytes: int) -> str:
    return f"{where}: {size:,} bytes, over the {max_bytes:,}-byte limit for this kind of file"


def read_handle(handle: BinaryIO, limit: int, where: str, error: type[Exception] = InputFileError) -> bytes:
    """``handle.read(limit)`` on a descriptor opened by :func:`open_input` (non-blocking); a read
    that would block (None, or BlockingIOError: a procfs file such as ``/proc/kmsg``) or fails
    is one-line ``error``."""
    try:
        data = handle.read(limit)
    except BlockingIOError:
        data = None
    except OSError as exc:
        raise error(f"{where}: cannot be read ({_reason(exc)})") from None
    if data is None:
        raise error(f"{where}: {WOULD_BLOCK}")
    return data


def read_input_bytes(path: str | os.PathLike, where: str, *, max_bytes: int,
                     error: type[Exception] = InputFileError) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` bytes, not empty (whitespace alone
    is empty); one-line ``error`` otherwise (see :func:`check_regular`)."""
    with open_input(path, where, error) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_bytes:
            raise error(too_large(where, size, max_bytes))
        data = read_handle(handle, (max_bytes if size else min(max_bytes, MAX_SIZELESS_BYTES)) + 1, where, error)
    if not size and len(data) > MAX_SIZELESS_BYTES:  # a /proc or /sys pseudo-file (size 0, yet bytes)
        raise error(f"{where}: cannot be read (it reports no size yet yields over {MAX_SIZELESS_BYTES:,} bytes: "
                    "not a file's contents)")
    if len(data) > max_bytes:  # it grew while read
        raise error(f"{where}: over the {max_bytes:,}-byte limit for this kind of file (it grew while read)")
    if not data or data.isspace():  # (no stripped copy of a large file)
        raise error(f"{where}: the file is empty")
    return data


def read_input_text(path: str | os.PathLike, where: str, *, max_bytes: int,
                    error: type[Exception] = InputFileError) -> str:
    """The UTF-8 text of a file (a byte-order mark dropped), gated as :func:`read_input_bytes`."""
    data = read_input_bytes(path, where, max_bytes=max_bytes, error=error)
    try:  # utf-8-sig: a byte-order mark (Excel's CSVs) is not part of the first column's name
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{where}: cannot be read (not UTF-8 text: byte {exc.start:,})") from None
    if not text or text.isspace():
        raise error(f"{where}: the file is empty")
    return text


class _Refused(Exception):
    """Raised inside the JSON parser's hooks or the check after it; turned into the caller's
    error with its place."""


def _int(text: str, limit: int) -> int:
    if len(text) - (text[:1] == "-") > limit:
        raise _Refused(f"an integer of {len(text.lstrip('-')):,} digits, over {limit:,}")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"the number {text[:40]} is too large for a float")
    return value


def _constant(name: str) -> float:
    raise _Refused(f"{name} is not a number here")


def _check(data: Any, max_depth: int | None, max_int_digits: int, allow_nan: bool, allow_inf: bool) -> None:
    """_Refused for the first value out of bounds, named by its place (``records[3].macs``): an
    integer of more than ``max_int_digits`` digits, NaN or an infinity where not allowed,
    nesting deeper than ``max_depth``. The fast parser ran first; this walk (no recursion) is
    the check."""
    bits = int(max_int_digits * 3.3219280948873626) - 4  # below this many bits, fewer digits
    stack: list[tuple[Any, int, str]] = [(data, 1, "")]
    while stack:
        value, depth, place = stack.pop()
        if max_depth is not None and depth > max_depth:
            raise _Refused(f"JSON nested deeper than {max_depth} levels")
        for key, item in value.items() if isinstance(value, dict) else enumerate(value):
            kind = type(item)
            if kind is dict or kind is list:
                stack.append((item, depth + 1, _place(place, key, value)))
            elif (kind is float and not math.isfinite(item)) or (kind is int and item.bit_length() > bits):
                reason = _bad_number(item, max_int_digits, allow_nan, allow_inf)
                if reason:
                    where = _place(place, key, value)
                    raise _Refused(f"{where}: {reason}" if where else reason)


def _place(place: str, key: Any, container: Any) -> str:
    if isinstance(container, dict):
        return f"{place}.{key}" if place else str(key)
    return f"{place}[{key}]"


def _bad_number(item: float | int, max_int_digits: int, allow_nan: bool, allow_inf: bool) -> str | None:
    if isinstance(item, int):
        digits = len(str(abs(item)))
        return f"an integer of {digits:,} digits, over {max_int_digits:,}" if digits > max_int_digits else None
    if item != item:
        return None if allow_nan else "NaN is not a number here"
    return None if allow_inf else "Infinity (or a number too large for a float) is not a number here"


def _parse(text: str | bytes, max_depth: int | None, max_int_digits: int, allow_nan: bool, allow_inf: bool) -> Any:
    """The document, or _Refused / ValueError / RecursionError. The fast parser first, then the
    walk; on the parser's own ValueError (an integer past Python's 4,300 digits), again with
    the hooks, which say what is wrong."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError):
            raise
        json.loads(text, parse_int=lambda s: _int(s, max_int_digits), parse_float=_float,
                   parse_constant=lambda name: math.nan if name == "NaN" and allow_nan else _constant(name))
        raise
    _check(data if isinstance(data, (dict, list)) else {"": data}, max_depth, max_int_digits, allow_nan, allow_inf)
    return data


def load_json(text: str | bytes, where: str, *, max_depth: int | None = MAX_JSON_DEPTH, allow_nonfinite: bool = False,
              allow_nan: bool = False, max_int_digits: int = MAX_INT_DIGITS, error: type[Exception] = InputFileError) -> Any:
    """A JSON document with bounded numbers and nesting; one-line ``error`` naming ``where`` and
    what is wrong: not JSON, an integer of more than ``max_int_digits`` digits, NaN, Infinity or
    a float that overflows (unless ``allow_nonfinite``; ``allow_nan``: NaN, a missing value, but
    no infinity), nested deeper than ``max_depth`` (None: as deep as the parser goes)."""
    try:
        return _parse(text, max_depth, max_int_digits, allow_nan or allow_nonfinite, allow_nonfinite)
    except _Refused as exc:
        raise error(f"{where}: refused ({exc})") from None
    except RecursionError:
        raise error(f"{where}: refused (JSON nested too deeply)") from None
    except UnicodeDecodeError:
        raise error(f"{where}: cannot be read (not UTF-8 text)") from None
    except ValueError as exc:
        detail = f"{exc.msg} at line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else str(exc).split("\n")[0]
        raise error(f"{where}: not valid JSON ({detail})") from None


def loads_bounded(text: str | bytes, *, max_int_digits: int = MAX_INT_DIGITS) -> Any:
    """``json.loads`` with bounded numbers and no NaN or Infinity, for callers that turn any
    ``ValueError`` into their own verdict (a store's damaged line): raises ValueError (or
    RecursionError) for what :func:`load_json` refuses."""
    try:
        return _parse(text, None, max_int_digits, False, False)
    except _Refused as exc:
        raise ValueError(str(exc)) from None


__all__ = [
    "MAX_CALIBRATION_BYTES", "MAX_CATALOGUE_BYTES", "MAX_DEFINITION_BYTES", "MAX_INT_DIGITS", "MAX_JSON_DEPTH", "MAX_RESULTS_BYTES",
    "MAX_ROW_LINE_BYTES", "MAX_SIZELESS_BYTES", "MAX_SWEEP_FILE_BYTES", "WOULD_BLOCK", "check_regular", "kind_of", "load_json", "loads_bounded",
    "open_input", "read_handle", "read_input_bytes", "read_input_text", "too_large",
]
