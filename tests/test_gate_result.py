"""What a comparison found (:mod:`vitbench.gate.result`).

The verdicts are an enum (:class:`vitbench.gate.Verdict`) whose members are their text: every
way a verdict is shown (``str``, ``format``, f-strings, ``%``, JSON, CSV, JUnit XML, the table
and markdown) gives the text files held before it was an enum, on every Python vitbench supports
(3.10 has no ``enum.StrEnum``; 3.12 changed ``format()`` of a ``str`` mix-in enum). Torch-free
and fast: run it under each interpreter. Then the texts of a change (percent, exact counts,
"1.25x slower") and the result's verdict, counts and JSON, worked out by hand."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET

import pytest

from vitbench.gate import FAILING, CompareResult, EnvDifference, MetricComparison, Rule, Verdict, compare
from vitbench.reporting.gate import render

#: the texts files and reports have always held, in the gate's order
TEXTS = ("REGRESSION", "MISSING", "INVALID", "not significant", "ok", "changed", "unchanged", "n/a")


def test_each_member_shows_as_its_text_everywhere():
    assert [member.value for member in Verdict] == list(TEXTS)
    for member, text in zip(Verdict, TEXTS):
        assert member == text and hash(member) == hash(text)
        assert str(member) == text and type(str(member)) is str
        assert f"{member}" == text and format(member, ">18") == format(text, ">18")
        assert "%s" % member == text and "{:}".format(member) == text  # noqa: UP031, UP032 (the two old ways, on purpose)
        assert json.dumps(member) == json.dumps(text)
        assert json.dumps({member: 1}, indent=2) == json.dumps({text: 1}, indent=2)
        assert Verdict(text) is member


def test_a_dict_of_texts_finds_members_and_back():
    counts = {Verdict.REGRESSION: 2, Verdict.NOT_SIGNIFICANT: 1}
    assert counts.get("REGRESSION") == 2 and counts.get("not significant") == 1
    assert {"ok": 3}[Verdict.OK] == 3


def test_exactly_regression_missing_and_invalid_fail():
    assert [v for v in Verdict if v.fails] == [Verdict.REGRESSION, Verdict.MISSING, Verdict.INVALID]
    assert FAILING == (Verdict.REGRESSION, Verdict.MISSING, Verdict.INVALID)


def _comparison(**changes):
    fields = dict(configuration="m", key=(("model", "m"),), metric="params", baseline=10, current=11,
                  rel_change=0.1, rules=("params:0",), failed_rules=("params:0",), p_value=None,
                  n_baseline=0, n_current=0, verdict=Verdict.REGRESSION)
    return MetricComparison(**{**fields, **changes})


def test_a_comparison_takes_a_verdicts_text_and_refuses_another():
    row = _comparison(verdict="not significant")
    assert row.verdict is Verdict.NOT_SIGNIFICANT and not row.failed and not row.regression
    assert _comparison(verdict="MISSING").failed
    with pytest.raises(ValueError):
        _comparison(verdict="Regression")


def test_a_comparison_is_built_with_keywords_only():
    with pytest.raises(TypeError):
        MetricComparison("m", (), "params", 10, 11, 0.1, (), (), None, 0, 0, "ok")  # type: ignore[misc]


def _result():
    def row(model, params, throughput):
        return {"model": model, "batch_size": 1, "params": params, "macs": 5, "throughput_img_s": throughput}

    base = [row("a", 10, 100.0), row("b", 10, 100.0), row("c", 10, None)]
    cur = [row("a", 11, 100.0), row("b", 10, None), row("c", 10, 100.0)]
    return compare(base, cur, ["params:0", "throughput:-5%"])


def test_the_output_formats_hold_the_texts():
    result = _result()
    texts = ["ok", "REGRESSION", "unchanged", "MISSING", "ok", "unchanged", "n/a", "ok", "unchanged"]
    assert [(r.metric, r.verdict) for r in result.rows] == list(zip(
        ["throughput_img_s", "params", "macs"] * 3, texts))
    document = json.loads(render(result, "json"))
    assert document["counts"] == {"ok": 3, "REGRESSION": 1, "unchanged": 3, "MISSING": 1, "n/a": 1}
    assert [r["verdict"] for r in document["rows"]] == texts
    assert [r["verdict"] for r in document["regressions"]] == ["REGRESSION"]
    assert [r["verdict"] for r in csv.DictReader(io.StringIO(render(result, "csv")))] == texts
    junit = ET.fromstring(render(result, "junit"))
    assert sorted((f.get("type"), f.get("message").split(":")[0]) for f in junit.iter("failure")) == [
        ("MISSING", "MISSING"), ("REGRESSION", "REGRESSION")]
    assert [s.get("message") for s in junit.iter("skipped")] == ["no value in baseline"]
    assert [o.text.split(":")[0] for o in junit.iter("system-out")] == ["ok", "ok", "ok"]
    table = render(result, "table")
    assert "FAIL: 1 regression, 1 missing, 0 not significant, 3 ok" in table
    for text in (table, render(result, "markdown")):
        assert "Verdict." not in text and " MISSING " in text.replace("|", " ")


# --------------------------------------------------------------------------- the texts of a change


@pytest.mark.parametrize("metric, baseline, current, ratio", [
    ("latency_p50_s", 0.010, 0.0125, "1.25x slower"), ("latency_p50_s", 0.0125, 0.010, "1.25x faster"),
    ("throughput_img_s", 100.0, 80.0, "1.25x slower"), ("throughput_img_s", 80.0, 100.0, "1.25x faster"),
    ("throughput_img_s", 100.0, 100.4, "same speed"), ("latency_p50_s", 1.0, 1.00499, "same speed"),
    ("latency_p50_s", 1.0, 1.006, "1.01x slower"), ("latency_p50_s", 1.0, 0.994, "1.01x faster"),
    ("latency_p50_s", 0.0, 0.5, ""), ("latency_p50_s", 0.5, 0.0, ""), ("latency_p50_s", None, 0.5, ""),
    ("latency_p50_s", -1.0, 0.5, ""), ("latency_p50_s", 0.5, -1.0, ""), ("params", 10, 20, ""),
])
def test_a_timing_change_reads_as_slower_or_faster(metric, baseline, current, ratio):
    assert _comparison(metric=metric, baseline=baseline, current=current).ratio_text == ratio


@pytest.mark.parametrize("metric, baseline, current, rel, text", [
    ("latency_p50_s", 0.010, 0.0125, 0.25, "+25.0% (1.25x slower)"),
    ("throughput_img_s", 100.0, 100.05, 0.0005, "+0.05% (same speed)"),
    ("throughput_img_s", 100.0, 100.00001, 1e-7, "+1e-05% (same speed)"),
    ("latency_p50_s", 0.0, 0.5, None, "+0.5 (from 0)"),
    ("latency_p50_s", -0.5, 0.5, -2.0, "-200.0%"),           # no ratio for an impossible time
    ("params", 1000, 1024, 0.024, "+24 (+2.4%)"), ("params", 1024, 1000, -0.0234375, "-24 (-2.3%)"),
    ("params", 1000.0, 1024.0, 0.024, "+24 (+2.4%)"),        # integers read as floats
    ("params", 0, 1024, None, "+1,024 (from 0)"), ("peak_memory_bytes", 10, 10, 0.0, "0%"),
    ("params", 1000, 1000.5, 0.0005, "+0.05%"), ("elapsed_s", 2.0, 3.0, 0.5, "+50.0%"),
    ("params", None, 5, None, ""), ("params", 5, None, None, ""),
])
def test_the_change_in_words(metric, baseline, current, rel, text):
    assert _comparison(metric=metric, baseline=baseline, current=current, rel_change=rel).change_text == text


def test_a_comparison_as_data():
    row = _comparison(metric="params", baseline=1000, current=1024, rel_change=0.024, p_value=0.01, runs_baseline=3,
                      runs_current=4, n_baseline=30, n_current=40, note="n")
    assert row.as_dict() == {
        "configuration": "m", "key": {"model": "m"}, "metric": "params", "baseline": 1000, "current": 1024,
        "rel_change": 0.024, "change": "+24 (+2.4%)", "rules": ["params:0"], "failed_rules": ["params:0"],
        "p_value": 0.01, "runs_baseline": 3, "runs_current": 4, "n_samples_baseline": 30, "n_samples_current": 40,
        "verdict": "REGRESSION", "note": "n"}
    assert type(row.as_dict()["verdict"]) is str


# --------------------------------------------------------------------------- the result


def test_an_environment_difference_in_words():
    assert str(EnvDifference("env_torch", ("2.1", "2.2"), ())) == "env_torch: baseline 2.1, 2.2; current -"
    assert str(EnvDifference("env_cpu", (), ("x",))) == "env_cpu: baseline -; current x"


def _made(verdicts, failures=()):
    rows = tuple(_comparison(configuration=f"c{i // 2}", verdict=v) for i, v in enumerate(verdicts))
    return CompareResult(rows=rows, rules=(Rule.parse("params:0"),), key_columns=("model",), failures=failures)


def test_the_result_fails_on_a_failing_verdict_or_a_failure_of_its_own():
    passing = _made(["ok", "not significant", "changed", "unchanged", "n/a"])
    assert passing.passed and passing.exit_code == 0 and passing.failed_rows == () and passing.regressions == ()
    for verdict in ("REGRESSION", "MISSING", "INVALID"):
        failing = _made(["ok", verdict])
        assert not failing.passed and failing.exit_code == 1
        assert [r.verdict for r in failing.failed_rows] == [verdict]
        assert [r.verdict for r in failing.regressions] == (["REGRESSION"] if verdict == "REGRESSION" else [])
    assert _made(["ok"], failures=("1 of 2 baseline configurations missing from current",)).exit_code == 1


def test_the_result_counts_verdicts_in_order_of_appearance_and_configurations():
    result = _made(["ok", "REGRESSION", "ok", "unchanged", "REGRESSION"])
    assert list(result.counts().items()) == [("ok", 2), ("REGRESSION", 2), ("unchanged", 1)]
    assert result.configurations() == 3


def test_the_result_as_data():
    from vitbench.results import SCHEMA_VERSION

    result = CompareResult(rows=(_comparison(verdict="ok"),), rules=(Rule.parse("params:0"),), key_columns=("model",),
                           env_differences=(EnvDifference("env_torch", ("2.1",), ("2.2",)),), added=("a",),
                           removed=("r",), warnings=("w",), alpha=0.01, failures=("f",), not_applicable=("macs:0",))
    document = result.as_dict()
    assert document == {
        "schema_version": SCHEMA_VERSION, "passed": False, "exit_code": 1, "counts": {"ok": 1}, "alpha": 0.01,
        "test": "one-sided Welch's t-test on log per-run median step times, against the rule's threshold",
        "rules": ["params:0"], "not_applicable": ["macs:0"], "key_columns": ["model"], "failures": ["f"],
        "rows": [result.rows[0].as_dict()], "regressions": [],
        "env_differences": [{"column": "env_torch", "baseline": ["2.1"], "current": ["2.2"]}],
        "added": ["a"], "removed": ["r"], "warnings": ["w"]}
    assert result.as_dict(rows=False)["rows"] == [] == result.as_dict(rows=False)["regressions"]
    assert _made(["REGRESSION"]).as_dict()["regressions"] == [_made(["REGRESSION"]).rows[0].as_dict()]
