"""A sweep's ETA weighs the rows left by what they cost (issue 46: `eta 9s` at row 46 of 67 with
18 minutes left, the measured rows all still to come), and `remeasure:` measures the rows unfit to
conclude from once more while its budget lasts. Measurements are faked: these tests are about
the bookkeeping, not the timing."""

from __future__ import annotations

import io

import pytest

from vitbench.sweeps.progress import Progress, RowCosts, eta_weighted
from vitbench.sweeps.remeasure import Remeasure, better

COSTS = RowCosts(seconds={"counted": 2.0, "measured": 12.0}, rows={"counted": 40, "measured": 20},
                 measured=frozenset({"measured"}))


def test_the_eta_counts_the_measured_rows_still_to_come():
    # 40 counted rows done at 2 s each as estimated; 20 measured rows left at 12 s each: 240 s,
    # where the mean over the rows done (2 s) would say 40 s
    assert eta_weighted(COSTS, {"counted": 80.0}, {"counted": 40}, 20) == pytest.approx(240.0)


def test_the_eta_scales_the_estimate_by_the_pace_of_the_rows_done():
    # counted rows took twice their estimate (a busy machine): the measured rows, none done yet,
    # are expected to as well; once some are done, their own pace counts
    assert eta_weighted(COSTS, {"counted": 160.0}, {"counted": 40}, 20) == pytest.approx(480.0)
    spent, done = {"counted": 160.0, "measured": 10 * 36.0}, {"counted": 40, "measured": 10}
    assert eta_weighted(COSTS, spent, done, 10) == pytest.approx(10 * 36.0)  # 3 x its 12 s estimate


def test_counted_rows_faster_than_estimated_do_not_shorten_the_measured_rows():
    # counted rows at a fifth of their estimate (at rest: tracing is quicker than its rough cost);
    # the measured rows still to come are a worker process each: their estimate, not a fifth of it
    assert eta_weighted(COSTS, {"counted": 16.0}, {"counted": 40}, 20) == pytest.approx(240.0)


def test_the_eta_uses_the_kind_of_row_before_all_rows():
    costs = RowCosts(seconds={"c": 1.0, "m1": 10.0, "m2": 10.0}, rows={"c": 10, "m1": 2, "m2": 2},
                     measured=frozenset({"m1", "m2"}))
    # counted rows at their estimate, measured study m1 at 4x: m2 (not started) follows m1, not c
    assert eta_weighted(costs, {"c": 10.0, "m1": 80.0}, {"c": 10, "m1": 2}, 2) == pytest.approx(2 * 40.0)


def test_no_eta_before_a_row_and_none_left_after_the_last():
    assert eta_weighted(COSTS, {}, {}, 60) is None
    assert eta_weighted(COSTS, {"counted": 80.0, "measured": 240.0}, {"counted": 40, "measured": 20}, 0) == 0.0


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_progress_lines_give_the_weighted_eta_on_a_fake_clock():
    clock, stream = FakeClock(), io.StringIO()
    progress = Progress(stream, bar=False, clock=clock)
    progress.log_rows = True
    progress.on_start(4, 0)
    progress.on_estimate(RowCosts({"counted": 1.0, "measured": 10.0}, {"counted": 2, "measured": 2}, frozenset({"measured"})))
    for study, seconds in (("counted", 3.0), ("counted", 3.0), ("measured", 30.0)):
        clock.now += seconds
        progress.on_row({"model": "vit-ti/16", "batch_size": 1, "status": "ok", "study": study})
    lines = stream.getvalue().splitlines()
    # after two counted rows (3x their 1 s): 2 measured rows x 10 s x 3 = 60 s; after one measured
    # row (30 s, 3x its estimate): the last one 30 s
    assert lines[1].endswith("(eta 1m00s)") and lines[2].endswith("(eta 30s)")


def test_without_costs_the_eta_is_the_mean_over_the_rows_done():
    clock, stream = FakeClock(), io.StringIO()
    progress = Progress(stream, bar=False, clock=clock)
    progress.log_rows = True
    progress.on_start(3, 0)
    clock.now += 5.0
    progress.on_row({"model": "m", "batch_size": 1, "status": "ok", "study": "s"})
    assert stream.getvalue().splitlines()[0].endswith("(eta 10s)")


class Config:
    def __init__(self, ident: str, stages=("analytic", "measured")) -> None:
        self.id, self.stages = ident, stages


def measured_row(ident: str, cv: float, elapsed: float = 10.0, status: str = "ok") -> dict:
    return {"id": ident, "status": status, "throughput_img_s": 100.0, "clock": "cpu", "run_cv": cv,
            "elapsed_s": elapsed, "warnings": [{"code": "unstable-runs", "message": "runs disagree"}] if cv > 0.1 else []}


def test_only_unfit_measured_rows_wait_for_a_second_attempt_and_the_budget_is_a_share_of_their_time():
    second = Remeasure(share=0.25)
    second.note(Config("a"), measured_row("a", 0.02))
    second.note(Config("b"), measured_row("b", 0.30))
    second.note(Config("c", ("analytic",)), {"id": "c", "status": "ok", "elapsed_s": 99.0})  # not measured
    second.note(None, measured_row("d", 0.30))  # no configuration known: cannot be run again
    assert [c.id for c, _ in second.unfit] == ["b"]
    assert second.measured_s == 20.0 and second.budget_s == pytest.approx(5.0)


def test_the_second_attempts_stop_when_the_next_would_overrun_the_budget():
    second = Remeasure(share=0.5)
    for ident in "abcd":
        second.note(Config(ident), measured_row(ident, 0.3, elapsed=10.0))  # 40 s measured: 20 s budget
    spent = iter([0.0, 10.0, 20.0])  # the third would end at 30 s, over the 20 s budget
    assert [c.id for c in second.configs(lambda: next(spent))] == ["a", "b"]
    assert [c.id for c in Remeasure(share=0.0).configs(lambda: 0.0)] == []


def test_the_attempt_kept_is_the_fit_one_else_the_steadier():
    first, fit = measured_row("a", 0.30), measured_row("a", 0.04)
    kept = better(first, fit)
    assert kept["kept_attempt"] == 2 and kept["run_cv"] == 0.04 and kept["attempts"] == 2
    assert kept["attempt_spreads"] == [0.30, 0.04]
    assert [w["code"] for w in kept["warnings"]] == ["remeasured"]
    assert "30%, 4%" in kept["warnings"][0]["message"]
    worse = better(first, measured_row("a", 0.45))
    assert worse["kept_attempt"] == 1 and worse["run_cv"] == 0.30
    assert better(first, measured_row("a", 0.20))["kept_attempt"] == 2  # both unfit: the smaller spread
    assert better(first, measured_row("a", 0.30))["kept_attempt"] == 1  # a tie: the first
    failed = better(first, {"id": "a", "status": "error", "error": "boom", "elapsed_s": 1.0})
    assert failed["kept_attempt"] == 1 and failed["status"] == "ok"


def test_a_sweep_measures_an_unfit_row_again_and_keeps_the_steadier_attempt(tmp_path, monkeypatch):
    """End to end through vitbench.sweep with the measurement faked: batch 2's first attempt is
    unstable, its second is not; batch 1 is stable at once and is measured once."""
    import vitbench.sweeps.rows as rows
    from vitbench.store.reader import read_store
    from vitbench.sweeps import sweep

    calls: list[int] = []

    def fake_measured(target, config):
        calls.append(config.batch_size)
        cv = 0.30 if config.batch_size == 2 and calls.count(2) == 1 else 0.02
        row = measured_row("", cv)
        del row["id"], row["elapsed_s"]
        return {**row, "batch_size": config.batch_size, "mode": "infer", "precision": "fp32", "device": "cpu"}

    monkeypatch.setattr(rows, "_measured", fake_measured)
    study = tmp_path / "s.yaml"
    study.write_text("name: s\nremeasure: 1\nmodels: [vit-ti/16]\nbatch_sizes: [1, 2]\n"
                     "stages: [analytic, measured]\nmeasure: {device: cpu, clock: cpu, runs: 2}\n")
    notes: list[str] = []
    seen: list[dict] = []
    result = sweep(str(study), out=tmp_path / "out", on_progress={"on_note": notes.append}, on_row=seen.append)
    assert calls == [1, 2, 2]
    assert result.statuses == {"ok": 2} and result.ran == 2
    stored = {r["batch_size"]: r for r in read_store(tmp_path / "out")[0]}
    assert stored[2]["kept_attempt"] == 2 and stored[2]["run_cv"] == 0.02 and stored[2]["attempts"] == 2
    assert stored[1].get("attempts") is None  # measured once
    assert len(notes) == 1 and notes[0].startswith("1 measured row unfit to conclude from")
    assert [r.get("attempts") for r in seen] == [None, None, 2]  # the second pass is heard as such


def test_remeasure_must_be_a_share():
    from vitbench.sweeps.plan import validate
    from vitbench.sweeps.schema import SweepFileError

    assert validate({"models": ["vit-ti/16"], "remeasure": 0.5}).remeasure == 0.5
    assert validate({"models": ["vit-ti/16"]}).remeasure == 0.0
    for bad in (-0.1, "half", True, 11):
        with pytest.raises(SweepFileError, match="remeasure="):
            validate({"models": ["vit-ti/16"], "remeasure": bad})


def test_the_bar_shows_the_weighted_eta_not_a_count_of_rows():
    clock, stream = FakeClock(), io.StringIO()
    progress = Progress(stream, bar=True, clock=clock)
    progress.on_start(3, 0)
    progress.on_estimate(RowCosts({"c": 1.0, "m": 10.0}, {"c": 1, "m": 2}, frozenset({"m"})))
    clock.now += 1.0
    progress.on_row({"model": "vit-ti/16", "batch_size": 1, "status": "ok", "study": "c"})
    progress.close()
    assert "eta 20s, vit-ti/16 batch 1" in stream.getvalue()  # 2 measured rows at 10 s, not 2 x 1 s
