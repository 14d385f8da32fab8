"""The gate's issue-12 semantics: missing rows and metrics fail, significance comes from the
spread between runs (never from the samples of one run), and a store's raw runs are read.

Each test here reproduces an observation from issue 12 that the previous gate got wrong
(noted per test). Records are synthetic, built by ``measured`` in tests/test_compare.py.
"""

from __future__ import annotations

import random
import statistics

import pytest
from test_compare import BATCH, measured, run_cli, single_run, write

from vitbench.gate import Verdict, compare
from vitbench.reporting.gate import render


def counts(model, **extra):
    """An ``analyze`` row: exact counts, no timing."""
    return {"model": model, "kind": "vit", "img_size": 224, "batch_size": 1, "params": 5_717_416,
            "macs": 1_253_683_200, **extra}


# --------------------------------------------------------------------------- missing rows


def test_baseline_rows_missing_from_current_fail(tmp_path, capsys):
    """Issue 12: "The gate passed when the current file had 2 of the baseline's 20 rows"."""
    base = write(tmp_path / "base.csv", [counts(f"m{i}") for i in range(20)])
    cur = write(tmp_path / "cur.csv", [counts("m0"), counts("m1")])
    code, out, _ = run_cli(capsys, base, cur, "--fail-on", "params:0,macs:0")
    assert code == 1
    assert "18 of 20 baseline configurations missing from current" in out
    assert "m7 224px b1" in out  # listed by name
    result = compare(base, cur, ["params:0"])
    assert result.exit_code == 1 and not result.regressions and len(result.removed) == 18

    code, out, _ = run_cli(capsys, base, cur, "--fail-on", "params:0", "--allow-missing-rows")
    assert code == 0, out
    assert "allowed: --allow-missing-rows" in out


def test_added_rows_do_not_fail():
    result = compare([counts("a")], [counts("a"), counts("b")], ["params:0"])
    assert result.exit_code == 0 and result.added == ("b 224px b1",)


# --------------------------------------------------------------------------- missing metrics


def test_metric_missing_from_current_fails_with_default_rules(tmp_path, capsys):
    """Issue 12: the gate passed "when the throughput and latency columns were missing
    ('default rules skipped')"."""
    base = write(tmp_path / "base.csv", [measured()])
    stripped = {k: v for k, v in measured().items() if not k.startswith(("throughput", "latency"))}
    cur = write(tmp_path / "cur.csv", [stripped])
    code, out, _ = run_cli(capsys, base, cur)
    assert code == 1, out
    assert "throughput_img_s:-5%: metric 'throughput_img_s' is missing from the current results" in out
    assert "latency_p50_s:+5%: metric 'latency_p50_s' is missing from the current results" in out
    assert "default rules skipped" not in out

    code, out, _ = run_cli(capsys, base, cur, "--allow-missing-metrics")
    assert code == 0, out
    assert "allowed: --allow-missing-metrics" in out


def test_explicit_rule_on_a_metric_only_the_baseline_has_fails():
    base = [measured()]
    cur = [{k: v for k, v in measured().items() if k != "peak_memory_bytes"}]
    result = compare(base, cur, ["peak_memory:+10%", "params:0"])
    assert result.exit_code == 1
    assert result.failures == ("peak_memory_bytes:+10%: metric 'peak_memory_bytes' is missing from the current results",)
    # allowed to be missing, but then the gate checked nothing at all: that is no pass
    alone = compare(base, cur, ["peak_memory:+10%"], allow_missing_metrics=True)
    assert alone.exit_code == 1 and "nothing was checked" in alone.failures[0]
    assert "(no rule applies)" in alone.failures[0]  # the one rule's metric is in one file only
    assert compare(base, cur, ["peak_memory:+10%", "params:0"], allow_missing_metrics=True).exit_code == 0


def test_a_gate_whose_rules_met_no_value_on_both_sides_names_them():
    def row(name, peak):
        return {"model": name, "batch_size": 8, "status": "ok", "params": 10, "peak_memory_bytes": peak}

    result = compare([row("a", 100), row("b", None)], [row("a", None), row("b", 100)], ["peak_memory:+10%"],
                     allow_missing_metrics=True)
    assert result.failures == ("nothing was checked: no rule met a value on both sides (peak_memory_bytes:+10%); "
                               "a gate that checked nothing does not pass",)
    assert {(r.verdict, r.runs_baseline, r.runs_current) for r in result.rows if r.metric == "peak_memory_bytes"} == {
        (Verdict.NOT_APPLICABLE, 0, 0)}  # no value on a side: no runs compared


def test_default_rules_on_metrics_neither_file_has_are_not_applicable():
    """Counts-only results (``analyze``) with the default rules: the timing and memory rules do
    not apply, and the result says so instead of passing silently."""
    result = compare([counts("a")], [counts("a")])
    assert result.exit_code == 0
    assert result.not_applicable == ("throughput_img_s:-5%", "latency_p50_s:+5%", "peak_memory_bytes:+10%")
    assert [str(r) for r in result.rules] == ["macs:0", "params:0"]
    assert "Default rules not applicable" in render(result, "table")


def test_ruled_value_missing_in_a_current_row_fails():
    base = [measured("a"), measured("b")]
    cur = [measured("a"), measured("b", throughput_img_s=None)]
    result = compare(base, cur, ["throughput:-5%"])
    (row,) = result.failed_rows
    assert (row.configuration, row.verdict, row.note) == ("b 224px b8 cpu infer fp32", "MISSING", "no value in current")
    assert result.exit_code == 1 and "1 missing" in render(result, "table")
    allowed = compare(base, cur, ["throughput:-5%"], allow_missing_metrics=True)
    assert allowed.exit_code == 0


# --------------------------------------------------------------------------- significance across runs


def _runs(levels, within=0.005, n=6, seed=0):
    """A measured record whose runs have the given median step times (tight within a run)."""
    rng = random.Random(seed)
    per_run = [[level * (1 + rng.gauss(0, within)) for _ in range(n)] for level in levels]
    samples = [x for run in per_run for x in run]
    medians = [statistics.median(run) for run in per_run]
    return measured(samples_s=samples, run_samples_s=per_run, run_medians_s=medians, runs=len(levels),
                    n_samples=len(samples), throughput_img_s=BATCH / statistics.median(medians),
                    latency_p50_s=statistics.median(samples))


def _old_within_run_p(base, cur):
    """What the previous gate did: Mann-Whitney U on the pooled per-step samples."""
    from vitbench.measure.stats import mann_whitney_u

    return mann_whitney_u(base["samples_s"], cur["samples_s"])[1]


def test_identical_configuration_with_between_run_noise_is_not_a_regression():
    """Issue 12: compare "failed two identical back-to-back profile runs (p = 0.006): its
    significance test uses samples from within one run". Here both sides come from one machine
    whose speed wanders between runs (6%) while each run is steady (0.5%): the current side's
    runs happen to be 6% slower on average."""
    base = _runs([0.0100, 0.0112, 0.0095, 0.0108, 0.0098], seed=1)
    cur = _runs([0.0106, 0.0121, 0.0101, 0.0117, 0.0103], seed=2)
    assert _old_within_run_p(base, cur) < 0.05  # the old test called this significant
    result = compare([base], [cur], ["throughput:-5%"])
    (row,) = [r for r in result.rows if r.metric == "throughput_img_s"]
    assert row.failed_rules  # beyond the threshold ...
    assert row.verdict == "not significant" and row.p_value > 0.05  # ... but not beyond the noise
    assert (row.runs_baseline, row.runs_current) == (5, 5)
    assert result.exit_code == 0


def _trial(rng, slowdown, runs=5, between=0.05, within=0.01):
    levels = lambda factor: [0.010 * factor * (1 + rng.gauss(0, between)) for _ in range(runs)]  # noqa: E731
    base = _runs(levels(1.0), within=within, seed=rng.random())
    cur = _runs(levels(slowdown), within=within, seed=rng.random())
    return compare([base], [cur], ["throughput:-5%"]).exit_code, _old_within_run_p(base, cur)


def test_twenty_trials_no_false_regression_and_a_25_percent_slowdown_always_caught():
    """Synthetic form of the issue's acceptance test: 5 runs a side, 5% between-run spread.
    Identical sides: no regression in 20 of 20; a 25% slowdown: caught in 20 of 20."""
    rng = random.Random(12)
    same = [_trial(rng, 1.0) for _ in range(20)]
    slower = [_trial(rng, 1.25) for _ in range(20)]
    assert sum(code for code, _ in same) == 0
    assert sum(code for code, _ in slower) == 20
    # A test on within-run samples (the previous gate's) calls identical pairs different far
    # more often than its 5% level: 9 of these 20 (1 expected if its samples were replicates).
    assert sum(p < 0.05 for _, p in same) >= 5


def test_one_run_a_side_is_not_assessed_from_its_samples(tmp_path, capsys):
    """One run per side: the samples of a run say nothing about the noise between runs, so no
    p-value is claimed; the threshold alone decides and the verdict says so."""
    base = write(tmp_path / "base.json", [single_run(seed=1)])
    cur = write(tmp_path / "cur.json", [single_run(step_s=0.0107, seed=2)])
    code, out, _ = run_cli(capsys, base, cur, "--fail-on", "throughput:-5%", "--format", "json")
    import json

    data = json.loads(out)
    (row,) = [r for r in data["rows"] if r["metric"] == "throughput_img_s"]
    assert code == 1 and row["verdict"] == "REGRESSION"
    assert row["p_value"] is None and (row["runs_baseline"], row["runs_current"]) == (1, 1)
    assert row["note"] == "threshold only; significance not assessed: 1 run in baseline, 1 run in current, needs 2+ a side"
    assert any("significance not assessed for throughput_img_s" in w and "--runs" in w for w in data["warnings"])
    assert compare([single_run(seed=1)], [single_run(step_s=0.0102, seed=2)], ["throughput:-5%"]).exit_code == 0


def test_repeated_rows_of_one_configuration_count_as_runs():
    """Three invocations of ``profile --runs 1`` per side, concatenated: three runs a side."""
    base = [single_run(seed=s) for s in (1, 2, 3)]
    cur = [single_run(step_s=0.0125, seed=s) for s in (4, 5, 6)]
    result = compare(base, cur, ["throughput:-5%"])
    (row,) = result.regressions
    assert (row.runs_baseline, row.runs_current) == (3, 3)
    assert row.p_value is not None and row.p_value < 0.05
    assert any("pooled" in w for w in result.warnings)


def test_a_regression_must_be_beyond_the_threshold_not_merely_beyond_zero():
    """Steady runs 5.4% slower: surely slower (a two-sided test gives p ~ 1e-9), but not
    surely more than the rule's 5% (throughput -5% = steps 1/0.95 = 5.26% longer)."""
    from vitbench.measure.stats import run_shift

    levels = [0.0100, 0.01003, 0.00997, 0.01002, 0.00998]
    base, cur = _runs(levels), _runs([x * 1.054 for x in levels])
    assert run_shift(base["run_medians_s"], cur["run_medians_s"]).p < 1e-6
    (row,) = [r for r in compare([base], [cur], ["throughput:-5%"]).rows if r.metric == "throughput_img_s"]
    assert row.failed_rules and row.verdict == "not significant" and row.p_value > 0.05
    # 8% slower is beyond the 5% line with confidence.
    (row,) = compare([base], [_runs([x * 1.08 for x in levels])], ["throughput:-5%"]).regressions
    assert row.p_value < 0.01


def test_absolute_latency_threshold():
    base = _runs([0.0100, 0.0101, 0.0099])
    assert compare([base], [_runs([0.0120, 0.0121, 0.0119])], ["latency_p50:+0.001"]).exit_code == 1
    assert compare([base], [_runs([0.0105, 0.0106, 0.0104])], ["latency_p50:+0.001"]).exit_code == 0


def test_latency_regression_from_runs_and_a_faster_run_passes():
    base = _runs([0.0100, 0.0101, 0.0099])
    slower = _runs([0.0120, 0.0121, 0.0119])
    assert compare([base], [slower], ["latency_p50:+5%"]).regressions[0].metric == "latency_p50_s"
    assert compare([slower], [base], ["latency_p50:+5%", "throughput:-5%"]).exit_code == 0


# --------------------------------------------------------------------------- stores and exact integers


def test_gate_reads_a_sweep_stores_raw_runs(tmp_path):
    from vitbench.store import Store

    for name, levels in (("base", [0.0100, 0.0103, 0.0098]), ("cur", [0.0130, 0.0127, 0.0133])):
        with Store.open(tmp_path / name) as store:
            store.add({**_runs(levels), "id": "cfg-1"})
    result = compare(tmp_path / "base", tmp_path / "cur", ["throughput:-5%"])
    (row,) = result.regressions
    assert (row.runs_baseline, row.runs_current) == (3, 3) and row.p_value < 0.01
    assert row.n_baseline == 18  # raw samples came through the store


def test_macs_above_two_to_the_53_compare_exactly(tmp_path):
    """A float reads 2**53 + 1 as 2**53 and calls the two equal (the previous gate, reading the
    CSV through pandas, passed this: a column with a gap becomes float64)."""
    big = 2**53
    base = write(tmp_path / "base.csv", [counts("a", macs=big), counts("b", macs=None)])
    cur = write(tmp_path / "cur.csv", [counts("a", macs=big + 1), counts("b", macs=None)])
    result = compare(base, cur, ["macs:0"])
    (row,) = result.regressions
    assert row.baseline == big and row.current == big + 1
    assert "+1 (" in row.change_text


@pytest.mark.parametrize("fmt", ["table", "markdown", "json", "csv"])
def test_every_format_shows_gate_failures(fmt):
    result = compare([counts("a"), counts("b")], [counts("a")], ["params:0"])
    text = render(result, fmt)
    assert "1 of 2 baseline configurations missing from current" in text or fmt == "csv"
    if fmt == "markdown":
        assert text.startswith("### vitbench compare: FAIL") and "**Gate failures**" in text
