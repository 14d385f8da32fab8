"""Where a sweep's configurations run beyond this process (``local``, :func:`vitbench.sweeps.run.execute`):
one worker per GPU (``gpus``), or a Slurm job array through submitit (``submitit``).

``gpus``: one worker process per visible GPU (``CUDA_VISIBLE_DEVICES``, else every CUDA
device; ``gpus=["0", "1"]`` names them), each started with ``CUDA_VISIBLE_DEVICES`` set to its
one device, pulling configurations from a shared queue; the parent process alone writes the
store. A worker that dies (a segfault, the OOM killer) turns its configuration into an ``error``
row and is replaced.

``submitit``: the grid split into ``jobs`` shards, submitted as one job array (at most
``parallelism`` running at once, ``time_limit_min`` each); each job runs its shard into its own
store under ``OUT/jobs/`` and resumes from it, so a job requeued after preemption or timeout
(submitit checkpoints and requeues it) or resubmitted after a failure (up to ``max_retries``
times) continues where it stopped; when all are done their stores are merged into ``OUT``.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from vitbench.errors import VitbenchError
from vitbench.sweeps.grid import Config, check_valid, tally
from vitbench.sweeps.plan import SweepPlan
from vitbench.sweeps.run import SweepResult, confirm_size, execute, run_local, sweep_meta


class LaunchError(VitbenchError):
    """Jobs of a sweep that failed for good (exit code 3): the rows they saved are kept."""

    exit_code = 3


# --- one worker per GPU ------------------------------------------------------------------------
def visible_gpus(gpus: Sequence[str] | str | None = None) -> list[str]:
    """The GPUs to use: ``gpus`` if given, else CUDA_VISIBLE_DEVICES, else every CUDA device."""
    if isinstance(gpus, str):
        gpus = [g for g in gpus.split(",")]
    if gpus:
        devices = [str(g).strip() for g in gpus if str(g).strip()]
    elif os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        devices = [g.strip() for g in os.environ["CUDA_VISIBLE_DEVICES"].split(",") if g.strip()]
    else:
        import torch

        devices = [str(i) for i in range(torch.cuda.device_count())]
    if not devices:
        raise VitbenchError("--launcher gpus: no GPU is visible (no CUDA device, or CUDA_VISIBLE_DEVICES is empty); name them with --gpus 0,1 or use --launcher local")
    return devices


def gpu_worker(device: str, tasks: Any, results: Any) -> None:
    """A worker process: rows of the configurations it takes from ``tasks`` until None. It was
    started with CUDA_VISIBLE_DEVICES=device (set before the interpreter, so before CUDA starts);
    each row records the value the process started with."""
    pinned = os.environ.get("CUDA_VISIBLE_DEVICES")
    if pinned != device:
        raise RuntimeError(f"worker for GPU {device} started with CUDA_VISIBLE_DEVICES={pinned!r}")

    while True:
        config = tasks.get()
        if config is None:
            return
        results.put(("start", device, config.id))
        for row in run_local(iter([config])):
            row["cuda_visible_devices"] = pinned
            results.put(("row", device, row))


def run_gpus(configs: Iterator[Config], gpus: Sequence[str] | str | None = None, restarts: int = 3) -> Iterator[dict[str, Any]]:
    """Rows of ``configs`` computed by one worker per GPU, in completion order."""
    import multiprocessing

    devices = visible_gpus(gpus)
    context = multiprocessing.get_context("spawn")
    tasks, results = context.Queue(), context.Queue()
    workers: dict[str, Any] = {}
    inflight: dict[str, Config | None] = {d: None for d in devices}
    pending: dict[str, Config] = {}
    left = {d: restarts for d in devices}

    def start(device: str) -> None:
        previous = os.environ.get("CUDA_VISIBLE_DEVICES")
        os.environ["CUDA_VISIBLE_DEVICES"] = device  # the spawned child starts with this
        try:
            workers[device] = context.Process(target=gpu_worker, args=(device, tasks, results), daemon=True)
            workers[device].start()
        finally:
            if previous is None:
                os.environ.pop("CUDA_VISIBLE_DEVICES", None)
            else:
                os.environ["CUDA_VISIBLE_DEVICES"] = previous

    def feed() -> bool:
        config = next(configs, None)
        if config is None:
            return False
        pending[config.id] = config
        tasks.put(config)
        return True

    for device in devices:
        start(device)
    more = all(feed() for _ in range(2 * len(devices)))
    try:
        while pending:
            try:
                kind, device, payload = results.get(timeout=0.5)
            except queue.Empty:
                yield from _replace_dead(workers, inflight, pending, left, start)
                continue
            if kind == "start":
                inflight[device] = pending.get(payload)
                continue
            inflight[device] = None
            pending.pop(payload["id"], None)
            if more:
                more = feed()
            yield payload
    finally:
        for _ in workers:
            with contextlib.suppress(Exception):
                tasks.put(None)
        for process in workers.values():
            process.join(timeout=5)
            if process.is_alive():
                process.terminate()


def _replace_dead(workers, inflight, pending, left, start) -> Iterator[dict[str, Any]]:
    for device, process in list(workers.items()):
        if process.is_alive():
            continue
        config = inflight.get(device)
        if config is not None:
            row = {
                "id": config.id, "index": config.index, "study": config.study, "model": config.model,
                "overrides": config.overrides_text, "batch_size": config.batch_size, "status": "error",
                "error": f"the worker on GPU {device} died (exit code {process.exitcode}) while running this configuration",
                "cuda_visible_devices": device,
            }
            pending.pop(config.id, None)
            inflight[device] = None
            yield row
        if left[device] <= 0:
            raise LaunchError(f"--launcher gpus: the worker on GPU {device} died {left[device] + 1} times; stopping (rows so far are saved)")
        left[device] -= 1
        start(device)


# --- Slurm job arrays through submitit ---------------------------------------------------------
class ShardJob:
    """One array job: runs shard ``index`` of ``count`` into its own store, resuming from it."""

    def __init__(self, plan: SweepPlan, jobs_dir: Path, count: int, retry_failed: bool, export: Sequence[str]):
        self.plan, self.jobs_dir, self.count = plan, jobs_dir, count
        self.retry_failed, self.export = retry_failed, tuple(export)

    def store_dir(self, index: int) -> Path:
        return self.jobs_dir / f"shard-{index:04d}-of-{self.count:04d}"

    def __call__(self, index: int) -> int:
        result = execute(
            self.plan, self.store_dir(index), shard=(index, self.count), resume=True,
            retry_failed=self.retry_failed, yes=True, export=self.export,
        )
        return result.ran

    def checkpoint(self, index: int) -> Any:
        """Requeue after preemption or timeout: the same shard, resuming from its store."""
        import submitit

        return submitit.helpers.DelayedSubmission(self, index)


def _executor(folder: Path, cluster: str | None, options: dict[str, Any]) -> Any:
    try:
        import submitit
    except ImportError:
        raise VitbenchError("--launcher submitit needs submitit: pip install 'vitbench[slurm]'") from None
    try:
        executor = submitit.AutoExecutor(folder=folder, cluster=cluster)
    except (RuntimeError, ValueError) as exc:
        raise VitbenchError(f"--cluster={cluster or 'auto'}: {exc}") from None
    executor.update_parameters(**{k: v for k, v in options.items() if v is not None})
    return executor


def run_submitit(
    plan: SweepPlan, directory: Path, *, resume: bool = False, force: bool = False, allow_foreign: bool = False,
    yes: bool = False, export: Sequence[str] = ("csv",), retry_failed: bool = False, jobs: int | None = None,
    parallelism: int | None = None, time_limit_min: int | None = 60, partition: str | None = None,
    gpus_per_job: int | None = None, cpus_per_job: int | None = None, cluster: str | None = None,
    max_retries: int = 2, wait: bool = True, poll_s: float = 1.0, on_submit: Any = None,
) -> SweepResult:
    """Submit the plan as a job array, wait, resubmit failed jobs, merge the job stores into
    ``directory``. With ``wait=False``, return after submitting (merge later with
    ``vitbench merge OUT/jobs/* --out OUT``)."""
    from vitbench.sweeps.merging import merge
    from vitbench.sweeps.store import Store

    from vitbench.sweeps.export import check_formats

    check_formats(export)
    check_valid(plan)
    size = tally(plan)
    confirm_size(plan, size.grid, yes)
    count = max(1, min(jobs or 8, size.grid))
    jobs_dir = directory / "jobs"
    with Store.open(directory, sweep=sweep_meta(plan, size.grid, None), resume=resume, force=force, allow_foreign=allow_foreign):
        if force and jobs_dir.exists():
            shutil.rmtree(jobs_dir)
        if jobs_dir.exists() and any(jobs_dir.iterdir()) and not resume:
            raise VitbenchError(f"out={str(directory)!r}: holds job stores from an earlier launch; pass --resume to continue them or --force to start over")
    executor = _executor(directory / "submitit", cluster, {
        "name": f"vitbench-{plan.name}", "timeout_min": time_limit_min, "slurm_partition": partition,
        "slurm_array_parallelism": parallelism, "gpus_per_node": gpus_per_job, "cpus_per_task": cpus_per_job,
    })
    task = ShardJob(plan, jobs_dir, count, retry_failed, export)
    indexes = list(range(1, count + 1))
    submitted = dict(zip(indexes, executor.map_array(task, indexes)))
    if on_submit:
        on_submit(submitted)
    if not wait:
        job = next(iter(submitted.values()))
        return SweepResult(out=directory, total=size.grid, ran=0, skipped=0, name=plan.name, note=(
            f"submitted {count} jobs (array {str(job.job_id).split('_')[0]}); when they are done: "
            f"vitbench merge {jobs_dir}/* --out {directory} --force"
        ))
    attempts = {i: 1 for i in indexes}
    failed: dict[int, str] = {}
    while submitted:
        time.sleep(poll_s)
        for index, job in list(submitted.items()):
            if not job.done():
                continue
            del submitted[index]
            error = job.exception()
            if error is None:
                continue
            if attempts[index] <= max_retries:  # resubmit: the shard resumes from its store
                attempts[index] += 1
                submitted[index] = executor.submit(task, index)
                if on_submit:
                    on_submit({index: submitted[index]})
            else:
                failed[index] = " ".join(str(error).split())[-300:]
    stores = [task.store_dir(i) for i in indexes if (task.store_dir(i) / "rows.jsonl").exists()]
    merged = merge(stores, directory, force=True, export=export) if stores else None
    if failed:
        index, reason = next(iter(failed.items()))
        raise LaunchError(
            f"{len(failed)} of {count} jobs failed after {max_retries + 1} attempts (job {index}/{count}: {reason}); "
            f"{merged.rows if merged else 0} rows are in {directory}; rerun with --resume"
        )
    from collections import Counter

    from vitbench.sweeps.store import read_store

    statuses = Counter(str(r.get("status")) for r in read_store(directory)[0]) if merged else Counter()
    return SweepResult(
        out=directory, total=size.grid, ran=merged.rows if merged else 0, skipped=0, name=plan.name,
        statuses=dict(statuses), problems=merged.warnings if merged else [],
    )


__all__ = ["run_gpus", "run_submitit", "visible_gpus", "ShardJob", "LaunchError"]
