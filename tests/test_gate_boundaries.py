"""The gate at its boundaries: the cases mutation testing found untested (issue: a codebase the
next engineer can change safely). Expected values are computed here independently (scipy's
Welch test on the logarithms, the rules' arithmetic by hand), never read back from the gate."""

from __future__ import annotations

import math
import statistics

import pytest
from scipy import stats

from vitbench.errors import InputFileError, SpecError
from vitbench.gate import RuleError, compare, parse_rules
from vitbench.measure.stats import MIN_RUNS

BASE_RUNS = [0.0100, 0.0104, 0.0097, 0.0103, 0.0099]


def record(run_medians=None, model="vit-ti/16", **values):
    """One result row; with ``run_medians`` also the per-run columns a ``--runs N`` row has."""
    row = {"model": model, "img_size": 224, "batch_size": 8, "device": "cpu", "mode": "infer", "precision": "fp32",
           "status": "ok", "params": 1000, "macs": 8000}
    if run_medians is not None:
        samples = [m for m in run_medians for _ in range(3)]
        row.update(runs=len(run_medians), run_medians_s=list(run_medians), run_samples_s=[[m] * 3 for m in run_medians],
                   samples_s=samples, n_samples=len(samples), latency_p50_s=statistics.median(samples))
    row.update(values)
    return row


def verdict(result, metric):
    (row,) = [r for r in result.rows if r.metric == metric]
    return row


def welch_p(base, current, margin):
    """p of H0 "current is at most ``margin`` times base": one-sided Welch on the logarithms."""
    log_b = [math.log(x) - math.log(margin) for x in current]
    return stats.ttest_ind(log_b, [math.log(x) for x in base], equal_var=False, alternative="greater").pvalue


def test_a_slowdown_beyond_the_threshold_but_not_beyond_the_noise_is_not_significant():
    slower = [m * 1.07 for m in BASE_RUNS]
    row = verdict(compare([record(BASE_RUNS)], [record(slower)], ["latency_p50:+5%"]), "latency_p50_s")
    # the test is against the rule's margin (1.05), not against no change at all
    assert row.p_value == pytest.approx(welch_p(BASE_RUNS, slower, 1.05), rel=1e-9)
    assert row.p_value > 0.1 and welch_p(BASE_RUNS, slower, 1.0) < 0.01
    # scipy on the stated numbers: p 0.1640 against the margin (0.0029 against no change)
    assert row.p_value == pytest.approx(0.1640, abs=5e-4)
    assert row.verdict == "not significant"


def test_alpha_given_through_the_api_decides():
    slower = [m * 1.07 for m in BASE_RUNS]
    p = welch_p(BASE_RUNS, slower, 1.05)
    assert 0.05 < p < 0.2
    assert verdict(compare([record(BASE_RUNS)], [record(slower)], ["latency_p50:+5%"], alpha=0.2), "latency_p50_s").verdict == "REGRESSION"
    assert verdict(compare([record(BASE_RUNS)], [record(slower)], ["latency_p50:+5%"], alpha=0.05), "latency_p50_s").verdict == "not significant"


def test_exactly_min_runs_a_side_is_tested_and_one_fewer_is_not():
    assert MIN_RUNS == 2
    base, slower = [0.0100, 0.0101], [0.0200, 0.0202]
    row = verdict(compare([record(base)], [record(slower)], ["latency_p50:+5%"]), "latency_p50_s")
    assert row.p_value == pytest.approx(welch_p(base, slower, 1.05), rel=1e-9) and row.verdict == "REGRESSION"
    assert (row.runs_baseline, row.runs_current) == (2, 2)
    one = verdict(compare([record([0.0100])], [record([0.0200])], ["latency_p50:+5%"]), "latency_p50_s")
    assert one.p_value is None and "significance not assessed" in one.note and one.verdict == "REGRESSION"


@pytest.mark.parametrize("current, expected", [(95.0, "ok"), (94.99, "REGRESSION"), (100.0, "ok"), (120.0, "ok")])
def test_a_throughput_drop_of_exactly_the_threshold_passes(current, expected):
    """throughput:-5% fails a drop of *more than* 5%: 100 -> 95 is exactly 5%."""
    result = compare([record(throughput_img_s=100.0)], [record(throughput_img_s=current)], ["throughput:-5%"])
    assert verdict(result, "throughput_img_s").verdict == expected


@pytest.mark.parametrize("params, expected", [(980, "ok"), (1000, "ok"), (1010, "ok"), (1011, "REGRESSION"), (1020, "REGRESSION")])
def test_an_unsigned_relative_rule_fails_only_in_the_metrics_bad_direction(params, expected):
    """params:1%: more parameters is the bad direction; a 2% decrease passes, 1% more is the edge."""
    result = compare([record(params=1000)], [record(params=params)], ["params:1%"])
    assert verdict(result, "params").verdict == expected


@pytest.mark.parametrize("rule", ["macs:1e999", "macs:+1e999%", "macs:nan", "macs:-inf"])
def test_a_threshold_that_is_not_a_finite_number_is_refused(rule):
    with pytest.raises(RuleError, match=r"--fail-on='macs:"):
        parse_rules([rule])


@pytest.mark.parametrize("current, expected", [(0, "ok"), (10, "REGRESSION")])
def test_a_relative_rule_at_a_zero_baseline_fails_any_growth(current, expected):
    """+5% of nothing is nothing: from 0, any growth breaks macs:+5%."""
    result = compare([record(macs=0)], [record(macs=current)], ["macs:+5%"])
    assert verdict(result, "macs").verdict == expected


def test_repeated_rows_with_value_zero_compare_as_zero():
    rows = [record(macs=0), record(macs=0)]
    result = compare(rows, rows, ["macs:0"])
    assert result.exit_code == 0
    assert all(r.baseline == 0 and r.current == 0 for r in result.rows if r.metric == "macs")


@pytest.mark.parametrize("alpha", [0, 1, 1.5, -0.05, True, "0.05", None])
def test_alpha_outside_the_open_unit_interval_is_refused(alpha):
    with pytest.raises(SpecError, match="alpha"):
        compare([record()], [record()], ["params:0"], alpha=alpha)


def test_alpha_just_inside_the_interval_is_taken():
    assert compare([record()], [record()], ["params:0"], alpha=0.999).alpha == 0.999


@pytest.mark.parametrize("side", ["baseline", "current"])
def test_an_empty_side_is_refused_as_having_no_records(side):
    sides = {"baseline": [record()], "current": [record()], side: []}
    with pytest.raises(InputFileError, match=f"{side} records: no records"):
        compare(sides["baseline"], sides["current"], ["params:0"])


@pytest.mark.parametrize("base_status, cur_status", [("error", "error"), ("oom", "ok")])
def test_a_configuration_failed_on_either_side_is_named_not_compared(base_status, cur_status):
    other = record(model="vit-s/16")
    result = compare([record(status=base_status), other], [record(status=cur_status, params=5), other], ["params:0"])
    assert [r.configuration.split()[0] for r in result.rows if r.metric == "params"] == ["vit-s/16"]
    assert any(w.startswith("vit-ti/16") and f"status {base_status} in baseline, {cur_status} in current; "
               "metrics not compared" in w for w in result.warnings)
    assert result.exit_code == 0


@pytest.mark.parametrize("rule", ["throughput:-100%", "throughput:-150%"])
def test_a_throughput_rule_no_step_time_can_break_is_ok(rule):
    """A drop of 100% or more would need steps of infinite (or negative) time: no margin on the
    runs exists, and the halved throughput passes."""
    slower = [2 * m for m in BASE_RUNS]
    result = compare([record(BASE_RUNS, throughput_img_s=800.0)], [record(slower, throughput_img_s=400.0)], [rule])
    assert verdict(result, "throughput_img_s").verdict == "ok" and result.exit_code == 0


def test_a_p_value_equal_to_alpha_is_not_significant():
    """Significant means p < alpha: at p == alpha the runs do not show the shift."""
    slower = [m * 1.07 for m in BASE_RUNS]
    p = verdict(compare([record(BASE_RUNS)], [record(slower)], ["latency_p50:+5%"]), "latency_p50_s").p_value
    assert verdict(compare([record(BASE_RUNS)], [record(slower)], ["latency_p50:+5%"], alpha=p),
                   "latency_p50_s").verdict == "not significant"


def test_repeated_rows_that_disagree_below_one_second_fail():
    """0.010 s and 0.020 s for one configuration: a 2x spread, whatever the unit's size."""
    rows = [record(latency_p50_s=0.010), record(latency_p50_s=0.020)]
    result = compare(rows, [record(latency_p50_s=0.010)], ["params:0"])
    assert result.exit_code == 1
    assert any("appears 2 times with latency_p50_s from 0.01 to 0.02" in f for f in result.failures)


def test_a_status_regression_row_has_no_samples():
    result = compare([record()], [record(status="error")], ["params:0"])
    (row,) = result.rows
    assert (row.metric, row.verdict, row.failed_rules) == ("status", "REGRESSION", ("status:ok",))
    assert (row.n_baseline, row.n_current, row.p_value) == (0, 0, None)
    assert row.note == "ok in baseline, error in current"


def test_two_rules_on_one_metric_give_one_row_judged_by_both():
    # latency_mean is no headline metric: it is compared only because rules name it, once
    base, cur = [record(latency_mean_s=0.010)], [record(latency_mean_s=0.012)]
    result = compare(base, cur, ["latency_mean:+5%", "latency_mean:+50%"])
    rows = [r for r in result.rows if r.metric == "latency_mean_s"]
    assert len(rows) == 1
    assert rows[0].verdict == "REGRESSION" and tuple(rows[0].failed_rules) == ("latency_mean_s:+5%",)


def test_change_text_of_integers_no_float_holds():
    """Two counts a float holds whose difference it does not (-1.7e308 to +1.7e308, read from a
    CSV as exact integers): the change is written exactly, never an OverflowError (exit 3)."""
    from vitbench.gate.result import MetricComparison

    low, high = -17 * 10**307, 17 * 10**307

    def comparison(rel_change):
        return MetricComparison(configuration="m", key=(), metric="params", baseline=low, current=high,
                                rel_change=rel_change, rules=(), failed_rules=(), p_value=None,
                                n_baseline=0, n_current=0, verdict="changed")

    assert comparison(-2.0).change_text == f"+{2 * high:,} (-200.0%)"
    assert comparison(None).change_text == f"+{2 * high:,} (from 0)"
