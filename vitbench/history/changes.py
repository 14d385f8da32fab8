"""Trends over commits and the commits where they changed.

For every configuration (the gate's key: :func:`vitbench.gate.matching.key_columns`) and metric,
the history gives one point per commit: the median of the commit's values, and for timing
metrics its runs (``run_medians_s``; several adds of one commit pool their runs).

Where a metric changed:

- **exact and deterministic metrics**: every commit whose value differs from the previous
  commit's. Exact: integer counts (``macs``, ``params`` and any ``*_macs`` / ``*_flops``
  column). Deterministic: a metric whose rows carry no run spread (no ``runs``,
  ``run_medians_s``, ``samples_s``..., as ``predict``, ``plan`` and ``analyze`` rows) and whose
  values agree within every commit: predicted times (``pred_latency_s``) under a pinned
  calibration or the GPU cost model, planned memory. A measured metric, or a predicted one whose
  pooled values within a commit differ (a calibration remade on each run), is not;
- **measured and other metrics**: change points of log(point) over commits by PELT
  (``ruptures.Pelt``, model "l2", a level lasting at least 2 commits) with the penalty
  ``3 sigma^2 log(n)``, sigma the noise of consecutive points (1.4826 x the median absolute
  first difference / sqrt 2). Each change point is then kept only if the level after it differs
  from the level before it (the commits up to the neighbouring change points) by at least
  ``min_change`` (relative, default 2%) and beyond the noise between commits:

      z = (mean log after - mean log before) / (sigma sqrt(1/n_before + 1/n_after))
      p = min(1, (n - 1) x 2 (1 - Phi(|z|)))  < alpha (default 0.001)

  sigma the series' noise above (robust to the level shifts themselves), Bonferroni over the
  n - 1 places a change could have been found (PELT chose the place, so an unadjusted test would
  find noise). The test is on commits, not on the runs within a commit: runs on one machine at
  one time agree more closely than commits measured apart. A change in the last commit alone is
  not reported until a second commit confirms the level (`vitbench compare` gates a single new
  commit).

A change names its first commit (the first one of the new level) and the last commit before it:
``git bisect start FIRST LAST`` searches between them when commits in between were not measured.
"""

from __future__ import annotations

import math
import shlex
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from vitbench.errors import SpecError
from vitbench.gate.matching import group, key_columns, labels, number, run_medians
from vitbench.history.store import Commit, commits
from vitbench.row_status import RowStatus
from vitbench.units import is_missing

#: metrics looked at when none are named (those present in the history)
DEFAULT_METRICS = ("macs", "params", "latency_p50_s", "throughput_img_s", "peak_memory_bytes", "pred_latency_s")
EXACT = ("macs", "params")


#: columns only measured rows carry: the runs and samples a measured value's spread comes from
RUN_COLUMNS = ("runs", "run_medians_s", "run_samples_s", "samples_s", "n_samples")


def is_exact(metric: str) -> bool:
    """An integer count: any change in it is a change."""
    return metric in EXACT or metric.endswith("_macs") or metric.endswith("_flops")


def carries_runs(row: dict[str, Any]) -> bool:
    """Whether ``row`` is measured: it holds runs or samples (:data:`RUN_COLUMNS`)."""
    return any(not is_missing(row.get(k)) and row.get(k) not in ("", [], ()) for k in RUN_COLUMNS)


@dataclass(frozen=True)
class Point:
    commit: Commit
    value: float
    runs: tuple[float, ...]           # the values the spread and the test use (runs, else the value)


@dataclass(frozen=True)
class Series:
    """One configuration's metric over commits. ``exact``: a count, or a deterministic metric
    (no run spread: module docstring), whose every change is a change."""

    configuration: str
    metric: str
    points: tuple[Point, ...]
    exact: bool = False

    @property
    def spread(self) -> bool:
        """Whether any commit's values (its runs) differ: a band worth drawing."""
        return any(max(p.runs) > min(p.runs) for p in self.points)


@dataclass(frozen=True)
class Change:
    """A level shift of ``metric`` for ``configuration`` from ``first`` (the first commit of the
    new level) on; ``last_good`` is the commit before it."""

    configuration: str
    metric: str
    first: Commit
    last_good: Commit
    before: float
    after: float
    p_value: float | None             # None for exact and deterministic metrics (any change is one)
    method: str = field(default="")

    @property
    def rel_change(self) -> float | None:
        return None if self.before == 0 else self.after / self.before - 1

    @property
    def bisect(self) -> str:
        """The command that searches between the two commits, each argument quoted for a POSIX
        shell (:func:`bisect_command`)."""
        return bisect_command(self.first.commit, self.last_good.commit)

    def as_record(self) -> dict[str, Any]:
        return {"configuration": self.configuration, "metric": self.metric, "first_commit": self.first.commit,
                "first_date": self.first.date, "first_message": self.first.message,
                "last_good_commit": self.last_good.commit, "before": self.before, "after": self.after,
                "rel_change": self.rel_change, "p_value": self.p_value, "method": self.method, "bisect": self.bisect}


def bisect_command(first: str, last_good: str) -> str:
    """``git bisect start FIRST LAST_GOOD`` with both ids through :func:`shlex.quote`: pasted
    into a shell, an id is one word whatever it holds (a history written before ids were
    checked may hold ``$(...)`` or ``;``)."""
    return shlex.join(["git", "bisect", "start", first, last_good])


def _timing(metric: str) -> bool:
    return metric.startswith("latency") or metric == "throughput_img_s"


def series(rows: Sequence[dict[str, Any]], metrics: Sequence[str] | None = None) -> list[Series]:
    """One series per configuration and metric (``metrics`` default: :data:`DEFAULT_METRICS`
    present in ``rows``), points in commit order; rows whose status is not ok are left out."""
    ok = [r for r in rows if r.get("status") in (None, "", RowStatus.OK)]
    present = {k for r in ok for k, v in r.items() if number(v) is not None}
    if metrics:
        check_metrics(metrics, present)
    if not ok:
        return []
    keys = _keys(ok)
    wanted = [m for m in (metrics or DEFAULT_METRICS) if m in present]
    ordered = commits(ok)
    groups = group(ok, keys)
    names = labels(groups, keys)
    out: list[Series] = []
    for key, grouped in groups.items():
        for metric in wanted:
            points = _points(grouped.rows, metric, ordered)
            if points:
                out.append(Series(names[key], metric, tuple(points), _exact(metric, grouped.rows, points)))
    return out


def _exact(metric: str, rows: Sequence[dict[str, Any]], points: Sequence[Point]) -> bool:
    """A count, or a metric of rows that carry no runs and whose values agree within every
    commit (module docstring)."""
    if is_exact(metric):
        return True
    measured = any(carries_runs(r) for r in rows if number(r.get(metric)) is not None)
    return not measured and all(max(p.runs) == min(p.runs) for p in points)


def check_metrics(metrics: Sequence[str], present: set[str]) -> None:
    """Each of ``metrics`` (named by the user) is a number in the history: else a
    :class:`~vitbench.errors.SpecError` naming it and the metrics there are (exit 2), not a report
    that silently holds nothing."""
    known = sorted(k for k in present if not k.startswith("history_") and k != "id")
    for metric in metrics:
        if metric not in known:
            raise SpecError("metric", metric, f"is no metric of this history; known: {', '.join(known)}" if known
                            else "is no metric of this history, which holds no numbers")


def _keys(ok: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """The gate's configuration key without ``spec_key`` (unless it is the only one), ``model``
    first when the gate's key lacks it."""
    keys = key_columns(ok, ok)
    keys = tuple(k for k in keys if k != "spec_key") or keys
    return keys if "model" in keys else ("model", *keys)


def _points(rows: Sequence[dict[str, Any]], metric: str, ordered: Sequence[Commit]) -> list[Point]:
    """One configuration's points of ``metric``, one per commit that has a value, in commit
    order."""
    per_commit: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if number(r.get(metric)) is not None:
            per_commit.setdefault(str(r.get("history_commit")), []).append(r)
    points = []
    for c in ordered:
        found = per_commit.get(c.commit)
        if not found:
            continue
        values = [float(number(r.get(metric))) for r in found]
        runs = _runs(metric, found)
        point = statistics.median(runs) if runs and _timing(metric) else statistics.median(values)
        points.append(Point(c, point, tuple(runs or values)))
    return points


def _runs(metric: str, found: Sequence[dict[str, Any]]) -> list[float]:
    """The per-run values of one commit's rows: run medians for the latency, batch over each
    run median for the throughput; none for other metrics."""
    if metric == "latency_p50_s":
        return [m for r in found for m in run_medians(r)]
    if metric == "throughput_img_s":
        return [float(number(r.get("batch_size")) or 1) / m for r in found for m in run_medians(r) if m > 0]
    return []


def _noise(logs: Sequence[float]) -> float:
    diffs = [abs(b - a) for a, b in zip(logs, logs[1:])]
    if not diffs:
        return 0.0
    return 1.4826 * statistics.median(diffs) / math.sqrt(2)


def _shift_p(before: Sequence[float], after: Sequence[float], sigma: float, places: int) -> float:
    """Bonferroni-adjusted two-sided p of the shift in mean between two runs of log values."""
    shift = statistics.fmean(after) - statistics.fmean(before)
    if sigma <= 0:
        return 0.0 if shift else 1.0
    z = abs(shift) / (sigma * math.sqrt(1 / len(before) + 1 / len(after)))
    return min(1.0, places * math.erfc(z / math.sqrt(2)))


def detect(one: Series, alpha: float = 0.001, min_change: float = 0.02) -> list[Change]:
    """The changes of one series (module docstring)."""
    points = one.points
    if len(points) < 2:
        return []
    if one.exact:
        method = "exact" if is_exact(one.metric) else "deterministic"
        return [Change(one.configuration, one.metric, b.commit, a.commit, a.value, b.value, None, method)
                for a, b in zip(points, points[1:]) if b.value != a.value]
    if any(p.value <= 0 for p in points):
        return []
    import numpy as np
    import ruptures

    logs = [math.log(p.value) for p in points]
    sigma = _noise(logs)
    penalty = 3 * max(sigma, 1e-6) ** 2 * math.log(len(logs))
    if len(logs) < 4:
        return []
    ends = ruptures.Pelt(model="l2", min_size=2, jump=1).fit(np.array(logs).reshape(-1, 1)).predict(pen=penalty)
    bounds = [0, *ends]  # segment boundaries; the last is len(points)
    changes = []
    for i in range(1, len(bounds) - 1):
        start, cut, stop = bounds[i - 1], bounds[i], bounds[i + 1]
        before = [p.value for p in points[start:cut]]
        after = [p.value for p in points[cut:stop]]
        level_before, level_after = statistics.median(before), statistics.median(after)
        if abs(level_after / level_before - 1) < min_change:
            continue
        p_value = _shift_p(logs[start:cut], logs[cut:stop], sigma, len(logs) - 1)
        if p_value < alpha:
            changes.append(Change(one.configuration, one.metric, points[cut].commit, points[cut - 1].commit,
                                  level_before, level_after, p_value, "pelt+welch"))
    return changes


def changes(rows: Sequence[dict[str, Any]], metrics: Sequence[str] | None = None, alpha: float = 0.001,
            min_change: float = 0.02) -> list[Change]:
    """Every change in the history ``rows`` (see :func:`detect`), in commit order."""
    found = [c for s in series(rows, metrics) for c in detect(s, alpha, min_change)]
    order = {c.commit: i for i, c in enumerate(commits(rows))}
    return sorted(found, key=lambda c: (order[c.first.commit], c.metric, c.configuration))


__all__ = ["DEFAULT_METRICS", "RUN_COLUMNS", "Change", "Point", "Series", "bisect_command", "carries_runs", "changes", "check_metrics",
           "detect", "is_exact", "series"]
