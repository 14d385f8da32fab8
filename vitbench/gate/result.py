"""What a comparison found, as data: one :class:`MetricComparison` per configuration and
metric, environment differences, and the :class:`CompareResult` with its verdict (``passed``,
``exit_code``). Rendering: :mod:`vitbench.reporting.gate`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from vitbench.gate.rules import Rule, is_rate, is_timing_metric
from vitbench.results import SCHEMA_VERSION

#: Significance level for timing metrics.
DEFAULT_ALPHA = 0.05


class Verdict(str, Enum):
    """What the gate found for one metric of one configuration. A member is its text (``str``
    mix-in): it equals, hashes, formats and serialises (JSON, CSV, JUnit, markdown) as the text
    files have always held, e.g. ``Verdict.NOT_SIGNIFICANT == "not significant"``."""

    REGRESSION = "REGRESSION"            # a rule broken, beyond the runs' noise (or no runs to tell)
    MISSING = "MISSING"                  # a ruled metric with a baseline value and none in current
    INVALID = "INVALID"                  # a value no measurement gives (negative, infinite, a zero time)
    NOT_SIGNIFICANT = "not significant"  # a rule broken, but not beyond the noise between runs
    OK = "ok"                            # every rule holds
    CHANGED = "changed"                  # no rule for the metric, and its value moved
    UNCHANGED = "unchanged"              # no rule for the metric, and its value is the same
    NOT_APPLICABLE = "n/a"               # nothing to compare (a side has no value, not failing)

    # the text wherever it is shown: str(), format(), f-strings and % give "ok", never "Verdict.OK"
    # (what enum.StrEnum does from Python 3.11; 3.12 made format() follow str())
    __str__ = str.__str__
    __format__ = str.__format__

    @property
    def fails(self) -> bool:
        """Whether this verdict fails the gate (:data:`FAILING`)."""
        return self in FAILING


#: Verdicts that fail the gate (INVALID: an impossible value, e.g. a throughput of 0 or inf).
FAILING = (Verdict.REGRESSION, Verdict.MISSING, Verdict.INVALID)

#: How significance is assessed (shown in reports).
TEST_NAME = "one-sided Welch's t-test on log per-run median step times, against the rule's threshold"


def _percent(fraction: float) -> str:
    if abs(fraction) >= 0.001:
        return f"{fraction:+.1%}"
    return f"{100 * fraction:+.2g}%"


@dataclass(frozen=True, kw_only=True)
class MetricComparison:
    """One metric of one configuration: values, change, significance and verdict (built with
    keywords).

    ``verdict`` is a :class:`Verdict` (its text given here is taken too): ``REGRESSION``,
    ``MISSING`` (a ruled metric has a baseline value but none in the current row), ``INVALID`` (a
    value no measurement can give: negative, infinite, or a zero throughput or latency), ``not
    significant`` (threshold exceeded, but not beyond the between-run noise), ``ok`` (rules
    hold), ``changed``/``unchanged`` (no rule for the metric), ``n/a`` (nothing to compare).
    ``n_baseline``/``n_current`` count raw per-step samples; ``runs_baseline``/``runs_current``
    count the runs the significance test used."""

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
    verdict: Verdict
    note: str = ""
    runs_baseline: int = 0
    runs_current: int = 0

    def __post_init__(self) -> None:
        if type(self.verdict) is not Verdict:  # a verdict's text: its member (an unknown one: ValueError)
            object.__setattr__(self, "verdict", Verdict(self.verdict))

    @property
    def regression(self) -> bool:
        return self.verdict is Verdict.REGRESSION

    @property
    def failed(self) -> bool:
        return self.verdict.fails

    @property
    def ratio_text(self) -> str:
        """'1.25x slower' / '1.10x faster' for timing metrics; '' otherwise."""
        if not is_timing_metric(self.metric) or not self.baseline or not self.current:
            return ""
        if self.baseline <= 0 or self.current <= 0:
            return ""
        slower = self.baseline / self.current if is_rate(self.metric) else self.current / self.baseline
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
            delta = self.current - self.baseline
            return f"{delta:+,} (from 0)" if isinstance(delta, int) else f"{delta:+,g} (from 0)"
        percent = _percent(self.rel_change)
        if is_timing_metric(self.metric):
            ratio = self.ratio_text
            return f"{percent} ({ratio})" if ratio else percent
        delta = self.current - self.baseline  # two ints: exact (as a float it may overflow)
        if (isinstance(delta, int) or float(delta).is_integer()) and not self.metric.endswith("_s"):
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
            "runs_baseline": self.runs_baseline,
            "runs_current": self.runs_current,
            "n_samples_baseline": self.n_baseline,
            "n_samples_current": self.n_current,
            "verdict": self.verdict.value,
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
    """Everything a comparison found. ``failures``: reasons the gate fails besides the rows'
    verdicts (missing configurations, missing metric columns); ``not_applicable``: default
    rules whose metric neither side has."""

    rows: Sequence[MetricComparison]  # a tuple, or the columnar gate's rows (built one at a time)
    rules: tuple[Rule, ...]
    key_columns: tuple[str, ...]
    env_differences: tuple[EnvDifference, ...] = ()
    added: Sequence[str] = ()
    removed: Sequence[str] = ()
    warnings: tuple[str, ...] = ()
    alpha: float = DEFAULT_ALPHA
    failures: tuple[str, ...] = ()
    not_applicable: tuple[str, ...] = ()

    @property
    def regressions(self) -> tuple[MetricComparison, ...]:
        if hasattr(self.rows, "where"):  # the columnar gate's rows: found on its arrays
            return self.rows.where((Verdict.REGRESSION,))
        return tuple(r for r in self.rows if r.regression)

    @property
    def failed_rows(self) -> tuple[MetricComparison, ...]:
        """Rows whose verdict fails the gate (REGRESSION, MISSING, INVALID)."""
        if hasattr(self.rows, "where"):
            return self.rows.where(FAILING)
        return tuple(r for r in self.rows if r.failed)

    def configurations(self) -> int:
        """How many configurations the rows compare."""
        if hasattr(self.rows, "configurations"):
            return self.rows.configurations()
        return len({r.configuration for r in self.rows})

    @property
    def passed(self) -> bool:
        return not self.failed_rows and not self.failures

    @property
    def exit_code(self) -> int:
        """0 pass, 1 a regression, a missing configuration or a missing metric."""
        return 0 if self.passed else 1

    def counts(self) -> dict[Verdict, int]:
        """Rows per verdict, in the order each verdict first appears."""
        if hasattr(self.rows, "verdict_counts"):
            return self.rows.verdict_counts()
        out: dict[str, int] = {}
        for row in self.rows:
            out[row.verdict] = out.get(row.verdict, 0) + 1
        return out

    def as_dict(self, rows: bool = True) -> dict[str, Any]:
        """Everything as JSON-ready data; ``rows=False``: ``rows`` and ``regressions`` left empty
        (a writer that streams them)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "passed": self.passed,
            "exit_code": self.exit_code,
            "counts": {verdict.value: n for verdict, n in self.counts().items()},
            "alpha": self.alpha,
            "test": TEST_NAME,
            "rules": [str(r) for r in self.rules],
            "not_applicable": list(self.not_applicable),
            "key_columns": list(self.key_columns),
            "failures": list(self.failures),
            "rows": [r.as_dict() for r in self.rows] if rows else [],
            "regressions": [r.as_dict() for r in self.regressions] if rows else [],
            "env_differences": [
                {"column": d.column, "baseline": list(d.baseline), "current": list(d.current)}
                for d in self.env_differences
            ],
            "added": list(self.added),
            "removed": list(self.removed),
            "warnings": list(self.warnings),
        }
