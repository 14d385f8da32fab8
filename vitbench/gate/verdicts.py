"""Verdicts: compare a current results set against a baseline, metric by metric.

Rows are matched on their configuration key (:mod:`vitbench.gate.matching`); each metric's
change is checked against rules (:mod:`vitbench.gate.rules`). A timing regression counts only
when the value breaks the rule's threshold *and* the runs show the shift beyond that threshold:
one-sided Welch's t-test on the logarithms of the per-run median step times, H0 "the slowdown is
at most the threshold", p < ``alpha`` (:func:`vitbench.measure.stats.run_shift`). Within-run
samples never decide significance: they cannot see the noise between runs. With fewer than two
runs a side the threshold alone decides, and the verdict says so.

The gate fails (exit 1) on a regression, on baseline configurations missing from the current
results, and on a rule whose metric only one side has (or a ruled value missing in a current
row), unless ``allow_missing_rows`` / ``allow_missing_metrics``. A default rule whose metric
neither side has is "not applicable" (listed, not failing); an explicit one is a usage error.
Environment differences (device, torch, CUDA, CPU, threads) are reported, never failing.

Data only: :mod:`vitbench.reporting.gate` renders a :class:`CompareResult`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from vitbench import row_warnings
from vitbench.errors import InputFileError, SpecError
from vitbench.gate.matching import (
    Group,
    group,
    is_missing,
    key_columns,
    key_text,
    labels,
    number,
    present_columns,
)
from vitbench.gate.result import DEFAULT_ALPHA, CompareResult, EnvDifference, MetricComparison, Verdict
from vitbench.gate.rules import (
    DEFAULT_RULES,
    HEADLINE_METRICS,
    Rule,
    RuleError,
    is_rate,
    is_timing_metric,
    looks_like_metric,
    parse_rules,
)
from vitbench.measure.stats import MIN_RUNS, run_shift
from vitbench.reading import read_results

#: Environment columns compared between the files (plus any other ``env_*`` column).
ENV_COLUMNS = ("env_device_name", "env_torch", "env_cuda", "env_driver", "env_cpu", "env_threads")


# --------------------------------------------------------------------------- loading


def load_results(source: Any, role: str = "results", metrics: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Records of any results source (:func:`vitbench.reading.read_results`), checked to be
    vitbench results: a ``model`` column and at least one metric column (a known metric such
    as ``macs``, or one of ``metrics``, the columns rules name)."""
    metrics = set(metrics)
    wanted = _Wanted(metrics)
    records, metadata = read_results(source, role, wanted)
    is_file = isinstance(source, (str, os.PathLike))
    where = f"{role} file={str(source)!r}" if is_file else f"{role} records"
    if not records:
        raise InputFileError(f"{where}: no records")
    check_columns(set(wanted.header) or {c for r in records for c in r}, where, metrics)
    problems = metadata.get("problems") or [] if isinstance(metadata, dict) else []
    if problems:  # a damaged record would drop its configuration from the comparison unseen
        raise InputFileError(f"{where}: {problems[0]}; the gate compares only whole results (repair or rerun them)")
    return records


def check_columns(columns: set[str], where: str, metrics: set[str]) -> None:
    """A results file's columns hold a ``model`` column and a metric column (a known metric, or
    one of ``metrics``, the columns rules name); else one-line :class:`InputFileError`."""
    if "model" not in columns:
        raise InputFileError(f"{where}: no 'model' column (not a vitbench results file)")
    if not any(looks_like_metric(c) or c in metrics for c in columns):
        raise InputFileError(
            f"{where}: no metric columns (expected e.g. throughput_img_s, latency_p50_s, "
            "peak_memory_bytes, macs, params)"
        )


#: the columns of a results CSV the gate reads (besides ``env_*`` and the ruled metrics): the
#: configuration key, status, warnings, the headline metrics and the per-run timings
READ_COLUMNS = frozenset({
    "model", "spec_key", "img_size", "patch_size", "batch_size", "device", "mode", "precision", "status",
    "warnings", "samples_s", "run_samples_s", "run_medians_s", "vitbench_version", *HEADLINE_METRICS,
})


class _Wanted:
    """The columns :func:`load_results` reads from a CSV file (``name in wanted``); it notes the
    header's names as the reader asks, so the file's columns are known without reading them."""

    def __init__(self, metrics: set[str]) -> None:
        self.metrics = metrics
        self.header: list[str] = []

    def __contains__(self, name: object) -> bool:
        self.header.append(str(name))
        return name in READ_COLUMNS or name in self.metrics or str(name).startswith("env_")


# --------------------------------------------------------------------------- one metric


def _step_time_margin(rule: Rule, metric: str, baseline: float) -> tuple[float, str] | None:
    """The rule's boundary as a ratio of per-step times (current / baseline) and the side that
    fails: a throughput drop of 5% is steps 1/0.95 = 1.053x longer ("greater"). None when no
    step time can break the rule (a drop of more than 100%)."""
    bound = rule.boundary(baseline)
    if bound is None:
        return 1.0, "two-sided"
    if bound <= 0 or baseline <= 0:
        return None
    if is_rate(metric):  # a rate is images per step time: its ratio inverts
        return baseline / bound, "greater" if rule.failing_direction() < 0 else "less"
    return bound / baseline, "greater" if rule.failing_direction() > 0 else "less"


def _significance(
    metric: str, rules: Sequence[Rule], base: Group, cur: Group, baseline: float
) -> tuple[float | None, int, int, str]:
    """(p, runs_base, runs_cur, note) for a timing metric: p of the runs being no further than
    the rule's threshold (the largest over ``rules``; two-sided no-change p without a rule).
    p is None when either side has fewer than :data:`MIN_RUNS` runs."""
    a, b = base.run_medians(), cur.run_medians()
    if len(a) < MIN_RUNS or len(b) < MIN_RUNS:
        runs = lambda n: f"{n} run{'s' * (n != 1)}"  # noqa: E731
        return None, len(a), len(b), (
            f"significance not assessed: {runs(len(a))} in baseline, {runs(len(b))} in current, "
            f"needs {MIN_RUNS}+ a side"
        )
    margins = [m for m in (_step_time_margin(r, metric, baseline) for r in rules) if m is not None]
    p_values = [run_shift(a, b, margin, side).p for margin, side in margins or [(1.0, "two-sided")]]
    return min(p_values), len(a), len(b), ""


def _compare_metric(
    metric: str, rules: Sequence[Rule], base: Group, cur: Group, label: str,
    key: tuple[tuple[str, str], ...], alpha: float, allow_missing: bool,
) -> MetricComparison:
    baseline, current = base.value(metric), cur.value(metric)
    names = tuple(str(r) for r in rules)
    common = dict(configuration=label, key=key, metric=metric, baseline=baseline, current=current, rules=names,
                  n_baseline=base.n_samples(), n_current=cur.n_samples())
    invalid = _why_invalid(metric, base, cur, baseline, current)
    if invalid:
        return MetricComparison(**common, rel_change=None, failed_rules=names or (metric,), p_value=None,
                                verdict=Verdict.INVALID, note=invalid)
    if baseline is None or current is None:
        side = "baseline" if baseline is None else "current"
        missing = bool(rules) and baseline is not None and not allow_missing
        return MetricComparison(**common, rel_change=None, failed_rules=names if missing else (), p_value=None,
                                verdict=Verdict.MISSING if missing else Verdict.NOT_APPLICABLE, note=f"no value in {side}")
    rel = None if baseline == 0 else (current - baseline) / abs(baseline)
    failing = [r for r in rules if r.violated(baseline, current)]
    p, runs_a, runs_b, note = None, 0, 0, ""
    if is_timing_metric(metric):
        # p of the runs' shift being within the threshold of the rules that the values break
        p, runs_a, runs_b, note = _significance(metric, failing or rules, base, cur, baseline)
    verdict, note = _decide(bool(rules), bool(failing), baseline == current, p, alpha, note)
    return MetricComparison(**common, rel_change=rel, failed_rules=tuple(str(r) for r in failing), p_value=p,
                            verdict=verdict, note=note, runs_baseline=runs_a, runs_current=runs_b)


def _why_invalid(metric: str, base: Group, cur: Group, baseline: float | None, current: float | None) -> str | None:
    """Why a side's value cannot be a measurement ("baseline ..." / "current ..."), or None."""
    for side, grouped, value in (("baseline", base, baseline), ("current", cur, current)):
        why = impossible(metric, value)
        if why is None and is_timing_metric(metric):
            why = _impossible_step(grouped)
        if why:
            return f"{side} {why}"
    return None


def _impossible_step(grouped: Group) -> str | None:
    """A recorded per-run median step time that is no measurement (infinite, or over
    :data:`MAX_STEP_S`)."""
    step = max(grouped.run_medians(), default=None)
    if step is not None and not (math.isfinite(step) and step < MAX_STEP_S):
        return f"run_medians_s holds a step of {step:g} s: not a measurement"
    return None


def _decide(ruled: bool, broken: bool, unchanged: bool, p: float | None, alpha: float, note: str) -> tuple[Verdict, str]:
    """(verdict, note): without a rule unchanged / changed; a broken rule is a regression unless
    the runs' p is at least ``alpha`` (the threshold alone decides without p)."""
    if not ruled:
        return (Verdict.UNCHANGED if unchanged else Verdict.CHANGED), ""
    if not broken:
        return Verdict.OK, note
    if p is not None and p >= alpha:
        return Verdict.NOT_SIGNIFICANT, note
    return Verdict.REGRESSION, ("threshold only; " + note if p is None and note else note)


#: a per-run median step time above this (11.6 days) is no measurement
MAX_STEP_S = 1e6


def impossible(metric: str, value: float | int | None) -> str | None:
    """Why a value cannot be a measurement or a count (None when it can): infinite, negative
    (every metric vitbench records is a size, a count, a time or a rate), or a zero time or
    rate."""
    if value is None:
        return None
    if not math.isfinite(value):
        return f"{metric} is {value}: not a finite number"
    if value < 0:
        return f"{metric} is {value}: negative"
    if value == 0 and is_timing_metric(metric):
        return f"{metric} is 0: no step takes no time"
    return None


def _env_differences(base_rows: Sequence[Mapping], cur_rows: Sequence[Mapping]) -> tuple[EnvDifference, ...]:
    both = present_columns(base_rows) & present_columns(cur_rows)
    columns = [c for c in ENV_COLUMNS if c in both]
    columns += sorted(c for c in both if (c.startswith("env_") or c == "vitbench_version") and c not in columns)
    out = []
    for column in columns:
        a = tuple(sorted({key_text(r.get(column)) for r in base_rows} - {""}))
        b = tuple(sorted({key_text(r.get(column)) for r in cur_rows} - {""}))
        if a != b:
            out.append(EnvDifference(column, a, b))
    return tuple(out)


# --------------------------------------------------------------------------- the comparison


def _parse(rules: Any) -> tuple[list[Rule], bool]:
    explicit = rules is not None
    if isinstance(rules, (str, Rule)):
        rules = [rules]
    parsed: list[Rule] = []
    for item in rules if explicit else DEFAULT_RULES:
        parsed += [item] if isinstance(item, Rule) else parse_rules([item])
    return list(dict.fromkeys(parsed)), explicit  # a rule given twice is one rule


#: repeated rows of one configuration whose headline values differ by more than this disagree
DUPLICATE_SPREAD = 0.10


def _spread_duplicates(groups: Mapping[tuple[str, ...], Group], role: str) -> list[str]:
    """Repeated rows of one configuration that disagree (one normal, one at half speed): pooling
    them by the median would hide either; the gate fails and says which."""
    out = []
    for grouped in groups.values():
        if len(grouped.rows) < 2:
            continue
        for metric in HEADLINE_METRICS:
            values = [v for v in (number(r.get(metric)) for r in grouped.rows) if v is not None and math.isfinite(v)]
            if len(values) > 1 and min(values) > 0 and max(values) / min(values) > 1 + DUPLICATE_SPREAD:
                out.append(f"{role}: {grouped.model} appears {len(grouped.rows)} times with {metric} from {min(values):g} "
                           f"to {max(values):g}; give one row per configuration")
                break
    return out


def _check_numeric(rules: Sequence[Rule], records: Sequence[Mapping[str, Any]]) -> None:
    """A rule on a column that holds text or lists (status, model, run_medians_s) would check
    nothing: refused."""
    for rule in rules:
        for record in records:
            value = record.get(rule.metric)
            if is_missing(value):
                continue
            if isinstance(value, bool) or number(value) is None:
                raise RuleError(str(rule), f"{rule.metric!r} is not a numeric column (it holds {str(value)[:40]!r})")
            break


def _sort_rules(
    parsed: Sequence[Rule], explicit: bool, base_named: set[str], cur_named: set[str]
) -> tuple[list[Rule], list[str], list[str]]:
    """(rules both sides can be checked on, missing-metric failures, not-applicable rules)."""
    active, missing, not_applicable = [], [], []
    for rule in parsed:
        sides = [side for side, cols in (("baseline", base_named), ("current", cur_named)) if rule.metric not in cols]
        if not sides:
            active.append(rule)
        elif len(sides) == 2:
            if explicit:
                raise RuleError(str(rule), f"metric {rule.metric!r} is missing from the baseline and current results")
            not_applicable.append(str(rule))
        else:
            missing.append(f"{rule}: metric {rule.metric!r} is missing from the {sides[0]} results")
    return active, missing, not_applicable


def _compare_records(
    baseline: str | os.PathLike | Iterable[Mapping[str, Any]],
    current: str | os.PathLike | Iterable[Mapping[str, Any]],
    rules: Iterable[str | Rule] | None = None,
    *,
    alpha: float = DEFAULT_ALPHA,
    allow_missing_rows: bool = False,
    allow_missing_metrics: bool = False,
) -> CompareResult:
    """:func:`vitbench.gate.compare` on records (the record path: any source, every case); its
    arguments, result and errors are documented there."""
    _check_alpha(alpha)
    base_records, cur_records, active, missing, not_applicable = _load_sides(baseline, current, rules)
    failures: list[str] = []
    warnings: list[str] = []
    if allow_missing_metrics:
        warnings += [f"{m} (allowed: --allow-missing-metrics)" for m in missing]
    else:
        failures += missing

    keys = key_columns(base_records, cur_records)
    base_groups, cur_groups = group(base_records, keys), group(cur_records, keys)
    common = _common_keys(base_groups, cur_groups, keys)
    removed = [k for k in base_groups if k not in cur_groups]
    _membership(base_groups, cur_groups, removed, allow_missing_rows, failures, warnings)

    metrics = _metrics(base_records, cur_records, active)
    names = labels({k: cur_groups[k] for k in common}, keys)
    rows: list[MetricComparison] = []
    for k in common:
        rows += _compare_configuration(
            base_groups[k], cur_groups[k], names[k], tuple(zip(keys, k)), metrics, active, alpha,
            allow_missing_metrics, warnings,
        )
    warnings += _recorded_warnings(common, base_groups, cur_groups, names)
    _closing_checks(rows, active, failures, warnings)
    all_base_labels, all_cur_labels = labels(base_groups, keys), labels(cur_groups, keys)
    return CompareResult(
        rows=tuple(rows), rules=tuple(active), key_columns=keys,
        env_differences=_env_differences([r for k in common for r in base_groups[k].rows],
                                         [r for k in common for r in cur_groups[k].rows]),
        added=tuple(all_cur_labels[k] for k in cur_groups if k not in base_groups),
        removed=tuple(all_base_labels[k] for k in removed),
        warnings=tuple(warnings), alpha=alpha, failures=tuple(failures), not_applicable=tuple(not_applicable),
    )


def _check_alpha(alpha: Any) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise SpecError("alpha", alpha, "must be a number between 0 and 1")


def _common_keys(base_groups: Mapping, cur_groups: Mapping, keys: Sequence[str]) -> list:
    """The configurations both sides have, in the current results' order (none: an input error)."""
    common = [k for k in cur_groups if k in base_groups]
    if not common:
        raise InputFileError(
            f"no common configurations between baseline and current (matched on {', '.join(keys)})"
        )
    return common


def _metrics(base_records: Sequence[Mapping], cur_records: Sequence[Mapping], active: Sequence[Rule]) -> list[str]:
    """The headline metrics both sides have, then the ruled ones."""
    both = present_columns(base_records) & present_columns(cur_records)
    metrics = [m for m in HEADLINE_METRICS if m in both]
    return metrics + list(dict.fromkeys(r.metric for r in active if r.metric not in metrics))


def _load_sides(baseline: Any, current: Any, rules: Any) -> tuple[list, list, list[Rule], list[str], list[str]]:
    """Both sides' records, and the rules sorted into active, missing a side (failures) and not
    applicable; a ruled column that is not numeric is refused."""
    parsed, explicit = _parse(rules)
    named = {r.metric for r in parsed}
    base_records = load_results(baseline, "baseline", named)
    cur_records = load_results(current, "current", named)
    # A column present but empty (every run of it failed) still counts as recorded.
    active, missing, not_applicable = _sort_rules(
        parsed, explicit, {c for r in base_records for c in r}, {c for r in cur_records for c in r}
    )
    _check_numeric(active, base_records + cur_records)
    return base_records, cur_records, active, missing, not_applicable


def _membership(base_groups: Mapping, cur_groups: Mapping, removed: Sequence, allow_missing_rows: bool,
                failures: list[str], warnings: list[str]) -> None:
    """Repeated configurations (pooled, or a failure when their spreads disagree) and baseline
    configurations missing from current (a failure unless allowed)."""
    for role, groups in (("baseline", base_groups), ("current", cur_groups)):
        pooled = sum(1 for g in groups.values() if len(g.rows) > 1)
        if pooled:
            warnings.append(
                f"{role}: {pooled} configuration(s) appear more than once; repeated rows pooled "
                "(median of values; each row's runs count as runs)"
            )
    failures += _spread_duplicates(cur_groups, "current") + _spread_duplicates(base_groups, "baseline")
    if removed:
        text = f"{len(removed)} of {len(base_groups)} baseline configurations missing from current"
        if allow_missing_rows:
            warnings.append(text + " (allowed: --allow-missing-rows)")
        else:
            failures.append(text)


def _compare_configuration(base: Any, cur: Any, name: str, key: tuple, metrics: Sequence[str], active: Sequence[Rule],
                           alpha: float, allow_missing_metrics: bool, warnings: list[str]) -> list[MetricComparison]:
    """The comparisons of one configuration: a status regression (ok before, failed now), a
    warning when either side failed otherwise, else one comparison per metric."""
    base_failed, cur_failed = base.failed(), cur.failed()
    if cur_failed and not base_failed:
        return [MetricComparison(configuration=name, key=key, metric="status", baseline=None, current=None,
                                 rel_change=None, rules=("status:ok",), failed_rules=("status:ok",), p_value=None,
                                 n_baseline=0, n_current=0, verdict=Verdict.REGRESSION,
                                 note=f"ok in baseline, {cur_failed} in current")]
    if cur_failed or base_failed:
        warnings.append(
            f"{name}: status {base_failed or 'ok'} in baseline, {cur_failed or 'ok'} in current; metrics not compared"
        )
        return []
    return [_compare_metric(metric, [r for r in active if r.metric == metric], base, cur, name, key, alpha,
                            allow_missing_metrics) for metric in metrics]


def _closing_checks(rows: Sequence[MetricComparison], active: Sequence[Rule], failures: list[str],
                    warnings: list[str]) -> None:
    """A gate that checked nothing fails; metrics whose significance could not be assessed are
    named."""
    checked = [r for r in rows if r.rules and r.verdict != Verdict.NOT_APPLICABLE]
    if not checked and not failures:
        failures.append(
            "nothing was checked: no rule met a value on both sides (" + (", ".join(str(r) for r in active) or "no rule applies")
            + "); a gate that checked nothing does not pass"
        )
    unassessed = sorted({r.metric for r in rows if "significance not assessed" in r.note and r.rules})
    if unassessed:
        warnings.append(
            f"significance not assessed for {', '.join(unassessed)} in some rows (fewer than "
            f"{MIN_RUNS} runs a side; the samples of one run cannot show the noise between runs): "
            "the threshold alone decided; measure with --runs 5"
        )


def _recorded_warnings(
    common: Sequence[tuple[str, ...]], base_groups: Mapping, cur_groups: Mapping, names: Mapping
) -> list[str]:
    """Warnings recorded with the results (unstable timing, busy machine, ...) travel on."""
    out: list[str] = []
    for k in common:
        for role, grouped in (("baseline", base_groups[k]), ("current", cur_groups[k])):
            lines = [text for row in grouped.rows for text in row_warnings.texts(row.get("warnings"))]
            out += [f"{role} {names[k]}: {text}" for text in dict.fromkeys(lines)]
    return out
