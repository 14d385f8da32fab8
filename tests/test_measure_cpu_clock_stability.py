"""With ``--clock cpu`` (CPU time per thread) a measured row's stability is judged by the spread
between its runs' medians, not by the machine's load or the scatter of its steps; with the wall
clock both still count. Hand-made run statistics: nothing is timed."""

from __future__ import annotations

from vitbench.measure.machine import state_warnings
from vitbench.measure.runs import pool
from vitbench.measure.stability import timing_warnings
from vitbench.reporting import marks
from vitbench.settings import RunSettings

#: one run's steps on a shared machine: scattered (CV ~25%) around a steady median
SCATTERED = [1.0, 1.0, 1.0, 1.0, 1.6, 0.7, 1.0, 1.5, 1.0, 0.8]
BUSY = {"machine_cpus": 2, "machine_busy_cores": 1.8, "machine_loadavg_1m": 4.2}


def _codes(warnings) -> list[str]:
    return [w["code"] for w in warnings]


def test_cpu_clock_judges_by_the_runs_medians_not_the_steps():
    agreeing = [1.0, 1.01, 0.99, 1.0, 1.02]
    assert _codes(timing_warnings(SCATTERED * 5, agreeing, threads=1, clock="wall")) == ["unstable-steps"]
    assert timing_warnings(SCATTERED * 5, agreeing, threads=1, clock="cpu") == []
    # runs that disagree are unstable whatever the clock
    disagreeing = [1.0, 1.3, 1.0, 1.0, 1.0]
    assert _codes(timing_warnings(SCATTERED * 5, disagreeing, threads=1, clock="cpu")) == ["unstable-runs"]
    # one run: there is no between-run spread, so the steps decide
    assert _codes(timing_warnings(SCATTERED, [1.0], threads=1, clock="cpu")) == ["unstable-steps"]


def test_the_load_flags_wall_clock_rows_only():
    assert _codes(state_warnings(BUSY, threads=1, clock="wall")) == ["busy-machine"]
    assert state_warnings(BUSY, threads=1, clock="cpu") == []
    # the governor still says what it says
    assert _codes(state_warnings({**BUSY, "machine_governor": "powersave"}, 1, clock="cpu")) == ["cpu-governor"]


def _run(samples: list[float]) -> dict:
    return {"status": "ok", "batch_size": 8, "samples_s": samples, "clock": "cpu", "warnings": []}


def test_pooled_cpu_clock_row_is_fit_to_conclude_from():
    settings = RunSettings(device="cpu", clock="cpu", threads=1, runs=5)
    runs = [_run([s * scale for s in SCATTERED]) for scale in (1.0, 1.01, 0.99, 1.0, 1.02)]
    row = pool(runs, settings)
    assert row["warnings"] == [] and row["run_cv"] < 0.02
    assert row["latency_cv"] > 0.1  # the steps scatter ...
    assert marks.spread(row) == row["run_cv"]  # ... but the spread that counts is between runs
    assert marks.timing_warnings(row) == []
    wall = pool([{**r, "clock": "wall"} for r in runs], settings.replace(clock="wall"))
    assert _codes(wall["warnings"]) == ["unstable-steps"]
    assert marks.spread({**wall, "clock": "wall"}) > 0.1


def test_the_study_keeps_a_cpu_clock_row_whose_runs_agree():
    from vitbench.reporting.study.rows import instability

    settings = RunSettings(device="cpu", clock="cpu", threads=1, runs=5)
    row = pool([_run([s * scale for s in SCATTERED]) for scale in (1.0, 1.01, 0.99, 1.0, 1.02)], settings)
    assert instability(row) is None
    shaky = pool([_run([s * scale for s in SCATTERED]) for scale in (1.0, 1.3, 1.0, 1.0, 1.0)], settings)
    assert instability(shaky) is not None
