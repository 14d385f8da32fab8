"""A disk cache of what a repeated question needs besides its trace, so that asking it again
imports no model library: a reference's resolution (``timm:``, ``torchvision:``, ``hf:``: the
derived spec, input size, overrides), the counted parameters and MACs of a model no formula
covers, a model's traced memory profile (:mod:`vitbench.timemodel.cached_models` says what each
holds). Resolving ``timm:convnext_tiny`` imports timm and, through it, ``torch._dynamo``: seconds
that a cached answer does not spend.

**The key** of an entry is a SHA-256 of its kind, the question's identity (the reference as
written, its overrides, the input size; or a resolved model's identity and the setting), this
cache's :data:`FORMAT`, the versions of vitbench, torch, torchvision, timm and transformers
(:func:`~vitbench.timemodel.trace_cache.library_versions`, as the trace cache's key has them:
read with :mod:`importlib.metadata`, nothing imported), Python's version, and a
digest of the source of vitbench's own modules that make these values (``models/``, ``specs/``,
``counters/``, ``analytic/``): another library version, other overrides or an edited checkout
never reuse an entry.

**An entry is read like any input** (issue 45: caches validated like inputs), never trusted:
through the one gate (:func:`~vitbench.input_files.read_input_bytes`: a regular file, at most
:data:`MAX_ENTRY_BYTES`), parsed by :func:`~vitbench.input_files.load_json` with bounded integers
and nesting, exactly the keys ``format``, ``kind``, ``key``, ``value``, ``sha256``, the format,
kind and key its own, ``sha256`` the SHA-256 of the canonical payload (:func:`checksum`), and the
value checked field by field by its kind's reader (typed fields: text is not a number, a bool is
not a count). An entry that fails any check is ignored with a ``question-cache-refused`` warning
on the rows it would have served, recomputed from the library and written back; one that cannot
be written costs nothing. Entries are written atomically (:func:`~vitbench.store.atomic.write_atomic`).

Files: ``<trace cache>/questions/<key>.json`` (:func:`question_dir`; ``$VITBENCH_TRACE_DIR``
moves them with the traces), a few hundred bytes each.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from vitbench.errors import InputFileError, SpecError
from vitbench.escape import terminal_text
from vitbench.input_files import load_json, read_input_bytes
from vitbench.row_warnings import warning
from vitbench.timemodel.trace_cache import library_versions, store_entry, trace_dir

#: bumped whenever an entry's fields change meaning
FORMAT = 1
#: an entry larger than this is not read (a resolution is about 1 KB, a memory profile a few KB)
MAX_ENTRY_BYTES = 1 << 20
#: the deepest nesting an entry may have (an override's tuple of tuples is 10 deep)
MAX_DEPTH = 12
#: the largest integer an entry may carry (counts and bytes are below 2^62)
MAX_INT_DIGITS = 19
#: vitbench's own packages whose code makes the cached values (their source is part of the key)
SOURCE_PACKAGES = ("models", "specs", "counters", "analytic")
_ENTRY_KEYS = frozenset({"format", "kind", "key", "value", "sha256"})

T = TypeVar("T")


class StaleEntry(ValueError):
    """An entry that is not a valid value of its key; the message says why (one line)."""


def question_dir() -> Path:
    """The trace cache's folder (:func:`~vitbench.timemodel.trace_cache.trace_dir`) / ``questions``."""
    return trace_dir() / "questions"


_CONTEXT: dict[str, Any] = {}


def source_digest() -> str:
    """SHA-256 of the paths and contents of every ``.py`` file under :data:`SOURCE_PACKAGES`."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for package in SOURCE_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            with contextlib.suppress(OSError):
                digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()


def context() -> dict[str, Any]:
    """What every key holds besides its question (once per process)."""
    if not _CONTEXT:
        _CONTEXT.update(format=FORMAT, versions=dict(library_versions()), python=list(sys.version_info[:2]),
                        source=source_digest())
    return _CONTEXT


def tagged(value: Any) -> Any:
    """``value`` as JSON that keeps what JSON loses: a tuple is ``{"tuple": [...]}`` (an override's
    value) and a list ``{"list": [...]}`` (its alternatives); a mapping keeps its keys as text.
    Anything else JSON cannot hold exactly is its ``repr`` under ``{"repr": ...}``."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else {"repr": repr(value)}
    if isinstance(value, tuple):
        return {"tuple": [tagged(v) for v in value]}
    if isinstance(value, list):
        return {"list": [tagged(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": sorted([str(k), tagged(v)] for k, v in value.items())}
    return {"repr": f"{type(value).__module__}.{type(value).__qualname__}:{value!r}"}


def entry_key(kind: str, identity: Any) -> str:
    """The name of the entry of ``kind`` for a question's ``identity`` (made JSON by :func:`tagged`)."""
    text = json.dumps({"kind": kind, "identity": tagged(identity), **context()}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def checksum(kind: str, key: str, value: Any) -> str:
    """SHA-256 of an entry's canonical payload (format, kind, key and value as JSON with sorted
    keys and no spaces): what ``sha256`` in the entry must be."""
    payload = json.dumps({"format": FORMAT, "kind": kind, "key": key, "value": value}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


def load_entry(path: Path, kind: str, key: str) -> Any:
    """The JSON value of the entry at ``path``; StaleEntry (or InputFileError from the gate)
    saying why it is not one of ``kind`` for ``key``."""
    return _entry_value(read_input_bytes(path, "question cache entry", max_bytes=MAX_ENTRY_BYTES), kind, key)


def _entry_value(payload: bytes, kind: str, key: str) -> Any:
    """The value of an entry's bytes, every check of :func:`load_entry` but the file's."""
    data = load_json(payload, "question cache entry", max_depth=MAX_DEPTH, max_int_digits=MAX_INT_DIGITS, error=StaleEntry)
    if not isinstance(data, dict) or set(data) != _ENTRY_KEYS:
        raise StaleEntry(f"not an entry of this format (keys: {', '.join(sorted(_ENTRY_KEYS))})")
    if data["format"] != FORMAT or data["kind"] != kind or data["key"] != key:
        raise StaleEntry(f"format, kind or key is not this one's (format {FORMAT}, kind {kind})")
    if data["sha256"] != checksum(kind, key, data["value"]):
        raise StaleEntry("its checksum does not match its contents")
    return data["value"]


def refused(path: Path, reason: str) -> dict[str, str]:
    """The warning of a refused entry (no control character or line break, whatever the path holds)."""
    message = terminal_text(f"question cache entry {path} refused ({reason[:300]})", keep="")
    return warning("question-cache-refused", message, "recomputed from the library; nothing to do")


def entry_path(key: str) -> Path:
    """Where the entry ``key`` is kept."""
    return question_dir() / f"{key}.json"


def stored(key: str) -> bool:
    """Whether an entry ``key`` is there (not read: :func:`read` decides whether it is used)."""
    return os.path.lexists(entry_path(key))


def read(kind: str, key: str, parse: Callable[[Any], T]) -> tuple[T | None, list[dict[str, str]]]:
    """The value of the entry ``key`` of ``kind``, as ``parse`` (the kind's reader: raises
    StaleEntry for a value that is not one) makes it, and the warnings: (None, []) when it is
    absent, (None, [warning]) when it is refused."""
    path = entry_path(key)
    if not stored(key):
        return None, []
    if path.is_symlink():
        return None, [refused(path, "a symbolic link")]
    try:
        return parse(load_entry(path, kind, key)), []
    except (InputFileError, StaleEntry, SpecError) as exc:
        return None, [refused(path, str(exc))]
    except (ValueError, RecursionError, MemoryError) as exc:  # anything else the parser may raise
        return None, [refused(path, type(exc).__name__)]


def write(kind: str, key: str, value: Any, parse: Callable[[Any], Any]) -> bool:
    """Store ``value`` (JSON) under ``key``, only when it reads back (:func:`read` with the kind's
    ``parse``: an entry that would be refused on every read is never written); False (and
    nothing raised) when it is not written."""
    directory = question_dir()
    entry = {"format": FORMAT, "kind": kind, "key": key, "value": value, "sha256": checksum(kind, key, value)}
    try:
        payload = json.dumps(entry, separators=(",", ":"), allow_nan=False).encode()
        if len(payload) > MAX_ENTRY_BYTES:
            return False
        parse(_entry_value(payload, kind, key))
    except (StaleEntry, SpecError, ValueError, TypeError, RecursionError):
        return False
    return store_entry(directory, entry_path(key), payload)


def forget(key: str) -> None:
    """Remove the entry ``key`` (one found stale once the library was asked)."""
    with contextlib.suppress(OSError):
        entry_path(key).unlink()


__all__ = ["FORMAT", "MAX_ENTRY_BYTES", "StaleEntry", "checksum", "context", "entry_key", "entry_path", "forget",
           "load_entry", "question_dir", "read", "refused", "source_digest", "stored", "tagged", "write"]
