"""Acceptance test of issue 12: `vitbench profile` then `vitbench compare`, end to end, under a
competing CPU load (a busy process started here, on top of whatever else the machine runs).

Each trial profiles ``py:_gate_models:repeated`` as a baseline, as the same configuration again,
and as the same name with 25% more work per step (``VITBENCH_TEST_REPEATS=5`` instead of 4:
1.247x the MACs, same parameters), then runs `vitbench compare` with the default timing rules
(throughput:-5%, latency_p50:+5%): the identical pair must pass (no false regression) and the
slower one fail (detected), in every trial.

The three are measured as benchstat and pyperf advise on a noisy machine: INTERLEAVED. Each of
``VITBENCH_E2E_RUNS`` rounds (default 16) runs `vitbench profile --runs 1` once for each of the
three (a fresh process each; the order rotates every round), and each side's rows are
concatenated into one results file: the gate pools a configuration's rows, each row one run.
What this machine does to one process (a 2-core VM whose speed wanders by 10-30% over tens of
seconds: host contention and clock boost, besides the busy process) then falls on the three
alike. Measured without interleaving (three `--runs 20` profiles one after the other), the
drift between blocks missed the slowdown in 1 of the first 9 trials; with `--runs 5`, in 10 of 20,
with 1 false regression.

The profiles use ``--clock cpu`` (CPU time per thread): the wall-clock run medians vary by
2-33% between runs here (the process gets part of a core); CPU time, with the steady host
allocator (``--allocator steady``, which these profiles ask for), by 1.2-8.8% (20 trials: 20 of 20 identical pairs passed, 20 of 20 slowdowns caught). Before that allocator existed, CPU
time varied by 12-22% between worker processes (glibc's dynamic mmap threshold: each process
faulted in fresh pages differently), and 6 trials caught the slowdown in 5 (missed at +18%).
Every trial's figures go to ``VITBENCH_E2E_OUT`` (JSON) when set. ``VITBENCH_E2E_TRIALS``
(default 20) sets the trials. About 3 x 16 fresh processes per trial: 124 minutes for 20 trials on
a loaded 2-core machine, so it is an acceptance experiment run by hand, not part of CI:
``pytest tests/test_measure_gate_e2e.py -m acceptance``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

TRIALS = int(os.environ.get("VITBENCH_E2E_TRIALS", "20"))
ROUNDS = int(os.environ.get("VITBENCH_E2E_RUNS", "16"))
MODEL = "py:_gate_models:repeated"
TESTS = Path(__file__).parent
PROFILE = ["profile", MODEL, "--device", "cpu", "--batch-size", "8", "--threads", "1", "--runs", "1",
           "--min-time", "0.3", "--warmup", "2", "--no-memory", "--clock", "cpu", "--allocator", "steady",
           "--format", "json"]
RULES = "throughput:-5%,latency_p50:+5%"
SIDES = (("base", 4), ("same", 4), ("slow", 5))


def _vitbench(args: list[str], repeats: int | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    if repeats is not None:
        env["VITBENCH_TEST_REPEATS"] = str(repeats)
    return subprocess.run([sys.executable, "-m", "vitbench", *args], env=env, capture_output=True, text=True)


def _profile_once(path: Path, repeats: int) -> dict:
    done = _vitbench([*PROFILE, "-o", str(path)], repeats)
    assert done.returncode == 0, done.stderr[-2000:]
    (row,) = json.loads(path.read_text())["records"]
    assert row["status"] == "ok", row["error"]
    return row


def _interleaved(directory: Path, trial: int) -> dict[str, Path]:
    """ROUNDS rounds of one `profile --runs 1` per side, the order rotating; each side's rows
    written to one results file."""
    rows: dict[str, list[dict]] = {name: [] for name, _ in SIDES}
    for k in range(ROUNDS):
        for name, repeats in SIDES[k % 3:] + SIDES[: k % 3]:
            rows[name].append(_profile_once(directory / f"{trial}-{name}-{k}.json", repeats))
    paths = {}
    for name, records in rows.items():
        paths[name] = directory / f"{trial}-{name}.json"
        paths[name].write_text(json.dumps({"schema_version": 1, "records": records}))
    return paths


def _compare(base: Path, current: Path) -> tuple[int, list[dict]]:
    done = _vitbench(["compare", str(base), str(current), "--fail-on", RULES, "--format", "json"])
    assert done.returncode in (0, 1), done.stderr[-2000:]
    rows = json.loads(done.stdout)["rows"]
    return done.returncode, [r for r in rows if r.get("rules")]


def _figures(path: Path) -> dict:
    rows = json.loads(path.read_text())["records"]
    cpu = [r["run_medians_s"][0] for r in rows]
    wall = [r["wall_latency_p50_s"] for r in rows]
    return {
        "run_medians_s": cpu, "run_cv": statistics.stdev(cpu) / statistics.fmean(cpu),
        "median_s": statistics.median(cpu), "wall_median_s": statistics.median(wall),
        "wall_run_medians_s": wall, "wall_run_cv": statistics.stdev(wall) / statistics.fmean(wall),
        "cpu_share": statistics.median(r["cpu_share"] for r in rows),
        "machine_busy_cores": statistics.median(r["machine_busy_cores"] for r in rows),
        "machine_loadavg_1m": statistics.median(r["machine_loadavg_1m"] for r in rows),
    }


def _detected(trial: dict) -> bool:
    return trial["slow_exit"] == 1 and any(v["verdict"] == "REGRESSION" for v in trial["slow_verdicts"])


def _write_summary(trials: list[dict], started: float) -> tuple[int, int]:
    """(false regressions, detected slowdowns) so far; the figures go to VITBENCH_E2E_OUT when set."""
    false_regressions = sum(t["same_exit"] != 0 for t in trials)
    detected = sum(_detected(t) for t in trials)
    if os.environ.get("VITBENCH_E2E_OUT"):
        summary = {"trials": len(trials), "of": TRIALS, "rounds": ROUNDS, "false_regressions": false_regressions,
                   "detected": detected, "minutes": (time.time() - started) / 60, "trial_figures": trials}
        Path(os.environ["VITBENCH_E2E_OUT"]).write_text(json.dumps(summary, indent=1))
    return false_regressions, detected


@pytest.mark.acceptance
def test_profile_and_compare_under_a_competing_load(tmp_path):
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    trials = []
    started = time.time()
    try:
        for trial in range(TRIALS):
            paths = _interleaved(tmp_path, trial)
            same_code, same_verdicts = _compare(paths["base"], paths["same"])
            slow_code, slow_verdicts = _compare(paths["base"], paths["slow"])
            figures = {name: _figures(path) for name, path in paths.items()}
            trials.append({
                "trial": trial, "same_exit": same_code, "slow_exit": slow_code,
                "same_verdicts": same_verdicts, "slow_verdicts": slow_verdicts,
                "same_over_base": figures["same"]["median_s"] / figures["base"]["median_s"],
                "slow_over_base": figures["slow"]["median_s"] / figures["base"]["median_s"],
                "wall_same_over_base": figures["same"]["wall_median_s"] / figures["base"]["wall_median_s"],
                "wall_slow_over_base": figures["slow"]["wall_median_s"] / figures["base"]["wall_median_s"],
                **figures,
            })
            _write_summary(trials, started)  # after every trial: an interrupted experiment keeps its figures
    finally:
        spinner.kill()
        spinner.wait()
    false_regressions, detected = _write_summary(trials, started)
    assert false_regressions == 0, [t["same_verdicts"] for t in trials if t["same_exit"] != 0]
    assert detected == TRIALS, [t["slow_verdicts"] for t in trials if t["slow_exit"] != 1]
