"""Fan-out: one worker per GPU (fake devices on the CPU), and a Slurm job array through
submitit's local executor, with a job killed and a job preempted mid-way."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from vitbench.store import read_store
from vitbench.sweeps import sweep

# cifar-vit/4: 4 sizes x 3 patches x 2 batches = 24 analytic configurations
GRID = {"img_size": [32, 64, 96, 128], "patch_size": [4, 8, 16]}
VOLATILE = ("completed_at", "elapsed_s", "cuda_visible_devices")


def _plain(records):
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in records]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "store"
    return _plain(sweep(models=["cifar-vit/4"], grid=GRID, batch_sizes=[1, 2], out=out).records)


@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
def test_gpu_pool_pins_one_worker_per_device_and_matches_a_local_run(tmp_path, monkeypatch, uninterrupted):
    monkeypatch.setenv("VITBENCH_SWEEP_ROW_DELAY_S", "0.05")  # both workers get work
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")  # two "visible GPUs" on a CPU machine
    result = sweep(models=["cifar-vit/4"], grid=GRID, batch_sizes=[1, 2], out=tmp_path / "s", launcher="gpus")
    records = read_store(tmp_path / "s")[0]
    # each row says the CUDA_VISIBLE_DEVICES its worker process started with: one device each
    assert {r["cuda_visible_devices"] for r in records} == {"0", "1"}
    assert result.ran == 24 and _plain(records) == uninterrupted
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "0,1"  # the parent's own setting is left alone


def _pid_of(store: Path) -> int:
    return int((store / ".lock").read_text().split()[0])


def _wait(predicate, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


def _rows_in(store: Path) -> int:
    return len(read_store(store)[0]) if (store / "rows.jsonl").exists() else 0


@pytest.mark.slow
@pytest.mark.parametrize("interruption", ["kill", "preempt"])
def test_submitit_array_with_a_job_killed_or_preempted_ends_like_an_uninterrupted_run(tmp_path, monkeypatch, uninterrupted, interruption):
    pytest.importorskip("submitit")
    monkeypatch.setenv("VITBENCH_SWEEP_ROW_DELAY_S", "0.3")
    out = tmp_path / "s"
    jobs: dict[int, object] = {}
    outcome: dict[str, object] = {}

    def launch():
        try:
            outcome["result"] = sweep(
                models=["cifar-vit/4"], grid=GRID, batch_sizes=[1, 2], out=out, launcher="submitit",
                launcher_options={"cluster": "local", "jobs": 3, "poll_s": 0.2, "on_submit": jobs.update},
            )
        except BaseException as exc:  # noqa: BLE001 - surfaced in the test thread
            outcome["error"] = exc

    thread = threading.Thread(target=launch)
    thread.start()
    shard = out / "jobs" / "shard-0002-of-0003"
    _wait(lambda: _rows_in(shard) >= 2 and (shard / ".lock").exists())
    first = jobs[2]
    # kill -9 (the OOM killer, a node failure) or SIGUSR2 (Slurm's preemption/timeout warning:
    # submitit checkpoints and requeues the job), inside the job's sweep
    os.kill(_pid_of(shard), signal.SIGKILL if interruption == "kill" else signal.SIGUSR2)
    thread.join(timeout=300)
    assert not thread.is_alive()
    assert "error" not in outcome, outcome.get("error")
    if interruption == "kill":
        assert jobs[2] is not first  # resubmitted by the launcher
    else:
        assert jobs[2] is first  # requeued by submitit itself, after its checkpoint
        logs = "".join(p.read_text(errors="replace") for p in (out / "submitit").glob(f"{first.job_id}*_log.*"))
        assert "Calling checkpoint method" in logs and "Requeued job" in logs
    assert 2 <= len(read_store(shard)[0]) == 8
    assert _plain(read_store(out)[0]) == uninterrupted  # the merged store: the same rows
    assert (out / "results.csv").exists()


CRASHY = '''
import os


def build(**kwargs):
    from torch import nn

    if os.environ.get("CUDA_VISIBLE_DEVICES") in ("0", "1"):  # in a GPU worker: die like a segfault
        os._exit(7)
    return nn.Linear(4, 2)
'''


@pytest.mark.slow
def test_a_worker_that_dies_leaves_an_error_row_and_is_replaced(tmp_path, monkeypatch):
    (tmp_path / "crashy_factory.py").write_text(CRASHY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    result = sweep(models=["py:crashy_factory:build", "cifar-vit/4"], grid={"img_size": [32, 64]}, out=tmp_path / "s", launcher="gpus")
    records = {(r["model"], r["overrides"]): r for r in read_store(tmp_path / "s")[0]}
    crashed = [r for r in records.values() if r["model"].startswith("py:")]
    assert len(crashed) == 2 and all(r["status"] == "error" and "died (exit code 7)" in r["error"] for r in crashed)
    assert all(records[("cifar-vit/4", f"img_size={s}")]["status"] == "ok" for s in (32, 64))  # replaced workers went on
    assert result.ran == 4
