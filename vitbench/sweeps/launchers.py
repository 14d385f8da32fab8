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
import logging
import os
import queue
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vitbench.errors import VitbenchError, model_code
from vitbench.measure.children import die_with_parent
from vitbench.row_status import RowStatus
from vitbench.store.layout import ROWS_NAME
from vitbench.store.options import StoreOptions
from vitbench.store.reader import read_store
from vitbench.sweeps.grid import Config, check_valid, tally
from vitbench.sweeps.merging import merge
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
    bad = [d for d in devices if not ((d.isascii() and d.isdigit()) or d.startswith(("GPU-", "MIG-")))]
    if bad:
        raise VitbenchError(f"--gpus={bad[0]!r}: not a GPU: give device indices (0,1) or UUIDs (GPU-..., MIG-...)")
    if not devices:
        raise VitbenchError("--launcher gpus: no GPU is visible (no CUDA device, or CUDA_VISIBLE_DEVICES is empty); name them with --gpus 0,1 or use --launcher local")
    return devices


def gpu_worker(device: str, tasks: Any, results: Any) -> None:
    """A worker process: rows of the configurations it takes from ``tasks`` until None. It was
    started with CUDA_VISIBLE_DEVICES=device (set before the interpreter, so before CUDA starts);
    each row records the value the process started with."""
    die_with_parent()
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
                "overrides": config.overrides_text, "batch_size": config.batch_size, "status": RowStatus.ERROR,
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
    """One array job: runs shard ``index`` of ``count`` into its own store, resuming from it
    (``options``, made :meth:`~vitbench.store.options.StoreOptions.resuming`)."""

    def __init__(self, plan: SweepPlan, jobs_dir: Path, count: int, options: StoreOptions):
        self.plan, self.jobs_dir, self.count = plan, jobs_dir, count
        self.options = options.resuming()

    def store_dir(self, index: int) -> Path:
        return self.jobs_dir / f"shard-{index:04d}-of-{self.count:04d}"

    def __call__(self, index: int) -> int:
        result = execute(self.plan, self.store_dir(index), shard=(index, self.count), options=self.options, yes=True)
        return result.ran

    def checkpoint(self, index: int) -> Any:
        """Requeue after preemption or timeout: the same shard, resuming from its store."""
        import submitit

        return submitit.helpers.DelayedSubmission(self, index)


@dataclass(frozen=True)
class ArrayOptions:
    """How the job array is submitted and watched (``launcher_options`` of ``--launcher
    submitit``): ``jobs`` shards (default 8, at most one per configuration), at most
    ``parallelism`` running at once, ``time_limit_min`` each, on ``partition``, with
    ``gpus_per_job``, ``cpus_per_job`` and ``mem_per_job`` bytes (Slurm gets whole MiB);
    ``cluster``: submitit's (``slurm``, ``local``, default: auto); a failed job is resubmitted up
    to ``max_retries`` times; ``wait=False`` returns once submitted; job results are polled every
    ``poll_s`` and Slurm states every ``state_poll_s``; ``on_submit(jobs)`` hears of each
    submission (index -> job)."""

    jobs: int | None = None
    parallelism: int | None = None
    time_limit_min: int | None = 60
    partition: str | None = None
    gpus_per_job: int | None = None
    cpus_per_job: int | None = None
    mem_per_job: int | None = None
    cluster: str | None = None
    max_retries: int = 2
    wait: bool = True
    poll_s: float = 1.0
    on_submit: Callable[[dict[int, Any]], None] | None = None
    state_poll_s: float = 5.0

    def check(self) -> None:
        """Refuse a retry count or a memory size that makes no sense, before anything is written."""
        if not _whole(self.max_retries, 0):
            raise LaunchInputError(f"--max-retries={self.max_retries!r}: must be a whole number >= 0")
        if self.mem_per_job is not None and not _whole(self.mem_per_job, 1):
            raise LaunchInputError(f"--mem-per-job={self.mem_per_job!r}: must be a positive size")

    def job_count(self, grid_size: int) -> int:
        return max(1, min(self.jobs or 8, grid_size))

    def executor_parameters(self, name: str) -> dict[str, Any]:
        """submitit's parameters for the array (None: submitit's default)."""
        return {
            "name": f"vitbench-{name}", "timeout_min": self.time_limit_min, "slurm_partition": self.partition,
            "slurm_array_parallelism": self.parallelism, "gpus_per_node": self.gpus_per_job, "cpus_per_task": self.cpus_per_job,
            "slurm_mem": f"{-(-self.mem_per_job // 2**20)}M" if self.mem_per_job else None,
        }

    def submitted(self, jobs: dict[int, Any]) -> None:
        if self.on_submit:
            self.on_submit(jobs)


def _whole(value: Any, least: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value >= least


def _executor(folder: Path, cluster: str | None, options: dict[str, Any]) -> Any:
    try:
        import submitit
    except ImportError:
        raise VitbenchError("--launcher submitit needs submitit: pip install 'vitbench[slurm]'") from None
    try:
        executor = submitit.AutoExecutor(folder=folder, cluster=cluster)
    except (RuntimeError, ValueError) as exc:
        raise LaunchInputError(f"--cluster={cluster or 'auto'}: {exc}") from None
    executor.update_parameters(**{k: v for k, v in options.items() if v is not None})
    return executor


class LaunchInputError(VitbenchError):
    """A launch the cluster refuses before anything runs (a bad partition, no controller):
    one line, exit code 2, nothing written."""

    exit_code = 2


#: Slurm job states after which a job that left no result will never leave one
SLURM_ENDED = ("CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED", "SPECIAL_EXIT")


def _scontrol(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=60)


def check_slurm(partition: str | None) -> None:
    """The controller answers and the partition exists: checked before the store is touched,
    so that a launch Slurm would refuse writes nothing."""
    if shutil.which("scontrol") is None:
        raise LaunchInputError("--cluster=slurm: the Slurm commands (scontrol, sbatch) are not on PATH")
    try:
        ping = _scontrol("ping")
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LaunchInputError(f"--cluster=slurm: the controller does not answer ({exc.__class__.__name__})") from None
    if ping.returncode != 0 or " is UP" not in ping.stdout:
        reason = " ".join((ping.stdout + ping.stderr).split())[:200] or f"scontrol ping exit {ping.returncode}"
        raise LaunchInputError(f"--cluster=slurm: the Slurm controller is unreachable ({reason})")
    if partition is not None:
        shown = _scontrol("show", "partition", "-o", partition)
        if shown.returncode != 0 or f"PartitionName={partition} " not in shown.stdout + " ":
            names = [line.split()[0].split("=", 1)[1] for line in _scontrol("show", "partition", "-o").stdout.splitlines() if line.startswith("PartitionName=")]
            raise LaunchInputError(f"--partition={partition!r}: no such Slurm partition (the cluster has: {', '.join(names) or 'none'})")


def slurm_state(job_id: str) -> str | None:
    """The Slurm state of a job (``scontrol show job``; no accounting database needed), None
    when the controller cannot say; ``GONE`` when it no longer knows the job."""
    try:
        shown = _scontrol("show", "job", "-o", str(job_id))
    except (OSError, subprocess.TimeoutExpired):
        return None
    if shown.returncode != 0:
        return "GONE" if "Invalid job id" in shown.stderr else None
    for part in shown.stdout.split():
        if part.startswith("JobState="):
            return part.split("=", 1)[1]
    return None


def _ended_without_result(job: Any, slurm: bool) -> str | None:
    """Why a job that is not done (no result file) will never be: a cancelled, failed or
    vanished Slurm job. submitit asks sacct, which a cluster without an accounting database
    cannot answer; scontrol can."""
    if not slurm:
        return None
    state = slurm_state(job.job_id)
    if state == "GONE" or (state is not None and state.split()[0] in SLURM_ENDED):
        if job.paths.result_pickle.exists():  # finished between the two looks
            return None
        return f"Slurm job {job.job_id} ended as {state} without a result"
    return None


def run_submitit(
    plan: SweepPlan, directory: Path, *, options: StoreOptions | None = None, array: ArrayOptions | None = None,
    yes: bool = False,
) -> SweepResult:
    """Submit the plan as a job array, wait, resubmit failed jobs, merge the job stores into
    ``directory`` (opened and exported as ``options`` say). With ``array.wait`` false, return
    after submitting (merge later with ``vitbench merge OUT/jobs/* --out OUT``). On Slurm the
    controller and the partition are checked before anything is written, and a job cancelled or
    failed without a result (seen with ``scontrol`` every ``array.state_poll_s``) is resubmitted
    like a failed one."""
    options, array = options or StoreOptions(), array or ArrayOptions()
    options.check()
    check_valid(plan)
    size = tally(plan)
    confirm_size(plan, size.grid, yes)
    array.check()
    slurm = _uses_slurm(array.cluster)
    if slurm:
        check_slurm(array.partition)
        _quiet_sacct_warnings()
    existed = directory.exists()
    _open_top_store(plan, directory, size.grid, options)
    executor = _executor(directory / "submitit", array.cluster, array.executor_parameters(plan.name))
    task = ShardJob(plan, directory / "jobs", array.job_count(size.grid), options)
    submitted = _submit_array(executor, task, directory, existed)
    array.submitted(submitted)
    if not array.wait:
        return _submitted_only(plan, directory, size.grid, task, submitted)
    failed, resubmitted = _watch(executor, task, submitted, array, slurm)
    return _merge_jobs(plan, directory, size.grid, task, options, failed, resubmitted, array.max_retries)


def _open_top_store(plan: SweepPlan, directory: Path, grid_size: int, options: StoreOptions) -> None:
    """Check (and create) the store the jobs are merged into, before anything is submitted:
    its definition must match on resume; job stores of an earlier launch need --resume or --force."""
    jobs_dir = directory / "jobs"
    with options.open(directory, sweep_meta(plan, grid_size, None)):
        if options.force and jobs_dir.exists():
            shutil.rmtree(jobs_dir)
        if jobs_dir.exists() and any(jobs_dir.iterdir()) and not options.resume:
            raise VitbenchError(f"out={str(directory)!r}: holds job stores from an earlier launch; pass --resume to continue them or --force to start over")


def _submit_array(executor: Any, task: ShardJob, directory: Path, existed: bool) -> dict[int, Any]:
    """Submit one job per shard (index -> job); a refused array removes the folder it created."""
    indexes = list(range(1, task.count + 1))
    def refused(exc: Exception) -> LaunchInputError:
        reason = " ".join(str(exc).split())[-300:]
        return LaunchInputError(f"--launcher submitit: the cluster refused the job array ({reason}); nothing was run")

    try:
        with model_code(refused):  # sbatch refused the array (submitit raises several kinds): nothing ran
            return dict(zip(indexes, executor.map_array(task, indexes)))
    except LaunchInputError:
        if not existed:
            shutil.rmtree(directory, ignore_errors=True)
        raise


def _submitted_only(plan: SweepPlan, directory: Path, grid_size: int, task: ShardJob, submitted: dict[int, Any]) -> SweepResult:
    job = next(iter(submitted.values()))
    return SweepResult(out=directory, total=grid_size, ran=0, skipped=0, name=plan.name, note=(
        f"submitted {task.count} jobs (array {str(job.job_id).split('_')[0]}); when they are done: "
        f"vitbench merge {task.jobs_dir}/* --out {directory} --force"
    ))


def _watch(executor: Any, task: ShardJob, submitted: dict[int, Any], array: ArrayOptions, slurm: bool) -> tuple[dict[int, str], list[str]]:
    """Wait for every job, resubmitting a failed one (its shard resumes from its store) up to
    ``array.max_retries`` times. Returns the jobs that failed for good (index -> reason) and
    what was resubmitted, one line each."""
    attempts = dict.fromkeys(submitted, 1)
    failed: dict[int, str] = {}
    resubmitted: list[str] = []
    next_state_check = time.monotonic() + array.state_poll_s
    while submitted:
        time.sleep(array.poll_s)
        check_states = slurm and time.monotonic() >= next_state_check
        if check_states:
            next_state_check = time.monotonic() + array.state_poll_s
        for index, job in list(submitted.items()):
            finished, error = _job_outcome(job, check_states)
            if not finished:
                continue
            del submitted[index]
            if error is None:
                continue
            if attempts[index] <= array.max_retries:
                attempts[index] += 1
                resubmitted.append(f"job {index}/{task.count} resubmitted (attempt {attempts[index]}) after: {' '.join(str(error).split())[-200:]}")
                submitted[index] = executor.submit(task, index)
                array.submitted({index: submitted[index]})
            else:
                failed[index] = " ".join(str(error).split())[-300:]
    return failed, resubmitted


def _job_outcome(job: Any, check_states: bool) -> tuple[bool, Any]:
    """(finished, its error or None): a job is finished when done, or when Slurm says it ended
    without a result (asked only when ``check_states``)."""
    ended = None if job.done() else _ended_without_result(job, check_states)
    if ended is None and not job.done():
        return False, None
    return True, ended or _job_error(job)


def _merge_jobs(
    plan: SweepPlan, directory: Path, grid_size: int, task: ShardJob, options: StoreOptions,
    failed: dict[int, str], resubmitted: list[str], max_retries: int,
) -> SweepResult:
    """Merge the job stores into ``directory``; jobs that failed for good raise LaunchError once
    the rows they saved are merged."""
    stores = [task.store_dir(i) for i in range(1, task.count + 1) if (task.store_dir(i) / ROWS_NAME).exists()]
    merged = merge(stores, directory, force=True, export=options.export) if stores else None
    if failed:
        index, reason = next(iter(failed.items()))
        raise LaunchError(
            f"{len(failed)} of {task.count} jobs failed after {max_retries + 1} attempts (job {index}/{task.count}: {reason}); "
            f"{merged.rows if merged else 0} rows are in {directory}; rerun with --resume"
        )
    statuses = Counter(str(r.get("status")) for r in read_store(directory)[0]) if merged else Counter()
    return SweepResult(
        out=directory, total=grid_size, ran=merged.rows if merged else 0, skipped=0, name=plan.name,
        statuses=dict(statuses), problems=resubmitted + (merged.warnings if merged else []),
    )


def _uses_slurm(cluster: str | None) -> bool:
    """Whether submitit will submit to Slurm: ``cluster="slurm"``, or auto where sbatch is
    found (submitit's own rule)."""
    if cluster is not None:
        return cluster == "slurm"
    return shutil.which("srun") is not None or shutil.which("sbatch") is not None


def _quiet_sacct_warnings() -> None:
    """submitit warns on every poll when sacct fails (a cluster with no accounting database);
    the launcher reads job states with scontrol instead, so the warning says nothing useful."""
    logger = logging.getLogger("submitit")
    if not any(getattr(f, "vitbench", False) for f in logger.filters):
        class NoSacct(logging.Filter):
            vitbench = True

            def filter(self, record: logging.LogRecord) -> bool:
                return "sacct" not in record.getMessage()

        logger.addFilter(NoSacct())


def _job_error(job: Any) -> Any:
    """The job's exception (None when it succeeded); an unreadable outcome is an error too."""
    try:
        with model_code(lambda exc: LaunchError(str(exc))):  # submitit's code, several kinds of exception
            return job.exception()
    except LaunchError as exc:  # a job with no result
        return exc.__cause__


__all__ = ["ArrayOptions", "LaunchError", "LaunchInputError", "ShardJob", "check_slurm", "run_gpus", "run_submitit", "slurm_state", "visible_gpus"]
