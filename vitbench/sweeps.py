"""Sweeps: a grid of configurations, expanded deterministically, run stage by stage into a store.

Grid = for each study: models x product(grid field values) x batch sizes, and for the measured
stage x modes x precisions. A grid field that a model kind does not have is skipped for that
model (``patch_size`` for a ResNet); configurations that come out identical are kept once.
A combination the spec rejects (patch 32 on a 48 px image) becomes a row with status
``invalid``; a grid in which every combination is invalid is a usage error.

Every configuration has a stable ``id``: a short hash of its spec identity (``spec_key``), batch
size and stage settings. ``--resume`` skips ids already in the store; ``--shard I/N`` keeps the
configurations whose position in the full, ordered grid is ``I-1`` modulo ``N``.

Stages (``stages``): ``analytic`` (exact params and MACs), ``counters`` (fvcore and dispatch
traced counts beside the analytic ones), ``measured`` (timing and peak memory via
``vitbench.measure.profile.measure``, with the analytic memory prediction in ``pred_*`` columns).
Each row carries ``status``: ok | invalid | error | oom, and ``error`` text when not ok.

Testing hook: the environment variable ``VITBENCH_SWEEP_ROW_DELAY_S`` adds a sleep before each
configuration, so a test can interrupt a sweep between rows deterministically.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vitbench.errors import SpecError, VitbenchError
from vitbench.results import Records
from vitbench.specs import ModelSpec, parse_field_value, spec_fields, spec_key, with_overrides
from vitbench.sweepfile import (
    COUNTERS,
    MeasureSettings,
    Study,
    SweepFileError,
    SweepPlan,
    load_sweep_file,
    validate,
)

#: Row statuses that ``retry_failed`` reruns on resume.
FAILED_STATUSES = ("error", "oom")


class SweepInterrupted(VitbenchError):
    """Ctrl-C / SIGTERM during a sweep: every completed row is saved."""

    exit_code = 130

    def __init__(self, saved: int, total: int, out: Path):
        self.saved, self.total, self.out = saved, total, out
        super().__init__(
            f"interrupted: {saved} of {total} rows saved in {out}; rerun with --resume to finish"
        )


@dataclass(frozen=True)
class Config:
    """One row to compute: a spec (or the reason it is invalid), a batch size, stage settings."""

    index: int
    id: str
    study: str
    model: str
    overrides: tuple[tuple[str, Any], ...]
    spec: ModelSpec | None
    invalid: str | None
    batch_size: int
    stages: tuple[str, ...]
    counters: tuple[str, ...]
    mode: str | None = None
    precision: str | None = None
    measure: MeasureSettings | None = None

    @property
    def overrides_text(self) -> str:
        return ",".join(f"{k}={_text(v)}" for k, v in self.overrides)


@dataclass
class SweepResult:
    """What :func:`sweep` did: the store's rows (typed), and counts."""

    out: Path
    records: Records
    total: int
    ran: int
    skipped: int
    statuses: dict[str, int] = field(default_factory=dict)
    name: str = ""

    def summary(self) -> str:
        parts = ", ".join(f"{n} {s}" for s, n in sorted(self.statuses.items()))
        return (
            f"sweep {self.name}: {self.ran} configurations run, {self.skipped} already done "
            f"({parts or 'nothing to do'}); results in {self.out}"
        )


def _text(value: Any) -> str:
    if isinstance(value, tuple):
        if value and all(isinstance(v, tuple) for v in value):
            return ",".join("-".join(str(c) for c in v) for v in value)
        return "x".join(str(v) for v in value) if len(value) == 2 else "-".join(str(v) for v in value)
    return str(value)


def _short_hash(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


def config_id(
    identity: Any, batch_size: int, stages: Sequence[str], counters: Sequence[str],
    mode: str | None, precision: str | None, measure: MeasureSettings | None,
) -> str:
    """Stable id: hash of what determines the row's values (not its name, study or position)."""
    data: dict[str, Any] = {"spec": identity, "batch_size": batch_size, "stages": sorted(stages)}
    if "counters" in stages:
        data["counters"] = sorted(counters)
    if "measured" in stages and measure is not None:
        data["measure"] = {"mode": mode, "precision": precision, **measure.identity()}
    return _short_hash(data)


# --- expansion -------------------------------------------------------------------------------
def _study_configs(study: Study) -> list[Config]:
    from vitbench.presets import get_preset

    out: list[Config] = []
    measured = "measured" in study.stages
    for model in study.models:
        base = get_preset(model).spec
        known = spec_fields(type(base))
        axes = [(name, values) for name, values in study.grid if name in known]
        parsed_axes = []
        for name, values in axes:
            parsed = []
            for value in values:
                try:
                    parsed.append(parse_field_value(type(base), name, value))
                except SpecError as exc:  # a value that is not even of the field's type
                    raise SweepFileError(f"grid.{name}={value!r}: {exc.reason}") from None
            parsed_axes.append((name, parsed))
        names = [n for n, _ in parsed_axes]
        for combo in itertools.product(*[v for _, v in parsed_axes]):
            overrides = tuple((n, _freeze(v)) for n, v in zip(names, combo))
            spec: ModelSpec | None
            try:
                spec = with_overrides(base, **dict(overrides))
                invalid = None
                identity: Any = spec_key(spec)
            except SpecError as exc:
                spec, invalid = None, str(exc)
                identity = {"model": model, "overrides": [[n, _text(v)] for n, v in overrides]}
            for batch in study.batch_sizes:
                modes = study.measure.modes if measured else (None,)
                precisions = study.measure.precisions if measured else (None,)
                for mode in modes:
                    for precision in precisions:
                        key = config_id(
                            identity, batch, study.stages, study.counters, mode, precision,
                            study.measure if measured else None,
                        )
                        out.append(
                            Config(
                                index=-1, id=key, study=study.name, model=model,
                                overrides=overrides, spec=spec, invalid=invalid,
                                batch_size=batch, stages=study.stages, counters=study.counters,
                                mode=mode, precision=precision,
                                measure=study.measure if measured else None,
                            )
                        )
    return out


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def expand(plan: SweepPlan) -> list[Config]:
    """The full grid in deterministic order, de-duplicated by id, each with its position."""
    seen: set[str] = set()
    configs: list[Config] = []
    for study in plan.studies:
        study_configs = _study_configs(study)
        if study_configs and all(c.invalid for c in study_configs):
            first = study_configs[0]
            where = f"study {study.name!r}: " if len(plan.studies) > 1 else ""
            raise SweepFileError(f"{where}every configuration of the grid is invalid (first: {first.model}: {first.invalid})")
        for config in study_configs:
            if config.id in seen:
                continue
            seen.add(config.id)
            configs.append(replace(config, index=len(configs)))
    return configs


def parse_shard(text: str | tuple[int, int] | None) -> tuple[int, int] | None:
    """'I/N' (1-based) -> (I, N); None stays None."""
    if text is None:
        return None
    if isinstance(text, tuple):
        index, count = text
    else:
        parts = str(text).split("/")
        try:
            index, count = (int(p) for p in parts) if len(parts) == 2 else (0, 0)
        except ValueError:
            index, count = 0, 0
    if count < 1 or not 1 <= index <= count:
        raise SweepFileError(f"--shard={text!r}: must be I/N with 1 <= I <= N (for example 1/4)")
    return index, count


def select_shard(configs: Sequence[Config], shard: tuple[int, int] | None) -> list[Config]:
    if shard is None:
        return list(configs)
    index, count = shard
    return [c for c in configs if c.index % count == index - 1]


# --- running one configuration ---------------------------------------------------------------
class _Runner:
    """Computes rows; caches counter results per (spec, batch) across modes and precisions."""

    def __init__(self) -> None:
        self._counter_cache: dict[tuple[str, int, tuple[str, ...]], dict[str, Any]] = {}

    def row(self, config: Config) -> dict[str, Any]:
        started = time.perf_counter()
        row: dict[str, Any] = {
            "id": config.id,
            "index": config.index,
            "study": config.study,
            "model": config.model,
            "overrides": config.overrides_text,
            "stages": "+".join(config.stages),
            "status": "ok",
            "error": None,
        }
        if config.invalid is not None:
            row.update(status="invalid", error=config.invalid, batch_size=config.batch_size)
            if config.mode:
                row.update(mode=config.mode, precision=config.precision, device=config.measure.device)
            return self._finish(row, started)
        spec = config.spec
        assert spec is not None
        warnings: list[str] = []
        try:
            from vitbench.analytic import complexity

            analytic = complexity(spec, config.batch_size).as_record()
            row.update(analytic)
            row["spec_key"] = spec_key(spec)
            if "counters" in config.stages:
                row.update(self._counters(spec, config, analytic))
            if "measured" in config.stages:
                row.update(self._measured(spec, config, warnings))
        except MemoryError:
            row.update(status="oom", error="MemoryError: out of host memory")
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # a failed configuration is a row, never an aborted sweep
            row.update(status="error", error=f"{exc.__class__.__name__}: {' '.join(str(exc).split())}"[:500])
        if warnings:
            existing = row.get("warnings")
            row["warnings"] = "; ".join([w for w in [existing] if w] + warnings)
        return self._finish(row, started)

    @staticmethod
    def _finish(row: dict[str, Any], started: float) -> dict[str, Any]:
        row["elapsed_s"] = time.perf_counter() - started
        from vitbench.store import now_iso

        row["completed_at"] = now_iso()
        return row

    def _counters(self, spec: ModelSpec, config: Config, analytic: dict[str, Any]) -> dict[str, Any]:
        key = (spec_key(spec), config.batch_size, tuple(config.counters))
        if key not in self._counter_cache:
            from vitbench.counters import count_record

            self._counter_cache[key] = dict(count_record(spec, config.batch_size, list(config.counters), analytic))
        return self._counter_cache[key]

    def _measured(self, spec: ModelSpec, config: Config, warnings: list[str]) -> dict[str, Any]:
        from vitbench.measure.profile import measure

        settings = config.measure or MeasureSettings()
        record = dict(measure(spec, run_settings(config)))
        out: dict[str, Any] = {}
        try:
            from vitbench.analytic.memory import memory_estimate

            attention = settings.attention or getattr(spec, "attention", None)
            estimate = memory_estimate(
                spec, config.batch_size, config.mode, config.precision, settings.optimizer,
                attention if getattr(spec, "kind", "") == "vit" else None,
            )
            out.update(estimate.as_record())
        except ImportError:
            pass
        except Exception as exc:  # the prediction is an extra; its failure is a warning
            warnings.append(f"memory prediction failed: {exc.__class__.__name__}: {exc}")
        out.update(record)
        if out.get("status") is None:
            out["status"] = "ok"
        return out


def run_settings(config: Config):
    """The measurement's RunSettings for a measured configuration."""
    from vitbench.measure.profile import RunSettings

    settings = config.measure or MeasureSettings()
    kwargs: dict[str, Any] = {
        "device": settings.device,
        "mode": config.mode,
        "batch_size": config.batch_size,
        "precision": config.precision,
        "channels_last": settings.channels_last,
        "compile": settings.compile,
        "attention": settings.attention,
        "threads": settings.threads,
        "optimizer": settings.optimizer,
        "memory": settings.memory,
        "isolate": settings.isolate,
    }
    if settings.min_time is not None:
        kwargs["min_run_time_s"] = settings.min_time
    if settings.warmup is not None:
        kwargs["warmup"] = settings.warmup
    return RunSettings(**kwargs)


def check_measured(configs: Sequence[Config]) -> list[str]:
    """Refuse, before any row runs, measurement settings this machine cannot honour (no CUDA,
    fp16 on the CPU): one line, exit code 2. Returns the devices measured on."""
    from vitbench.measure.profile import validate_settings

    seen: dict[tuple, str] = {}
    for config in configs:
        if "measured" not in config.stages or config.measure is None:
            continue
        key = (config.mode, config.precision, config.measure)
        if key not in seen:
            seen[key] = validate_settings(replace(run_settings(config), batch_size=1))
    return sorted(set(seen.values()))


# --- the sweep -------------------------------------------------------------------------------
def plan_from_grid(
    models: Sequence[str] | str,
    grid: Mapping[str, Any] | None = None,
    *,
    batch_sizes: Sequence[int] | int = (1,),
    stages: Sequence[str] | str = ("analytic",),
    counters: Sequence[str] | str = COUNTERS,
    measure: Mapping[str, Any] | None = None,
    name: str = "sweep",
    rename: Callable[[str], str] | None = None,
    label: str = "sweep",
) -> SweepPlan:
    """Build and validate a one-study plan from Python values (or command-line text)."""
    data: dict[str, Any] = {"name": name, "models": models, "batch_sizes": batch_sizes, "stages": stages, "counters": counters}
    if grid:
        data["grid"] = dict(grid)
    if measure:
        data["measure"] = dict(measure)
    return validate(data, default_name=name, label=label, rename=rename)


def sweep(
    source: str | os.PathLike | SweepPlan | None = None,
    *,
    models: Sequence[str] | str | None = None,
    grid: Mapping[str, Any] | None = None,
    batch_sizes: Sequence[int] | int = (1,),
    stages: Sequence[str] | str = ("analytic",),
    counters: Sequence[str] | str = COUNTERS,
    measure: Mapping[str, Any] | None = None,
    name: str | None = None,
    out: str | os.PathLike | None = None,
    resume: bool = False,
    force: bool = False,
    retry_failed: bool = False,
    shard: str | tuple[int, int] | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> SweepResult:
    """Run a sweep (a sweep file, a :class:`SweepPlan`, or ``models`` x ``grid``) into a store.

    Each completed row is on disk before the next configuration starts. ``on_start(todo,
    skipped)`` and ``on_row(row)`` let a caller show progress. Raises :class:`SweepInterrupted`
    (exit code 130) on Ctrl-C after saving; never raises for a failing configuration.

    >>> sweep(models=["vit-b/16", "resnet50"], grid={"img_size": [224, 384]}, out="results/x")  # doctest: +SKIP
    """
    from vitbench.store import Store

    if isinstance(source, SweepPlan):
        plan = source
    elif source is not None:
        plan = load_sweep_file(source)
    elif models is not None:
        plan = plan_from_grid(
            models, grid, batch_sizes=batch_sizes, stages=stages, counters=counters,
            measure=measure, name=name or "sweep",
        )
    else:
        raise SweepFileError("sweep: give a sweep file or models (and a grid)")
    if name:
        plan = replace(plan, name=name)
    shard_t = parse_shard(shard)
    configs = expand(plan)
    measured_devices = check_measured(configs)
    selected = select_shard(configs, shard_t)
    directory = Path(out or plan.out or Path("results") / plan.name)
    if shard_t and not out and not plan.out:
        directory = Path("results") / f"{plan.name}.shard{shard_t[0]}of{shard_t[1]}"
    with Store.open(directory, resume=resume, force=force) as store:
        from vitbench import __version__

        store.meta = {
            "name": plan.name,
            "source": plan.source,
            "description": plan.description,
            "grid_size": len(configs),
            "shard_index": shard_t[0] if shard_t else None,
            "shard_count": shard_t[1] if shard_t else None,
            "studies": [s.name for s in plan.studies],
            "vitbench_version": __version__,
        }
        if not store.environment:
            store.environment = _environment(measured_devices)
        if retry_failed:
            failed = {str(r["id"]) for r in store.rows if str(r.get("status")) in FAILED_STATUSES}
            store.drop(failed)
        done = store.completed_ids()
        todo = [c for c in selected if c.id not in done]
        skipped = len(selected) - len(todo)
        if on_start:
            on_start(len(todo), skipped)
        store.flush()
        delay = float(os.environ.get("VITBENCH_SWEEP_ROW_DELAY_S", "0") or 0)
        runner = _Runner()
        statuses: dict[str, int] = {}
        ran = 0
        try:
            for config in todo:
                if delay:
                    time.sleep(delay)
                row = runner.row(config)
                store.add(row)
                ran += 1
                statuses[row["status"]] = statuses.get(row["status"], 0) + 1
                if on_row:
                    on_row(row)
        except KeyboardInterrupt:
            store.flush()  # in case the interrupt landed inside a write
            selected_ids = {c.id for c in selected}
            saved = sum(1 for r in store.rows if str(r.get("id")) in selected_ids)
            raise SweepInterrupted(saved, len(selected), directory) from None
    from vitbench.store import load_results

    records, _ = load_results(directory)
    return SweepResult(
        out=directory, records=records, total=len(selected), ran=ran, skipped=skipped,
        statuses=statuses, name=plan.name,
    )


def _environment(measured_devices: Sequence[str] = ()) -> dict[str, Any]:
    """Where the sweep ran (host-level; per-row device details come with measured rows)."""
    import platform
    import sys

    from vitbench import __version__

    env: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "hostname": platform.node(),
        "vitbench_version": __version__,
        "started_at": None,
    }
    from vitbench.store import now_iso

    env["started_at"] = now_iso()
    if hasattr(os, "getloadavg"):
        # Other work on the machine skews timings; the report shows this next to measured rows.
        env["load_average_1m"] = round(os.getloadavg()[0], 2)
    if measured_devices:
        from vitbench.measure.env import environment

        env["devices"] = {d: environment(d) for d in measured_devices}
    for var in ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID"):
        if os.environ.get(var):
            env[var.lower()] = os.environ[var]
    return env


__all__ = ["sweep", "expand", "Config", "SweepResult", "SweepInterrupted", "parse_shard", "select_shard", "plan_from_grid"]
