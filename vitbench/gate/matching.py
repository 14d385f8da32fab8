"""Matching rows of two results files: configuration keys, groups of repeated rows, the values
and per-run timings of a group, and short labels for people.

A measured record may carry ``runs`` (worker processes pooled), ``run_medians_s`` (median step
time of each run), ``run_samples_s`` (each run's raw samples) and ``samples_s`` (all samples
pooled). Rows of one configuration repeated in a file (several invocations) each add their runs.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vitbench.measure.stats import median
from vitbench.row_status import RowStatus

_NUMERIC_TEXT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


def number(value: Any) -> float | int | None:
    """A cell as a number (ints stay ints), or None for text, booleans and missing cells."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return None if isinstance(value, float) and math.isnan(value) else value
    try:  # numpy scalars, Decimal
        result = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(result) else result


def floats(value: Any) -> list[float]:
    """A list cell as finite floats ([] when missing or not a list)."""
    if not isinstance(value, (list, tuple)):
        return []
    values = [number(x) for x in value]
    return [float(x) for x in values if x is not None and math.isfinite(x)]


def key_text(value: Any) -> str:
    """Canonical text of a key or environment value, the same whether it was read from CSV
    (where a writer may have turned 8 into "8.0") or from JSON."""
    if is_missing(value):
        return ""
    if isinstance(value, (list, tuple)):
        return "x".join(key_text(v) for v in value)
    if isinstance(value, str):
        value = value.strip()
        if not _NUMERIC_TEXT.match(value):
            return value
        value = float(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def present_columns(records: Sequence[Mapping[str, Any]]) -> set[str]:
    """Columns with at least one value."""
    return {c for r in records for c, v in r.items() if not is_missing(v)}


def key_columns(baseline: Sequence[Mapping[str, Any]], current: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """``spec_key`` when every row of both files has one (plus ``model`` if a file holds one
    architecture under two names), else model + img_size + patch_size; plus batch_size, device,
    mode and precision where both files record them."""
    both = present_columns(baseline) & present_columns(current)
    run = [c for c in ("batch_size", "device", "mode", "precision") if c in both]
    if all(not is_missing(r.get("spec_key")) for r in [*baseline, *current]):
        identity = ["spec_key"]
        # Two presets with one architecture (vit-s/16, deit-s/16) in one file stay apart.
        for records in (baseline, current):
            names: dict[tuple[str, ...], set[str]] = {}
            for r in records:
                names.setdefault(tuple(key_text(r.get(c)) for c in ["spec_key", *run]), set()).add(str(r.get("model")))
            if any(len(n) > 1 for n in names.values()):
                identity.append("model")
                break
    else:
        identity = ["model"] + [c for c in ("img_size", "patch_size") if c in both]
    return tuple(identity + run)


def run_medians(row: Mapping[str, Any]) -> list[float]:
    """The per-run median step times of one row: ``run_medians_s``, else the medians of
    ``run_samples_s``, else ONE run: the median of ``samples_s``, ``latency_p50_s``, or
    ``batch_size / throughput_img_s``."""
    medians = floats(row.get("run_medians_s"))
    if medians:
        return medians
    per_run = row.get("run_samples_s")
    if isinstance(per_run, (list, tuple)):
        medians = [median(s) for s in (floats(r) for r in per_run) if s]
        if medians:
            return medians
    samples = floats(row.get("samples_s"))
    if samples:
        return [median(samples)]
    latency = number(row.get("latency_p50_s"))
    if latency is not None and latency > 0:
        return [float(latency)]
    rate, batch = number(row.get("throughput_img_s")), number(row.get("batch_size"))
    if rate and batch and rate > 0:
        return [batch / rate]
    return []


def row_samples(row: Mapping[str, Any]) -> list[float]:
    """All raw per-step samples of one row: ``samples_s``, else ``run_samples_s`` flattened."""
    pooled = floats(row.get("samples_s"))
    if pooled:
        return pooled
    per_run = row.get("run_samples_s")
    return [x for r in per_run for x in floats(r)] if isinstance(per_run, (list, tuple)) else []


@dataclass
class Group:
    """Rows of one file that share a configuration key (repeated invocations are pooled)."""

    rows: list[dict[str, Any]] = field(default_factory=list)

    def value(self, metric: str) -> float | int | None:
        """The metric's value; the median over rows when the configuration appears repeatedly."""
        values = [v for v in (number(r.get(metric)) for r in self.rows) if v is not None]
        if not values:
            return None
        return values[0] if len(values) == 1 else median(values)

    def run_medians(self) -> list[float]:
        """Per-run median step times over all rows (each invocation adds its runs)."""
        return [m for r in self.rows for m in run_medians(r) if m > 0]

    def n_samples(self) -> int:
        return sum(len(row_samples(r)) for r in self.rows)

    def failed(self) -> str | None:
        """The status when every row of the configuration failed (oom, error, refused)."""
        statuses = [str(r.get("status")) for r in self.rows if not is_missing(r.get("status"))]
        bad = [s for s in statuses if s != RowStatus.OK]
        return bad[0] if bad and len(bad) == len(statuses) else None

    @property
    def model(self) -> str:
        return str(self.rows[-1].get("model"))


def group(records: Sequence[dict[str, Any]], keys: tuple[str, ...]) -> dict[tuple[str, ...], Group]:
    groups: dict[tuple[str, ...], Group] = {}
    for record in records:
        groups.setdefault(tuple(key_text(record.get(k)) for k in keys), Group()).rows.append(record)
    return groups


def _label(group: Group, keys: tuple[str, ...]) -> str:
    row = group.rows[-1]
    parts = [group.model]
    if not is_missing(row.get("img_size")):
        parts.append(f"{key_text(row.get('img_size'))}px")
    if "batch_size" in keys:
        parts.append(f"b{key_text(row.get('batch_size'))}")
    parts += [key_text(row.get(k)) for k in ("device", "mode", "precision") if k in keys]
    return " ".join(p for p in parts if p)


def labels(groups: Mapping[tuple[str, ...], Group], keys: tuple[str, ...]) -> dict[tuple[str, ...], str]:
    """Short names of configurations (``vit-s/16 224px b8 cpu infer fp32``), made unique with
    a hash of the key where two would read the same."""
    named = {k: _label(g, keys) for k, g in groups.items()}
    seen: dict[str, int] = {}
    for label in named.values():
        seen[label] = seen.get(label, 0) + 1
    return {
        k: (f"{v} #{hashlib.sha1('|'.join(k).encode()).hexdigest()[:6]}" if seen[v] > 1 else v)
        for k, v in named.items()
    }
