"""The gate's entry, :func:`compare`: two large results CSV files on columns
(:mod:`vitbench.gate.columnar`), anything else, or a file the columnar gate does not take, by
the record path (:func:`vitbench.gate.verdicts.compare`). Both give the same verdicts."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from vitbench.gate import verdicts
from vitbench.gate.result import DEFAULT_ALPHA, CompareResult
from vitbench.gate.rules import Rule

#: the smallest CSV file the columnar gate reads (None: :data:`vitbench.csv_columns.COLUMNAR_MIN_BYTES`)
COLUMNAR_MIN_BYTES: int | None = None


def compare(
    baseline: str | os.PathLike | Iterable[Mapping[str, Any]],
    current: str | os.PathLike | Iterable[Mapping[str, Any]],
    rules: Iterable[str | Rule] | None = None,
    *,
    alpha: float = DEFAULT_ALPHA,
    allow_missing_rows: bool = False,
    allow_missing_metrics: bool = False,
) -> CompareResult:
    """Compare ``current`` results against ``baseline``: :func:`vitbench.gate.verdicts.compare`
    (its arguments, result and errors), two large CSV files decided on columns."""
    from vitbench.gate.columnar import compare_files

    verdicts._check_alpha(alpha)
    columnar = compare_files(baseline, current, rules, alpha=alpha, allow_missing_rows=allow_missing_rows,
                             allow_missing_metrics=allow_missing_metrics, min_bytes=COLUMNAR_MIN_BYTES)
    if columnar is not None:
        return columnar
    return verdicts.compare(baseline, current, rules, alpha=alpha, allow_missing_rows=allow_missing_rows,
                            allow_missing_metrics=allow_missing_metrics)
