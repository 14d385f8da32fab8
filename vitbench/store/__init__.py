"""The results store: a directory of append-only, checksummed JSON Lines (one record per
completed configuration) with its definition beside it. The bottom of the pipeline: it imports
only :mod:`vitbench.errors` and :mod:`vitbench.results`; sweeps, merging and the history write
and read through it.

- :mod:`~vitbench.store.atomic`: the one atomic file write (temporary file, fsync, rename,
  folder fsync) every vitbench output goes through, and whole writes
- :mod:`~vitbench.store.format`: the checksummed line format (encode, decode, scan)
- :mod:`~vitbench.store.layout`: file names, schema version, sync policies, errors
- :mod:`~vitbench.store.writer`: :class:`Store`: opening, resuming, appending, group commit
- :mod:`~vitbench.store.reader`: the definition (sweep.json), the last valid record of each id
- :mod:`~vitbench.store.export`: CSV and Parquet exports
- :mod:`~vitbench.store.options`: :class:`StoreOptions`, how a sweep opens and writes its store

Names load lazily (the exports import pandas/pyarrow only when used).
"""

from __future__ import annotations

from vitbench.lazy import lazy_exports

_EXPORTS = {
    "Store": "vitbench.store.writer",
    "StoreError": "vitbench.store.layout",
    "StoreBusyError": "vitbench.store.layout",
    "StoreOptions": "vitbench.store.options",
    "is_store": "vitbench.store.reader",
    "read_store": "vitbench.store.reader",
    "store_info": "vitbench.store.reader",
    "export_store": "vitbench.store.export",
    "write_atomic": "vitbench.store.atomic",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
