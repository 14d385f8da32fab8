"""`vitbench sweep --launcher submitit` against a real Slurm: a one-node cluster (slurmctld,
slurmd, munge from Debian's slurm-wlm) started by a fixture in a temporary directory
(tests/_slurm_cluster.py). Job arrays, a cancelled and a requeued array task, the resources
Slurm records, and launches Slurm refuses.

Skipped, with the reason, where Slurm is not installed; .ci/run installs it and sets
VITBENCH_REQUIRE_SLURM=1, which turns that skip into a failure."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import _slurm_cluster
import pytest

from vitbench.store import read_store

GRID = ["--model", "cifar-vit/4", "--img-size", "32,64,96", "--patch-size", "4,8", "--batch-size", "1,2"]
TOTAL = 12
VOLATILE = ("completed_at", "elapsed_s")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    reason = _slurm_cluster.unavailable()
    if reason:
        if os.environ.get("VITBENCH_REQUIRE_SLURM") == "1":
            pytest.fail(f"VITBENCH_REQUIRE_SLURM=1 but {reason}")
        pytest.skip(reason)
    with _slurm_cluster.SlurmCluster(tmp_path_factory.mktemp("slurm")) as running:
        yield running


def _vitbench(env: dict, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vitbench", *argv], env=env, capture_output=True, text=True, timeout=timeout)


def _rows(out: Path) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in read_store(out)[0]]


@pytest.fixture(scope="module")
def local_rows(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("local") / "local"
    done = _vitbench(dict(os.environ), "sweep", *GRID, "--out", str(out), "-q")
    assert done.returncode == 0, done.stderr
    rows = _rows(out)
    assert len(rows) == TOTAL
    return rows


def _squeue(cluster) -> dict[str, str]:
    out = cluster.command("squeue", "-h", "-o", "%i %T").stdout
    return dict(line.split() for line in out.splitlines() if line.strip())


@pytest.mark.slow
def test_a_job_array_gives_the_rows_of_a_local_run(cluster, local_rows, tmp_path):
    out = tmp_path / "array"
    started = time.monotonic()
    done = _vitbench(cluster.env, "sweep", *GRID, "--out", str(out), "--launcher", "submitit", "--cluster", "slurm", "--jobs", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _rows(out) == local_rows
    stores = sorted((out / "jobs").iterdir())
    assert [p.name for p in stores] == [f"shard-{i:04d}-of-0003" for i in (1, 2, 3)]
    job_ids = {read_store(p)[1]["environment"].get("slurm_array_job_id") for p in stores}
    assert len(job_ids) == 1 and None not in job_ids  # the three ran as tasks of one Slurm array
    print(f"job array of 3 tasks, {TOTAL} rows: {time.monotonic() - started:.1f} s")


@pytest.mark.slow
def test_a_cancelled_and_a_requeued_task_end_like_an_uninterrupted_run(cluster, local_rows, tmp_path):
    out = tmp_path / "faults"
    env = {**cluster.env, "VITBENCH_SWEEP_ROW_DELAY_S": "2.5"}  # 4 rows a task: 10 s each, KillWait 2 s
    proc = subprocess.Popen(
        [sys.executable, "-m", "vitbench", "sweep", *GRID, "--out", str(out), "--launcher", "submitit",
         "--cluster", "slurm", "--jobs", "3", "--max-retries", "2"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 120
        tasks: dict[str, str] = {}
        while time.monotonic() < deadline:  # tasks 0 and 1 running, each with a row saved
            tasks = _squeue(cluster)
            running = sorted(t for t, state in tasks.items() if state == "RUNNING" and re.fullmatch(r"\d+_[01]", t))
            stores = [out / "jobs" / f"shard-{i:04d}-of-0003" / "rows.jsonl" for i in (1, 2)]
            if len(running) == 2 and all(s.exists() and s.stat().st_size for s in stores):
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        else:
            pytest.fail(f"the array tasks did not start: {tasks}")
        array = running[0].split("_")[0]
        cluster.command("scancel", f"{array}_0")
        cluster.scontrol("requeue", f"{array}_1")
        # Slurm holds a requeued job for 120 s (Reason=BeginTime); release it once it is held,
        # as an administrator can, so that the test does not wait two minutes
        for _ in range(150):
            job = cluster.job(f"{array}_1")
            if job["JobState"] == "PENDING" and job["Reason"] == "BeginTime":
                cluster.scontrol("update", f"JobId={array}_1", "StartTime=now")
                break
            time.sleep(0.1)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stdout + stderr
    rows = _rows(out)
    assert len(rows) == TOTAL and len({r["id"] for r in rows}) == TOTAL  # none lost, none doubled
    assert rows == local_rows
    assert cluster.job(f"{array}_1")["Restarts"] == "1"  # Slurm did run task 1 twice
    assert re.search(rf"job 1/3 resubmitted \(attempt 2\) after: Slurm job {array}_0 ended as CANCELLED", stderr), stderr
    assert "sacct" not in stderr  # submitit's warnings about the missing accounting database are silenced


def test_the_resources_asked_for_are_what_slurm_records(cluster, tmp_path):
    out = tmp_path / "resources"
    done = _vitbench(
        cluster.env, "sweep", *GRID, "--out", str(out), "--launcher", "submitit", "--cluster", "slurm", "--jobs", "2",
        "--partition", "batch", "--time-limit", "7", "--mem-per-job", "300MiB", "--cpus-per-job", "2",
        "--gpus-per-job", "1", "--no-wait",
    )
    assert done.returncode == 0, done.stderr
    array = re.search(r"array (\d+)", done.stdout).group(1)
    try:
        job = cluster.job(array)
        assert job["Partition"] == "batch"
        assert job["TimeLimit"] == "00:07:00"
        assert job["MinMemoryNode"] == "300M"
        assert job["CPUs/Task"] == "2"
        assert job["TresPerNode"] == "gres:gpu:1"
        assert job["ArrayTaskId"] in ("0-1", "0", "1") or job.get("ArrayJobId") == array
    finally:
        cluster.command("scancel", array, check=False)


def _one_line_refusal(done: subprocess.CompletedProcess, out: Path, flag: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0] and "Traceback" not in done.stderr, done.stderr
    assert not out.exists()  # nothing written


def test_a_bad_partition_is_one_line_exit_2_and_writes_nothing(cluster, tmp_path):
    out = tmp_path / "bad-partition"
    done = _vitbench(cluster.env, "sweep", *GRID, "--out", str(out), "--launcher", "submitit", "--cluster", "slurm", "--partition", "nosuch")
    _one_line_refusal(done, out, "--partition='nosuch'")
    assert "debug" in done.stderr and "batch" in done.stderr  # the partitions there are


def test_an_unreachable_controller_is_one_line_exit_2_and_writes_nothing(cluster, tmp_path):
    conf = tmp_path / "slurm.conf"
    text = cluster.conf.read_text()
    conf.write_text(re.sub(r"SlurmctldPort=\d+", f"SlurmctldPort={_slurm_cluster._free_port()}", text) + "MessageTimeout=2\n")
    out = tmp_path / "unreachable"
    done = _vitbench({**cluster.env, "SLURM_CONF": str(conf)}, "sweep", *GRID, "--out", str(out), "--launcher", "submitit", "--cluster", "slurm")
    _one_line_refusal(done, out, "--cluster=slurm")
    assert "unreachable" in done.stderr
