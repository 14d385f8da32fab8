"""The gate's entry, :func:`compare` (the one public compare: ``vitbench.compare``,
``vitbench.gate.compare``): two large results CSV files on columns
(:mod:`vitbench.gate.columnar`), anything else, or a file the columnar gate does not take, by
the record path (:mod:`vitbench.gate.verdicts`). Both give the same verdicts."""

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
    """Compare ``current`` results against ``baseline``: paths to CSV/JSON results files or
    sweep store directories, lists of records, or DataFrames. Two large CSV files are decided on
    columns (:mod:`vitbench.gate.columnar`), anything else on records (the same verdicts).

    ``rules``: expressions such as ``"throughput:-5%"`` or :class:`Rule` objects; ``None``
    means :data:`~vitbench.gate.rules.DEFAULT_RULES`. The result fails (``exit_code`` 1) on a
    regression, on baseline configurations absent from ``current`` (unless
    ``allow_missing_rows``) and on a ruled metric only one side has (unless
    ``allow_missing_metrics``); each row's verdict is a :class:`~vitbench.gate.result.Verdict`.
    Raises :class:`InputFileError` (missing file, wrong schema, no common configuration),
    :class:`RuleError` (bad rule, or an explicit rule whose metric neither side has) or
    :class:`SpecError` (bad ``alpha``).
    """
    from vitbench.gate.columnar import compare_files

    verdicts._check_alpha(alpha)
    columnar = compare_files(baseline, current, rules, alpha=alpha, allow_missing_rows=allow_missing_rows,
                             allow_missing_metrics=allow_missing_metrics, min_bytes=COLUMNAR_MIN_BYTES)
    if columnar is not None:
        return columnar
    return verdicts._compare_records(baseline, current, rules, alpha=alpha, allow_missing_rows=allow_missing_rows,
                                     allow_missing_metrics=allow_missing_metrics)
