"""The rules' metric vocabulary and arithmetic, function by function (issue 35: mutants of
vitbench/gate/rules.py survived the end-to-end comparisons). Expected values follow from the
rule's definition: ``+`` fails growth, ``-`` a drop, unsigned the metric's bad direction; a
relative rule counts percent of |baseline|."""

from __future__ import annotations

import math

import pytest

from vitbench.gate import RuleError, parse_rules
from vitbench.gate.rules import Rule, direction, is_rate, is_timing_metric, looks_like_metric


@pytest.mark.parametrize("metric, expected", [
    ("throughput_img_s", 1), ("frames_per_s", 1), ("mfu", 1),
    ("latency_p90_s", -1), ("latency_mean_s", -1), ("peak_memory_bytes", -1), ("fvcore_macs", -1),
    ("macs", -1), ("macs_total", -1), ("params", -1), ("flops", -1), ("attn_flops", -1),
    ("elementwise_ops", -1), ("saved_activations", -1),
    ("accuracy", 0), ("latency_iqr_s", 0), ("model", 0),
])
def test_which_way_is_worse(metric, expected):
    assert direction(metric) == expected


@pytest.mark.parametrize("metric, rate, timing", [
    ("throughput_img_s", True, True), ("images_per_s", True, True), ("flops_per_s", True, True),
    ("latency_p50_s", False, True), ("latency_max_s", False, True),
    ("macs", False, False), ("peak_memory_bytes", False, False), ("latency_iqr_s", False, False),
])
def test_rates_and_timing_metrics(metric, rate, timing):
    assert is_rate(metric) is rate
    assert is_timing_metric(metric) is timing


@pytest.mark.parametrize("column, expected", [
    ("macs", True), ("latency_p50_s", True), ("images_per_s", True), ("peak_memory_bytes", True),
    ("memory_limit_bytes", False),    # a setting, though its name reads like a metric
    ("env_gpu_bytes", False), ("accuracy", False), ("batch_size", False),
])
def test_which_columns_look_like_metrics(column, expected):
    assert looks_like_metric(column) is expected


@pytest.mark.parametrize("expression, way", [
    ("params:0", 0), ("throughput:0", 0), ("params:1%", 1), ("throughput:5%", -1), ("accuracy:5%", 0),
    ("params:+1", 1), ("macs:-1", -1), ("throughput:+0", 1),
])
def test_failing_direction(expression, way):
    assert Rule.parse(expression).failing_direction() == way


@pytest.mark.parametrize("expression, baseline, bound", [
    ("throughput:-5%", 100.0, 95.0), ("latency:+5%", 0.01, 0.0105), ("params:2", 10.0, 12.0),
    ("params:10%", -50.0, -45.0),     # percent of |baseline|
    ("params:0", 10.0, None), ("accuracy:5", 10.0, None),
])
def test_boundary(expression, baseline, bound):
    got = Rule.parse(expression).boundary(baseline)
    assert got == (None if bound is None else pytest.approx(bound, rel=1e-12))


@pytest.mark.parametrize("expression, baseline, current, change", [
    ("throughput:-5%", 100.0, 95.0, -5.0), ("params:2", 10.0, 13.0, 3.0), ("params:1%", -200.0, -198.0, 1.0),
    ("macs:+5%", 0.0, 0.0, 0.0), ("macs:+5%", 0.0, 3.0, math.inf), ("macs:+5%", 0.0, -3.0, -math.inf),
])
def test_change(expression, baseline, current, change):
    assert Rule.parse(expression).change(baseline, current) == change


@pytest.mark.parametrize("expression, baseline, current, violated", [
    ("accuracy:5", 10.0, 15.0, False), ("accuracy:5", 10.0, 15.5, True), ("accuracy:5", 10.0, 4.5, True),
    ("params:0", 10.0, 9.0, True), ("params:+0", 10.0, 9.0, False), ("params:-0", 10.0, 9.0, True),
    ("params:0", 10.0, math.nan, True), ("params:0%", 10.0, math.nan, True),   # exact: anything unequal fails
])
def test_unknown_direction_fails_either_way_and_signed_zero_one_way(expression, baseline, current, violated):
    assert Rule.parse(expression).violated(baseline, current) is violated


@pytest.mark.parametrize("expression, text", [
    ("throughput:-5%", "throughput_img_s:-5%"), ("params:0", "params:0"), ("macs:+1.5", "macs:+1.5"),
    ("macs:1e20", "macs:1e+20"), ("macs:999999999999999", "macs:999999999999999"),
    ("macs:1e15", "macs:1000000000000000.0"), (" latency:.5% ", "latency_p50_s:0.5%"),
])
def test_rule_text(expression, text):
    assert str(Rule.parse(expression)) == text


def test_parse_rules_splits_commas_and_refuses_empty_parts():
    assert [str(r) for r in parse_rules(["params:0, macs:+1%", "latency:+5%"])] == \
        ["params:0", "macs:+1%", "latency_p50_s:+5%"]
    assert parse_rules(None) == () and parse_rules([]) == ()
    with pytest.raises(RuleError, match="empty rule"):
        parse_rules(["params:0,"])
    with pytest.raises(RuleError, match="expected METRIC"):
        parse_rules(["params 0"])


def test_rules_on_one_metric_all_apply_and_a_repeated_rule_counts_once(tmp_path):
    from vitbench.gate import compare

    base = [{"model": "m", "batch_size": 1, "params": 100, "macs": 10}]
    cur = [{"model": "m", "batch_size": 1, "params": 101, "macs": 10}]
    result = compare(base, cur, ["params:5%,params:0", "params:0"])
    assert [str(r) for r in result.rules] == ["params:5%", "params:0"]
    (row,) = [r for r in result.rows if r.metric == "params"]
    assert row.verdict == "REGRESSION" and row.failed_rules == ("params:0",)
    assert row.rules == ("params:5%", "params:0")
