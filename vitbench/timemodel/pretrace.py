"""Preparing many models at once: before a prediction resolves and prices its models, worker
processes resolve each named model and trace its steps (``PredictSettings.jobs``), writing what
they find to the question cache and the trace cache; the prediction then reads both as it reads
any entry.

Resolving, counting and tracing are the slow part of predicting a model not seen before (0.7 s
a model on average on fake tensors, a few seconds for the largest, one core each): 1,400 of
timm's models take about twenty minutes in one process, about ``jobs`` times less in ``jobs``.
Each worker costs its start (a few seconds: it imports torch and the model libraries), so the
workers are kept for the next call of this process with the same ``jobs`` and environment (one
asking batch size by batch size starts them once), and end with it. Nothing here makes a row:
what a worker could not resolve or trace (the model's own error, a crashed worker) the
prediction does again itself, and reports as it always does.

Worker processes are started fresh (``spawn``): a script that calls the API with ``jobs`` above 1
must do so under ``if __name__ == "__main__":``, as multiprocessing requires; where the workers
cannot start, the prediction goes on alone.
"""

from __future__ import annotations

import atexit
import itertools
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from vitbench.errors import SpecError
from vitbench.models import references
from vitbench.timemodel.cached_models import (
    RESOLVED_SOURCES,
    cached_counts,
    cached_resolution,
    counts_cached,
    resolve_cached,
)
from vitbench.timemodel.prediction_rows import deployed_target
from vitbench.timemodel.trace_cache import CACHED_SOURCES, cache_key, cached_traces, stored


@dataclass(frozen=True)
class ModelTask:
    """One named model to resolve and trace in a worker (picklable)."""

    model: str                        # the reference as written (timm:convnext_tiny, vit-b/16+depth=6)
    overrides: dict[str, Any]         # the spec fields every model is asked with (a list: one model per value)
    input_size: Any
    modes: tuple[str, ...]
    batches: tuple[int, ...]
    precisions: tuple[str, ...]       # as traced: tf32 is traced as fp32
    device_types: tuple[str, ...]     # cpu, cuda
    optimizer: str
    reparam: bool
    channels_last: bool
    refusal: Callable[[Any, int], str | None]  # why a batch is not traced, decided from the spec


def model_tasks(models: Sequence[Any], overrides: dict[str, Any], input_size: Any, settings: Any,
                refusal: Callable[[Any, int], str | None]) -> list[ModelTask]:
    """A task per model named by a string in ``models`` whose traces the disk cache keeps (a
    preset or a ``timm:``, ``torchvision:``, ``hf:`` reference; live modules, specs and ``py:``
    factories are the prediction's own), for the modes, batches, precisions and device types of
    ``settings``."""
    precisions = tuple(dict.fromkeys("fp32" if p == "tf32" else p for p in settings.precision))
    device_types = tuple(sorted({"cpu" if d == "cpu" else "cuda" for d in settings.device}))
    return [ModelTask(model, dict(overrides), input_size, tuple(settings.mode), tuple(settings.batch_size), precisions,
                      device_types, settings.optimizer, settings.reparam, settings.channels_last, refusal)
            for model in dict.fromkeys(m for m in models if isinstance(m, str) and _source(m) in CACHED_SOURCES)]


def _source(model: str) -> str | None:
    try:
        ref = references.model_ref(model)
    except SpecError:  # the prediction says what is wrong with it
        return None
    return ref.source if isinstance(ref, references.ModelRef) else None


def needs_preparing(task: ModelTask) -> bool:
    """Whether a worker has something to do for ``task``: the question cache lacks the model's
    resolution, or one of its configurations lacks its counts or its trace. Decided from the
    caches alone (a preset is resolved here: that builds nothing)."""
    if _source(task.model) in RESOLVED_SOURCES:
        targets = cached_resolution(task.model, task.overrides, task.input_size)
    else:
        try:
            targets = references.resolve_all([task.model], task.overrides, input_size=task.input_size)
        except SpecError:
            return False  # the prediction refuses it in one line
    if targets is None:
        return True
    for target, batch in itertools.product(targets, task.batches):
        if not counts_cached(target, batch, task.reparam):
            return True
        if task.refusal(target, batch) is not None:
            continue
        for mode, precision, device_type in itertools.product(task.modes, task.precisions, task.device_types):
            key = cache_key(target, batch, mode, precision, task.optimizer, device_type, task.reparam, task.channels_last)
            if key is not None and not stored(key):
                return True
    return False


def prepare_in_workers(tasks: Sequence[ModelTask], jobs: int) -> int:
    """Run ``tasks`` in up to ``jobs`` fresh worker processes; how many were prepared whole.
    Fewer than two tasks, or one job, run nothing (the prediction does them itself). A worker
    that dies (out of memory, killed) ends the pool; what is left is the prediction's."""
    if jobs < 2 or len(tasks) < 2:
        return 0
    tasks = [task for task in tasks if needs_preparing(task)]  # a repeated question starts no worker
    if len(tasks) < 2:
        return 0
    try:
        return sum(_pool(jobs).map(prepare, tasks))
    except (BrokenProcessPool, RuntimeError):  # RuntimeError: spawn outside a main guard
        close_workers()  # a broken pool is not kept: the next call starts fresh workers
        return 0


#: the worker pool kept between calls: {"key": (jobs, working directory, environment), "pool": ...}
_KEPT: dict[str, Any] = {}


def _pool(jobs: int) -> ProcessPoolExecutor:
    """The pool of ``jobs`` workers, started on first use (workers spawn as tasks need them) and
    kept while this process asks with the same ``jobs``, working directory and environment (a
    worker reads the cache directories from both: a changed ``VITBENCH_CACHE_DIR`` gets new ones)."""
    key = (jobs, os.getcwd(), tuple(sorted(os.environ.items())))
    if _KEPT.get("key") != key:
        close_workers()
        pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_one_thread)
        _KEPT.update(key=key, pool=pool)
    return _KEPT["pool"]


def close_workers() -> None:
    """End the kept workers, if any (at exit, or when another pool replaces them)."""
    pool = _KEPT.pop("pool", None)
    _KEPT.pop("key", None)
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


atexit.register(close_workers)


def _one_thread() -> None:
    import torch

    torch.set_num_threads(1)  # the workers share the cores


def prepare(task: ModelTask) -> bool:
    """Resolve ``task.model`` (the question cache keeps it), count the parameters and MACs of a
    model without a formula at each batch (kept there too), and trace every configuration of each
    model it gives (the trace cache keeps them); False when some of it could not be done."""
    try:
        targets, _ = resolve_cached([task.model], task.overrides, input_size=task.input_size)
    except Exception:  # noqa: BLE001 - the prediction resolves it again and reports what fails
        return False
    whole, counts = True, {}
    for target, batch in itertools.product(targets, task.batches):
        try:  # as each row's head counts them (prediction_rows.row_head)
            cached_counts(deployed_target(target, counts) if task.reparam else target, batch, task.reparam, counts)
        except Exception:  # noqa: BLE001 - as below
            whole = False
    for target, mode, precision, device_type in itertools.product(targets, task.modes, task.precisions,
                                                                    task.device_types):
        batches = tuple(b for b in task.batches if task.refusal(target, b) is None)
        try:
            if batches:
                cached_traces(target, batches, mode, precision, task.optimizer, device_type, task.reparam,
                              task.channels_last)
        except Exception:  # noqa: BLE001 - as above: the prediction traces it again and makes its row
            whole = False
    return whole


__all__ = ["ModelTask", "close_workers", "model_tasks", "needs_preparing", "prepare", "prepare_in_workers"]
