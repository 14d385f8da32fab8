"""The gate on columns: :func:`vitbench.gate.compare` of two large results CSVs (read by
:mod:`vitbench.csv_columns`) without a dict per row or an object per verdict. Two 10^6-row files
compare in seconds and a few hundred MB.

Every configuration whose values are plain (status ok, both values of every metric numbers a
measurement can be, per-run medians positive and finite) is decided on arrays, by the rules of
:mod:`vitbench.gate.verdicts` written for arrays; every other configuration (a failed status, a
missing or impossible value, no per-run list) is decided by :mod:`vitbench.gate.verdicts` itself,
on its two records. So is every configuration whose verdict a rounding could decide: runs that do
not vary (p is 0 or 1 by the sign of a difference of mean logarithms) and a p within 10^-9 of
alpha. The verdicts are the record path's (``tests/test_gate_columnar.py`` compares the two on
generated files and on the cases two reviews found); other p-values agree to rounding (the
logarithms are ``math.log``'s as there, their sums numpy's rather than ``math.fsum``'s). Files this path does not take (a configuration repeated in a file, a key
or metric column of text) return None: the record path compares them.

The result's rows (:class:`ComparisonRows`) are built on demand, one :class:`MetricComparison` at
a time; counts and the failing rows come from the arrays.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vitbench import row_warnings
from vitbench.csv_columns import Column, ColumnTable, _trim
from vitbench.errors import InputFileError, SpecError
from vitbench.gate import verdicts as record_path
from vitbench.gate.array_verdicts import Fallback, Verdicts
from vitbench.gate.matching import Group, is_missing, key_text, number
from vitbench.gate.result import CompareResult, EnvDifference
from vitbench.gate.rules import HEADLINE_METRICS, Rule, RuleError
from vitbench.gate.verdicts import _closing_checks, _compare_configuration, _parse, _sort_rules, _Wanted
from vitbench.row_status import RowStatus


def compare_tables(base: ColumnTable, cur: ColumnTable, parsed: list[Rule], explicit: bool, *, alpha: float,
                   allow_missing_rows: bool, allow_missing_metrics: bool) -> CompareResult | None:
    """:func:`vitbench.gate.compare` of two tables, or None when the record path must
    compare them."""
    try:
        return _Comparison(base, cur, parsed, explicit, alpha, allow_missing_rows, allow_missing_metrics).result()
    except Fallback:
        return None


def compare_files(baseline: Any, current: Any, rules: Any, *, alpha: float, allow_missing_rows: bool,
                  allow_missing_metrics: bool, min_bytes: int | None = None) -> CompareResult | None:
    """:func:`vitbench.gate.compare` of two large results CSV files on columns, or None when the
    record path compares them (smaller files, JSON, stores, records, or files the columnar reader
    or gate does not take). ``min_bytes``: the smallest file read on columns (None:
    :data:`vitbench.csv_columns.COLUMNAR_MIN_BYTES`)."""
    from vitbench import csv_columns

    if not all(isinstance(s, (str, os.PathLike)) for s in (baseline, current)):
        return None
    paths = [Path(baseline), Path(current)]
    try:
        if not all(p.is_file() and p.suffix.lower() != ".json" for p in paths):
            return None
    except (OSError, ValueError):
        return None
    parsed, explicit = _parse(rules)
    named = {r.metric for r in parsed}
    limit = csv_columns.COLUMNAR_MIN_BYTES if min_bytes is None else min_bytes
    tables = []
    for role, path in (("baseline", baseline), ("current", current)):
        where = f"{role} file={str(path)!r}"
        table = csv_columns.read_csv_columns(path, where, _Wanted(named), min_bytes=limit,
                                             distinct_limit=csv_columns.DISTINCT_LIMIT)
        if table is None:
            return None
        check_table(table, where, named)
        tables.append(table)
    try:
        return compare_tables(*tables, list(parsed), explicit, alpha=alpha, allow_missing_rows=allow_missing_rows,
                              allow_missing_metrics=allow_missing_metrics)
    except (InputFileError, RuleError, SpecError):
        raise  # the user's files or rules: the record path says the same
    except (ValueError, ArithmeticError):  # numbers numpy cannot compare: the record path decides it
        return None


def check_table(table: ColumnTable, where: str, named: set[str]) -> None:
    """:func:`vitbench.gate.verdicts.load_results`'s checks of a file's columns."""
    record_path.check_columns(set(table.header), where, named)


# --------------------------------------------------------------------------- columns


def _present(column: Column | None) -> bool:
    if column is None:
        return False
    if column.kind == "values":
        return bool(np.any(column.codes >= 0))
    return bool(column.has().any())


def _text_ids(column: Column | None, n: int, ids: dict[str, int], text: Any = key_text) -> np.ndarray:
    """Each row's ``text(value)`` as an id in ``ids`` (shared between the files); a missing column
    reads as ``text(None)``."""
    if column is None:
        return np.full(n, ids.setdefault(text(None), len(ids)), dtype=np.int64)
    if column.kind != "values":
        raise Fallback("a key column of many values")
    table = np.array([ids.setdefault(text(v), len(ids)) for v in column.values] + [ids.setdefault(text(None), len(ids))],
                     dtype=np.int64)
    return table[column.codes]


def _combine(parts: Iterable[np.ndarray], n: int) -> np.ndarray:
    """One int64 per row (of ``n``) for a tuple of ids, equal where the tuples are (mixed radix,
    made dense again whenever the radix would overflow); ``parts`` may be a generator, each part
    folded in and freed."""
    out = np.zeros(n, dtype=np.int64)
    scale = 1
    for part in parts:
        size = int(part.max(initial=0)) + 1
        if scale * size >= 2**62:
            out = np.unique(out, return_inverse=True)[1].reshape(-1).astype(np.int64)
            scale = int(out.max(initial=0)) + 1
        out = out * size + part
        scale *= size
    return out


class _Side:
    """One file's columns as the gate reads them."""

    def __init__(self, table: ColumnTable, role: str) -> None:
        self.table, self.role, self.n = table, role, table.n
        self.columns = table.columns

    def column(self, name: str) -> Column | None:
        return self.columns.get(name)

    def present(self) -> set[str]:
        return {name for name, column in self.columns.items() if _present(column)}

    def numbers(self, metric: str) -> tuple[np.ndarray, np.ndarray]:
        column = self.column(metric)
        if column is None:
            return np.full(self.n, np.nan), np.zeros(self.n, bool)
        got = column.numbers()
        if got is None:
            raise Fallback(f"{metric}: text or integers beyond 2**53")
        return got

    def value(self, metric: str, row: int) -> Any:
        column = self.column(metric)
        return None if column is None else number(column.value(row))

    def record(self, row: int) -> dict[str, Any]:
        return self.table.record(row)

    def status_failed(self) -> np.ndarray:
        """Rows whose status is given and not ``ok`` (Group.failed of a one-row group)."""
        column = self.column("status")
        if column is None:
            return np.zeros(self.n, bool)
        if column.kind != "values":
            raise Fallback("status of many values")
        failed = np.array([not is_missing(v) and str(v) != RowStatus.OK for v in column.values] + [False])
        return failed[column.codes]


# --------------------------------------------------------------------------- the comparison


class _Comparison:
    def __init__(self, base: ColumnTable, cur: ColumnTable, parsed: list[Rule], explicit: bool, alpha: float,
                 allow_missing_rows: bool, allow_missing_metrics: bool) -> None:
        self.base, self.cur = _Side(base, "baseline"), _Side(cur, "current")
        self.parsed, self.explicit, self.alpha = parsed, explicit, alpha
        self.allow_missing_rows, self.allow_missing_metrics = allow_missing_rows, allow_missing_metrics

    # ------------------------------------------------------------------ checks

    def _check_numeric(self, active: Sequence[Rule]) -> None:
        """:func:`vitbench.gate.verdicts._check_numeric` on the first value of each ruled column."""
        for rule in active:
            for side in (self.base, self.cur):
                column = side.column(rule.metric)
                if column is None:
                    continue
                present = column.has()
                if not present.any():
                    continue
                value = column.value(int(np.argmax(present)))
                if isinstance(value, bool) or number(value) is None:
                    raise RuleError(str(rule), f"{rule.metric!r} is not a numeric column (it holds {str(value)[:40]!r})")
                break
            else:
                continue

    # ------------------------------------------------------------------ keys

    def _key_columns(self) -> tuple[str, ...]:
        both = self.base.present() & self.cur.present()
        run = [c for c in ("batch_size", "device", "mode", "precision") if c in both]
        def everywhere(column: Column | None) -> bool:
            if column is None:
                return False
            return bool(column.has().all())

        if everywhere(self.base.column("spec_key")) and everywhere(self.cur.column("spec_key")):
            identity = ["spec_key"]
            for side in (self.base, self.cur):
                ids: dict[str, int] = {}
                key = _combine((_text_ids(side.column(c), side.n, ids) for c in ["spec_key", *run]), side.n)
                model = _text_ids(side.column("model"), side.n, {}, text=str)
                pairs = np.unique(np.stack([key, model]), axis=1)
                if len(np.unique(pairs[0])) < pairs.shape[1]:
                    identity.append("model")
                    break
        else:
            identity = ["model"] + [c for c in ("img_size", "patch_size") if c in both]
        return tuple(identity + run)

    def _keys(self, keys: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Each row's configuration as one int64 per side (equal across the files for equal keys),
        and the key texts by id."""
        def parts() -> Iterator[np.ndarray]:  # one key column of both files at a time
            for c in keys:
                ids: dict[str, int] = {}  # one table per key column: small ids, a small radix
                yield np.concatenate([_text_ids(side.column(c), side.n, ids) for side in (self.base, self.cur)])

        combined = _combine(parts(), self.base.n + self.cur.n)
        return combined[: self.base.n], combined[self.base.n:], []

    def key_of(self, side: _Side, row: int) -> tuple[str, ...]:
        return tuple(key_text(side.column(c).value(row) if side.column(c) is not None else None) for c in self.keys)

    # ------------------------------------------------------------------ labels

    def _label_code(self, side: _Side, keys: tuple[str, ...]) -> np.ndarray:
        """Each row's label as one int64, equal where the labels' texts are: from ids of its parts,
        and where a part a row uses may be empty or hold a space (two tuples of parts, one text),
        from the texts, joined once per distinct tuple (10^6 distinct model names: a join each,
        not a record each)."""
        specs: list[tuple[str, Any]] = [("model", str), ("img_size", lambda v: "" if is_missing(v) else f"{key_text(v)}px")]
        if "batch_size" in keys:
            specs.append(("batch_size", lambda v: f"b{key_text(v)}"))
        specs += [(k, key_text) for k in ("device", "mode", "precision") if k in keys]
        tables: list[dict[str, int]] = [{} for _ in specs]
        ambiguous = False

        def parts() -> Iterator[np.ndarray]:
            nonlocal ambiguous
            for (name, text), table in zip(specs, tables):
                ids = _text_ids(side.column(name), side.n, table, text=text)
                if not ambiguous:  # only the texts rows use: a missing cell's text is in every table
                    used = np.flatnonzero(np.bincount(ids, minlength=len(table)))
                    texts = list(table)
                    ambiguous = any(texts[i] == "" or " " in texts[i] for i in used.tolist())
                yield ids

        code = _combine(parts(), side.n)
        if not ambiguous:
            return code
        _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
        texts = [list(table) for table in tables]
        at_first = [_text_ids(side.column(name), side.n, table, text=text)[first].tolist()
                    for (name, text), table in zip(specs, tables)]
        by_text: dict[str, int] = {}
        ids = np.array([by_text.setdefault(" ".join(t for t in map(list.__getitem__, texts, row) if t), len(by_text))
                        for row in zip(*at_first)], dtype=np.int64)
        return ids[inverse.reshape(-1)]

    def label(self, side: _Side, row: int, clashing: bool) -> str:
        """:func:`vitbench.gate.matching._label` of the row."""
        def cell(name: str) -> Any:
            column = side.column(name)
            return None if column is None else column.value(row)

        parts = [str(cell("model"))]
        if not is_missing(cell("img_size")):
            parts.append(f"{key_text(cell('img_size'))}px")
        if "batch_size" in self.keys:
            parts.append(f"b{key_text(cell('batch_size'))}")
        parts += [key_text(cell(k)) for k in ("device", "mode", "precision") if k in self.keys]
        text = " ".join(p for p in parts if p)
        if clashing:
            text += f" #{hashlib.sha1('|'.join(self.key_of(side, row)).encode()).hexdigest()[:6]}"
        return text

    @staticmethod
    def _clashes(label_codes: np.ndarray) -> np.ndarray:
        """Rows whose label another row of the set shares."""
        if not label_codes.size:
            return np.zeros(0, bool)
        _, inverse, counts = np.unique(label_codes, return_inverse=True, return_counts=True)
        return counts[inverse.reshape(-1)] > 1

    # ------------------------------------------------------------------ the run

    def result(self) -> CompareResult:  # noqa: C901 (the steps of verdicts._compare_records, in its order)

        active, missing, not_applicable = _sort_rules(self.parsed, self.explicit, set(self.base.table.names),
                                                      set(self.cur.table.names))
        self._check_numeric(active)
        failures: list[str] = []
        warnings: list[str] = []
        if self.allow_missing_metrics:
            warnings += [f"{m} (allowed: --allow-missing-metrics)" for m in missing]
        else:
            failures += missing

        keys = self._key_columns()
        base_keys, cur_keys, _ = self._keys(keys)
        if len(np.unique(base_keys)) < len(base_keys) or len(np.unique(cur_keys)) < len(cur_keys):
            raise Fallback("a configuration repeated in a file (pooled by the record path)")
        order = np.argsort(base_keys, kind="stable")
        sorted_keys = base_keys[order]
        spot = np.clip(np.searchsorted(sorted_keys, cur_keys), 0, max(len(sorted_keys) - 1, 0))
        in_base = sorted_keys[spot] == cur_keys if len(sorted_keys) else np.zeros(len(cur_keys), bool)
        cur_rows = np.flatnonzero(in_base)  # the common configurations, in the current file's order
        base_rows = order[spot[cur_rows]]
        if not cur_rows.size:
            raise InputFileError(
                f"no common configurations between baseline and current (matched on {', '.join(keys)})"
            )
        in_cur = np.zeros(self.base.n, bool)
        in_cur[base_rows] = True
        removed_rows = np.flatnonzero(~in_cur)
        added_rows = np.flatnonzero(~in_base)
        del base_keys, cur_keys, order, sorted_keys, spot, in_base, in_cur
        if removed_rows.size:
            text = f"{removed_rows.size} of {self.base.n} baseline configurations missing from current"
            if self.allow_missing_rows:
                warnings.append(text + " (allowed: --allow-missing-rows)")
            else:
                failures.append(text)

        both = self.base.present() & self.cur.present()
        metrics = [m for m in HEADLINE_METRICS if m in both]
        metrics += list(dict.fromkeys(r.metric for r in active if r.metric not in metrics))

        # labels: unique among the common configurations (rows), and within each file (added, removed)
        self.keys = keys
        base_label, cur_label = self._label_code(self.base, keys), self._label_code(self.cur, keys)
        common_clash = self._clashes(cur_label[cur_rows])
        removed_clash, added_clash = self._clashes(base_label)[removed_rows], self._clashes(cur_label)[added_rows]
        del base_label, cur_label
        _trim()  # the keys' and labels' working arrays go back before the verdicts' are made

        rows = Verdicts(self, metrics, active, base_rows, cur_rows, common_clash, keys)
        scalar = rows.decide()
        for position in scalar:  # in the current file's order: their warnings come in that order
            b, c = int(base_rows[position]), int(cur_rows[position])
            name = rows.name(position)
            key = tuple(zip(keys, self.key_of(self.cur, c)))
            rows.scalar[position] = _compare_configuration(
                Group([self.base.record(b)]), Group([self.cur.record(c)]), name, key, metrics, active, self.alpha,
                self.allow_missing_metrics, warnings)
        rows.finish()
        warnings += self._recorded_warnings(rows, base_rows, cur_rows)
        _closing_checks(rows.closing_view(), active, failures, warnings)
        return CompareResult(
            rows=rows, rules=tuple(active), key_columns=keys,
            env_differences=self._env_differences(base_rows, cur_rows),
            added=_Labels(self, self.cur, added_rows, added_clash),
            removed=_Labels(self, self.base, removed_rows, removed_clash),
            warnings=tuple(warnings), alpha=self.alpha, failures=tuple(failures), not_applicable=tuple(not_applicable),
        )

    def _recorded_warnings(self, rows: Verdicts, base_rows: np.ndarray, cur_rows: np.ndarray) -> list[str]:
        out: list[str] = []
        texts = {}
        marks = []
        for side, picked in ((self.base, base_rows), (self.cur, cur_rows)):
            column = side.column("warnings")
            if column is None:
                marks.append(None)
                continue
            if column.kind != "values":
                raise Fallback("warnings of many values")
            texts[side.role] = [list(dict.fromkeys(row_warnings.texts(v))) for v in column.values] + [[]]
            marks.append(np.array([bool(t) for t in texts[side.role]])[column.codes[picked]])
        any_mark = np.zeros(len(cur_rows), bool)
        for mark in marks:
            if mark is not None:
                any_mark |= mark
        for position in np.flatnonzero(any_mark):
            name = rows.name(int(position))
            for side, picked in ((self.base, base_rows), (self.cur, cur_rows)):
                if side.role not in texts:
                    continue
                lines = texts[side.role][side.column("warnings").codes[picked[position]]]
                out += [f"{side.role} {name}: {text}" for text in lines]
        return out

    def _env_differences(self, base_rows: np.ndarray, cur_rows: np.ndarray) -> tuple[EnvDifference, ...]:
        def present(side: _Side, picked: np.ndarray) -> set[str]:  # columns with a value in the common rows
            out = set()
            for name, column in side.columns.items():
                has = column.has()
                if has[picked].any():
                    out.add(name)
            return out

        both = present(self.base, base_rows) & present(self.cur, cur_rows)
        columns = [c for c in record_path.ENV_COLUMNS if c in both]
        columns += sorted(c for c in both if (c.startswith("env_") or c == "vitbench_version") and c not in columns)
        out = []
        for column in columns:
            seen = []
            for side, picked in ((self.base, base_rows), (self.cur, cur_rows)):
                col = side.column(column)
                if col.kind != "values":
                    raise Fallback("an environment column of many values")
                codes = np.unique(col.codes[picked])
                seen.append(tuple(sorted({key_text(col.values[k]) if k >= 0 else "" for k in codes} - {""})))
            if seen[0] != seen[1]:
                out.append(EnvDifference(column, seen[0], seen[1]))
        return tuple(out)


class _Labels(Sequence):
    """The labels of some rows of one file (configurations added or removed), built on demand."""

    def __init__(self, comparison: _Comparison, side: _Side, rows: np.ndarray, clash: np.ndarray) -> None:
        self.comparison, self.side, self.rows, self.clash = comparison, side, rows, clash

    def __repr__(self) -> str:
        return repr(tuple(self))

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self.comparison.label(self.side, int(self.rows[index]), bool(self.clash[index]))

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (tuple, list, Sequence)) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]


