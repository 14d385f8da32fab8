"""A disk cache of traced steps, so that a configuration predicted before costs no new trace.

A trace (:func:`vitbench.timemodel.ops.trace_target_ops`) depends only on the model, its
overrides and input, the batch, mode, precision, optimizer, the device type it was traced for,
the deployed form, and the torch and timm / transformers versions that built it; the key is a
SHA-256 of exactly those. Pricing it for a device is then microseconds per operator.

Only models named by a reference that always builds the same module are cached (presets and
``torchvision:``, ``timm:``, ``hf:`` references); ``py:`` factories and live modules can
change between runs and are traced every time. One that cannot be written is skipped: the
cache never costs a prediction.

An entry is read like any input (issue 45: caches validated like inputs), never trusted: through
the one gate (:func:`~vitbench.input_files.read_input_bytes`: a regular file, its size capped),
unpacked to a bound, parsed by :func:`~vitbench.input_files.load_json` with bounded integers
(19 digits: every count below 2^62) and nesting, then checked field by field: exactly the keys
``format``, ``key``, ``ops``, ``sha256``; each operator eight fields of the right type (text is
not a number, a bool is not a count), counts from 0 to :data:`MAX_COUNT`, a shape of 0, 3 or 4
sizes, a known component and torch dtype; and ``sha256``, the SHA-256 of the canonical payload
(:func:`checksum`), must match. An entry that fails any check (damaged, truncated, tampered,
another format, without a checksum) is stale: it is traced again with a one-line warning on
a warning in the rows and written back, never priced.

Files: ``<cache>/traces/<key>.json.gz`` (:func:`trace_dir`; ``$VITBENCH_TRACE_DIR`` moves
them), a few KB each.
"""

from __future__ import annotations

import contextlib
import contextvars
import gzip
import hashlib
import json
import os
import re
import zlib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

from vitbench.errors import InputFileError, shown
from vitbench.escape import terminal_text
from vitbench.input_files import load_json, read_input_bytes
from vitbench.row_warnings import warning
from vitbench.store import atomic
from vitbench.timemodel import ops as step_ops
from vitbench.timemodel.ops import COMPONENTS, Op
from vitbench.version import __version__

#: bumped whenever the traced operators or their fields change meaning (3: the checksum)
FORMAT = 6  # 4: scaled_dot_product_attention on other than 4-D tensors is the math path (attention_paths.math_attention);
#            5: a grouped convolution's backward counted with its groups (conv_kernels.conv_backward_macs),
#            a GPU's convolution kernels named apart (conv_depthwise, conv_nchw), a GPU trace's grouped
#            convolutions carry their groups as a fourth shape entry;
#            6: the CPU flash attention's backward (a training step's attention) counted on torch < 2.15 too;
#               a GPU's training step traced on fake CUDA tensors without a GPU too (CUDA's autocast policy)
#: a cache entry larger than this is not read (a trace of 10^5 operators is about 2 MB)
MAX_ENTRY_BYTES = 64 * 1024 * 1024
CACHED_SOURCES = ("preset", "spec", "torchvision", "timm", "hf")
#: the largest count an operator may carry (MACs, bytes, a size): the tracing limit is 2^62 MACs a step
MAX_COUNT = 2**62
#: an operator's or kernel's name: an aten name or a calibration entry's
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,127}")
_ENTRY_KEYS = frozenset({"format", "key", "ops", "sha256"})


def trace_dir() -> Path:
    """``$VITBENCH_TRACE_DIR``, else ``$VITBENCH_CACHE_DIR/traces`` (or
    ``$XDG_CACHE_HOME/vitbench/traces``, ``~/.cache/vitbench/traces``)."""
    if os.environ.get("VITBENCH_TRACE_DIR"):
        return Path(os.environ["VITBENCH_TRACE_DIR"])
    root = os.environ.get("VITBENCH_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "vitbench")
    return Path(root) / "traces"


def _library_versions() -> dict[str, str]:
    out = {"vitbench": __version__}
    for name in ("torch", "timm", "transformers", "torchvision"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = ""
    return out


_VERSIONS: dict[str, str] = {}


def library_versions() -> dict[str, str]:
    """vitbench's version and the installed torch, timm, transformers and torchvision versions
    ('' when absent), read once per process without importing any of them."""
    if not _VERSIONS:
        _VERSIONS.update(_library_versions())
    return _VERSIONS


def cache_key(target: Any, batch: int, mode: str, precision: str, optimizer: str, device_type: str,
              reparam: bool, channels_last: bool = False) -> str | None:
    """The entry's name for a configuration, or None when the model is not cacheable."""
    if target.module is not None or target.source not in CACHED_SOURCES:
        return None
    identity = {
        "format": FORMAT, "model": target.name, "overrides": target.overrides_text if target.overrides else "",
        "spec": repr(target.spec) if target.spec is not None else "", "input": list(target.input_size), "batch": batch,
        "mode": mode, "precision": precision, "optimizer": optimizer if mode == "train" else "",
        "device_type": device_type, "reparam": bool(reparam), "versions": library_versions(),
        **({"channels_last": True} if channels_last else {}),
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:40]


class StaleEntry(ValueError):
    """A cache entry that is not a valid trace of its key; the message says why (one line)."""


def checksum(key: str, ops: list) -> str:
    """SHA-256 of an entry's canonical payload (its format, key and operators as JSON with
    sorted keys and no spaces): what ``sha256`` in the entry must be."""
    payload = json.dumps({"format": FORMAT, "key": key, "ops": ops}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


def _dtypes() -> frozenset[str]:
    import torch

    return frozenset(str(v).replace("torch.", "") for v in vars(torch).values() if isinstance(v, torch.dtype))


def _count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= MAX_COUNT


def _name(value: Any, seen: set[str]) -> bool:
    """An operator's or kernel's name: text :data:`_NAME` matches (each distinct one matched once)."""
    if type(value) is not str:
        return False
    if value in seen:
        return True
    if _NAME.fullmatch(value):
        seen.add(value)
        return True
    return False


def _valid(values: list, dtypes: frozenset[str], seen: set[str]) -> bool:
    """Are an operator's eight fields each what :func:`_op` asks of it?"""
    name, component, macs, moved, shape, dtype, kernel, aliases = values
    return (_name(name, seen) and component in COMPONENTS and _count(macs) and _count(moved) and type(shape) is list
            and len(shape) in (0, 3, 4) and all(map(_count, shape)) and type(dtype) is str and dtype in dtypes
            and (kernel == "" or _name(kernel, seen)) and type(aliases) is int and aliases in (0, 1))


def _op(values: Any, dtypes: frozenset[str], seen: set[str] | None = None) -> Op:
    """One operator from its eight JSON fields, checked; StaleEntry naming the first that is wrong.
    ``seen``: the names already found valid in this entry (an entry repeats a few dozen names)."""
    if not isinstance(values, list) or len(values) != 8:
        raise StaleEntry("an operator is not a list of 8 fields")
    name, component, macs, moved, shape, dtype, kernel, aliases = values
    if _valid(values, dtypes, set() if seen is None else seen):  # the common case, checked in one pass
        return Op(name, component, macs, moved, tuple(shape), dtype, kernel, aliases == 1)
    checks = (
        ("name", isinstance(name, str) and _NAME.fullmatch(name)), ("component", component in COMPONENTS),
        ("macs", _count(macs)), ("bytes", _count(moved)),
        ("shape", isinstance(shape, list) and len(shape) in (0, 3, 4) and all(_count(d) for d in shape)),
        ("dtype", isinstance(dtype, str) and dtype in dtypes),
        ("kernel", isinstance(kernel, str) and (kernel == "" or _NAME.fullmatch(kernel))),
        ("aliases", type(aliases) is int and aliases in (0, 1)),
    )
    for field, ok in checks:
        if not ok:
            raise StaleEntry(f"an operator's {field}={shown(values[[c[0] for c in checks].index(field)], 40)} is not valid")
    return Op(name, component, macs, moved, tuple(shape), dtype, kernel, bool(aliases))


def _unpacked(path: Path) -> bytes:
    """The entry's JSON text, through the one gate and unpacked to a bound."""
    packed = read_input_bytes(path, "trace", max_bytes=MAX_ENTRY_BYTES)
    unpacker = zlib.decompressobj(wbits=31)  # gzip, unpacked to a bound (a small bomb stays small)
    try:
        raw = unpacker.decompress(packed, 8 * MAX_ENTRY_BYTES + 1)
    except zlib.error:
        raise StaleEntry("not gzip data") from None
    if len(raw) > 8 * MAX_ENTRY_BYTES:
        raise StaleEntry(f"over {8 * MAX_ENTRY_BYTES:,} bytes unpacked")
    if not unpacker.eof:
        raise StaleEntry("truncated")
    return raw


def load_entry(path: Path, key: str) -> list[Op]:
    """The operators of the entry at ``path`` for ``key``; StaleEntry (or InputFileError from the
    gate) saying why it is not one."""
    data = load_json(_unpacked(path), "trace", max_depth=4, max_int_digits=len(str(MAX_COUNT)), error=StaleEntry)
    if not isinstance(data, dict) or set(data) != _ENTRY_KEYS:
        raise StaleEntry(f"not an entry of this format (keys: {', '.join(sorted(_ENTRY_KEYS))})")
    if data["format"] != FORMAT or data["key"] != key:
        raise StaleEntry(f"format or key is not this one's (format {FORMAT})")
    if not isinstance(data["ops"], list):
        raise StaleEntry("ops is not a list")
    if data["sha256"] != checksum(key, data["ops"]):
        raise StaleEntry("its checksum does not match its contents")
    dtypes, seen = _dtypes(), set()
    return [_op(values, dtypes, seen) for values in data["ops"]]


#: the list of the innermost :func:`refusals` block of this thread or task, if any
_COLLECTING: contextvars.ContextVar[list[dict[str, str]] | None] = contextvars.ContextVar("trace_refusals", default=None)


def _warn(path: Path, reason: str) -> None:
    """A refused entry as a warning (no control character, no line break, whatever the path
    holds) for the :func:`refusals` block it was met in: the rows of the prediction that traced
    again carry it. Outside a block no row would, and it is not kept."""
    collecting = _COLLECTING.get()
    if collecting is not None:
        message = terminal_text(f"trace cache entry {path} refused ({reason[:300]})", keep="")
        collecting.append(warning("trace-cache-refused", message, "traced again; nothing to do"))


@contextlib.contextmanager
def refusals() -> Iterator[list[dict[str, str]]]:
    """A list that receives the warnings of the entries refused inside the block, and only those:
    a prediction's rows carry what its own trace met, never what an earlier read in the process
    (another call, another thread) met.

    >>> with refusals() as refused:  # doctest: +SKIP
    ...     ops = cached_trace(...)
    """
    collected: list[dict[str, str]] = []
    token = _COLLECTING.set(collected)
    try:
        yield collected
    finally:
        _COLLECTING.reset(token)


def entry_path(key: str) -> Path:
    """Where the entry ``key`` is kept."""
    return trace_dir() / f"{key}.json.gz"


def stored(key: str) -> bool:
    """Whether an entry ``key`` is there (not read: :func:`read` decides whether it is used)."""
    return os.path.lexists(entry_path(key))


def read(key: str) -> list[Op] | None:
    """The cached operators for ``key``, or None: absent (silently), or not a valid entry
    (:func:`load_entry`: not a regular file, over :data:`MAX_ENTRY_BYTES` packed or 8 times that
    unpacked, damaged, tampered, stale), with a warning (:func:`refusals`); the caller traces again."""
    path = entry_path(key)
    if not stored(key):
        return None
    if path.is_symlink():
        _warn(path, "a symbolic link")
        return None
    try:
        return load_entry(path, key)
    except (InputFileError, StaleEntry) as exc:
        _warn(path, str(exc))
    except (ValueError, RecursionError, MemoryError) as exc:  # anything else the parser may raise
        _warn(path, type(exc).__name__)
    return None


def write(key: str, ops: list[Op]) -> bool:
    """Store ``ops`` under ``key``; False (and nothing raised) when the cache cannot be written."""
    directory = trace_dir()
    fields = [list(op.as_tuple()) for op in ops]
    entry = {"format": FORMAT, "key": key, "ops": fields, "sha256": checksum(key, fields)}
    payload = gzip.compress(json.dumps(entry, separators=(",", ":")).encode(), compresslevel=6)
    return store_entry(directory, entry_path(key), payload)


def store_entry(directory: Path, path: Path, payload: bytes) -> bool:
    """Write ``payload`` atomically to ``path`` in the cache folder ``directory`` (created if
    missing); False, nothing raised, when it cannot be written or the folder is a symlink or
    not a folder."""
    with contextlib.suppress(OSError):
        directory.mkdir(parents=True, exist_ok=True)
        if directory.is_symlink() or not directory.is_dir():
            return False
        atomic.write_atomic(path, payload)
        return True
    return False


def cached_trace(target: Any, batch: int, mode: str, precision: str, optimizer: str, device_type: str = "cpu",
                 reparam: bool = False, use_cache: bool = True, channels_last: bool = False) -> list[Op]:
    """The operators of one step (:func:`~vitbench.timemodel.ops.trace_target_ops`), from the
    disk cache when this configuration was traced before."""
    key = cache_key(target, batch, mode, precision, optimizer, device_type, reparam, channels_last) if use_cache else None
    if key is not None:
        found = read(key)
        if found is not None:
            return found
    ops = step_ops.trace_target_ops(target, batch, mode, precision, optimizer, device_type, reparam, channels_last)
    if key is not None:
        write(key, ops)
    return ops


def cached_traces(target: Any, batches: tuple[int, ...], mode: str, precision: str, optimizer: str,
                  device_type: str = "cpu", reparam: bool = False, channels_last: bool = False) -> dict[int, list[Op]]:
    """:func:`cached_trace` at several batches, building the module once for those not cached."""
    keys = {batch: cache_key(target, batch, mode, precision, optimizer, device_type, reparam, channels_last)
            for batch in batches}
    found = {batch: read(key) for batch, key in keys.items() if key is not None}
    out = {batch: ops for batch, ops in found.items() if ops is not None}
    missing = tuple(batch for batch in batches if batch not in out)
    if missing:
        traced = step_ops.trace_target_batches(target, missing, mode, precision, optimizer, device_type, reparam,
                                               channels_last)
        for batch, ops in traced.items():
            if keys[batch] is not None:
                write(keys[batch], ops)
        out.update(traced)
    return out


__all__ = ["FORMAT", "MAX_COUNT", "StaleEntry", "cache_key", "cached_trace", "cached_traces", "checksum", "entry_path",
           "library_versions", "load_entry", "read", "refusals", "store_entry", "stored", "trace_dir", "write"]
