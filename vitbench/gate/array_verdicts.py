"""The columnar gate's verdicts on arrays (:mod:`vitbench.gate.columnar`): each rule of
:mod:`vitbench.gate.verdicts` (a rule broken, the runs' Welch test against its threshold, the
verdict and its note) written for arrays of configurations, and :class:`Verdicts`, the
comparison's rows built one :class:`MetricComparison` at a time from them."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from vitbench.csv_columns import Column, _trim
from vitbench.gate import verdicts as record_path
from vitbench.gate.result import FAILING, MetricComparison, Verdict
from vitbench.gate.rules import Rule, is_rate, is_timing_metric
from vitbench.measure.stats import MIN_RUNS

#: the verdicts by code (a verdict is stored as its position here, an int8)
VERDICTS = tuple(Verdict)
_CODE = {v: i for i, v in enumerate(VERDICTS)}


class Fallback(Exception):
    """This comparison is left to the record path."""


def _float_lists(column: Column | None, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flat values, offsets, cell holds a non-empty list of finite positive floats) of a list
    column; rows without such a list are not plain."""
    if column is None:
        return np.zeros(0), np.zeros(n + 1, dtype=np.int64), np.zeros(n, bool)
    if column.kind == "floats":
        flat, offsets = column.flat, column.offsets
    elif column.kind == "values":
        lists = [v if isinstance(v, list) and all(type(x) is float for x in v) else [] for v in column.values] + [[]]
        lengths = np.array([len(v) for v in lists], dtype=np.int64)[column.codes]
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat = np.array([x for code in column.codes for x in lists[code]], dtype=np.float64) if lengths.sum() else np.zeros(0)
    else:
        return np.zeros(0), np.zeros(n + 1, dtype=np.int64), np.zeros(n, bool)
    lengths = np.diff(offsets)
    bad = (~(np.isfinite(flat) & (flat > 0))).astype(np.int8)
    return flat, offsets, (lengths > 0) & (_per_row(np.maximum, bad, offsets) == 0)


def _finite_counts(column: Column | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(finite values per row, whether the cell is a list of floats or missing) of ``samples_s``."""
    if column is None:
        return np.zeros(n, np.int64), np.ones(n, bool)
    if column.kind == "floats":
        finite = np.isfinite(column.flat).astype(np.int64)
        return _per_row(np.add, finite, column.offsets).astype(np.int64), np.ones(n, bool)
    if column.kind == "values":
        table = []
        for v in column.values:
            if isinstance(v, list) and all(type(x) is float for x in v):
                table.append((sum(1 for x in v if math.isfinite(x)), True))
            else:
                table.append((0, False))
        table.append((0, True))
        counts = np.array([c for c, _ in table], dtype=np.int64)[column.codes]
        plain = np.array([p for _, p in table], dtype=bool)[column.codes]
        return counts, plain
    return np.zeros(n, np.int64), np.zeros(n, bool)


# --------------------------------------------------------------------------- verdicts on arrays


class _Runs:
    """The runs' statistics of the common configurations (:func:`vitbench.measure.stats.run_shift`
    on arrays): what every timing metric and rule shares, computed once."""

    def __init__(self, base: tuple[np.ndarray, ...], cur: tuple[np.ndarray, ...]) -> None:
        mean_a, var_a, n_a, top_a, same_a = base
        mean_b, var_b, n_b, top_b, same_b = cur
        self.shift = mean_b - mean_a
        self.counts = (n_a, n_b)
        self.enough = (n_a >= MIN_RUNS) & (n_b >= MIN_RUNS)
        self.top = np.maximum(top_a, top_b)
        with np.errstate(divide="ignore", invalid="ignore"):  # rows of under 2 runs: their p is not used
            se_a, se_b = var_a / n_a, var_b / n_b
            se = se_a + se_b
            spread = se_a**2 / (n_a - 1) + se_b**2 / (n_b - 1)
            self.df = np.where(spread > 0, se**2 / spread, np.minimum(n_a, n_b) - 1.0)
            self.scale = np.sqrt(se)
        # no run differs from its side's others, or a spread too small for a float: p is 0 or 1
        self.no_spread = (same_a & same_b) | (se == 0)

    def p(self, d: np.ndarray, side: int) -> np.ndarray:
        """Welch's p for mean differences ``d`` (``side``: 1 greater, -1 less, 0 two-sided)."""
        from scipy.special import stdtr

        with np.errstate(divide="ignore", invalid="ignore"):
            t = d / self.scale
            if side > 0:
                p, beyond = stdtr(self.df, -t), d > 0
            elif side < 0:
                p, beyond = stdtr(self.df, t), d < 0
            else:
                p, beyond = np.minimum(1.0, 2 * stdtr(self.df, -np.abs(t))), d != 0
        return np.where(self.no_spread, np.where(beyond, 0.0, 1.0), p)


class Verdicts(Sequence):
    """Every :class:`MetricComparison` of a comparison, in the record path's order (configurations
    in the current file's order, metrics in order), built one at a time from arrays."""

    def __init__(self, comparison: Any, metrics: list[str], active: Sequence[Rule], base_rows: np.ndarray,
                 cur_rows: np.ndarray, clash: np.ndarray, keys: tuple[str, ...]) -> None:
        self.c, self.metrics, self.active = comparison, metrics, list(active)
        self.base_rows, self.cur_rows, self.clash, self.keys = base_rows, cur_rows, clash, keys
        self.scalar: dict[int, list[MetricComparison]] = {}
        self.n_configs = len(cur_rows)

    def name(self, position: int) -> str:
        return self.c.label(self.c.cur, int(self.cur_rows[position]), bool(self.clash[position]))

    # ------------------------------------------------------------------ deciding

    def decide(self) -> list[int]:
        """Decide the plain configurations on arrays; return the positions left to the record path."""
        base, cur, n = self.c.base, self.c.cur, self.n_configs
        b_rows, c_rows = self.base_rows, self.cur_rows
        plain = ~(base.status_failed()[b_rows] | cur.status_failed()[c_rows])
        timing = any(is_timing_metric(m) for m in self.metrics)
        # per-run medians and raw sample counts (each row's lists; the record path's reading)
        b_flat, b_off, b_ok = _float_lists(base.column("run_medians_s"), base.n)
        c_flat, c_off, c_ok = _float_lists(cur.column("run_medians_s"), cur.n)
        for side in (base, cur):
            if side.column("run_samples_s") is not None:
                raise Fallback("run_samples_s")
        b_samples, b_plain = _finite_counts(base.column("samples_s"), base.n)
        c_samples, c_plain = _finite_counts(cur.column("samples_s"), cur.n)
        plain &= b_plain[b_rows] & c_plain[c_rows]
        self.n_base, self.n_cur = b_samples[b_rows], c_samples[c_rows]
        if timing:
            plain &= b_ok[b_rows] & c_ok[c_rows]
            self.runs = _Runs(_run_stats(b_flat, b_off, b_rows), _run_stats(c_flat, c_off, c_rows))
            _trim()
            # runs that do not vary decide p as 0 or 1 by the sign of a difference of means: sums
            # here are numpy's, there math.fsum's, so a difference of one unit in the last place
            # could flip it; those configurations are the record path's
            plain &= ~(self.runs.no_spread & self.runs.enough)
            plain &= self.runs.top < record_path.MAX_STEP_S
        m = len(self.metrics)
        self.verdict = np.zeros((n, m), dtype=np.int8)
        timing_metrics = [j for j, metric in enumerate(self.metrics) if is_timing_metric(metric)]
        self.p_column = {j: k for k, j in enumerate(timing_metrics)}
        self.p = np.full((n, len(timing_metrics)), np.nan)
        self.failed_bits = np.zeros((n, m), dtype=np.int64 if len(self.active) > 7 else np.int8)
        self.note = np.zeros((n, m), dtype=np.int8)  # 0 none, 1 not assessed, 2 threshold only + not assessed
        self.rules_of = [[r for r in self.active if r.metric == metric] for metric in self.metrics]
        for metric in self.metrics:  # plain: both values of every metric a measurement can give
            plain &= self._values(metric)[2]
        self.plain = plain
        self.near_alpha = np.zeros(n, bool)
        for j, metric in enumerate(self.metrics):
            b, c, valid = self._values(metric)
            self._decide_metric(j, metric, b, c)
            del b, c, valid
        # a p within rounding of alpha could fall on either side of it there: the record path's
        return [int(i) for i in np.flatnonzero(~plain | self.near_alpha)]

    def _values(self, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(baseline values, current values, both are values a measurement can give) of the
        common configurations; 1.0 where not."""
        b, b_has = self.c.base.numbers(metric)
        b, b_has = b[self.base_rows], b_has[self.base_rows]
        c, c_has = self.c.cur.numbers(metric)
        c, c_has = c[self.cur_rows], c_has[self.cur_rows]
        valid = b_has & c_has & np.isfinite(b) & np.isfinite(c) & (b >= 0) & (c >= 0)
        if is_timing_metric(metric):
            valid &= (b > 0) & (c > 0)
        return np.where(valid, b, 1.0), np.where(valid, c, 1.0), valid

    def _decide_metric(self, j: int, metric: str, b: np.ndarray, c: np.ndarray) -> None:
        rules = self.rules_of[j]
        failing = np.zeros((len(b), len(rules)), bool)
        for k, rule in enumerate(rules):
            failing[:, k] = _violated(rule, b, c)
            self.failed_bits[:, j] |= (failing[:, k].astype(self.failed_bits.dtype) << k).astype(self.failed_bits.dtype)
        broken = failing.any(axis=1)
        p = np.full(len(b), np.nan)
        not_assessed = np.zeros(len(b), bool)
        if is_timing_metric(metric):
            runs = self.runs
            not_assessed = ~runs.enough
            best = np.full(len(b), np.inf)
            used_any = np.zeros(len(b), bool)
            for k, rule in enumerate(rules):
                margin, side, has = _margin(rule, metric, b)
                use = has & (failing[:, k] | ~broken)  # the rules the values break, else every rule
                if np.any(use & (~np.isfinite(margin) | (margin <= 0)) & self.plain & runs.enough):
                    raise Fallback("a margin run_shift refuses")
                with np.errstate(divide="ignore", invalid="ignore"):
                    d = runs.shift - np.log(np.where(use, margin, 1.0))
                best = np.where(use, np.minimum(best, runs.p(d, side)), best)
                del d, margin
                used_any |= use
            p = np.where(used_any, best, runs.p(runs.shift, 0))
            p[not_assessed] = np.nan
            alpha = self.c.alpha
            self.near_alpha |= broken & (np.abs(p - alpha) <= 1e-9 * alpha)
            self.runs_counts = runs.counts
        if j in self.p_column:
            self.p[:, self.p_column[j]] = p
        if not rules:
            verdict = np.where(b == c, _CODE[Verdict.UNCHANGED], _CODE[Verdict.CHANGED])
            note = np.zeros(len(b), np.int8)
        else:
            significant_pass = ~np.isnan(p) & (p >= self.c.alpha)
            verdict = np.where(~broken, _CODE[Verdict.OK],
                               np.where(significant_pass, _CODE[Verdict.NOT_SIGNIFICANT], _CODE[Verdict.REGRESSION]))
            note = np.where(not_assessed, np.where(broken & np.isnan(p), 2, 1), 0).astype(np.int8)
        self.verdict[:, j] = verdict
        self.note[:, j] = note

    def finish(self) -> None:
        """Row counts per configuration and the offsets of each configuration's rows."""
        counts = np.full(self.n_configs, len(self.metrics), dtype=np.int64)
        for position, made in self.scalar.items():
            counts[position] = len(made)
        self.offsets = np.zeros(self.n_configs + 1, dtype=np.int64)
        np.cumsum(counts, out=self.offsets[1:])

    # ------------------------------------------------------------------ reading

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        position = int(np.searchsorted(self.offsets, index, side="right")) - 1
        j = index - int(self.offsets[position])
        if position in self.scalar:
            return self.scalar[position][j]
        return self._made(position, j)

    def __iter__(self) -> Iterator[MetricComparison]:
        for position in range(self.n_configs):
            if position in self.scalar:
                yield from self.scalar[position]
            else:
                name = self.name(position)
                key = tuple(zip(self.keys, self.c.key_of(self.c.cur, int(self.cur_rows[position]))))
                for j in range(len(self.metrics)):
                    yield self._made(position, j, name, key)

    def _made(self, position: int, j: int, name: str | None = None, key: tuple | None = None) -> MetricComparison:
        c = self.c
        b_row, c_row = int(self.base_rows[position]), int(self.cur_rows[position])
        metric = self.metrics[j]
        rules = self.rules_of[j]
        bits = int(self.failed_bits[position, j])
        failed = tuple(str(r) for k, r in enumerate(rules) if bits >> k & 1)
        p = float(self.p[position, self.p_column[j]]) if j in self.p_column else math.nan
        timing = is_timing_metric(metric)
        runs_a = int(self.runs_counts[0][position]) if timing else 0
        runs_b = int(self.runs_counts[1][position]) if timing else 0
        note = ""
        code = int(self.note[position, j])
        if code:
            runs = lambda k: f"{k} run{'s' * (k != 1)}"  # noqa: E731
            note = (f"significance not assessed: {runs(runs_a)} in baseline, {runs(runs_b)} in current, "
                    f"needs {MIN_RUNS}+ a side")
            if code == 2:
                note = "threshold only; " + note
        baseline, current = c.base.value(metric, b_row), c.cur.value(metric, c_row)
        return MetricComparison(
            configuration=name if name is not None else self.name(position),
            key=key if key is not None else tuple(zip(self.keys, c.key_of(c.cur, c_row))), metric=metric,
            baseline=baseline, current=current,
            rel_change=None if baseline == 0 else (current - baseline) / abs(baseline), rules=tuple(str(r) for r in rules), failed_rules=failed,
            p_value=None if math.isnan(p) else p, n_baseline=int(self.n_base[position]),
            n_current=int(self.n_cur[position]), verdict=VERDICTS[int(self.verdict[position, j])], note=note,
            runs_baseline=runs_a, runs_current=runs_b)

    # ------------------------------------------------------------------ summaries from the arrays

    def verdict_counts(self) -> dict[str, int]:
        """Rows per verdict, in the order each verdict first appears (as the record path counts)."""
        vectorized = np.ones(self.n_configs, bool)
        vectorized[list(self.scalar)] = False
        counted = np.bincount(self.verdict[vectorized].reshape(-1), minlength=len(VERDICTS))
        out = {VERDICTS[k]: int(v) for k, v in enumerate(counted) if v}
        first: dict[str, int] = {}
        positions = np.flatnonzero(vectorized)
        for k in np.flatnonzero(counted):
            hit = np.argwhere(self.verdict[positions] == k)[0]
            first[VERDICTS[int(k)]] = int(self.offsets[positions[hit[0]]]) + int(hit[1])
        for position, made in self.scalar.items():
            for j, row in enumerate(made):
                out[row.verdict] = out.get(row.verdict, 0) + 1
                first[row.verdict] = min(first.get(row.verdict, len(self)), int(self.offsets[position]) + j)
        return {v: out[v] for v in sorted(out, key=first.__getitem__)}

    def where(self, verdicts: Sequence[str]) -> tuple[MetricComparison, ...]:
        """The rows whose verdict is one of ``verdicts``, in order."""
        wanted = np.isin(self.verdict, [_CODE[v] for v in verdicts if v in _CODE])
        wanted[list(self.scalar)] = False
        hits = set(map(int, np.flatnonzero(wanted.any(axis=1))))
        out = []
        for position in sorted(hits | set(self.scalar)):
            if position in self.scalar:
                out += [r for r in self.scalar[position] if r.verdict in verdicts]
            else:
                out += [self._made(position, int(j)) for j in np.flatnonzero(wanted[position])]
        return tuple(out)

    def failed_rows(self) -> tuple[MetricComparison, ...]:
        return self.where(FAILING)

    def configurations(self) -> int:
        """Configurations with at least one row (one whose two sides failed has none)."""
        return self.n_configs - sum(1 for made in self.scalar.values() if not made)

    def closing_view(self) -> list[Any]:
        """What :func:`vitbench.gate.verdicts._closing_checks` reads of each row (rules, verdict,
        note, metric), one entry per kind of row rather than per row."""
        out = []
        vectorized = np.ones(self.n_configs, bool)
        vectorized[list(self.scalar)] = False
        for j, metric in enumerate(self.metrics):
            rules = tuple(str(r) for r in self.rules_of[j])
            for code in np.unique(self.verdict[vectorized, j]):
                out.append(SimpleNamespace(rules=rules, verdict=VERDICTS[int(code)], metric=metric, note=""))
            if np.any(self.note[vectorized, j] > 0):
                out.append(SimpleNamespace(rules=rules, verdict=Verdict.OK, metric=metric,
                                           note="significance not assessed"))
        for made in self.scalar.values():
            out += made
        return out


def _per_row(function: Any, flat: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``function.reduceat`` over each row's list (0 for an empty list)."""
    counts = np.diff(offsets)
    out = np.zeros(len(counts), dtype=flat.dtype if flat.size else np.float64)
    filled = counts > 0
    if flat.size:  # over the non-empty lists only: each reduces up to the next one's start
        out[filled] = function.reduceat(flat, offsets[:-1][filled])
    return out


def _math_logs(values: np.ndarray, block: int = 1 << 18) -> np.ndarray:
    """``math.log`` of each value (nan for one <= 0), a block at a time (a Python float a value
    while a block is converted)."""
    logs = np.full(len(values), np.nan)
    for start in range(0, len(values), block):
        part = values[start:start + block]
        positive = part > 0
        logs[start:start + block][positive] = list(map(math.log, part[positive].tolist()))
    return logs


def _run_stats(flat: np.ndarray, offsets: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per row of ``rows``: (mean log, sample variance of the logs, runs, largest, all logs equal)
    of its per-run medians (:func:`vitbench.measure.stats.run_shift`'s statistics)."""
    counts = np.diff(offsets)
    # math.log, as run_shift takes them (numpy's log differs from it by a unit in the last place
    # for about 1 value in 1,000); a value <= 0 (a row that is not plain) reads as nan
    logs = _math_logs(flat)
    # no run differs from its side's others as run_shift sees it: equal logarithms
    same = _per_row(np.maximum, logs, offsets) == _per_row(np.minimum, logs, offsets)
    mean = _per_row(np.add, logs, offsets) / np.maximum(counts, 1)
    logs -= np.repeat(mean, counts)
    np.square(logs, out=logs)
    squares = _per_row(np.add, logs, offsets)
    del logs
    variance = np.where(counts > 1, squares / np.maximum(counts - 1, 1), 0.0)
    top = _per_row(np.maximum, flat, offsets)
    return mean[rows], variance[rows], counts[rows], top[rows], same[rows]


def _violated(rule: Rule, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """:meth:`Rule.violated` on arrays."""
    delta = c - b
    if rule.exact:
        return c != b
    if rule.relative:
        with np.errstate(divide="ignore", invalid="ignore"):
            change = np.where(b == 0, np.where(delta == 0, 0.0, np.copysign(np.inf, delta)), 100.0 * delta / np.abs(b))
    else:
        change = delta
    way = rule.failing_direction()
    if way > 0:
        return change > rule.threshold
    if way < 0:
        return change < -rule.threshold
    return np.abs(change) > rule.threshold


def _margin(rule: Rule, metric: str, b: np.ndarray) -> tuple[np.ndarray, int, np.ndarray]:
    """:func:`vitbench.gate.verdicts._step_time_margin` on arrays: (margin, side: 1 greater, -1
    less, 0 two-sided; has a margin)."""
    n = len(b)
    way = rule.failing_direction()
    if rule.exact or not way:
        return np.ones(n), 0, np.ones(n, bool)
    step = rule.threshold * np.abs(b) / 100 if rule.relative else np.full(n, rule.threshold)
    bound = b + way * step
    has = (bound > 0) & (b > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        if is_rate(metric):
            margin = np.where(has, b / bound, 1.0)
            side = 1 if way < 0 else -1
        else:
            margin = np.where(has, bound / b, 1.0)
            side = 1 if way > 0 else -1
    return margin, side, has
