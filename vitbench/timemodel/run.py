"""``vitbench.predict``: predicted step time, throughput and training cost for models x settings,
and the calibration a prediction rests on (found in the cache, made on first use, or given).

Devices: ``cpu`` (this machine, calibrated), ``cuda`` (this machine's GPU, from its datasheet)
and the datasheet devices (:data:`vitbench.timemodel.datasheet.DATASHEET_DEVICES`).
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from vitbench.errors import SpecError
from vitbench.results import Records
from vitbench.row_warnings import warning
from vitbench.settings import MAX_THREADS, MODES, OPTIMIZERS, check_batch_size
from vitbench.specs.limits import MAX_TRACED_BLOCKS, too_many_blocks
from vitbench.timemodel.calibration import (
    PRECISION_DTYPES, Calibration, CalibrationError, cache_path, calibrate, default_threads, load, save,
)
from vitbench.timemodel.datasheet import DATASHEET_DEVICES, datasheet_calibration

PREDICT_DEVICES = ("cpu", "cuda", *DATASHEET_DEVICES)

TABLE_COLUMNS = ("model", "img_size", "batch_size", "mode", "precision", "device", "threads", "pred_latency_s",
                 "pred_throughput_img_s", "pred_linear_s", "pred_attention_s", "pred_conv_s",
                 "pred_elementwise_s", "pred_optimizer_s", "pred_overhead_s", "pred_basis")


def check_device(device: str) -> str:
    """``device`` if predictions can be made for it; SpecError listing the known ones."""
    if not isinstance(device, str) or device.lower() not in PREDICT_DEVICES:
        raise SpecError("device", device, f"unknown device; known: {', '.join(PREDICT_DEVICES)}")
    return device.lower()


def predict_device(run_device: str) -> str:
    """A run setting's device (auto, cpu, cuda) as a prediction device: auto is cuda when CUDA
    is here, else cpu."""
    if run_device == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return check_device(run_device)


def resolve_calibration(device: str = "cpu", threads: int | None = None, precisions: Iterable[str] = ("fp32",),
                        calibration: Calibration | str | os.PathLike | None = None, recalibrate: bool = False,
                        on_calibrate: Callable[[str], None] | None = None) -> tuple[Calibration, list[str]]:
    """The calibration for ``device`` at ``threads`` and the warnings it comes with.

    A :class:`Calibration` is used as given. A file (``calibration=PATH``) is loaded; one that
    is missing, damaged, from another torch version or lacks a precision is refused with the
    reason (:class:`CalibrationError`, exit code 2: the file was asked for by name, so nothing
    is calibrated in its place). Otherwise the cache
    (:func:`~vitbench.timemodel.calibration.cache_dir`) is read, or the device calibrated on
    first use and the result saved there. ``on_calibrate(message)`` hears when a calibration
    starts (it takes about half a minute)."""
    import torch

    device = check_device(device)
    precisions = tuple(precisions)
    warnings: list[dict[str, str]] = []
    if isinstance(calibration, Calibration):
        return calibration, warnings
    if device in DATASHEET_DEVICES and calibration is None:
        return datasheet_calibration(device, torch.__version__), warnings
    if device == "cuda" and calibration is None:
        return _local_gpu_datasheet(torch), warnings
    needed = {PRECISION_DTYPES[p] for p in precisions}
    if calibration is not None:
        try:
            found = load(calibration, torch.__version__)
            _check_dtypes(found, needed)
            return found, warnings
        except CalibrationError as exc:
            raise CalibrationError(f"--calibration={str(calibration)!r}: refused ({exc}); run `vitbench calibrate` "
                                   "or leave --calibration out to use (or make) this machine's") from None
    threads = threads or default_threads()
    from vitbench.measure.env import cpu_model

    path = cache_path("cpu", cpu_model() or "", threads, torch.__version__)
    if not recalibrate and path.exists():
        try:
            found = load(path, torch.__version__)
            _check_dtypes(found, needed)
            if found.threads == threads:
                return found, warnings
        except CalibrationError as exc:
            warnings.append(warning("calibration-refused", f"cached calibration {path} refused ({exc}); recalibrated"))
    if on_calibrate is not None:
        on_calibrate(f"calibrating the CPU at {threads} thread{'s' if threads > 1 else ''} "
                     f"(once per machine, thread count and torch version; about 30 s); it will be saved to {path}")
    made = calibrate("cpu", threads, tuple(sorted(precisions)))
    try:
        save(made, path)
    except OSError as exc:
        warnings.append(warning("calibration-not-saved", f"calibration not saved to {path}: {exc.strerror or exc}",
                                "it is made again on the next prediction; make the cache folder writable"))
    return made, warnings


def _check_dtypes(calibration: Calibration, needed: set[str]) -> None:
    missing = sorted(needed - set(calibration.gemm))
    if missing:
        raise CalibrationError(f"no {', '.join(missing)} rates (calibrated: {', '.join(calibration.dtypes())})")


def _local_gpu_datasheet(torch: Any) -> Calibration:
    from vitbench.measure.roofline import lookup_device

    if not torch.cuda.is_available():
        raise SpecError("device", "cuda", f"no CUDA device here; name a datasheet device instead: {', '.join(DATASHEET_DEVICES)}")
    name = torch.cuda.get_device_name()
    peak = lookup_device(name)
    if peak is None:
        raise SpecError("device", "cuda", f"{name} has no datasheet profile; known: {', '.join(DATASHEET_DEVICES)}")
    return datasheet_calibration(peak.name, torch.__version__)


_OPS_CACHE: dict[Any, list] = {}


def traced_ops(target: Any, batch_size: int, mode: str, precision: str, optimizer: str) -> list:
    """:func:`~vitbench.timemodel.ops.trace_target_ops`, remembered per configuration."""
    from vitbench.timemodel.ops import trace_target_ops

    key = (target, id(target.module) if target.module is not None else None, batch_size, mode, precision, optimizer)
    if key not in _OPS_CACHE:
        if len(_OPS_CACHE) > 256:
            _OPS_CACHE.clear()
        _OPS_CACHE[key] = trace_target_ops(target, batch_size, mode, precision, optimizer)
    return _OPS_CACHE[key]


def _as_list(name: str, value: Any, choices: tuple[str, ...] | None = None) -> list[Any]:
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if not values:
        raise SpecError(name, value, "needs at least one value")
    for each in values:
        if choices is not None and each not in choices:
            raise SpecError(name, each, f"must be one of {', '.join(choices)}")
        if name == "batch_size":
            check_batch_size(each)
    return values


def _positive_or_none(name: str, value: Any, integer: bool = False) -> None:
    if value is None:
        return
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not value > 0 or value != value or value == float("inf"):
        raise SpecError(name, value, "must be a positive " + ("integer" if integer else "number"))


def predict(
    models: Any,
    *,
    device: str = "cpu",
    mode: str | list[str] = "infer",
    batch_size: int | list[int] = 1,
    precision: str | list[str] = "fp32",
    optimizer: str = "adamw",
    threads: int | None = None,
    calibration: Calibration | str | os.PathLike | None = None,
    recalibrate: bool = False,
    epochs: float | None = None,
    dataset_size: int | None = None,
    price_per_hour: float | None = None,
    measured: Any = None,
    input_size: Any = None,
    overrides: dict[str, Any] | None = None,
    on_calibrate: Callable[[str], None] | None = None,
    **field_overrides: Any,
) -> Records:
    """Predicted time of one step for every model x mode x batch size x precision, from the
    device's calibration (see :func:`resolve_calibration`), and what training costs.

    Rows carry ``pred_latency_s`` (one step at the batch: what ``profile`` reports as
    ``latency_p50_s``), ``pred_throughput_img_s``, the breakdown ``pred_<component>_s``
    (attention, linear, conv, elementwise, optimizer, overhead; they sum to the latency),
    ``pred_basis``; with ``epochs`` and ``dataset_size`` also ``pred_epoch_s``,
    ``pred_train_hours`` and (with ``price_per_hour``) ``pred_cost``, from the measured step
    instead when ``measured`` (profile rows, or a CSV / JSON-lines file of them) has the same
    configuration. A model that cannot be traced gives a row with ``status='error'``.

    >>> predict(["vit-s/16", "resnet50"], mode=["infer", "train"], batch_size=[1, 32])  # doctest: +SKIP
    """
    import torch

    from vitbench import __version__
    from vitbench.analytic.identity import identity_record
    from vitbench.models.references import resolve_all as resolve_models
    from vitbench.models.target import is_module
    from vitbench.timemodel.model import predict_ops

    device = check_device(device)
    modes = _as_list("mode", mode, MODES)
    batches = _as_list("batch_size", batch_size)
    precisions = _as_list("precision", precision, tuple(PRECISION_DTYPES))
    _as_list("optimizer", optimizer, OPTIMIZERS)
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or not 0 < threads <= MAX_THREADS):
        raise SpecError("threads", threads, f"must be a positive integer up to {MAX_THREADS}")
    if device not in ("cpu",) and threads is not None:
        raise SpecError("threads", threads, "is for --device cpu")
    if "fp16" in precisions and device == "cpu":
        raise SpecError("precision", "fp16", "fp16 autocast needs a GPU; use bf16 or fp32 on the CPU")
    _positive_or_none("epochs", epochs)
    _positive_or_none("dataset_size", dataset_size, integer=True)
    _positive_or_none("price_per_hour", price_per_hour)
    if (epochs is None) != (dataset_size is None):
        raise SpecError("epochs" if epochs is None else "dataset_size", None,
                        "training cost needs both epochs and dataset_size")
    if price_per_hour is not None and epochs is None:
        raise SpecError("price_per_hour", price_per_hour, "needs epochs and dataset_size")
    measured_rows = _measured_index(measured) if measured is not None else {}

    if isinstance(models, (str, os.PathLike)) or not isinstance(models, Iterable) or is_module(models):
        models = [models]
    targets = resolve_models(models, {**(overrides or {}), **field_overrides}, input_size=input_size)
    cal, warnings = resolve_calibration(device, threads, precisions, calibration, recalibrate, on_calibrate)
    environment = {"env_torch": torch.__version__, "vitbench_version": __version__}
    records = Records()
    for target, run_mode, batch, prec in itertools.product(targets, modes, batches, precisions):
        row: dict[str, Any] = identity_record(target, batch)
        row.update(device=device, mode=run_mode, precision=prec, optimizer=optimizer if run_mode == "train" else None,
                   threads=cal.threads if cal.basis == "calibration" else None)
        if target.overrides:
            row["overrides"] = target.overrides_text
        row_warnings = list(warnings)
        started = time.perf_counter()
        refusal = too_many_blocks(target.spec, MAX_TRACED_BLOCKS, "tracing the step")
        if refusal is not None:  # decided from the spec: nothing is built
            row.update(status="refused", error=refusal, pred_basis=cal.label, warnings=row_warnings, **environment)
            records.append(row)
            continue
        try:
            ops = traced_ops(target, batch, run_mode, prec, optimizer)
        except Exception as exc:  # noqa: BLE001 - any model's failure to trace becomes its row
            row.update(status="error", error=f"cannot trace the step: {type(exc).__name__}: {exc}".splitlines()[0],
                       pred_basis=cal.label, warnings=row_warnings, **environment)
            records.append(row)
            continue
        prediction = predict_ops(ops, cal, run_mode)
        row.update(prediction.columns(batch))
        row["pred_basis"] = cal.label
        row["pred_seconds"] = time.perf_counter() - started
        seen = measured_rows.get((target.name, target.overrides_text if target.overrides else "", run_mode, batch, prec))
        if seen is not None:
            row["measured_latency_s"] = seen
            row["pred_ratio"] = prediction.latency_s / seen
        if epochs is not None:
            from vitbench.timemodel.cost import training_cost

            step_s = seen if seen is not None else prediction.latency_s
            row.update(training_cost(step_s, batch, epochs, dataset_size, price_per_hour))
            row["cost_basis"] = "measured" if seen is not None else "predicted"
            if run_mode != "train":
                row_warnings.append(warning("cost-from-inference", "training cost from an inference step", "use --mode train for training"))
        row.update(status="ok", error=None, warnings=row_warnings, **environment)
        records.append(row)
    return records


def _measured_index(measured: Any) -> dict[tuple[str, str, str, int, str], float]:
    """(model, overrides, mode, batch_size, precision) -> latency_p50_s of measured rows (ok ones only)."""
    from vitbench.reading import read_results

    rows, _ = read_results(measured, "measured")
    out = {}
    for row in rows:
        latency = row.get("latency_p50_s")
        if row.get("status", "ok") == "ok" and isinstance(latency, (int, float)) and latency > 0:
            key = (str(row.get("model")), str(row.get("overrides") or ""), str(row.get("mode", "infer")),
                   int(row.get("batch_size") or 1), str(row.get("precision") or "fp32"))
            out[key] = float(latency)
    return out
