"""A sweep killed mid-run keeps every completed row; --resume finishes it without redoing them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vitbench.analytic import complexity
from vitbench.presets import resolve
from vitbench.store import load_results, read_raw_csv

# cifar-vit/4 (32 px base): 4 sizes x 3 patch sizes x 2 batch sizes = 24 valid configurations.
GRID = ["--model", "cifar-vit/4", "--img-size", "32,64,96,128", "--patch-size", "4,8,16", "--batch-size", "1,2"]
TOTAL = 24


def _start(out: Path, delay: float, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, VITBENCH_SWEEP_ROW_DELAY_S=str(delay))
    return subprocess.Popen(
        [sys.executable, "-m", "vitbench", "sweep", *GRID, "--out", str(out), *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _wait_for_rows(csv: Path, at_least: int, proc: subprocess.Popen, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"sweep ended early: {proc.communicate()}")
        if csv.exists():
            rows = read_raw_csv(csv)
            if len(rows) >= at_least:
                return len(rows)
        time.sleep(0.05)
    proc.kill()
    pytest.fail("sweep produced no rows in time")


def _check_complete_and_unchanged(out: Path, before: list[dict[str, str]]) -> None:
    after = read_raw_csv(out / "results.csv")
    assert len(after) == TOTAL
    assert len({r["id"] for r in after}) == TOTAL
    by_id = {r["id"]: r for r in after}
    for old in before:  # same cells, same completion timestamp: not recomputed
        assert by_id[old["id"]] == old
    # Every row is the real analytic count of its configuration.
    records, _ = load_results(out)
    for r in records:
        spec = resolve("cifar-vit/4", img_size=r["img_size"], patch_size=r["patch_size"])
        assert r["macs"] == complexity(spec, r["batch_size"]).macs
    assert sorted(r["index"] for r in records) == list(range(TOTAL))


@pytest.mark.slow
def test_sigkill_keeps_completed_rows_and_resume_finishes(tmp_path):
    out = tmp_path / "store"
    proc = _start(out, delay=0.25)
    _wait_for_rows(out / "results.csv", 3, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    before = read_raw_csv(out / "results.csv")  # parses: the file is never half-written
    assert 3 <= len(before) < TOTAL
    assert all(r["status"] == "ok" for r in before)

    resumed = subprocess.run(
        [sys.executable, "-m", "vitbench", "sweep", *GRID, "--out", str(out), "--resume"],
        capture_output=True, text=True, timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(before)} configurations already done, {TOTAL - len(before)} to run" in resumed.stderr
    assert not list(out.glob(".results.*.tmp"))
    _check_complete_and_unchanged(out, before)


@pytest.mark.slow
def test_ctrl_c_saves_rows_exits_130_and_says_how_to_resume(tmp_path):
    out = tmp_path / "store"
    proc = _start(out, 0.25, "--quiet")
    _wait_for_rows(out / "results.csv", 2, proc)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "rows saved" in lines[0] and "--resume" in lines[0]
    before = read_raw_csv(out / "results.csv")
    saved = int(lines[0].split("interrupted: ")[1].split(" of ")[0])
    assert saved == len(before) >= 2
    resumed = subprocess.run(
        [sys.executable, "-m", "vitbench", "sweep", *GRID, "--out", str(out), "--resume", "--quiet"],
        capture_output=True, text=True, timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    _check_complete_and_unchanged(out, before)


@pytest.mark.slow
def test_sigterm_from_a_scheduler_is_handled_like_ctrl_c(tmp_path):
    out = tmp_path / "store"
    proc = _start(out, delay=0.25)
    _wait_for_rows(out / "results.csv", 2, proc)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert "--resume" in stderr
    assert len(read_raw_csv(out / "results.csv")) >= 2
