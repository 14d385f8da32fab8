"""Progress on stderr for the long commands (a line per step when stderr is not a terminal,
nothing under --quiet), with standard output unchanged; the sweep's ETA from the completed
configurations' durations."""

from __future__ import annotations

import io
import json
import threading

import pytest

from vitbench.cli import main
from vitbench.cli.progress import Steps, clock
from vitbench.sweeps.progress import Progress, eta_s


def test_steps_write_a_line_per_step_and_nothing_when_quiet():
    stream = io.StringIO()
    steps = Steps("profile", stream=stream, bar=False)
    steps(0, 2, "vit-ti/16 batch 8: run 1 of 2")
    steps(1, 2, "vit-ti/16 batch 8: run 2 of 2")
    steps.close()
    assert stream.getvalue().splitlines() == [
        "vitbench: profile: [1/2] vit-ti/16 batch 8: run 1 of 2",
        "vitbench: profile: [2/2] vit-ti/16 batch 8: run 2 of 2",
    ]
    quiet = io.StringIO()
    steps = Steps("profile", stream=quiet, quiet=True)
    steps(0, 1, "x")
    steps.wait("calibrating")
    steps.close()
    assert quiet.getvalue() == ""


def test_a_delayed_step_says_nothing_when_it_is_quick():
    stream = io.StringIO()
    steps = Steps("analyze", stream=stream, bar=False, delay_s=60.0)
    steps(0, 1, "vit-b/16: analytic")
    steps.close()
    assert stream.getvalue() == ""


def test_a_wait_says_what_it_waits_for_then_how_long(monkeypatch):
    import vitbench.cli.progress as progress

    monkeypatch.setattr(progress, "WAIT_LINE_S", 0.01)
    stream = io.StringIO()
    steps = Steps("predict", stream=stream, bar=False)
    steps.wait("calibrating the CPU")
    ticked = threading.Event()
    for _ in range(500):
        if "still at it" in stream.getvalue():
            ticked.set()
            break
        ticked.wait(0.01)
    steps(0, 1, "resnet18 batch 1 infer fp32")
    steps.close()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "vitbench: predict: calibrating the CPU" and ticked.is_set()
    assert "vitbench: predict: [1/1] resnet18 batch 1 infer fp32" in lines


def test_clock_text():
    assert [clock(s) for s in (4.2, 65, 3725)] == ["4 s", "1m05s", "1h02m"]


def test_sweep_eta_is_the_mean_of_the_completed_durations_times_those_left():
    assert eta_s(30.0, 0, 10) is None
    assert eta_s(30.0, 3, 10) == pytest.approx(70.0)  # 10 s each, 7 left
    assert eta_s(30.0, 10, 10) == 0.0
    stream = io.StringIO()
    progress = Progress(stream, bar=False)
    progress.log_rows = True  # as without CI=true
    progress.on_start(2, 0)
    progress.on_row({"model": "vit-ti/16", "batch_size": 8, "mode": "infer", "precision": "fp32", "status": "ok"})
    progress.on_row({"model": "vit-ti/16", "batch_size": 16, "mode": "infer", "precision": "fp32", "status": "ok"})
    first, last = stream.getvalue().splitlines()
    assert first.startswith("[1/2] vit-ti/16 batch 8 infer fp32: ok (eta ") and last == "[2/2] vit-ti/16 batch 16 infer fp32: ok"


@pytest.mark.slow  # two in-process measurements: ~10 s on a shared 2-core machine
def test_profile_progress_goes_to_stderr_and_stdout_stays_json(capsys):
    argv = ["profile", "mnist-vit", "--device", "cpu", "--runs", "1", "--min-time", "0.02", "--warmup", "1",
            "--min-samples", "2", "--no-memory", "--threads", "1", "--format", "json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    (row,) = json.loads(captured.out)["records"]
    assert row["status"] == "ok" and row["threads"] == 1
    assert "vitbench: profile: [1/1] mnist-vit batch 1 infer fp32: run 1 of 1" in captured.err.splitlines()
    assert main([*argv, "--quiet"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["records"][0]["status"] == "ok"
    assert "vitbench: profile:" not in captured.err


def test_analyze_of_presets_stays_silent(capsys):
    assert main(["analyze", "vit-b/16", "--format", "csv"]) == 0
    assert capsys.readouterr().err == ""


def _delayed_steps(durations, delay_s=0.2):
    """A delayed Steps over steps lasting ``durations`` seconds each (quick ones under the delay)."""
    import time

    stream = io.StringIO()
    steps = Steps("predict", stream=stream, bar=False, delay_s=delay_s)
    for index, seconds in enumerate(durations):
        steps(index, len(durations), f"config {index + 1}")
        time.sleep(seconds)
    steps.close()
    return stream.getvalue().splitlines()


@pytest.mark.slow
def test_a_delayed_counter_never_skips_a_step_silently():
    # issue 46: predict printed [1/4] and [3/4] only, which read like lost rows; the quick steps
    # between and after the shown ones are named by their counters
    lines = _delayed_steps([0.6, 0.0, 0.6, 0.0])
    assert lines == [
        "vitbench: predict: [1/4] config 1",
        "vitbench: predict: [3/4] config 3 ([2/4] took under 0.2 s)",
        "vitbench: predict: [4/4] config 4 (took under 0.2 s)",
    ]
    lines = _delayed_steps([0.0, 0.0, 0.6, 0.0, 0.0])
    assert lines == [
        "vitbench: predict: [3/5] config 3 ([1-2/5] took under 0.2 s each)",
        "vitbench: predict: [4-5/5] took under 0.2 s each, the last config 5",
    ]
    assert _delayed_steps([0.0, 0.0, 0.0]) == []  # a quick command stays silent
