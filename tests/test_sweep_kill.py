"""A sweep killed mid-run keeps every completed row; --resume finishes it without redoing them.
Kills land between rows (a row delay) and INSIDE a record's write (a torn line)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from vitbench.analytic import complexity
from vitbench.presets import resolve
from vitbench.store import read_store

# cifar-vit/4 (32 px base): 4 sizes x 3 patch sizes x 2 batch sizes = 24 valid configurations.
GRID = ["--model", "cifar-vit/4", "--img-size", "32,64,96,128", "--patch-size", "4,8,16", "--batch-size", "1,2"]
TOTAL = 24
#: seconds before each row: the whole sweep lasts TOTAL x this, so that a test process starved of
#: CPU for a few seconds on a loaded machine still signals a sweep that is running (at 0.25 s the
#: sweep once finished first, and the "interrupted" sweep exited 0)
ROW_DELAY_S = 1.0


def _interactive() -> None:
    """The sweep runs as from a terminal: a test suite started in the background by a
    non-interactive shell inherits SIGINT ignored, and Python then never raises
    KeyboardInterrupt (seen in .ci/run started with `&`: the "interrupted" sweep exited 0)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(out: Path, delay: float, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, VITBENCH_SWEEP_ROW_DELAY_S=str(delay))
    return subprocess.Popen(
        [sys.executable, "-m", "vitbench", "sweep", *GRID, "--out", str(out), *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_interactive,
    )


def _rows(out: Path) -> list[dict]:
    return list(read_store(out)[0]) if (out / "rows.jsonl").exists() else []


def _wait_for_rows(out: Path, at_least: int, proc: subprocess.Popen, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"sweep ended early: {proc.communicate()}")
        rows = _rows(out)
        if len(rows) >= at_least:
            assert len(rows) < TOTAL and proc.poll() is None, "the sweep finished before it could be signalled"
            return len(rows)
        time.sleep(0.05)
    proc.kill()
    pytest.fail("sweep produced no rows in time")


def _resume(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "vitbench", "sweep", *GRID, "--out", str(out), "--resume", *extra],
        capture_output=True, text=True, timeout=180,
    )


def _check_complete_and_unchanged(out: Path, before: list[dict]) -> None:
    after = _rows(out)
    assert len(after) == TOTAL
    assert len({r["id"] for r in after}) == TOTAL
    by_id = {r["id"]: r for r in after}
    for old in before:  # same values, same completion timestamp: not recomputed
        assert by_id[old["id"]] == old
    # Every row is the real analytic count of its configuration.
    for r in after:
        spec = resolve("cifar-vit/4", img_size=r["img_size"], patch_size=r["patch_size"])
        assert r["macs"] == complexity(spec, r["batch_size"]).macs
    assert sorted(r["index"] for r in after) == list(range(TOTAL))
    assert (out / "results.csv").read_text().count("\n") == TOTAL + 1  # the export, at the end


@pytest.mark.slow
def test_sigkill_keeps_completed_rows_and_resume_finishes(tmp_path):
    out = tmp_path / "store"
    proc = _start(out, delay=ROW_DELAY_S)
    _wait_for_rows(out, 3, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    before = _rows(out)  # reads: a record is on disk whole or is detected as torn
    assert 3 <= len(before) < TOTAL
    assert all(r["status"] == "ok" for r in before)

    resumed = _resume(out)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(before)} configurations already done, {TOTAL - len(before)} to run" in resumed.stderr
    assert not list(out.glob(".*.tmp"))
    _check_complete_and_unchanged(out, before)


@pytest.mark.slow
def test_ctrl_c_saves_rows_exits_130_and_says_how_to_resume(tmp_path):
    out = tmp_path / "store"
    proc = _start(out, ROW_DELAY_S, "--quiet")
    _wait_for_rows(out, 2, proc)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "rows saved" in lines[0] and "--resume" in lines[0]
    before = _rows(out)
    saved = int(lines[0].split("interrupted: ")[1].split(" of ")[0])
    assert saved == len(before) >= 2
    # the CSV export is written on interruption too
    assert (out / "results.csv").read_text().count("\n") == saved + 1
    resumed = _resume(out, "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    _check_complete_and_unchanged(out, before)


@pytest.mark.slow
def test_sigterm_from_a_scheduler_is_handled_like_ctrl_c(tmp_path):
    out = tmp_path / "store"
    proc = _start(out, delay=ROW_DELAY_S)
    _wait_for_rows(out, 2, proc)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert "--resume" in stderr
    assert len(_rows(out)) >= 2


# The kill lands inside the write of the 6th record: the child writes the first half of the
# line, then SIGKILLs itself (what a kill -9, an OOM kill or a power cut does mid-write).
KILL_MID_WRITE = """
import os, signal, sys
import vitbench.store.writer as store
written = []
real = store.Store._append
def append(self, fd, data):
    written.append(1)
    if len(written) == 6:
        os.write(fd, data[: len(data) // 2])
        os.kill(os.getpid(), signal.SIGKILL)
    real(self, fd, data)
store.Store._append = append
from vitbench.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_kill_inside_a_record_write_is_detected_and_the_row_recomputed(tmp_path):
    out = tmp_path / "store"
    killed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(KILL_MID_WRITE), "sweep", *GRID, "--out", str(out), "--quiet"],
        capture_output=True, text=True, timeout=180,
    )
    assert killed.returncode == -signal.SIGKILL
    raw = (out / "rows.jsonl").read_bytes()
    assert not raw.endswith(b"\n")  # the last record is torn: the kill landed inside its write
    before, info = read_store(out)
    assert len(before) == 5 and "1 damaged record(s) skipped (line 6)" in info["problems"][0]

    resumed = _resume(out)
    assert resumed.returncode == 0, resumed.stderr
    warning = [line for line in resumed.stderr.splitlines() if "damaged" in line]
    assert len(warning) == 1 and "line 6" in warning[0] and "run again" in warning[0]
    assert "5 configurations already done, 19 to run" in resumed.stderr
    _check_complete_and_unchanged(out, list(before))
    assert read_store(out)[1]["problems"] == []  # the torn line was set aside, once
    assert (out / "rows.damaged.jsonl").read_bytes() == raw[raw.rindex(b"\n") + 1:] + b"\n"


BIG_WRITER = """
import sys
from vitbench.store import Store

class Announced(Store):  # says when a write starts (stdout only: the write itself is the real one)
    def _append(self, fd, data):
        print("writing", flush=True)
        super()._append(fd, data)

with Announced.open(sys.argv[1]) as store:
    for i in range(1000):
        store.add({"id": f"r{i}", "index": i, "status": "ok", "macs": 2**60 + i, "blob": "x" * (8 << 20)})
        print("done", i, flush=True)
"""


@pytest.mark.slow
def test_random_sigkills_during_large_writes_never_lose_an_acknowledged_row(tmp_path):
    """SIGKILL at random moments while 8 MiB records are written: a kill that lands inside the
    write() leaves a torn last line (the kernel stops copying pages for a dying process). Every
    row whose add() returned survives, a torn line is detected, and resuming sets it aside."""
    import random
    import shutil

    from vitbench.store import Store

    rng = random.Random(13)
    torn = 0
    for attempt in range(60):
        out = tmp_path / f"store{attempt}"
        proc = subprocess.Popen([sys.executable, "-c", BIG_WRITER, str(out)], stdout=subprocess.PIPE, text=True)
        seen = [proc.stdout.readline(), proc.stdout.readline(), proc.stdout.readline()]  # row 0 done, row 1 writing
        time.sleep(rng.uniform(0.0, 0.03))
        proc.send_signal(signal.SIGKILL)
        stdout, _ = proc.communicate(timeout=30)
        lines = seen + stdout.splitlines()
        # a kill can tear the "done N" line itself (its row was added: the line then only under-counts)
        done = (re.fullmatch(r"done (\d+)", line.rstrip("\n")) for line in lines)
        acknowledged = {f"r{found.group(1)}" for found in done if found}
        was_torn = not (out / "rows.jsonl").read_bytes().endswith(b"\n")
        torn += was_torn
        rows, info = read_store(out)
        assert acknowledged <= {r["id"] for r in rows}  # nothing acknowledged is ever lost
        assert all(r["macs"] == 2**60 + int(r["id"][1:]) for r in rows)  # exact beyond 2^53
        assert bool(info["problems"]) == was_torn  # a torn line is reported, and only then
        with Store.open(out, resume=True) as store:  # resuming sets the torn line aside
            assert set(store.statuses) == {r["id"] for r in rows}
        assert (out / "rows.jsonl").read_bytes().endswith(b"\n")
        shutil.rmtree(out)
        if torn >= 3:
            break
    assert torn >= 1, "no kill landed inside a write in 60 tries"
