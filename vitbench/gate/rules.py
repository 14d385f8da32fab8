"""Regression rules: ``METRIC:[+|-]N%`` expressions, metric aliases and which way is worse.

Pure data and functions; nothing here reads files or renders.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from vitbench.errors import VitbenchError

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
        "runs", "run_medians_s", "run_samples_s", "run_cv", "memory_limit_bytes", "timeout_s",
        "steps_per_sample", "reference", "macs_source", "overrides", "id", "index", "study",
        "completed_at", "elapsed_s",
    }
)

_HIGHER_IS_BETTER = frozenset({"throughput_img_s", "achieved_flops_per_s", "flops_per_s", "mfu"})
_LATENCY = re.compile(r"^latency_(p\d+|mean|median|min|max)_s$")
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


def is_rate(metric: str) -> bool:
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


def looks_like_metric(column: str) -> bool:
    """A column a rule may gate without being named: a known metric by its name."""
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

    def boundary(self, baseline: float) -> float | None:
        """The value beyond which the rule fails, on its failing side (None when either side
        fails: an exact rule, or a metric of unknown direction)."""
        way = self.failing_direction()
        if self.exact or not way:
            return None
        step = self.threshold * abs(baseline) / 100 if self.relative else self.threshold
        return baseline + way * step

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
