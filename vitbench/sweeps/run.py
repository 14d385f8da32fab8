"""Running a plan into a store, in this process: :func:`execute` (and the dry run, :func:`preview`).

Each completed row is written to the store before the next configuration starts (fsynced by
group commit: :mod:`vitbench.store.writer`); the CSV export is written at the end and on
interruption, after an fsync. ``--resume`` skips ids already in
the store (the sweep's fingerprint must match the store's), ``--retry-failed`` reruns rows whose
status is error or oom, ``--shard I/N`` runs one shard. A grid larger than
:data:`CONFIRM_ABOVE` configurations (or estimated at more than :data:`CONFIRM_ABOVE_S`) needs
``yes=True`` (``--yes``): the refusal says how long it would take from a per-row estimate.

Testing hook: the environment variable ``VITBENCH_SWEEP_ROW_DELAY_S`` adds a sleep before each
configuration, so a test can interrupt a sweep between rows deterministically.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import Any

from vitbench.errors import VitbenchError
from vitbench.measure.env import environment as device_environment
from vitbench.measure.machine import load_average
from vitbench.models.sources.py_contract import imports_refused
from vitbench.results import Records, check_output_dir
from vitbench.row_status import FAILED
from vitbench.store.export import export_store
from vitbench.store.layout import ROWS_NAME, StoreError
from vitbench.store.options import StoreOptions
from vitbench.store.reader import read_store, stored_id_digits, stored_ids
from vitbench.store.writer import now_iso
from vitbench.sweeps.grid import ID_DIGITS, Config, Tally, check_valid, is_reference, iter_configs, tally
from vitbench.sweeps.plan import SweepPlan, load_sweep_file, plan_from_grid
from vitbench.sweeps.progress import duration_text
from vitbench.sweeps.remeasure import Remeasure, better
from vitbench.sweeps.rows import Runner, check_measured, estimate_seconds, prepare_predict, row_costs
from vitbench.sweeps.schema import SweepFileError
from vitbench.typed_rows import typed
from vitbench.version import __version__

#: Row statuses that ``retry_failed`` reruns on resume.
FAILED_STATUSES = FAILED
#: grids above this many configurations, or estimated above this many seconds, need ``yes``
CONFIRM_ABOVE = 100_000
CONFIRM_ABOVE_S = 24 * 3600.0


class SweepInterrupted(VitbenchError):
    """Ctrl-C / SIGTERM during a sweep: every completed row is saved."""

    exit_code = 130

    def __init__(self, saved: int, total: int, out: Path):
        self.saved, self.total, self.out = saved, total, out
        super().__init__(f"interrupted: {saved} of {total} rows saved in {out}; rerun with --resume to finish")


class LargeGridError(VitbenchError):
    """A grid too large to start without confirmation (exit code 2)."""


@dataclass
class SweepResult:
    """What :func:`sweep` did; ``records`` reads the store's rows (typed) on first use."""

    out: Path
    total: int
    ran: int
    skipped: int
    statuses: dict[str, int] = field(default_factory=dict)
    name: str = ""
    problems: list[str] = field(default_factory=list)
    note: str = ""  # what happened instead of running (jobs submitted without waiting)
    _records: Records | None = None

    @property
    def records(self) -> Records:
        """The store's rows (typed as the store holds them), each a :class:`~vitbench.typed_rows.Row`,
        read on first use."""
        if self._records is None:
            self._records = Records(typed(read_store(self.out)[0]))
        return self._records

    def summary(self) -> str:
        if self.note:
            return f"sweep {self.name}: {self.note}"
        parts = ", ".join(f"{n} {s}" for s, n in sorted(self.statuses.items()))
        return (
            f"sweep {self.name}: {self.ran} configurations run, {self.skipped} already done "
            f"({parts or 'nothing to do'}); results in {self.out}"
        )


def resolve_plan(
    source: str | os.PathLike | SweepPlan | None, *, models: Sequence[str] | str | None = None,
    grid: Mapping[str, Any] | None = None, name: str | None = None, **kw: Any,
) -> SweepPlan:
    """A sweep file, a plan, or models x grid -> a validated plan (``name`` renames it)."""
    if isinstance(source, SweepPlan):
        plan = source
    elif source is not None:
        plan = load_sweep_file(source)
    elif models is not None:
        plan = plan_from_grid(models, grid, name=name or "sweep", **kw)
    else:
        raise SweepFileError("sweep: give a sweep file or models (and a grid)")
    return replace(plan, name=name) if name else plan


def default_out(plan: SweepPlan, shard: tuple[int, int] | None) -> Path:
    if plan.out:
        return Path(plan.out)
    if shard:
        return Path("results") / f"{plan.name}.shard{shard[0]}of{shard[1]}"
    return Path("results") / plan.name


def confirm_size(plan: SweepPlan, count: int, yes: bool) -> float:
    """Estimated seconds for ``count`` rows; refuses a large grid unless ``yes``."""
    seconds, per_row = estimate_seconds(plan, count)
    if (count > CONFIRM_ABOVE or seconds > CONFIRM_ABOVE_S) and not yes:
        raise LargeGridError(
            f"the grid has {count:,} configurations to run, about {seconds / 3600:.1f} h at "
            f"~{per_row:.3g} s per row; pass --yes to run it (--dry-run lists it)"
        )
    return seconds


@dataclass(frozen=True)
class Preview:
    """What ``--dry-run`` shows: the first ``limit`` configurations as rows, the counts, the
    estimated seconds to run the selection, and the model references whose configurations were
    not checked (only building them could tell)."""

    rows: list[dict[str, Any]]
    tally: Tally
    seconds: float
    unchecked: tuple[str, ...] = ()


def preview(plan: SweepPlan, shard: tuple[int, int] | None = None, limit: int = 1000, head: int = 20) -> Preview:
    """Count the grid (streaming) and describe its configurations: all of them up to ``limit``,
    else the first ``head``. Builds nothing and calls no ``py:`` factory: a reference's
    ``invalid`` is left empty (only its build can tell); a timm reference is instantiated once
    on the meta device to learn which grid fields its class takes (library code, no memory)."""
    with imports_refused():  # a dry run imports no py: module (its ids come from the factory's source)
        check_valid(plan, build=False)
        counted = tally(plan, shard)
        references = tuple(dict.fromkeys(ref.text for study in plan.studies for ref in study.refs if is_reference(ref)))
        rows = [
            {
                "index": c.index, "id": c.id, "study": c.study, "model": c.model, "overrides": c.overrides_text,
                "batch_size": c.batch_size, "mode": c.mode or "", "precision": c.precision or "",
                "stages": "+".join(c.stages), "invalid": "" if c.model in references else c.invalid or "",
            }
            for c in islice(iter_configs(plan, shard), limit if counted.selected <= limit else head)
        ]
    return Preview(rows, counted, estimate_seconds(plan, counted.selected)[0], references)


def check_runnable(plan: SweepPlan, options: StoreOptions) -> list[str]:
    """What a run refuses besides the plan and the store's path, checked alike by a dry run:
    the export formats and fsync policy, the measured stage's settings on this machine (no
    CUDA, fp16 on the CPU) and the predict stage's devices. Imports no ``py:`` module; returns
    the devices measured on."""
    options.check()
    devices = check_measured(plan)
    prepare_predict(plan, calibrate=False)
    return devices


def check_store_path(directory: Path, options: StoreOptions) -> None:
    """Refuse, as :meth:`Store.open <vitbench.store.writer.Store.open>` would, a store path that
    cannot be made or written (a file, a folder of /proc) or a store holding rows neither
    resumed nor forced, before any model is resolved. Leaves nothing behind."""
    check_output_dir(directory, "out")
    nearest = directory
    while not nearest.exists() and nearest != nearest.parent:
        nearest = nearest.parent
    try:  # the write a new store starts with, tried in the nearest folder that exists
        os.rmdir(tempfile.mkdtemp(prefix=".vitbench-probe-", dir=nearest))
    except OSError as exc:
        raise StoreError(f"out={str(directory)!r}: cannot create a folder in {str(nearest)!r} "
                         f"({exc.strerror or type(exc).__name__}); nothing was run") from None
    rows = directory / ROWS_NAME
    if not (options.resume or options.force) and rows.is_file() and rows.stat().st_size > 0:
        raise StoreError(f"out={str(directory)!r}: already holds result rows; "
                         "pass --resume to continue that sweep or --force to start over")


def execute(
    plan: SweepPlan,
    directory: Path,
    *,
    shard: tuple[int, int] | None = None,
    options: StoreOptions | None = None,
    yes: bool = False,
    compute: Callable[[Iterator[Config]], Iterator[dict[str, Any]]] | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    on_calibrate: Callable[[str], None] | None = None,
    on_estimate: Callable[[Any], None] | None = None,
    on_note: Callable[[str], None] | None = None,
) -> SweepResult:
    """Run ``plan`` (or one shard) into the store at ``directory``: every check first (the
    grid, the devices, the size, the output path), then each row appended as it completes,
    then (``plan.remeasure``) the unfit measured rows once more (:mod:`vitbench.sweeps.remeasure`).
    ``options``: how the store is opened (resume, force...), exported and fsynced (default
    :class:`StoreOptions`: a new store, CSV export, group commit). ``compute`` turns
    configurations into rows (default :func:`run_local`; the GPU pool is another); the store is
    written here, by this process alone. ``on_estimate(costs)`` hears the rows' expected costs
    (:func:`~vitbench.sweeps.rows.row_costs`, for an ETA), ``on_note(text)`` a phase starting."""
    options = options or StoreOptions()
    devices = check_runnable(plan, options)
    check_store_path(directory, options)  # before a py: module is imported (Store.open checks it again)
    check_valid(plan)
    size = tally(plan, shard)
    confirm_size(plan, size.selected, yes)
    prepare_predict(plan, on_calibrate)
    digits = ID_DIGITS if options.force else (stored_id_digits(directory) or ID_DIGITS)
    with options.open(directory, {**sweep_meta(plan, size.grid, shard, devices), "id_hex_digits": digits}) as store:
        done = {k: s for k, s in store.statuses.items() if not (options.retry_failed and s in FAILED_STATUSES)}
        counted = tally(plan, shard, done) if done else size
        if on_start:
            on_start(counted.selected - counted.done, counted.done)
        if on_estimate:
            on_estimate(row_costs(plan))

        second = Remeasure(plan.remeasure)
        pending: dict[str, Config] = {}  # configurations handed to compute, by id, until their row is back
        todo = _remembered((c for c in iter_configs(plan, shard, digits) if c.id not in done), pending)
        statuses: dict[str, int] = {}
        ran = 0
        try:
            for row in (compute or run_local)(todo):
                store.add(row)
                ran += 1
                statuses[row["status"]] = statuses.get(row["status"], 0) + 1
                second.note(pending.pop(str(row.get("id")), None), row)
                if on_row:
                    on_row(row)
            if second.unfit:
                _measure_again(second, compute or run_local, store, statuses, on_row, on_note)
        except KeyboardInterrupt:  # perhaps inside a write: count what is on disk
            _sync_quietly(store)
            _export_quietly(directory, options.export)
            saved = tally(plan, shard, dict.fromkeys(stored_ids(directory))).done
            raise SweepInterrupted(saved, counted.selected, directory) from None
        store.flush()
        export_store(directory, directory, options.export)  # still holding the lock
    return SweepResult(
        out=directory, total=counted.selected, ran=ran, skipped=counted.done, statuses=statuses,
        name=plan.name, problems=list(store.problems),
    )


def _remembered(configs: Iterator[Config], pending: dict[str, Config]) -> Iterator[Config]:
    """``configs``, each kept in ``pending`` (by id) as it is handed out."""
    for config in configs:
        pending[config.id] = config
        yield config


def _measure_again(second: Any, compute: Callable[[Iterator[Config]], Iterator[dict[str, Any]]], store: Any,
                   statuses: dict[str, int], on_row: Callable[[dict[str, Any]], None] | None,
                   on_note: Callable[[str], None] | None) -> None:
    """The second pass (:mod:`vitbench.sweeps.remeasure`): each unfit measured row measured once
    more while the budget lasts, the attempt kept written over the first."""
    count = len(second.unfit)
    if on_note:
        on_note(f"{count} measured row{'s' if count > 1 else ''} unfit to conclude from (unstable timing or a busy "
                f"machine): measuring {'them' if count > 1 else 'it'} again, within {duration_text(second.budget_s)} "
                f"({second.share:g} x the {duration_text(second.measured_s)} the measured rows took)")
    started = time.monotonic()
    for row in compute(second.configs(lambda: time.monotonic() - started)):
        first = second.first_row(str(row.get("id")))
        if first is None:
            continue
        kept = better(first, row)
        store.add(kept)
        statuses[first["status"]] -= 1
        statuses[kept["status"]] = statuses.get(kept["status"], 0) + 1
        if on_row:
            on_row(kept)


def run_local(configs: Iterator[Config]) -> Iterator[dict[str, Any]]:
    """Rows computed in this process, one configuration at a time."""
    delay = float(os.environ.get("VITBENCH_SWEEP_ROW_DELAY_S", "0") or 0)
    runner = Runner()
    for config in configs:
        if delay:
            time.sleep(delay)
        yield runner.row(config)


def _sync_quietly(store: Any) -> None:
    """fsync on interruption: the rows are written already; a failure here only means a power
    cut could still take the last interval."""
    try:
        store.flush()
    except (VitbenchError, OSError):
        pass


def _export_quietly(directory: Path, formats: Sequence[str]) -> None:
    """The CSV export on interruption: rows are safe in the store even when this fails."""
    try:
        export_store(directory, directory, formats)
    except (VitbenchError, OSError):
        pass


def sweep_meta(plan: SweepPlan, grid_size: int | None, shard: tuple[int, int] | None, devices: Sequence[str] = ()) -> dict[str, Any]:
    """What sweep.json records about the sweep (the fingerprint identifies its definition)."""
    return {
        "fingerprint": plan.fingerprint, "legacy_fingerprint": plan.legacy_fingerprint, "name": plan.name, "source": plan.source,
        "description": plan.description, "grid_size": grid_size,
        "shard_index": shard[0] if shard else None, "shard_count": shard[1] if shard else None,
        "studies": [s.name for s in plan.studies], "definition": [s.identity() for s in plan.studies],
        "vitbench_version": __version__, "environment": environment(devices),
    }


def environment(measured_devices: Sequence[str] = ()) -> dict[str, Any]:
    """Where the sweep ran (host-level; per-row device details come with measured rows)."""
    env: dict[str, Any] = {
        "python": sys.version.split()[0], "platform": platform.platform(), "machine": platform.machine(),
        "cpu_count": os.cpu_count(), "hostname": platform.node(), "vitbench_version": __version__,
        "started_at": now_iso(),
    }

    load = load_average()
    if load is not None:
        # Other work on the machine skews timings; the report shows this next to measured rows.
        env["load_average_1m"] = round(load[0], 2)
    if measured_devices:
        env["devices"] = {d: device_environment(d) for d in measured_devices}
    for var in ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID"):
        if os.environ.get(var):
            env[var.lower()] = os.environ[var]
    return env


__all__ = [
    "CONFIRM_ABOVE", "LargeGridError", "Preview", "SweepInterrupted", "SweepResult", "check_runnable", "check_store_path",
    "execute", "preview", "resolve_plan", "sweep_meta",
]
