"""`vitbench compare`: rules, significance, matching, file errors and output formats.

Results are synthetic records written to tmp_path: several runs of per-step samples with
realistic noise, and metrics derived from them the way the measurement harness derives them
(throughput = batch / median step time, latency = median step time, one median per run).
"""

from __future__ import annotations

import json
import random
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vitbench.cli import main
from vitbench.errors import InputFileError
from vitbench.gate import DEFAULT_RULES, CompareResult, Rule, RuleError, compare, parse_rules
from vitbench.reporting.gate import render
from vitbench.results import write_csv, write_json

BATCH = 8
RUNS = 5


def measured(model="vit-ti/16", step_s=0.010, noise=0.01, n=30, seed=0, runs=RUNS, **extra):
    """One measured record: ``runs`` runs of ``n // runs`` per-step times around ``step_s`` with
    relative noise ``noise`` (within and between runs), as ``vitbench profile --runs`` pools them."""
    rng = random.Random(seed)
    per_run = []
    for _ in range(runs):
        level = step_s * (1 + rng.gauss(0, noise))  # this run's own speed (between-run noise)
        per_run.append([level * (1 + rng.gauss(0, noise)) for _ in range(n // runs)])
    samples = [x for run in per_run for x in run]
    median = statistics.median(samples)
    record = {
        "model": model,
        "kind": "vit",
        "spec_key": json.dumps({"model": model}),
        "img_size": 224,
        "patch_size": 16,
        "batch_size": BATCH,
        "device": "cpu",
        "mode": "infer",
        "precision": "fp32",
        "status": "ok",
        "throughput_img_s": BATCH / median,
        "latency_p50_s": median,
        "latency_p90_s": statistics.quantiles(samples, n=10)[-1],
        "peak_memory_bytes": 200 * 2**20,
        "params": 5_717_416,
        "macs": 1_258_219_008 * BATCH,
        "n_samples": len(samples),
        "samples_s": samples,
        "runs": runs,
        "run_medians_s": [statistics.median(run) for run in per_run],
        "run_samples_s": per_run,
        "env_device_name": "cpu",
        "env_torch": "2.14.1",
        "env_threads": 2,
    }
    record.update(extra)
    return record


def write(path, records, fmt=None):
    """CSV (list cells JSON-encoded, as the harness writes them) or versioned JSON."""
    fmt = fmt or path.suffix.lstrip(".")
    if fmt == "json":
        write_json({"schema_version": 1, "records": records}, path)
    else:
        write_csv(records, path)
    return path


def single_run(**kwargs):
    """A record of ONE run (``--runs 1``): no per-run columns beyond its own samples."""
    record = measured(runs=1, **kwargs)
    del record["run_medians_s"], record["run_samples_s"]
    return record


def slower_factor(text):
    """'1.25x slower' -> 1.25; '1.25x faster' -> 0.8."""
    factor, _, word = text.partition("x ")
    return float(factor) if word == "slower" else 1 / float(factor)


def run_cli(capsys, *argv):
    code = main(["compare", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- the gate


@pytest.mark.parametrize("suffix", ["csv", "json"])
def test_twenty_percent_throughput_drop_fails(tmp_path, capsys, suffix):
    base = write(tmp_path / f"base.{suffix}", [measured(seed=1)])
    # 20% fewer images per second = every step 1.25x longer.
    cur = write(tmp_path / f"cur.{suffix}", [measured(step_s=0.0125, seed=2)])
    code, out, err = run_cli(capsys, base, cur, "--fail-on", "throughput:-5%")
    assert code == 1, out + err
    assert "REGRESSION" in out
    assert "1.25x slower" in out

    result = compare(base, cur, ["throughput:-5%"])
    (row,) = result.regressions
    assert row.metric == "throughput_img_s"
    assert row.rel_change == pytest.approx(-0.20, abs=0.01)
    assert row.p_value < 1e-6  # 5 vs 5 runs (1% noise) that do not overlap at all
    assert result.exit_code == 1


def test_one_percent_change_within_noise_passes(tmp_path, capsys):
    base = write(tmp_path / "base.csv", [measured(seed=1)])
    cur = write(tmp_path / "cur.csv", [measured(step_s=0.0101, seed=2)])
    code, out, err = run_cli(capsys, base, cur, "--fail-on", "throughput:-5%", "--fail-on", "latency_p50:+5%")
    assert code == 0, out + err
    assert "PASS" in out
    result = compare(base, cur, ["throughput:-5%", "latency_p50:+5%"])
    assert {r.verdict for r in result.rows if r.rules} == {"ok"}


def test_change_beyond_threshold_but_within_noise_is_not_significant(tmp_path):
    noisy = [0.010, 0.012, 0.008, 0.011, 0.009]  # +-20% run-to-run noise
    base = write(tmp_path / "base.csv", [measured(run_medians_s=noisy, throughput_img_s=BATCH / 0.010)])
    slower = [x * 1.07 for x in noisy[1:] + noisy[:1]]
    cur = write(tmp_path / "cur.csv", [measured(run_medians_s=slower, throughput_img_s=BATCH / 0.0107)])
    result = compare(base, cur, ["throughput:-5%"])
    (row,) = [r for r in result.rows if r.metric == "throughput_img_s"]
    assert row.failed_rules == ("throughput_img_s:-5%",)  # the threshold alone would fail it
    assert row.p_value > 0.05
    assert row.verdict == "not significant"
    assert result.exit_code == 0


def test_timing_rule_without_samples_uses_threshold_and_warns(tmp_path):
    base = measured()
    cur = measured(step_s=0.0125)
    for record in (base, cur):
        del record["samples_s"], record["run_medians_s"], record["run_samples_s"]
    result = compare([base], [cur], ["throughput:-5%"])
    assert result.exit_code == 1
    assert any("significance not assessed" in w and "throughput_img_s" in w for w in result.warnings)


def test_latency_rule_uses_the_samples(tmp_path):
    result = compare([measured(seed=1)], [measured(step_s=0.012, seed=2)], ["latency_p50:+5%"])
    (row,) = [r for r in result.rows if r.metric == "latency_p50_s"]
    assert row.verdict == "REGRESSION"
    assert slower_factor(row.ratio_text) == pytest.approx(1.20, abs=0.02)


def test_faster_run_passes(tmp_path):
    result = compare([measured(seed=1)], [measured(step_s=0.008, seed=2)], ["throughput:-5%", "latency_p50:+5%"])
    assert result.exit_code == 0
    (row,) = [r for r in result.rows if r.metric == "throughput_img_s"]
    assert slower_factor(row.ratio_text) == pytest.approx(0.8, abs=0.02)


def test_params_change_fails(tmp_path, capsys):
    base = write(tmp_path / "base.csv", [measured()])
    cur = write(tmp_path / "cur.csv", [measured(params=5_717_416 + 192)])
    code, out, _ = run_cli(capsys, base, cur, "--fail-on", "params:0")
    assert code == 1
    assert "+192" in out


def test_exact_rule_fails_on_any_change_but_signed_zero_only_one_way():
    smaller = [measured(params=5_000_000)]
    assert compare([measured()], smaller, ["params:0"]).exit_code == 1
    assert compare([measured()], smaller, ["params:+0"]).exit_code == 0
    assert compare([measured()], smaller, ["params:-0"]).exit_code == 1


def test_model_change_caught_from_real_analytic_counts():
    """A block added to ViT-S/16: params and MACs differ (both computed by vitbench.analytic)."""
    from vitbench.api import analyze

    base = analyze(["vit-s/16", "resnet18"])
    cur = analyze(["vit-s/16"], depth=13) + analyze(["resnet18"])
    result = compare(base, cur, ["params:0", "macs:0"])
    assert {(r.configuration, r.metric) for r in result.regressions} == {
        ("vit-s/16 224px b1", "params"),
        ("vit-s/16 224px b1", "macs"),
    }
    assert compare(base, analyze(["vit-s/16", "resnet18"]), ["params:0", "macs:0"]).exit_code == 0


def test_peak_memory_rule():
    heavier = [measured(peak_memory_bytes=int(200 * 2**20 * 1.11))]
    assert compare([measured()], heavier, ["peak_memory:+10%"]).exit_code == 1
    assert compare([measured()], heavier, ["peak_memory:+12%"]).exit_code == 0


def test_run_that_now_fails_is_a_regression():
    failed = measured(status="oom", throughput_img_s=None, latency_p50_s=None, samples_s=None,
                      run_medians_s=None, run_samples_s=None)
    result = compare([measured()], [failed], ["throughput:-5%"])
    (row,) = result.regressions
    assert row.metric == "status" and "oom" in row.note


def test_default_rules_apply_to_metrics_present():
    result = compare([measured(seed=1)], [measured(step_s=0.0125, seed=2)])
    assert [str(r) for r in result.rules] == [str(Rule.parse(e)) for e in DEFAULT_RULES]
    assert {r.metric for r in result.regressions} == {"throughput_img_s", "latency_p50_s"}


# --------------------------------------------------------------------------- file and usage errors


def test_missing_baseline_exits_2_with_one_line(tmp_path, capsys):
    cur = write(tmp_path / "cur.csv", [measured()])
    code, out, err = run_cli(capsys, tmp_path / "missing.csv", cur)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert "baseline" in err and "missing.csv" in err


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("name,throughput_img_s\nx,1.0\n", "no 'model' column"),
        ("model,status\nx,ok\n", "no metric columns"),
        ('{"schema_version": 2, "records": [{"model": "x", "macs": 1}]}', "schema_version=2"),
        ('{"machine_info": {}, "benchmarks": []}', "pytest-benchmark"),
        ('{"schema_version": 1, "rows": []}', "no 'records'"),
        ("", "the file is empty"),
    ],
)
def test_wrong_schema_exits_2(tmp_path, capsys, content, fragment):
    bad = tmp_path / ("bad.json" if content.startswith("{") else "bad.csv")
    bad.write_text(content)
    good = write(tmp_path / "good.csv", [measured()])
    code, _, err = run_cli(capsys, good, bad)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert fragment in err and "current" in err


def test_no_common_rows_exits_2(tmp_path, capsys):
    base = write(tmp_path / "base.csv", [measured(model="a")])
    cur = write(tmp_path / "cur.csv", [measured(model="b")])
    code, _, err = run_cli(capsys, base, cur)
    assert code == 2
    assert "no common configurations" in err


@pytest.mark.parametrize("expr", ["throughput", "throughput:fast", "throughput:-5%%", ":5%", "throughput:5%,"])
def test_bad_rule_exits_2_naming_it(tmp_path, capsys, expr):
    base = write(tmp_path / "base.csv", [measured()])
    code, _, err = run_cli(capsys, base, base, "--fail-on", expr)
    assert code == 2
    assert "--fail-on" in err and repr(expr) in err
    assert len(err.strip().splitlines()) == 1


def test_explicit_rule_on_absent_metric_exits_2(tmp_path, capsys):
    record = measured()
    del record["peak_memory_bytes"]
    base = write(tmp_path / "base.csv", [record])
    code, _, err = run_cli(capsys, base, base, "--fail-on", "peak_memory:+10%")
    assert code == 2 and "peak_memory_bytes" in err


# --------------------------------------------------------------------------- matching, environment


def test_rows_match_on_key_and_unmatched_rows_are_reported():
    base = [measured("a"), measured("b"), measured("a", batch_size=1)]
    cur = [measured("a", seed=3), measured("c"), measured("a", batch_size=1, seed=4)]
    result = compare(base, cur, ["params:0"])
    assert result.removed == ("b 224px b8 cpu infer fp32",)
    assert result.added == ("c 224px b8 cpu infer fp32",)
    assert {r.configuration for r in result.rows} == {"a 224px b8 cpu infer fp32", "a 224px b1 cpu infer fp32"}


def test_spec_key_matches_renamed_model():
    result = compare([measured("old-name")], [measured("new-name", spec_key=measured("old-name")["spec_key"])], ["params:0"])
    assert {r.configuration for r in result.rows} == {"new-name 224px b8 cpu infer fp32"}


def test_two_names_for_one_architecture_stay_apart():
    key = measured("vit-s/16")["spec_key"]
    base = [measured("vit-s/16"), measured("deit-s/16", spec_key=key)]
    cur = [measured("vit-s/16"), measured("deit-s/16", spec_key=key, params=1)]
    result = compare(base, cur, ["params:0"])
    assert [r.configuration for r in result.regressions] == ["deit-s/16 224px b8 cpu infer fp32"]
    assert not any("pooled" in w for w in result.warnings)


def test_repeated_runs_are_pooled_with_a_warning():
    base = [measured(seed=1, n=10), measured(seed=2, n=10)]  # two invocations of 5 runs each
    result = compare(base, [measured(seed=3)], ["throughput:-5%"])
    (row,) = [r for r in result.rows if r.metric == "throughput_img_s"]
    assert row.n_baseline == 20
    assert any("pooled" in w for w in result.warnings)


def test_warnings_recorded_with_results_reach_the_report():
    cur = measured(warnings="unstable timing: CV 12%")
    result = compare([measured()], [cur], ["params:0"])
    assert "current vit-ti/16 224px b8 cpu infer fp32: unstable timing: CV 12%" in result.warnings


def test_environment_difference_is_flagged_not_failed(tmp_path, capsys):
    base = write(tmp_path / "base.csv", [measured()])
    cur = write(tmp_path / "cur.csv", [measured(env_torch="2.15.0")])
    code, out, _ = run_cli(capsys, base, cur, "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["env_differences"] == [{"column": "env_torch", "baseline": ["2.14.1"], "current": ["2.15.0"]}]
    code, out, _ = run_cli(capsys, base, cur, "--format", "markdown")
    assert "Environment differences" in out and "2.15.0" in out


# --------------------------------------------------------------------------- output


def test_markdown_has_summary_and_table(tmp_path, capsys):
    base = write(tmp_path / "base.csv", [measured(seed=1), measured("b", seed=1)])
    cur = write(tmp_path / "cur.csv", [measured(step_s=0.0125, seed=2), measured("b", seed=2)])
    code, out, _ = run_cli(capsys, base, cur, "--format", "markdown", "--fail-on", "throughput:-5%,params:0")
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "### vitbench compare: FAIL"
    assert "FAIL: 1 regression" in out
    header = next(i for i, line in enumerate(lines) if line.startswith("| configuration"))
    assert set(lines[header + 1]) <= set("|-: ")
    table = [line for line in lines[header + 2:] if line.startswith("|")]
    assert len(table) == 2 * 6  # two configurations x (6 headline metrics present)
    assert sum("REGRESSION" in line for line in table) == 1


def test_markdown_folds_long_tables_but_lists_regressions():
    base = [measured(f"m{i}") for i in range(8)]
    cur = [measured(f"m{i}", params=1 if i == 3 else 5_717_416) for i in range(8)]
    text = render(compare(base, cur, ["params:0", "macs:0", "throughput:-5%", "latency_p50:+5%"]), "markdown")
    assert "<details><summary>All 48 comparisons</summary>" in text  # 8 configurations x 6 metrics
    regressions = text.split("**Regressions**")[1].split("**")[0]
    assert "m3 224px b8 cpu infer fp32 params" in regressions


def test_values_read_from_csv_and_json_compare_equal(tmp_path):
    """pandas reads "13.0" in a CSV as a float; the same value from JSON is a string."""
    base = write(tmp_path / "base.json", [measured(env_cuda="13.0", batch_size=8)])
    cur = write(tmp_path / "cur.csv", [measured(env_cuda="13.0", batch_size=8.0)])
    result = compare(base, cur, ["params:0"])
    assert result.env_differences == ()
    assert len({r.configuration for r in result.rows}) == 1


def test_json_output_is_machine_readable_and_output_file(tmp_path, capsys):
    base = write(tmp_path / "base.json", [measured(seed=1)])
    cur = write(tmp_path / "cur.json", [measured(step_s=0.0125, seed=2)])
    out_file = tmp_path / "gate.json"
    code, out, _ = run_cli(capsys, base, cur, "--format", "json", "-o", out_file, "--fail-on", "throughput:-5%")
    assert code == 1 and out == ""
    data = json.loads(out_file.read_text())
    assert data["passed"] is False and data["exit_code"] == 1
    (reg,) = data["regressions"]
    assert reg["metric"] == "throughput_img_s" and reg["verdict"] == "REGRESSION"
    assert reg["key"]["batch_size"] == "8" and reg["n_samples_current"] == 30


def test_table_and_csv_render():
    result = compare([measured(seed=1)], [measured(step_s=0.0125, seed=2)], ["throughput:-5%"])
    assert isinstance(result, CompareResult)
    table = render(result, "table")
    assert "FAIL: 1 regression" in table and "1.25x slower" in table
    csv_lines = render(result, "csv").splitlines()
    assert csv_lines[0].startswith("configuration,metric,baseline,current")
    assert len(csv_lines) == 1 + len(result.rows)


def test_lazy_top_level_export(tmp_path):
    import vitbench
    import vitbench.gate

    assert vitbench.compare is vitbench.gate.compare
    base = measured(params=1000)
    grown = {**measured(), "params": 1001}
    result = vitbench.compare([base], [grown], ["params:0"])
    assert result.exit_code == 1 and [r.metric for r in result.regressions] == ["params"]
    same = vitbench.compare([base], [measured(params=1000)], ["params:0"])
    assert same.exit_code == 0 and same.regressions == ()


# --------------------------------------------------------------------------- rules and statistics


@pytest.mark.parametrize(
    "expr, base, cur, violated",
    [
        ("throughput:-5%", 100.0, 94.9, True),
        ("throughput:-5%", 100.0, 95.1, False),
        ("throughput:-5%", 100.0, 150.0, False),
        ("throughput:5%", 100.0, 94.0, True),  # unsigned: the bad direction (down) for throughput
        ("latency_p50:5%", 1.0, 1.06, True),  # ... and up for latency
        ("latency_p50:5%", 1.0, 0.5, False),
        ("peak_memory:+10%", 100, 111, True),
        ("peak_memory:+10%", 100, 109, False),
        ("macs:0", 10, 9, True),
        ("macs:0", 10, 10, False),
        ("params:+1000", 5000, 6001, True),  # absolute
        ("params:+1000", 5000, 6000, False),
        ("custom_score:3%", 100, 96, True),  # unknown direction: either way
        ("custom_score:3%", 100, 104, True),
        ("custom_score:3%", 100, 102, False),
    ],
)
def test_rule_semantics(expr, base, cur, violated):
    assert Rule.parse(expr).violated(base, cur) is violated


def test_rule_aliases_and_commas():
    assert [r.metric for r in parse_rules(["throughput:-5%,latency_p90:+5%", "peak_memory:+10%"])] == [
        "throughput_img_s",
        "latency_p90_s",
        "peak_memory_bytes",
    ]
    with pytest.raises(RuleError, match="--fail-on"):
        parse_rules(["macs:1.2.3"])


@given(
    metric=st.sampled_from(["throughput", "latency_p50", "macs", "params", "fvcore_macs"])
    | st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True),
    sign=st.sampled_from(["", "+", "-"]),
    threshold=st.floats(min_value=0, max_value=1e18, allow_nan=False, allow_infinity=False),
    relative=st.booleans(),
)
def test_rule_text_round_trips(metric, sign, threshold, relative):
    rule = Rule.parse(f"{metric}:{sign}{threshold!r}{'%' if relative else ''}")
    assert rule.threshold == threshold and rule.sign == sign and rule.relative is relative
    assert Rule.parse(str(rule)) == rule


def test_any_numeric_column_can_be_gated_by_its_name():
    base = [{"model": "a", "score": 100.0}]
    assert compare(base, [{"model": "a", "score": 96.0}], ["score:-3%"]).exit_code == 1
    assert compare(base, [{"model": "a", "score": 98.0}], ["score:-3%"]).exit_code == 0
    with pytest.raises(InputFileError, match="no metric columns"):
        compare(base, base)  # no rule names it, and it is not a known metric


def test_dataframe_input():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame([measured()]).drop(columns=["samples_s", "run_medians_s", "run_samples_s"])
    assert compare(frame, [measured(params=1)], ["params:0"]).exit_code == 1


def test_load_errors_are_input_file_errors(tmp_path):
    # A directory is read as a sweep store; an empty one is not a results store.
    with pytest.raises(InputFileError, match="^baseline .*no results store"):
        compare(tmp_path, [measured()])


# --------------------------------------------------------------------------- the committed gate

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
BASELINE_CSV = ROOT / "benchmarks" / "baselines" / "results-baseline.csv"
REGENERATE = (
    "vitbench analyze vit-ti/16 vit-s/16 vit-b/16 deit-s/16 cifar-vit/4 resnet18 resnet50 "
    "--counters analytic,dispatch --format csv -o benchmarks/baselines/results-baseline.csv"
)


def test_committed_results_baseline_is_current():
    """The CI gate's baseline agrees with today's analytic counts (dispatch counts: in CI)."""
    from vitbench.api import analyze
    from vitbench.results import read_csv_records

    models = [r["model"] for r in read_csv_records(BASELINE_CSV)]
    result = compare(BASELINE_CSV, analyze(models), ["params:0", "macs:0"])
    assert result.exit_code == 0, f"regenerate the baseline: {REGENERATE}\n" + render(result, "table")
    assert len(result.rows) == 2 * len(models)


def test_workflow_gates_against_the_committed_baseline():
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "vitbench-gate.yml").read_text())
    steps = [step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]]
    (gate,) = [s for s in steps if "vitbench compare benchmarks/baselines/results-baseline.csv" in s]
    assert "--fail-on macs:0" in gate and "--fail-on params:0" in gate and "--format markdown" in gate
    (current,) = [s for s in steps if "vitbench analyze" in s]
    assert " ".join(current.replace("\\\n", " ").split()) == REGENERATE.replace(
        " -o benchmarks/baselines/results-baseline.csv", " -o current.csv"
    )
    assert any("--benchmark-compare-fail=median:10%" in s for s in steps)


# --------------------------------------------------------------------------- JUnit XML


def _junit(path):
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    (suite,) = root.findall("testsuite")
    cases = {(c.get("classname"), c.get("name")): c for c in suite.findall("testcase")}
    return root, suite, cases


def test_junit_report_has_one_case_per_configuration_and_metric_and_fails_the_regression(tmp_path, capsys):
    base = write(tmp_path / "base.csv", [measured(), measured(model="vit-s/16", seed=3)])
    cur = write(tmp_path / "cur.csv", [measured(params=5_717_416 + 192), measured(model="vit-s/16", seed=4)])
    code, out, _ = run_cli(capsys, base, cur, "--fail-on", "params:0,macs:0", "-o", tmp_path / "gate.xml")
    assert code == 1 and out == ""
    root, suite, cases = _junit(tmp_path / "gate.xml")
    assert root.tag == "testsuites" and suite.get("tests") == "4" and suite.get("failures") == "1"
    failed = [(key, case) for key, case in cases.items() if case.find("failure") is not None]
    assert len(failed) == 1
    (configuration, metric), case = failed[0]
    assert metric == "params" and "vit-ti/16" in configuration and "vit-s/16" not in configuration
    failure = case.find("failure")
    assert failure.get("type") == "REGRESSION" and "+192" in failure.get("message") and "params:0" in failure.get("message")
    assert {m for _, m in cases} == {"params", "macs"}


def test_junit_passing_gate_has_no_failures_and_names_the_rules(tmp_path, capsys):
    base = write(tmp_path / "base.json", [measured()])
    code, out, _ = run_cli(capsys, base, base, "--fail-on", "macs:0", "--format", "junit")
    assert code == 0
    path = tmp_path / "stdout.xml"
    path.write_text(out)
    _, suite, cases = _junit(path)
    assert suite.get("failures") == "0" and len(cases) == 1
    properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert properties["rules"] == "macs:0" and properties["summary"]


def test_junit_lists_a_missing_configuration_as_a_gate_failure(tmp_path, capsys):
    base = write(tmp_path / "base.csv", [measured(), measured(model="vit-s/16")])
    cur = write(tmp_path / "cur.csv", [measured()])
    code, _, _ = run_cli(capsys, base, cur, "--fail-on", "macs:0", "-o", tmp_path / "gate.xml")
    assert code == 1
    _, suite, cases = _junit(tmp_path / "gate.xml")
    gate = [c for (cls, _), c in cases.items() if cls == "vitbench.gate"]
    assert len(gate) == 1 and "missing" in gate[0].find("failure").get("message")
    assert "vit-s/16" in gate[0].find("failure").text


# --------------------------------------------------------------------------- a bad cell named (issue 45)


def _eight_rows(bad_row: int | None = None, bad: str = "abc", column: str = "macs", blank_after: int | None = None) -> str:
    """A results CSV of eight data rows; data row ``bad_row`` (from 1) holds ``bad`` in ``column``."""
    lines = ["model,img_size,batch_size,status,macs,params,latency_p50_s"]
    for i in range(1, 9):
        cells = {"model": f"m{i}", "img_size": "224", "batch_size": "1", "status": "ok",
                 "macs": str(5926015 + i), "params": "100", "latency_p50_s": "0.01"}
        if i == bad_row:
            cells[column] = bad
        lines.append(",".join(cells.values()))
        if i == blank_after:
            lines.append("")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("column, bad", [("macs", "abc"), ("macs", "5e"), ("params", "1.5.2"),
                                         ("batch_size", "four"), ("latency_p50_s", "fast")])
def test_a_text_cell_is_named_by_file_data_row_line_column_and_its_own_value(tmp_path, capsys, column, bad):
    (tmp_path / "base.csv").write_text(_eight_rows())
    (tmp_path / "cur.csv").write_text(_eight_rows(bad_row=6, bad=bad, column=column))
    code, out, err = run_cli(capsys, tmp_path / "base.csv", tmp_path / "cur.csv")
    assert code == 2 and out == ""
    [line] = err.strip().splitlines()
    assert "current file=" in line and "cur.csv" in line
    assert f"row 6: {column}={bad!r}: must be" in line, line
    assert "(data row 6, on line 7 of the file; the header is line 1)" in line, line
    assert "5926016" not in line and "row 1:" not in line


def test_a_bad_number_is_named_by_data_row_and_value(tmp_path, capsys):
    (tmp_path / "base.csv").write_text(_eight_rows())
    (tmp_path / "cur.csv").write_text(_eight_rows(bad_row=6, bad="0", column="batch_size"))
    code, _, err = run_cli(capsys, tmp_path / "base.csv", tmp_path / "cur.csv")
    [line] = err.strip().splitlines()
    assert code == 2 and "row 6: batch_size=0: must be a whole number" in line, line


def test_a_blank_line_or_a_cell_of_two_lines_counts_as_a_line_but_not_as_a_data_row(tmp_path, capsys):
    (tmp_path / "base.csv").write_text(_eight_rows())
    text = _eight_rows(bad_row=6, blank_after=2).replace("m4,", '"m4\nsecond line",')
    (tmp_path / "cur.csv").write_text(text)
    code, _, err = run_cli(capsys, tmp_path / "base.csv", tmp_path / "cur.csv")
    [line] = err.strip().splitlines()
    assert code == 2 and "row 6: macs='abc'" in line and "data row 6, on line 9 of the file" in line, line


def test_text_in_a_failed_rows_number_cell_is_no_error(tmp_path):
    """A row that did not run is shown with its error: its other cells are never read as numbers,
    and the text in one of them does not make the column's numbers text."""
    text = _eight_rows(bad_row=6, bad="n/a").replace("m6,224,1,ok", "m6,224,1,error")
    (tmp_path / "cur.csv").write_text(text)
    (tmp_path / "base.csv").write_text(_eight_rows())
    result = compare(tmp_path / "base.csv", tmp_path / "cur.csv", ["macs:0%"], allow_missing_rows=True)
    # the row that failed is the status regression it is, and the other rows' numbers compare as numbers
    assert [(r.configuration.split()[0], r.metric) for r in result.regressions] == [("m6", "status")]
    assert any(r.metric == "macs" and r.current == 5926016 and r.verdict == "ok" for r in result.rows)
