"""A disk cache of traced steps, so that a configuration predicted before costs no new trace.

A trace (:func:`vitbench.timemodel.ops.trace_target_ops`) depends only on the model, its
overrides and input, the batch, mode, precision, optimizer, the device type it was traced for,
the deployed form, and the torch and timm / transformers versions that built it; the key is a
SHA-256 of exactly those. Pricing it for a device is then microseconds per operator.

Only models named by a reference that always builds the same module are cached (presets and
``torchvision:``, ``timm:``, ``hf:`` references); ``py:`` factories and live modules can
change between runs and are traced every time. A cache entry that cannot be read (damaged,
truncated, another format, not a regular file) is ignored and traced again; one that cannot be
written is skipped: the cache never costs a prediction.

Files: ``<cache>/traces/<key>.json.gz`` (:func:`trace_dir`; ``$VITBENCH_TRACE_DIR`` moves
them), a few KB each.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import zlib
from pathlib import Path
from typing import Any

from vitbench.timemodel.ops import Op

#: bumped whenever the traced operators or their fields change meaning
FORMAT = 2
#: a cache entry larger than this is not read (a trace of 10^5 operators is about 2 MB)
MAX_ENTRY_BYTES = 64 * 1024 * 1024
CACHED_SOURCES = ("preset", "spec", "torchvision", "timm", "hf")


def trace_dir() -> Path:
    """``$VITBENCH_TRACE_DIR``, else ``$VITBENCH_CACHE_DIR/traces`` (or
    ``$XDG_CACHE_HOME/vitbench/traces``, ``~/.cache/vitbench/traces``)."""
    if os.environ.get("VITBENCH_TRACE_DIR"):
        return Path(os.environ["VITBENCH_TRACE_DIR"])
    root = os.environ.get("VITBENCH_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "vitbench")
    return Path(root) / "traces"


def _library_versions() -> dict[str, str]:
    from importlib import metadata

    from vitbench import __version__

    out = {"vitbench": __version__}
    for name in ("torch", "timm", "transformers", "torchvision"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = ""
    return out


_VERSIONS: dict[str, str] = {}


def cache_key(target: Any, batch: int, mode: str, precision: str, optimizer: str, device_type: str,
              reparam: bool) -> str | None:
    """The entry's name for a configuration, or None when the model is not cacheable."""
    if target.module is not None or target.source not in CACHED_SOURCES:
        return None
    if not _VERSIONS:
        _VERSIONS.update(_library_versions())
    identity = {
        "format": FORMAT, "model": target.name, "overrides": target.overrides_text if target.overrides else "",
        "spec": repr(target.spec) if target.spec is not None else "", "input": list(target.input_size), "batch": batch,
        "mode": mode, "precision": precision, "optimizer": optimizer if mode == "train" else "",
        "device_type": device_type, "reparam": bool(reparam), "versions": _VERSIONS,
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:40]


def read(key: str) -> list[Op] | None:
    """The cached operators for ``key``, or None (absent, or not a readable entry: not a
    regular file, over :data:`MAX_ENTRY_BYTES` packed or 8 times that unpacked, damaged)."""
    from vitbench.errors import InputFileError
    from vitbench.input_files import loads_bounded, read_input_bytes

    path = trace_dir() / f"{key}.json.gz"
    if path.is_symlink():
        return None
    try:  # the one gate: a FIFO or device refused without blocking, the size capped
        packed = read_input_bytes(path, "trace", max_bytes=MAX_ENTRY_BYTES)
        unpacker = zlib.decompressobj(wbits=31)  # gzip, unpacked to a bound (a small bomb stays small)
        raw = unpacker.decompress(packed, 8 * MAX_ENTRY_BYTES + 1)
        if len(raw) > 8 * MAX_ENTRY_BYTES or not unpacker.eof:
            return None
        data = loads_bounded(raw)
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != key:
            return None
        return [Op.from_tuple(values) for values in data["ops"]]
    except (InputFileError, zlib.error, ValueError, TypeError, KeyError, RecursionError):
        return None


def write(key: str, ops: list[Op]) -> bool:
    """Store ``ops`` under ``key``; False (and nothing raised) when the cache cannot be written."""
    from vitbench.store.atomic import write_atomic

    directory = trace_dir()
    payload = gzip.compress(json.dumps({"format": FORMAT, "key": key, "ops": [op.as_tuple() for op in ops]},
                                       separators=(",", ":")).encode(), compresslevel=6)
    with contextlib.suppress(OSError):
        directory.mkdir(parents=True, exist_ok=True)
        if directory.is_symlink() or not directory.is_dir():
            return False
        write_atomic(directory / f"{key}.json.gz", payload)
        return True
    return False


def cached_trace(target: Any, batch: int, mode: str, precision: str, optimizer: str, device_type: str = "cpu",
                 reparam: bool = False, use_cache: bool = True) -> list[Op]:
    """The operators of one step (:func:`~vitbench.timemodel.ops.trace_target_ops`), from the
    disk cache when this configuration was traced before."""
    from vitbench.timemodel.ops import trace_target_ops

    key = cache_key(target, batch, mode, precision, optimizer, device_type, reparam) if use_cache else None
    if key is not None:
        found = read(key)
        if found is not None:
            return found
    ops = trace_target_ops(target, batch, mode, precision, optimizer, device_type, reparam)
    if key is not None:
        write(key, ops)
    return ops


def cached_traces(target: Any, batches: tuple[int, ...], mode: str, precision: str, optimizer: str,
                  device_type: str = "cpu", reparam: bool = False) -> dict[int, list[Op]]:
    """:func:`cached_trace` at several batches, building the module once for those not cached."""
    from vitbench.timemodel.ops import trace_target_batches

    keys = {batch: cache_key(target, batch, mode, precision, optimizer, device_type, reparam) for batch in batches}
    found = {batch: read(key) for batch, key in keys.items() if key is not None}
    out = {batch: ops for batch, ops in found.items() if ops is not None}
    missing = tuple(batch for batch in batches if batch not in out)
    if missing:
        traced = trace_target_batches(target, missing, mode, precision, optimizer, device_type, reparam)
        for batch, ops in traced.items():
            if keys[batch] is not None:
                write(keys[batch], ops)
        out.update(traced)
    return out


__all__ = ["FORMAT", "cache_key", "cached_trace", "cached_traces", "read", "trace_dir", "write"]
