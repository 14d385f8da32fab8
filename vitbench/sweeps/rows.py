"""Computing one sweep row, stage by stage, and estimating how long a row takes.

Stages: ``analytic`` (exact params and MACs), ``counters`` (fvcore and dispatch traced counts
beside the analytic ones, with ``agree``), ``measured`` (:func:`vitbench.measure.profile.measure`:
timing, peak memory, the analytic memory prediction in ``pred_*`` columns, raw samples per run).
Each row carries ``status``: ok | invalid | error | oom | refused, and ``error`` text when not ok;
a failing configuration is a row, never an aborted sweep.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from vitbench import analytic as formulas
from vitbench.counters import count_record
from vitbench.counters.fill import fill_counted
from vitbench.counters.limits import CountingRefused
from vitbench.errors import ModelError, SpecError, VitbenchError, error_detail
from vitbench.measure.env import validate_settings
from vitbench.measure.profile import measure
from vitbench.row_status import RowStatus
from vitbench.row_warnings import merge
from vitbench.specs import spec_key
from vitbench.specs.identity import RowIdentity
from vitbench.store.writer import now_iso
from vitbench.sweeps import grid
from vitbench.sweeps.grid import Config, is_reference, study_sizes
from vitbench.sweeps.plan import SweepPlan
from vitbench.sweeps.progress import RowCosts
from vitbench.timemodel.fast import Predictor
from vitbench.timemodel.run import predict_device, resolve_calibration

#: rough seconds per row of each stage beyond the analytic one, for the estimate before a run and
#: the weights of a progress ETA (tracing a model: about a second per counter; a measured row:
#: per run, a worker process (Python, torch, the runtime's warm-up) and the timed minimum, and
#: in its first run the memory and attention-kernel passes, which import torch's profiler). On a
#: busy 2-core machine (load 8-12) the default study's measured rows took 15 times its counted
#: rows; these weights say 5 times: the ETA scales each kind by its own pace once a row of it is done
COUNTER_S = 1.5
PREDICT_S = 0.01  # traces are shared across batch sizes and depths (vitbench.timemodel.fast)
PROCESS_START_S = 4.0
PROFILER_PASSES_S = 3.0


class Runner:
    """Computes rows; caches counter results per (spec, batch) across modes and precisions."""

    def __init__(self, on_calibrate: Any = None) -> None:
        self._counter_cache: dict[tuple[str, int, tuple[str, ...]], dict[str, Any]] = {}
        self._predictors: dict[tuple[Any, ...], tuple[Any, list[str]]] = {}
        self._on_calibrate = on_calibrate

    def _predict(self, target: Any, config: Config) -> dict[str, Any]:
        """The time model's columns (one Predictor, hence one calibration, per device setting)."""
        settings = config.run_settings
        device = predict_device(settings.device)
        precisions = ("fp32", "bf16") if settings.precision == "bf16" else ("fp32",)
        key = (device, settings.threads, settings.optimizer, precisions)
        if key not in self._predictors:
            calibration, warnings = resolve_calibration(device, settings.threads, precisions, on_calibrate=self._on_calibrate)
            self._predictors[key] = (Predictor(calibration, settings.optimizer), warnings)
        predictor, warnings = self._predictors[key]
        prediction = predictor.predict(target, config.batch_size, settings.mode, settings.precision)
        out: dict[str, Any] = dict(prediction.columns(config.batch_size))
        out.update(pred_basis=predictor.calibration.label, mode=settings.mode, precision=settings.precision,
                   device=device, warnings=list(warnings))
        return out

    def row(self, config: Config) -> dict[str, Any]:
        started = time.perf_counter()
        identity = {
            "id": config.id, "index": config.index, "study": config.study, "model": config.model,
            "overrides": config.overrides_text, "stages": "+".join(config.stages),
        }
        row: dict[str, Any] = {**identity, "status": RowStatus.OK, "error": None}
        if config.invalid is not None:
            row.update(status=RowStatus.INVALID, error=config.invalid, batch_size=config.batch_size)
            if config.mode:
                row.update(mode=config.mode, precision=config.precision, device=config.run_settings.device)
            return _finish(row, started)
        target = config.target
        try:
            identity = RowIdentity.of(target, config.batch_size).columns()
            row.update(source=identity["source"], kind=identity["kind"], spec_key=identity["spec_key"],
                       img_size=identity["img_size"], patch_size=identity["patch_size"], batch_size=config.batch_size)
            if target.spec is not None:
                figures = formulas.complexity(target.spec, config.batch_size).as_record()
                row.update({k: v for k, v in figures.items() if k not in ("model", *identity)})
            else:
                row["analytic_note"] = target.analytic_note
            if "counters" in config.stages:
                row.update(self._counters(target, config, row))
            elif target.spec is None:  # no formula: the counted numbers are the row's (as analyze gives)
                row.update(self._counters(target, replace(config, counters=("dispatch",)), row))

            fill_counted(row)
            if "predict" in config.stages:
                predicted = self._predict(target, config)
                row["warnings"] = merge(row.get("warnings"), predicted.pop("warnings", None)) or None
                row.update(predicted)
            if "measured" in config.stages:
                measured = _measured(target, config)
                warnings = merge(row.get("warnings"), measured.get("warnings"))
                row.update(measured)
                row["warnings"] = warnings or None
                row["status"] = measured.get("status") or RowStatus.OK
        except MemoryError:
            row.update(status=RowStatus.OOM, error="MemoryError: out of host memory")
        except CountingRefused as exc:
            row.update(status=RowStatus.REFUSED, error=str(exc))
        except ModelError as exc:  # the model's code failed: its row, with that code's traceback
            row.update(status=RowStatus.ERROR, error=exc.detail[:500], error_detail=error_detail(exc))
        except VitbenchError as exc:  # what the configuration asks is refused: one line
            row.update(status=RowStatus.ERROR, error=f"{exc.__class__.__name__}: {' '.join(str(exc).split())}"[:500])
        except (KeyboardInterrupt, SystemExit):
            raise
        # the sweep's worker boundary: a configuration failing, by vitbench's own bug too, is its
        # row and the sweep goes on; the traceback is kept in the row's error_detail
        except Exception as exc:  # noqa: BLE001
            row.update(status=RowStatus.ERROR, error=f"internal error: {exc.__class__.__name__}: {' '.join(str(exc).split())}"[:500],
                       error_detail=error_detail(exc))
        row.update(identity)  # the sweep's names win over a stage's (measure names the model too)
        return _finish(row, started)

    def _counters(self, target: Any, config: Config, analytic: dict[str, Any]) -> dict[str, Any]:
        # a reference is counted on its own library's module (timm's, not our equivalent ViT)
        ours = target.spec is not None and target.source in ("preset", "spec")
        identity = spec_key(target.spec) if ours else target.label
        key = (identity, config.batch_size, tuple(config.counters))
        if key not in self._counter_cache:
            self._counter_cache[key] = dict(count_record(target, config.batch_size, list(config.counters), analytic if "macs" in analytic else None))
        return self._counter_cache[key]


def _measured(target: Any, config: Config) -> dict[str, Any]:
    return dict(measure(target, config.run_settings))


def _finish(row: dict[str, Any], started: float) -> dict[str, Any]:
    row["elapsed_s"] = time.perf_counter() - started
    row["completed_at"] = now_iso()
    return row


def check_measured(plan: SweepPlan) -> list[str]:
    """Refuse, before any row runs, measurement settings this machine cannot honour (no CUDA,
    fp16 on the CPU): one line, exit code 2. Returns the devices measured on."""
    devices = set()
    for study in plan.studies:
        if study.measured:
            for mode in study.modes:
                for precision in study.precisions:
                    devices.add(validate_settings(study.measure.replace(mode=mode, precision=precision, batch_size=1)))
    return sorted(devices)


def prepare_predict(plan: SweepPlan, on_calibrate: Any = None, calibrate: bool = True) -> None:
    """Before any row runs: check the predict stage's devices, and calibrate those that have no
    calibration yet (saved in the cache, where the rows then find it). ``calibrate=False``: the
    checks alone (a GPU's pricing is looked up, the CPU is not calibrated)."""
    for study in plan.studies:
        if "predict" in study.stages:
            device = predict_device(study.measure.device)
            precisions = ("fp32", "bf16") if "bf16" in study.precisions else ("fp32",)
            if "fp16" in study.precisions and device == "cpu":
                raise SpecError("precision", "fp16", "fp16 autocast needs a GPU; use bf16 or fp32 on the CPU")
            if calibrate or device != "cpu":
                resolve_calibration(device, study.measure.threads, precisions, on_calibrate=on_calibrate)


def estimate_seconds(plan: SweepPlan, rows: int) -> tuple[float, float]:
    """(seconds for ``rows`` rows of the plan, mean seconds per row): the per-row estimate of
    each study weighted by its share of the grid."""
    per_row = row_seconds(plan)
    sizes = study_sizes(plan)
    total = sum(sizes.values()) or 1
    mean = sum(per_row[name] * size for name, size in sizes.items()) / total
    return rows * mean, mean


def row_costs(plan: SweepPlan) -> Any:
    """The rows' expected costs for a progress ETA (:class:`~vitbench.sweeps.progress.RowCosts`):
    :func:`row_seconds` of each study, its size, and which studies are measured."""
    return RowCosts(row_seconds(plan), study_sizes(plan), frozenset(s.name for s in plan.studies if s.measured))


def row_seconds(plan: SweepPlan, store_s: float = 0.00015) -> dict[str, float]:
    """Estimated seconds per row of each study: the analytic stage timed on the study's first
    model, plus rough costs of the counters and measured stages and ``store_s``, the rest of a
    row (building its configuration, writing it with group commit: 0.15 ms measured here)."""
    out = {}
    for study in plan.studies:
        first = study.models[0]
        target = None if is_reference(study.refs[0]) else grid.build_config(first, ())[0]  # a reference is not built to estimate
        seconds = store_s
        if target is not None and target.spec is not None:
            started = time.perf_counter()
            for _ in range(3):
                formulas.complexity(target.spec, 1).as_record()
            seconds += (time.perf_counter() - started) / 3
        if "counters" in study.stages:
            seconds += COUNTER_S * len(study.counters)
        if "predict" in study.stages:
            seconds += PREDICT_S
        if study.measured:
            settings = study.measure
            runs = settings.runs if settings.in_worker else 1
            seconds += runs * (PROCESS_START_S * settings.in_worker + settings.min_run_time_s)
            seconds += (PROFILER_PASSES_S + settings.min_run_time_s) * settings.memory  # the first run's passes
        out[study.name] = seconds
    return out


__all__ = ["Runner", "check_measured", "estimate_seconds", "prepare_predict", "row_costs", "row_seconds"]
