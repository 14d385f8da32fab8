"""Regression rules and verdicts: compare a current results file against a baseline.

Rows of the two files are matched on their configuration key; each metric's change is checked
against rules such as ``throughput:-5%`` or ``params:0``. A timing regression counts only when it
exceeds the rule's threshold *and* the recorded per-step samples (``samples_s``) say the shift is
significant (two-sided Mann-Whitney U test, normal approximation, p < ``alpha``). Environment
differences (device, torch, CUDA, CPU, threads) are reported but never fail by themselves.

Pure functions and data only: rendering returns strings; the CLI prints and exits.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vitbench.errors import InputFileError, VitbenchError
from vitbench.results import read_input_text

#: Significance level for timing metrics.
DEFAULT_ALPHA = 0.05

#: Fewer samples than this on either side: significance is not assessed.
MIN_SAMPLES = 3

#: Short names accepted in rules -> the column they mean.
ALIASES = {
    "throughput": "throughput_img_s",
    "latency": "latency_p50_s",
    "latency_p50": "latency_p50_s",
    "latency_p90": "latency_p90_s",
    "latency_mean": "latency_mean_s",
    "peak_memory": "peak_memory_bytes",
    "memory": "peak_memory_bytes",
    "peak_reserved": "peak_reserved_bytes",
}

#: Markdown tables longer than this are folded into a <details> block (regressions are listed
#: above it in full).
MARKDOWN_OPEN_ROWS = 30

#: Rules used when none are given.
DEFAULT_RULES = ("throughput:-5%", "latency_p50:+5%", "peak_memory:+10%", "macs:0", "params:0")

#: Metrics reported (without a rule, for information) whenever both files have them.
HEADLINE_METRICS = (
    "throughput_img_s",
    "latency_p50_s",
    "latency_p90_s",
    "peak_memory_bytes",
    "params",
    "macs",
    "fvcore_macs",
    "dispatch_macs",
)

#: Columns that describe a configuration or a run, never metrics.
NON_METRIC_COLUMNS = frozenset(
    {
        "model", "kind", "spec_key", "img_size", "patch_size", "tokens", "batch_size", "device",
        "mode", "precision", "status", "error", "warnings", "n_samples", "samples_s",
        "attention_kernel", "attention", "channels_last", "compile", "threads", "optimizer",
        "isolate", "min_run_time_s", "warmup", "latency_iqr_s", "latency_cv", "vitbench_version",
    }
)

#: Environment columns compared between the files (plus any other ``env_*`` column).
ENV_COLUMNS = ("env_device_name", "env_torch", "env_cuda", "env_driver", "env_cpu", "env_threads")

_HIGHER_IS_BETTER = frozenset({"throughput_img_s", "achieved_flops_per_s", "flops_per_s", "mfu"})
_LATENCY = re.compile(r"^latency_(p\d+|mean|median|min|max)_s$")
_METRIC_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RULE = re.compile(
    r"^(?P<metric>[A-Za-z_][A-Za-z0-9_]*):(?P<sign>[+-]?)"
    r"(?P<number>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)(?P<percent>%?)$"
)


class RuleError(VitbenchError, ValueError):
    """A ``--fail-on`` expression that does not parse or names a metric the files lack."""

    def __init__(self, expression: str, reason: str):
        self.expression = expression
        super().__init__(f"--fail-on={expression!r}: {reason}")


# --------------------------------------------------------------------------- metrics


def canonical_metric(name: str) -> str:
    """Rule alias -> column name (``throughput`` -> ``throughput_img_s``); full names pass."""
    return ALIASES.get(name, name)


def is_timing_metric(metric: str) -> bool:
    """Metrics derived from the timed steps, whose noise the recorded samples describe."""
    return metric in _HIGHER_IS_BETTER or metric.endswith("_per_s") or bool(_LATENCY.match(metric))


def _is_rate(metric: str) -> bool:
    """Timing metrics that grow when steps get faster (inverse of time)."""
    return metric in _HIGHER_IS_BETTER or metric.endswith("_per_s")


def direction(metric: str) -> int:
    """+1 higher is better, -1 lower is better, 0 unknown."""
    if metric in _HIGHER_IS_BETTER or metric.endswith("_per_s"):
        return 1
    if (
        _LATENCY.match(metric)
        or metric.endswith(("_bytes", "_macs", "_flops", "_activations"))
        or metric.startswith("macs")
        or metric in ("params", "flops", "elementwise_ops")
    ):
        return -1
    return 0


def _looks_like_metric(column: str) -> bool:
    return column not in NON_METRIC_COLUMNS and not column.startswith("env_") and (
        direction(column) != 0 or is_timing_metric(column)
    )


# --------------------------------------------------------------------------- rules


def _format_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(float(value))


@dataclass(frozen=True)
class Rule:
    """``METRIC:[+|-]N%`` (relative), ``METRIC:[+|-]N`` (absolute) or ``METRIC:0`` (exact).

    ``+`` fails when the metric grows by more than N, ``-`` when it drops by more than N; no sign
    means the metric's bad direction (throughput down; latency, memory, MACs, params up; either
    way for a metric whose direction is unknown). An unsigned zero means exact: any change fails.
    """

    metric: str
    sign: str
    threshold: float
    relative: bool

    @classmethod
    def parse(cls, expression: str) -> Rule:
        text = expression.strip()
        match = _RULE.match(text)
        if not match:
            raise RuleError(
                expression,
                "expected METRIC:[+|-]N% (relative), METRIC:[+|-]N (absolute) or METRIC:0 (exact), "
                "e.g. throughput:-5%, peak_memory:+10%, params:0",
            )
        threshold = float(match["number"])
        if not math.isfinite(threshold):
            raise RuleError(expression, "the threshold must be a finite number")
        return cls(
            metric=canonical_metric(match["metric"]),
            sign=match["sign"],
            threshold=threshold,
            relative=bool(match["percent"]),
        )

    def __str__(self) -> str:
        return f"{self.metric}:{self.sign}{_format_number(self.threshold)}{'%' if self.relative else ''}"

    @property
    def exact(self) -> bool:
        return not self.sign and self.threshold == 0

    def failing_direction(self) -> int:
        """+1: growth fails; -1: a drop fails; 0: either (exact, or unknown metric direction)."""
        if self.sign:
            return 1 if self.sign == "+" else -1
        if self.exact:
            return 0
        return -direction(self.metric)

    def change(self, baseline: float, current: float) -> float:
        """The change this rule measures: percent of the baseline, or absolute units."""
        delta = current - baseline
        if not self.relative:
            return delta
        if baseline == 0:
            return 0.0 if delta == 0 else math.copysign(math.inf, delta)
        return 100.0 * delta / abs(baseline)

    def violated(self, baseline: float, current: float) -> bool:
        """Does the change exceed the threshold in the failing direction?"""
        change = self.change(baseline, current)
        if self.exact:
            return current != baseline
        way = self.failing_direction()
        if way > 0:
            return change > self.threshold
        if way < 0:
            return change < -self.threshold
        return abs(change) > self.threshold


def parse_rules(expressions: Iterable[str] | None) -> tuple[Rule, ...]:
    """Parse rule expressions; a comma inside one expression separates several rules."""
    rules = []
    for expression in expressions or ():
        for part in str(expression).split(","):
            if part.strip():
                rules.append(Rule.parse(part))
            else:
                raise RuleError(str(expression), "empty rule")
    return tuple(rules)


# --------------------------------------------------------------------------- statistics


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test by the normal approximation, with tie and continuity
    corrections (the same as ``scipy.stats.mannwhitneyu(a, b, method="asymptotic")``).

    U_a = R_a - n_a (n_a + 1) / 2, with R_a the rank sum of ``a`` in the pooled sample (ties get
    their average rank); mu = n_a n_b / 2;
    sigma^2 = n_a n_b / 12 * ((n + 1) - sum(t^3 - t) / (n (n - 1))) over tie groups of size t;
    z = (|U_a - mu| - 1/2) / sigma; p = erfc(z / sqrt 2). Returns (U_a, p).
    """
    n_a, n_b = len(a), len(b)
    if not n_a or not n_b:
        raise ValueError("both samples must be non-empty")
    pooled = sorted([(x, 0) for x in a] + [(x, 1) for x in b])
    n = n_a + n_b
    rank_sum_a = 0.0
    tie_term = 0.0
    i = 0
    while i < n:
        j = i
        while j + 1 < n and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        average_rank = (i + j) / 2 + 1
        size = j - i + 1
        tie_term += size**3 - size
        rank_sum_a += average_rank * sum(1 for k in range(i, j + 1) if pooled[k][1] == 0)
        i = j + 1
    u_a = rank_sum_a - n_a * (n_a + 1) / 2
    mu = n_a * n_b / 2
    variance = n_a * n_b / 12 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    if variance <= 0:
        return u_a, 1.0
    z = max(abs(u_a - mu) - 0.5, 0.0) / math.sqrt(variance)
    return u_a, min(1.0, math.erfc(z / math.sqrt(2)))


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


# --------------------------------------------------------------------------- loading


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return None if isinstance(value, float) and math.isnan(value) else value
    try:  # numpy scalars, Decimal
        result = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(result) else result


def _samples(value: Any) -> list[float] | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            value = json.loads(text)
        except ValueError:
            return None
    if not isinstance(value, (list, tuple)):
        return None
    out = [float(x) for x in value if _number(x) is not None and math.isfinite(float(x))]
    return out or None


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


def _records_from_json(text: str, where: str) -> list[Any]:
    from vitbench.results import SCHEMA_VERSION

    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputFileError(f"{where}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if isinstance(data, list):
        return data
    if not isinstance(data, dict):
        raise InputFileError(f"{where}: expected a JSON object with 'records', got {type(data).__name__}")
    if "benchmarks" in data and "machine_info" in data:
        raise InputFileError(
            f"{where}: this is a pytest-benchmark file; compare those with "
            "`pytest benchmarks/ --benchmark-compare` or `pytest-benchmark compare`"
        )
    version = data.get("schema_version")
    if version is not None:
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise InputFileError(f"{where}: schema_version={version!r} is not a valid schema version")
        if version > SCHEMA_VERSION:
            raise InputFileError(
                f"{where}: schema_version={version} is newer than this vitbench reads "
                f"({SCHEMA_VERSION}); upgrade vitbench"
            )
    records = data.get("records")
    if not isinstance(records, list):
        raise InputFileError(f"{where}: no 'records' list (not a vitbench results file)")
    return records


def load_results(
    source: str | os.PathLike | Iterable[Mapping[str, Any]],
    role: str = "results",
    metrics: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """Records from a CSV or JSON results file (or from records, or a DataFrame), checked to be
    vitbench results: a ``model`` column and at least one metric column (a known metric such
    as ``macs``, or one of ``metrics``, the columns rules name)."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        where = f"{role} file={str(path)!r}"
        text = read_input_text(path, where)
        if path.suffix.lower() == ".json" or text.lstrip()[:1] in ("{", "["):
            raw = _records_from_json(text, where)
        else:
            from vitbench.results import read_csv

            try:
                raw = list(read_csv(path))
            except InputFileError as exc:
                raise InputFileError(f"{role} {exc}") from None
    elif hasattr(source, "to_dict") and hasattr(source, "columns"):  # a pandas DataFrame
        where = f"{role} records"
        raw = source.to_dict(orient="records")
    else:
        where = f"{role} records"
        raw = list(source)
    if not raw:
        raise InputFileError(f"{where}: no records")
    if not all(isinstance(r, Mapping) for r in raw):
        raise InputFileError(f"{where}: records must be objects (column -> value)")
    records = [dict(r) for r in raw]
    columns = {c for r in records for c in r}
    if "model" not in columns:
        raise InputFileError(f"{where}: no 'model' column (not a vitbench results file)")
    if not any(_looks_like_metric(c) or c in metrics for c in columns):
        raise InputFileError(
            f"{where}: no metric columns (expected e.g. throughput_img_s, latency_p50_s, "
            "peak_memory_bytes, macs, params)"
        )
    return records


# --------------------------------------------------------------------------- matching


_NUMERIC_TEXT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def _key_text(value: Any) -> str:
    """Canonical text of a key or environment value, the same whether it was read from CSV
    (where pandas turns "13.0" into 13.0 and 8 into 8.0) or from JSON."""
    if _is_missing(value):
        return ""
    if isinstance(value, (list, tuple)):
        return "x".join(_key_text(v) for v in value)
    if isinstance(value, str):
        value = value.strip()
        if not _NUMERIC_TEXT.match(value):
            return value
        value = float(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def _columns(records: Sequence[Mapping[str, Any]]) -> set[str]:
    return {c for r in records for c, v in r.items() if not _is_missing(v)}


def key_columns(baseline: Sequence[Mapping[str, Any]], current: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """``spec_key`` when every row of both files has one (plus ``model`` if a file holds one
    architecture under two names), else model + img_size + patch_size; plus batch_size, device,
    mode and precision where both files record them."""
    both = _columns(baseline) & _columns(current)
    run = [c for c in ("batch_size", "device", "mode", "precision") if c in both]
    if all(not _is_missing(r.get("spec_key")) for r in [*baseline, *current]):
        identity = ["spec_key"]
        # Two presets with one architecture (vit-s/16, deit-s/16) in one file stay apart.
        for records in (baseline, current):
            names: dict[tuple[str, ...], set[str]] = {}
            for r in records:
                names.setdefault(tuple(_key_text(r.get(c)) for c in ["spec_key", *run]), set()).add(str(r.get("model")))
            if any(len(n) > 1 for n in names.values()):
                identity.append("model")
                break
    else:
        identity = ["model"] + [c for c in ("img_size", "patch_size") if c in both]
    return tuple(identity + run)


@dataclass
class _Group:
    """Rows of one file that share a configuration key (repeated runs are pooled)."""

    rows: list[dict[str, Any]] = field(default_factory=list)

    def value(self, metric: str) -> float | None:
        values = [v for v in (_number(r.get(metric)) for r in self.rows) if v is not None]
        if not values:
            return None
        return values[0] if len(values) == 1 else _median(values)

    def samples(self) -> list[float] | None:
        pooled = [x for r in self.rows for x in (_samples(r.get("samples_s")) or [])]
        return pooled or None

    def failed(self) -> str | None:
        statuses = [str(r.get("status")) for r in self.rows if not _is_missing(r.get("status"))]
        bad = [s for s in statuses if s != "ok"]
        return bad[0] if bad and len(bad) == len(statuses) else None

    @property
    def model(self) -> str:
        return str(self.rows[-1].get("model"))


def _group(records: Sequence[dict[str, Any]], keys: tuple[str, ...]) -> dict[tuple[str, ...], _Group]:
    groups: dict[tuple[str, ...], _Group] = {}
    for record in records:
        groups.setdefault(tuple(_key_text(record.get(k)) for k in keys), _Group()).rows.append(record)
    return groups


# --------------------------------------------------------------------------- results


def _percent(fraction: float) -> str:
    if abs(fraction) >= 0.001:
        return f"{fraction:+.1%}"
    return f"{100 * fraction:+.2g}%"


@dataclass(frozen=True)
class MetricComparison:
    """One metric of one configuration: values, change, significance and verdict.

    ``verdict`` is one of ``REGRESSION``, ``not significant`` (threshold exceeded but within the
    noise of the samples), ``ok`` (rules hold), ``changed``/``unchanged`` (no rule for the
    metric), ``n/a`` (a value is missing)."""

    configuration: str
    key: tuple[tuple[str, str], ...]
    metric: str
    baseline: float | None
    current: float | None
    rel_change: float | None
    rules: tuple[str, ...]
    failed_rules: tuple[str, ...]
    p_value: float | None
    n_baseline: int
    n_current: int
    verdict: str
    note: str = ""

    @property
    def regression(self) -> bool:
        return self.verdict == "REGRESSION"

    @property
    def ratio_text(self) -> str:
        """'1.25x slower' / '1.10x faster' for timing metrics; '' otherwise."""
        if not is_timing_metric(self.metric) or not self.baseline or not self.current:
            return ""
        if self.baseline <= 0 or self.current <= 0:
            return ""
        slower = self.baseline / self.current if _is_rate(self.metric) else self.current / self.baseline
        if abs(slower - 1) < 0.005:
            return "same speed"
        return f"{slower:.2f}x slower" if slower > 1 else f"{1 / slower:.2f}x faster"

    @property
    def change_text(self) -> str:
        """'-20.0% (1.25x slower)' for timing metrics, '+1,024 (+0.0012%)' for counts."""
        if self.baseline is None or self.current is None:
            return ""
        if self.current == self.baseline:
            return "0%"
        if self.rel_change is None:
            return f"{self.current - self.baseline:+,g} (from 0)"
        percent = _percent(self.rel_change)
        if is_timing_metric(self.metric):
            ratio = self.ratio_text
            return f"{percent} ({ratio})" if ratio else percent
        delta = self.current - self.baseline
        if float(delta).is_integer() and not self.metric.endswith("_s"):
            return f"{int(delta):+,} ({percent})"
        return percent

    def as_dict(self) -> dict[str, Any]:
        return {
            "configuration": self.configuration,
            "key": dict(self.key),
            "metric": self.metric,
            "baseline": self.baseline,
            "current": self.current,
            "rel_change": self.rel_change,
            "change": self.change_text,
            "rules": list(self.rules),
            "failed_rules": list(self.failed_rules),
            "p_value": self.p_value,
            "n_samples_baseline": self.n_baseline,
            "n_samples_current": self.n_current,
            "verdict": self.verdict,
            "note": self.note,
        }


@dataclass(frozen=True)
class EnvDifference:
    column: str
    baseline: tuple[str, ...]
    current: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.column}: baseline {', '.join(self.baseline) or '-'}; current {', '.join(self.current) or '-'}"


@dataclass(frozen=True)
class CompareResult:
    rows: tuple[MetricComparison, ...]
    rules: tuple[Rule, ...]
    key_columns: tuple[str, ...]
    env_differences: tuple[EnvDifference, ...] = ()
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    alpha: float = DEFAULT_ALPHA

    @property
    def regressions(self) -> tuple[MetricComparison, ...]:
        return tuple(r for r in self.rows if r.regression)

    @property
    def passed(self) -> bool:
        return not self.regressions

    @property
    def exit_code(self) -> int:
        """0 pass, 1 at least one regression."""
        return 0 if self.passed else 1

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for row in self.rows:
            out[row.verdict] = out.get(row.verdict, 0) + 1
        return out

    def as_dict(self) -> dict[str, Any]:
        from vitbench.results import SCHEMA_VERSION

        return {
            "schema_version": SCHEMA_VERSION,
            "passed": self.passed,
            "exit_code": self.exit_code,
            "summary": summary_line(self),
            "counts": self.counts(),
            "alpha": self.alpha,
            "rules": [str(r) for r in self.rules],
            "key_columns": list(self.key_columns),
            "rows": [r.as_dict() for r in self.rows],
            "regressions": [r.as_dict() for r in self.regressions],
            "env_differences": [
                {"column": d.column, "baseline": list(d.baseline), "current": list(d.current)}
                for d in self.env_differences
            ],
            "added": list(self.added),
            "removed": list(self.removed),
            "warnings": list(self.warnings),
        }


# --------------------------------------------------------------------------- comparison


def _label(group: _Group, keys: tuple[str, ...]) -> str:
    row = group.rows[-1]
    parts = [group.model]
    if not _is_missing(row.get("img_size")):
        parts.append(f"{_key_text(row.get('img_size'))}px")
    if "batch_size" in keys:
        parts.append(f"b{_key_text(row.get('batch_size'))}")
    parts += [_key_text(row.get(k)) for k in ("device", "mode", "precision") if k in keys]
    return " ".join(p for p in parts if p)


def _labels(groups: Mapping[tuple[str, ...], _Group], keys: tuple[str, ...]) -> dict[tuple[str, ...], str]:
    labels = {k: _label(g, keys) for k, g in groups.items()}
    seen: dict[str, int] = {}
    for label in labels.values():
        seen[label] = seen.get(label, 0) + 1
    return {
        k: (f"{v} #{hashlib.sha1('|'.join(k).encode()).hexdigest()[:6]}" if seen[v] > 1 else v)
        for k, v in labels.items()
    }


def _significance(
    metric: str, base: _Group, cur: _Group, baseline: float, current: float, alpha: float
) -> tuple[float | None, bool | None, int, int, str]:
    """(p, significant, n_base, n_cur, note) for a timing metric; significant is None when the
    samples are missing or too few."""
    a, b = base.samples(), cur.samples()
    n_a, n_b = len(a or ()), len(b or ())
    if n_a < MIN_SAMPLES or n_b < MIN_SAMPLES:
        return None, None, n_a, n_b, f"significance not assessed (samples: {n_a} baseline, {n_b} current)"
    _, p = mann_whitney_u(a, b)
    # Per-step times rise when a rate (throughput) falls and when a latency rises.
    expected = (-1 if _is_rate(metric) else 1) * (1 if current > baseline else -1 if current < baseline else 0)
    shift = _median(b) - _median(a)
    observed = 1 if shift > 0 else -1 if shift < 0 else 0
    if expected and observed != expected:
        return p, False, n_a, n_b, "samples shift the other way"
    return p, p < alpha, n_a, n_b, ""


def _compare_metric(
    metric: str, rules: Sequence[Rule], base: _Group, cur: _Group, label: str,
    key: tuple[tuple[str, str], ...], alpha: float,
) -> MetricComparison:
    baseline, current = base.value(metric), cur.value(metric)
    names = tuple(str(r) for r in rules)
    common = dict(configuration=label, key=key, metric=metric, baseline=baseline, current=current, rules=names)
    if baseline is None or current is None:
        side = "baseline" if baseline is None else "current"
        return MetricComparison(**common, rel_change=None, failed_rules=(), p_value=None, n_baseline=0,
                                n_current=0, verdict="n/a", note=f"no value in {side}")
    rel = None if baseline == 0 else (current - baseline) / abs(baseline)
    failed = tuple(str(r) for r in rules if r.violated(baseline, current))
    p = significant = None
    n_a = n_b = 0
    note = ""
    if is_timing_metric(metric):
        p, significant, n_a, n_b, note = _significance(metric, base, cur, baseline, current, alpha)
        if not rules or (not failed and significant is not None):
            note = ""  # only a verdict that the samples changed, or could not check, needs one
    if not rules:
        verdict = "unchanged" if baseline == current else "changed"
    elif not failed:
        verdict = "ok"
    elif significant is False:
        verdict = "not significant"
    else:
        verdict = "REGRESSION"
    return MetricComparison(**common, rel_change=rel, failed_rules=failed, p_value=p, n_baseline=n_a,
                            n_current=n_b, verdict=verdict, note=note)


def _env_differences(base_rows: Sequence[Mapping], cur_rows: Sequence[Mapping]) -> tuple[EnvDifference, ...]:
    both = _columns(base_rows) & _columns(cur_rows)
    columns = [c for c in ENV_COLUMNS if c in both]
    columns += sorted(c for c in both if (c.startswith("env_") or c == "vitbench_version") and c not in columns)
    out = []
    for column in columns:
        a = tuple(sorted({_key_text(r.get(column)) for r in base_rows} - {""}))
        b = tuple(sorted({_key_text(r.get(column)) for r in cur_rows} - {""}))
        if a != b:
            out.append(EnvDifference(column, a, b))
    return tuple(out)


def compare(
    baseline: str | os.PathLike | Iterable[Mapping[str, Any]],
    current: str | os.PathLike | Iterable[Mapping[str, Any]],
    rules: Iterable[str | Rule] | None = None,
    *,
    alpha: float = DEFAULT_ALPHA,
) -> CompareResult:
    """Compare ``current`` results against ``baseline`` (paths to CSV/JSON results, or records).

    ``rules`` are expressions such as ``"throughput:-5%"`` or :class:`Rule` objects; ``None``
    means :data:`DEFAULT_RULES`, applied to the metrics both files have. Explicit rules must name
    metrics present in both files. Raises :class:`InputFileError` (missing file, wrong schema, no
    common configuration) or :class:`RuleError`; regressions are data (``result.exit_code``).
    """
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        from vitbench.errors import SpecError

        raise SpecError("alpha", alpha, "must be a number between 0 and 1")
    explicit = rules is not None
    if isinstance(rules, (str, Rule)):
        rules = [rules]
    parsed: list[Rule] = []
    for item in rules if explicit else DEFAULT_RULES:
        parsed += [item] if isinstance(item, Rule) else parse_rules([item])
    named = {r.metric for r in parsed}
    base_records = load_results(baseline, "baseline", named)
    cur_records = load_results(current, "current", named)
    base_cols, cur_cols = _columns(base_records), _columns(cur_records)
    # A column present but empty (every run of it failed) still counts as recorded.
    base_named = {c for r in base_records for c in r}
    cur_named = {c for r in cur_records for c in r}
    warnings: list[str] = []

    active = []
    for rule in parsed:
        missing = [side for side, cols in (("baseline", base_named), ("current", cur_named)) if rule.metric not in cols]
        if not missing:
            active.append(rule)
        elif explicit:
            files = " and ".join(missing) + (" files" if len(missing) > 1 else " file")
            raise RuleError(str(rule), f"metric {rule.metric!r} is missing from the {files}")
    unused = [str(r) for r in parsed if r not in active]
    if unused:
        warnings.append(f"default rules skipped (metric not in both files): {', '.join(unused)}")

    keys = key_columns(base_records, cur_records)
    base_groups, cur_groups = _group(base_records, keys), _group(cur_records, keys)
    common = [k for k in cur_groups if k in base_groups]
    if not common:
        raise InputFileError(
            f"no common configurations between baseline and current (matched on {', '.join(keys)})"
        )
    for role, groups in (("baseline", base_groups), ("current", cur_groups)):
        pooled = sum(1 for g in groups.values() if len(g.rows) > 1)
        if pooled:
            warnings.append(
                f"{role}: {pooled} configuration(s) appear more than once; repeated runs pooled "
                "(median of values, samples combined)"
            )

    metrics = [m for m in HEADLINE_METRICS if m in base_cols and m in cur_cols]
    metrics += [r.metric for r in active if r.metric not in metrics]
    labels = _labels({k: cur_groups[k] for k in common}, keys)
    rows: list[MetricComparison] = []
    for k in common:
        base, cur = base_groups[k], cur_groups[k]
        key = tuple(zip(keys, k))
        base_failed, cur_failed = base.failed(), cur.failed()
        if cur_failed and not base_failed:
            rows.append(MetricComparison(labels[k], key, "status", None, None, None, ("status:ok",),
                                         ("status:ok",), None, 0, 0, "REGRESSION",
                                         f"ok in baseline, {cur_failed} in current"))
            continue
        if cur_failed or base_failed:
            warnings.append(
                f"{labels[k]}: status {base_failed or 'ok'} in baseline, {cur_failed or 'ok'} in "
                "current; metrics not compared"
            )
            continue
        for metric in metrics:
            rows.append(_compare_metric(metric, [r for r in active if r.metric == metric], base, cur,
                                        labels[k], key, alpha))

    for k in common:  # warnings recorded with the results (unstable timing, ...) travel on
        for role, group in (("baseline", base_groups[k]), ("current", cur_groups[k])):
            for text in dict.fromkeys(str(r["warnings"]) for r in group.rows if not _is_missing(r.get("warnings"))):
                warnings.append(f"{role} {labels[k]}: {text}")
    unassessed = sorted({r.metric for r in rows if r.note.startswith("significance not assessed") and r.rules})
    if unassessed:
        warnings.append(
            f"significance not assessed for {', '.join(unassessed)} in some rows (no or too few "
            f"samples_s): the threshold alone decided"
        )
    all_base_labels = _labels(base_groups, keys)
    all_cur_labels = _labels(cur_groups, keys)
    return CompareResult(
        rows=tuple(rows),
        rules=tuple(active),
        key_columns=keys,
        env_differences=_env_differences([r for k in common for r in base_groups[k].rows],
                                         [r for k in common for r in cur_groups[k].rows]),
        added=tuple(all_cur_labels[k] for k in cur_groups if k not in base_groups),
        removed=tuple(all_base_labels[k] for k in base_groups if k not in cur_groups),
        warnings=tuple(warnings),
        alpha=alpha,
    )


# --------------------------------------------------------------------------- rendering


def summary_line(result: CompareResult) -> str:
    counts = result.counts()
    configs = len({r.configuration for r in result.rows})
    parts = [f"{n} {name}" for name, n in (
        ("regression" if counts.get("REGRESSION", 0) == 1 else "regressions", counts.get("REGRESSION", 0)),
        ("not significant", counts.get("not significant", 0)),
        ("ok", counts.get("ok", 0)),
    )]
    verdict = "PASS" if result.passed else "FAIL"
    return (
        f"{verdict}: {', '.join(parts)} ({len(result.rows)} comparison{'s' * (len(result.rows) != 1)} "
        f"over {configs} configuration{'s' * (configs != 1)}; "
        f"rules: {', '.join(str(r) for r in result.rules) or 'none'})"
    )


def _cell(metric: str, value: float | None) -> str:
    from vitbench.reporting.format import humanize, si

    if value is None:
        return ""
    if _is_rate(metric):  # throughput_img_s is a rate, not seconds
        unit = " img/s" if metric == "throughput_img_s" else "/s"
        return f"{value:,.1f}{unit}" if value < 1e6 else f"{si(value)}{unit}"
    if isinstance(value, float) and value.is_integer() and not metric.endswith("_s"):
        value = int(value)
    if isinstance(value, int) and not metric.endswith("_bytes"):
        return f"{value:,}"  # counts in full: a gate on exact counts must show the digits that moved
    return str(humanize(metric, value))


def table_rows(result: CompareResult) -> list[dict[str, Any]]:
    """Rows for display: humanised values, one per configuration and metric."""
    return [
        {
            "configuration": r.configuration,
            "metric": r.metric,
            "baseline": _cell(r.metric, r.baseline),
            "current": _cell(r.metric, r.current),
            "change": r.change_text,
            "p": "" if r.p_value is None else f"{r.p_value:.2g}",
            "rule": ", ".join(r.rules),
            "verdict": r.verdict + (f" ({r.note})" if r.note else ""),
        }
        for r in result.rows
    ]


def _escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def render(result: CompareResult, fmt: str = "table") -> str:
    """The comparison as ``table`` (terminal), ``markdown`` (pull-request comment), ``json`` or
    ``csv`` (one row per configuration and metric, raw values)."""
    if fmt == "json":
        return json.dumps(result.as_dict(), indent=2, default=str) + "\n"
    if fmt == "csv":
        from vitbench.reporting.format import render as render_records

        flat = [{**{k: v for k, v in r.as_dict().items() if k != "key"}, **dict(r.key)} for r in result.rows]
        for row in flat:
            row["rules"] = ";".join(row["rules"])
            row["failed_rules"] = ";".join(row["failed_rules"])
        return render_records(flat, "csv")
    from tabulate import tabulate

    rows = table_rows(result)
    columns = ["configuration", "metric", "baseline", "current", "change", "p", "rule", "verdict"]
    markdown = fmt == "markdown"
    body = tabulate(
        [[_escape(r[c]) if markdown else r[c] for c in columns] for r in rows],
        headers=columns, tablefmt="github" if markdown else "simple", disable_numparse=True,
    )
    notes: list[tuple[str, list[str]]] = []
    if result.regressions:
        notes.append(("Regressions", [
            f"{r.configuration} {r.metric}: {r.change_text or r.note} breaks {', '.join(r.failed_rules)}"
            + (f" (p={r.p_value:.2g})" if r.p_value is not None else "")
            for r in result.regressions
        ]))
    if result.env_differences:
        notes.append(("Environment differences (reported, not failures)", [str(d) for d in result.env_differences]))
    if result.removed:
        notes.append(("Only in baseline (removed)", list(result.removed)))
    if result.added:
        notes.append(("Only in current (added)", list(result.added)))
    if result.warnings:
        notes.append(("Warnings", list(result.warnings)))
    summary = summary_line(result)
    if markdown:
        out = [f"### vitbench compare: {'PASS' if result.passed else 'FAIL'}", "", f"**{summary}**", ""]
        if len(rows) > MARKDOWN_OPEN_ROWS:  # keep a pull-request comment short: fold big tables
            out += [f"<details><summary>All {len(rows)} comparisons</summary>", "", body, "", "</details>"]
        else:
            out.append(body)
        for title, items in notes:
            out += ["", f"**{title}**", ""] + [f"- {_escape(i)}" for i in items]
        out += ["", f"<sub>Matched on {', '.join(result.key_columns)}. Timing regressions need the "
                f"threshold exceeded and a Mann-Whitney U p < {result.alpha:g} on the recorded samples.</sub>"]
    else:
        out = [body, "", summary]
        for title, items in notes:
            out += ["", f"{title}:"] + [f"  {i}" for i in items]
    return "\n".join(out) + "\n"


__all__ = [
    "ALIASES",
    "DEFAULT_ALPHA",
    "DEFAULT_RULES",
    "CompareResult",
    "EnvDifference",
    "MetricComparison",
    "Rule",
    "RuleError",
    "compare",
    "direction",
    "load_results",
    "mann_whitney_u",
    "parse_rules",
    "render",
]
