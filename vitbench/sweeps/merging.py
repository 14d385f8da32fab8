"""Merging stores (sweep shards, per-job stores of a job array, results CSVs) into one store.

The union of the sources' rows, de-duplicated by configuration id, in grid order whatever the
order of the sources. Sources of different sweep definitions (different fingerprints) are
refused in one line (``allow_foreign`` overrides), and so is a source that records no definition
(a hand-made or an old CSV) beside sources that do; a ``results.csv`` beside its store's
``sweep.json`` is that store's. Configurations of the grid that no source
holds are reported (``shards missing from the merge: 2/3``), whatever the shards' sizes.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vitbench.reading import read_results
from vitbench.row_status import RowStatus
from vitbench.store.export import export_store
from vitbench.store.layout import CSV_NAME, DEFINITION_NAME, ROWS_NAME, StoreError
from vitbench.store.reader import grid_order, read_definition
from vitbench.store.writer import Store, now_iso

#: Columns ignored when deciding whether two rows of the same id conflict.
VOLATILE_COLUMNS = ("completed_at", "elapsed_s", "index", "study", "warnings")
VOLATILE_PREFIXES = ("env_", "machine_")


@dataclass
class MergeResult:
    out: Path
    rows: int
    sources: list[str]
    warnings: list[str] = field(default_factory=list)
    missing: int = 0  # configurations of the grid that no source holds (0 when unknown)


def read_source(source: str | os.PathLike) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows and metadata of a store directory or a results CSV (through the one reader)."""
    path = Path(source)
    if not (path.is_file() or (path / ROWS_NAME).exists() or (path / CSV_NAME).exists()):
        raise StoreError(f"source={str(source)!r}: no results store there (no {ROWS_NAME}, no results.csv)")

    records, info = read_results(path, role="source")
    info = dict(info or {})
    if path.is_file() and not info.get("fingerprint") and (path.parent / DEFINITION_NAME).is_file():
        # a store's own export (results.csv beside its sweep.json): the store says which sweep it is
        info = {**read_definition(path.parent), **info}
    return list(records), info


def _comparable(row: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v for k, v in row.items()
        if k not in VOLATILE_COLUMNS and not k.startswith(VOLATILE_PREFIXES) and v not in ("", None)
    }


def check_definitions(infos: Sequence[tuple[str, dict[str, Any]]], allow_foreign: bool) -> tuple[str | None, list[str]]:
    """The sources' common fingerprint; a one-line error when two differ (unless allowed)."""
    warnings = []
    first: tuple[str, str] | None = None
    unchecked = [source for source, info in infos if not info.get("fingerprint")]
    checked = next((source for source, info in infos if info.get("fingerprint")), None)
    if unchecked and checked is not None and not allow_foreign:
        raise StoreError(
            f"merge: source={unchecked[0]!r} records no sweep definition, so nothing shows it belongs to the sweep of "
            f"source={checked!r}; merge its store folder instead, or pass --allow-foreign to merge it anyway"
        )
    for source, info in infos:
        fingerprint = info.get("fingerprint")
        if not fingerprint:
            warnings.append(f"source={source!r}: records no sweep definition; cannot check that it belongs to this sweep")
            continue
        if first is None:
            first = (source, fingerprint)
        elif fingerprint != first[1]:
            if not allow_foreign:
                name = (info.get("sweep") or {}).get("name", "?")
                raise StoreError(
                    f"merge: source={source!r} is another sweep definition ({name}, fingerprint {fingerprint}) than "
                    f"source={first[0]!r} (fingerprint {first[1]}); pass --allow-foreign to merge them anyway"
                )
            warnings.append(f"source={source!r}: another sweep definition (fingerprint {fingerprint}), merged as asked")
    return (first[1] if first else None), warnings


def coverage(rows: Sequence[dict[str, Any]], infos: Sequence[tuple[str, dict[str, Any]]]) -> tuple[int, list[str]]:
    """(configurations missing, warnings) from the grid size the sources record."""
    metas = [info.get("sweep") or {} for _, info in infos]
    sizes = {m.get("grid_size") for m in metas if m.get("grid_size")}
    if not sizes:
        return 0, []
    if len(sizes) > 1:
        return 0, [f"the sources record different grid sizes ({', '.join(map(str, sorted(sizes)))}): cannot check that the merge is complete"]
    size = int(next(iter(sizes)))
    present = {r["index"] for r in rows if isinstance(r.get("index"), int) and 0 <= r["index"] < size}
    missing = size - len(present)
    if not missing:
        return 0, []
    counts = {m.get("shard_count") for m in metas}
    if len(counts) == 1 and None not in counts:
        count = int(next(iter(counts)))
        held = {j % count for j in present}  # the shards (0-based) that hold a row: one pass, not one per shard
        # the first 20 absent shards lie within the first len(held) + 20: never a loop over a
        # claimed shard count or grid size (a sweep.json may claim 10^12)
        absent = list(itertools.islice((i for i in range(1, count + 1) if i - 1 not in held), 20))
        if absent:
            more = count - len(held) - len(absent)
            shards = ", ".join(f"{i}/{count}" for i in absent) + (f" and {more:,} more" if more > 0 else "")
            return missing, [f"shards missing from the merge: {shards} ({missing} of {size} configurations absent)"]
    return missing, [f"{missing} of {size} configurations of the grid are in none of the sources"]


def _prefer(kept: dict[str, Any], row: dict[str, Any]) -> bool:
    """Whether ``row`` replaces ``kept`` (the same id from an earlier source): an ``ok`` row
    wins over one that failed; otherwise the first stays."""
    return kept.get("status") != RowStatus.OK and row.get("status") == RowStatus.OK


def _union(
    sources: Sequence[str | os.PathLike], out_path: Path,
) -> tuple[dict[str, dict[str, Any]], list[tuple[str, dict[str, Any]]], list[str]]:
    """The rows of every source by id (one per id: :func:`_keep`), each source's metadata, and
    the warnings (damaged records, conflicting rows)."""
    kept: dict[str, dict[str, Any]] = {}
    origin: dict[str, str] = {}
    infos: list[tuple[str, dict[str, Any]]] = []
    warnings: list[str] = []
    for source in sources:
        if Path(source).resolve() == out_path:
            raise StoreError(f"source={str(source)!r}: is the --out directory itself")
        rows, info = read_source(source)
        infos.append((str(source), info))
        warnings.extend(info.get("problems") or [])
        for row in rows:
            if "id" not in row:
                raise StoreError(f"source={str(source)!r}: a row has no 'id' column (not a vitbench sweep store)")
            _keep(kept, origin, row, str(source), warnings)
    return kept, infos, warnings


def _keep(kept: dict[str, dict[str, Any]], origin: dict[str, str], row: dict[str, Any], source: str, warnings: list[str]) -> None:
    """Keep ``row`` unless a row of its id is kept already; two different rows of one id: the
    one :func:`_prefer` picks stays, and a warning says which."""
    key = str(row["id"])
    if key not in kept:
        kept[key], origin[key] = row, source
        return
    if _comparable(kept[key]) == _comparable(row):
        return
    replace = _prefer(kept[key], row)
    warnings.append(
        f"id {key} ({row.get('model', '?')}): different rows in {origin[key]} and {source}; "
        f"kept the one from {source if replace else origin[key]}"
    )
    if replace:
        kept[key], origin[key] = row, source


def _merged_definition(
    sources: Sequence[str | os.PathLike], out: str | os.PathLike, infos: list[tuple[str, dict[str, Any]]],
    fingerprint: str | None,
) -> dict[str, Any]:
    """What the merged store's sweep.json records: the common fingerprint, the sources' names,
    grid size and definition, and where each source ran."""
    metas = [info.get("sweep") or {} for _, info in infos]
    names = list(dict.fromkeys(m["name"] for m in metas if m.get("name")))
    environments = [{"source": s, **(info.get("environment") or {})} for s, info in infos if info.get("environment")]
    return {
        "fingerprint": fingerprint, "name": "+".join(names) if names else Path(out).name,
        "merged_from": [str(s) for s in sources], "merged_at": now_iso(),
        "grid_size": next((m["grid_size"] for m in metas if m.get("grid_size")), None),
        "definition": next((m["definition"] for m in metas if m.get("definition")), None),
        "environment": {"sources": environments} if environments else {},
    }


def merge(
    sources: Sequence[str | os.PathLike], out: str | os.PathLike, *, force: bool = False,
    allow_foreign: bool = False, export: Sequence[str] = ("csv",),
) -> MergeResult:
    """Union of stores (directories or results CSVs), de-duplicated by row id, into ``out``.

    When two sources hold different rows with the same id, the first with status ``ok`` (else
    the first in argument order) is kept and a warning says so."""
    if not sources:
        raise StoreError("merge: give at least one results store")
    kept, infos, warnings = _union(sources, Path(out).resolve())
    fingerprint, definition_warnings = check_definitions(infos, allow_foreign)
    rows_sorted = sorted(kept.values(), key=grid_order)
    missing, coverage_warnings = coverage(rows_sorted, infos)
    warnings = definition_warnings + warnings + coverage_warnings
    meta = _merged_definition(sources, out, infos, fingerprint)
    with Store.open(out, sweep=meta, force=force) as store:
        for start in range(0, len(rows_sorted), 10_000):
            store.add_many(rows_sorted[start:start + 10_000])

    export_store(out, out, export)
    return MergeResult(out=Path(out), rows=len(rows_sorted), sources=[str(s) for s in sources], warnings=warnings, missing=missing)


__all__ = ["MergeResult", "check_definitions", "coverage", "merge", "read_source"]
