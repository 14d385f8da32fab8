"""``vitbench.predict``: predicted step time, throughput and training cost for models x settings,
and what a prediction rests on: this machine's CPU calibration (found in the cache, made on
first use, or given), or, for a GPU, the GPU cost model (:mod:`vitbench.timemodel.gpu_model`)
with the card's published numbers (:mod:`vitbench.timemodel.gpus`).

Devices: ``cpu`` (this machine, calibrated), ``cuda`` (this machine's GPU, found in the
catalogue by its name) and every catalogue GPU (``vitbench devices``); several at once
(``device="a100,h100,l4"``): the step is traced once and priced per device.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from vitbench.counters.limits import trace_refusal
from vitbench.errors import ModelError, ModelForwardError, OutputFileError, SpecError, error_detail
from vitbench.measure.env import cpu_model
from vitbench.models.target import is_module
from vitbench.results import Records
from vitbench.row_status import RowStatus
from vitbench.row_warnings import warning
from vitbench.specs.limits import MAX_TRACED_BLOCKS, too_many_blocks
from vitbench.timemodel.cached_models import resolve_cached
from vitbench.timemodel.calibration import CPU_CALIBRATION_TIME
from vitbench.timemodel.calibration.cache import cache_path, load, save
from vitbench.timemodel.calibration.schema import PRECISION_DTYPES, Calibration, CalibrationError, busy_warnings
from vitbench.timemodel.calibration.worker import calibrate, default_threads
from vitbench.timemodel.gpu_calibration import GpuCalibration
from vitbench.timemodel.gpu_model import predict_gpu
from vitbench.timemodel.gpu_pricing import gpu_pricing, gpu_profile, refuse_a_gpu_calibration  # noqa: F401 - gpu_profile: run.gpu_profile, as before
from vitbench.timemodel.host import resolve_host, with_host
from vitbench.timemodel.model import predict_ops
from vitbench.timemodel.predict_settings import PREDICT_DEVICES, PredictSettings, check_device, check_devices
from vitbench.timemodel.prediction_rows import (
    error_band,
    gpu_kernel_warnings,
    measured_and_cost,
    measured_index,
    row_head,
    trace_warnings,
)
from vitbench.timemodel.pretrace import model_tasks, prepare_in_workers
from vitbench.timemodel.prices import device_prices
from vitbench.timemodel.trace_cache import cached_trace, refusals
from vitbench.typed_rows import PredictionRow
from vitbench.version import __version__

#: the terminal and markdown table's columns, in the order of the question: what was asked (the
#: model, device, batch, mode, precision), the answer (step, throughput, what bounds it, the
#: training run's time and cost, the error band, a measured step beside it, a failed row's
#: status), then how it splits into components, then the rest of the identity and the basis.
#: The CSV and JSON columns keep the rows' own order (a file contract). Those in
#: :data:`TABLE_OPTIONAL` are shown only when some row fills them (``status``: when some row is
#: not ok).
TABLE_COLUMNS = ("model", "overrides", "device", "batch_size", "mode", "precision",
                 "pred_latency_s", "pred_throughput_img_s", "pred_bound", "pred_epoch_s", "pred_train_hours", "pred_cost",
                 "pred_error_p90", "measured_latency_s", "pred_ratio", "status",
                 "pred_linear_s", "pred_attention_s", "pred_conv_s", "pred_elementwise_s", "pred_optimizer_s", "pred_overhead_s",
                 "img_size", "threads", "pred_basis", "cost_basis")
TABLE_OPTIONAL = frozenset({"overrides", "pred_bound", "pred_epoch_s", "pred_train_hours", "pred_cost", "pred_error_p90",
                            "measured_latency_s", "pred_ratio", "status", "cost_basis"})


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
    (:func:`~vitbench.timemodel.calibration.cache.cache_dir`) is read, or the device calibrated on
    first use and the result saved there. ``on_calibrate(message)`` hears when a calibration
    starts (:data:`~vitbench.timemodel.calibration.CPU_CALIBRATION_TIME`) and as each of its steps
    starts ('calibration [3/20] matrix products, float32, m = 64 (25 shapes)')."""
    found, warnings = _resolve_calibration(device, threads, precisions, calibration, recalibrate, on_calibrate)
    if isinstance(found, Calibration):  # one measured while other processes held the cores says so
        warnings = [*warnings, *busy_warnings(found)]
    return found, warnings


def _resolve_calibration(device: str, threads: int | None, precisions: Iterable[str], calibration: Any,
                         recalibrate: bool, on_calibrate: Callable[[str], None] | None) -> tuple[Any, list]:
    """:func:`resolve_calibration` without the busy-machine warning."""
    import torch

    device = check_device(device)
    precisions = tuple(precisions)
    warnings: list[dict[str, str]] = []
    if isinstance(calibration, Calibration):
        _check_given(calibration, device, threads, "a CPU calibration")
        return calibration, warnings
    if device != "cpu":
        return gpu_pricing(device, calibration)

    if isinstance(calibration, GpuCalibration):
        raise SpecError("calibration", "a GPU calibration", "--device cpu needs a CPU one (`vitbench calibrate`)")
    needed = {PRECISION_DTYPES[p] for p in precisions if p in PRECISION_DTYPES}
    if calibration is not None:
        try:
            found = load(calibration, torch.__version__)
            _check_dtypes(found, needed)
        except CalibrationError as exc:
            refuse_a_gpu_calibration(calibration)
            raise CalibrationError(f"--calibration={str(calibration)!r}: refused ({exc}); run `vitbench calibrate` "
                                   "or leave --calibration out to use (or make) this machine's") from None
        _check_given(found, device, threads, str(calibration))
        return found, warnings
    threads = threads or default_threads()

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
                     f"(once per machine, thread count and torch version; {CPU_CALIBRATION_TIME}); "
                     f"it will be saved to {path}")
    made = calibrate("cpu", threads, tuple(sorted(precisions)), on_step=_calibration_steps(on_calibrate))

    try:
        save(made, path)
    except (OSError, OutputFileError) as exc:  # a cache that cannot be written never costs the prediction
        reason = getattr(exc, "strerror", None) or str(exc)
        warnings.append(warning("calibration-not-saved", f"calibration not saved to {path}: {reason}",
                                "it is made again on the next prediction; make the cache folder writable"))
    return made, warnings


def _calibration_steps(on_calibrate: Callable[[str], None] | None) -> Callable[[int, int, str], None] | None:
    """A calibration's steps told to ``on_calibrate`` as lines: 'calibration [3/20] ...'."""
    if on_calibrate is None:
        return None
    return lambda done, total, label: on_calibrate(f"calibration [{done + 1}/{total}] {label}")


def _check_given(found: Calibration, device: str, threads: int | None, name: str) -> None:
    """A calibration given (a file or a record) prices only what it was made for: a CPU
    calibration never a GPU's rows (they would carry the GPU's name and the CPU's prices), and
    one made at N threads never a prediction asked at another count (``threads`` None: the
    calibration's own count)."""
    if device != "cpu":
        raise SpecError("calibration", name, f"is a CPU calibration (made on {found.device_name or found.device}); "
                                             f"--device {device} is priced by the GPU model: leave --calibration out, or "
                                             "give a GPU calibration (`vitbench calibrate --device cuda`)")
    if threads is not None and found.basis == "calibration" and found.threads != threads:
        raise SpecError("threads", threads, f"but the calibration {name} was made at threads={found.threads}; give "
                                            f"--threads {found.threads}, or leave --calibration out to use (or make) one "
                                            f"at {threads}")


def _check_dtypes(calibration: Calibration, needed: set[str]) -> None:
    missing = sorted(needed - set(calibration.gemm))
    if missing:
        raise CalibrationError(f"no {', '.join(missing)} rates (calibrated: {', '.join(calibration.dtypes())})")


_OPS_CACHE: dict[Any, list] = {}


def traced_ops(target: Any, batch_size: int, mode: str, precision: str, optimizer: str, device_type: str = "cpu",
               reparam: bool = False, trace_cache: bool = True, channels_last: bool = False) -> list:
    """The operators of one step (:func:`~vitbench.timemodel.ops.trace_target_ops`), remembered
    per configuration in this process and, for models named by a stable reference, on disk
    (:mod:`vitbench.timemodel.trace_cache`). ``channels_last``: the model and its images in
    channels-last memory format."""
    traced_precision = "fp32" if precision == "tf32" else precision
    key = (target, id(target.module) if target.module is not None else None, batch_size, mode, traced_precision,
           optimizer, device_type, reparam, channels_last)
    if key not in _OPS_CACHE:
        if len(_OPS_CACHE) > 256:
            _OPS_CACHE.clear()
        _OPS_CACHE[key] = cached_trace(target, batch_size, mode, traced_precision, optimizer, device_type, reparam,
                                       use_cache=trace_cache, channels_last=channels_last)
    return _OPS_CACHE[key]


def predict(
    models: Any,
    settings: PredictSettings | None = None,
    *,
    overrides: dict[str, Any] | None = None,
    input_size: Any = None,
    on_calibrate: Callable[[str], None] | None = None,
    on_progress: Callable[[int, int, str], None] | None = None,
    **keywords: Any,
) -> Records:
    """Predicted time of one step for every model x device x mode x batch size x precision, from
    the CPU's calibration (see :func:`resolve_calibration`) or the GPU cost model, and what
    training costs.

    Args:
        models: one model or several: preset names, references (``timm:convnext_tiny``), specs or
            ``nn.Module`` objects (as :func:`vitbench.resolve_models` takes them).
        settings: what to price (:class:`~vitbench.timemodel.predict_settings.PredictSettings`:
            devices, modes, batch sizes, precisions, the calibration, the training cost); None:
            the defaults (the CPU, inference, batch 1, fp32).
        overrides: spec fields to change on every model that has them (a list: one model per value).
        input_size: ``(C, H, W)`` of a live module that does not say.
        on_calibrate: hears ``(message)`` when a CPU calibration starts (about 30 s, once per machine).
        on_progress: called ``(done, total, label)`` as each configuration starts.
        **keywords: a field of :class:`PredictSettings` (``device="h100"``, ``batch_size=[1, 64]``)
            changes ``settings``: the keyword form builds the same object, validated in the same
            place; any other name is a spec field to override (``img_size=384``), as in ``overrides``.

    Returns:
        :class:`~vitbench.results.Records` of :class:`~vitbench.typed_rows.PredictionRow`, one per
        configuration and device: ``row.latency_s`` (``pred_latency_s``: one step at the batch,
        what ``profile`` reports as ``latency_p50_s``), ``row.throughput_img_s``,
        ``row.components_s`` (attention, linear, conv, elementwise, optimizer, overhead: they sum
        to the latency), ``row.basis``; on a GPU ``row.host_s``, ``row.device_s`` and
        ``row.error_band`` (the validation's ``pred_error_median``, ``pred_error_p90``,
        ``pred_error_basis``); with epochs and dataset_size ``row.epoch_s``, ``row.train_hours``
        and (with a price) ``row.cost``, from the measured step when ``measured`` has the same
        configuration. A model the time model cannot trace is a row with a ``status`` and ``error``.

    Raises:
        SpecError: a setting, a model name or a spec field is wrong (one line naming it).
        CalibrationError: a calibration file given is missing, damaged or does not fit.
        InputFileError: a price file or measured results cannot be read.

    >>> predict(["vit-s/16", "resnet50"], mode=["infer", "train"], batch_size=[1, 32])  # doctest: +SKIP
    >>> predict("vit-b/16", PredictSettings(device="h100,a100", precision="bf16"))[0].latency_s  # doctest: +SKIP
    """
    settings, spec_overrides = PredictSettings.split(settings, keywords)
    inputs = _files_read(settings)  # a bad price file or measured file is refused before any model is resolved
    early = {each: _calibration(settings, each, on_calibrate) for each in settings.device
             if settings.calibration is not None or each != "cpu"}
    asked = {**(overrides or {}), **spec_overrides}
    if settings.jobs > 1 and settings.trace_cache:  # named models resolved and traced in worker processes first
        prepare_in_workers(model_tasks(_as_models(models), asked, input_size, settings, _refusal), settings.jobs)
    targets, refused = resolve_cached(_as_models(models), asked, input_size=input_size, use_cache=settings.trace_cache)
    pricing = _pricing(settings, early, targets, on_calibrate)
    context = _Context(settings, {}, *inputs, refused)
    records = Records()
    configurations = list(itertools.product(targets, settings.mode, settings.batch_size, settings.precision))
    for index, (target, run_mode, batch, prec) in enumerate(configurations):
        if on_progress is not None:
            on_progress(index, len(configurations), f"{target.label} batch {batch} {run_mode} {prec}")
        refusal = _refusal(target, batch)
        traces: dict[str, Any] = {}  # one trace per device type, priced for every device
        for each in settings.device:
            row = _device_row((target, run_mode, batch, prec), each, pricing[each], refusal, traces, context)
            records.append(PredictionRow(row))
    return records


def _as_models(models: Any) -> list[Any]:
    """``models`` as a list: one name, path, module or spec becomes a list of one."""
    if isinstance(models, (str, os.PathLike)) or not isinstance(models, Iterable) or is_module(models):
        return [models]
    return list(models)


def _files_read(settings: PredictSettings) -> tuple[dict, dict, dict]:
    """What the settings name in files, read once: (the measured steps by configuration, each
    device's price of an hour with the price file's, the environment every row records)."""
    import torch

    measured_rows = measured_index(settings.measured) if settings.measured is not None else {}
    prices = device_prices(settings.price_per_hour, settings.device, settings.prices_file)
    return measured_rows, prices, {"env_torch": torch.__version__, "vitbench_version": __version__}


@dataclass(frozen=True)
class _Context:
    """What every row of one :func:`predict` call shares."""

    settings: PredictSettings
    counts: dict          # params and MACs counted for models without a formula, by (target, batch)
    measured_rows: dict   # measured steps by configuration (``measured``)
    prices: dict          # price per hour by device
    environment: dict
    refused: dict         # warnings of refused question-cache entries, by id() of the target


def _device_row(configuration: tuple, device: str, priced: tuple, refusal: str | None, traces: dict,
                context: _Context) -> dict[str, Any]:
    """The row of one configuration (target, mode, batch, precision) on one device: refused
    from the spec, refused for the model's own failing forward, refused when the model's code
    cannot be traced otherwise (the reason in ``error``, the traceback in ``error_detail``), else
    priced. vitbench's own exception is not a row: it ends the command."""
    target, run_mode, batch, prec = configuration
    cal, warnings = priced
    row_warnings = [*warnings, *context.refused.get(id(target), ())]
    settings = context.settings
    row = row_head(target, batch, device, run_mode, prec, settings.optimizer, cal, settings.reparam, context.counts,
                   row_warnings, settings.trace_cache)
    if settings.channels_last:
        row["channels_last"] = True
    started = time.perf_counter()
    if refusal is not None:  # decided from the spec: nothing is built
        return {**row, "status": RowStatus.REFUSED, "error": refusal, "pred_basis": cal.label, "warnings": row_warnings,
                **context.environment}
    device_type = "cpu" if device == "cpu" else "cuda"
    if device_type not in traces:
        with refusals() as refused:  # the cache entries this trace refused: this row's warnings
            try:
                traces[device_type] = traced_ops(target, batch, run_mode, prec, settings.optimizer, device_type,
                                                 settings.reparam, settings.trace_cache, settings.channels_last)
            # the model's code failing (its forward, its backward on fake tensors) becomes its row, the
            # traceback kept in it; vitbench's own exception ends the command (exit 3)
            except ModelError as exc:
                traces[device_type] = exc
        row_warnings.extend(refused)
    ops = traces[device_type]

    if isinstance(ops, ModelForwardError):  # the model's own forward failed: the user's to fix (exit 2)
        return {**row, "status": RowStatus.REFUSED, "error": ops.detail, "pred_basis": cal.label, "warnings": row_warnings,
                **context.environment}
    if isinstance(ops, ModelError):  # the model's code cannot run on fake tensors (its backward, say)
        return {**row, "status": RowStatus.REFUSED, "error": f"cannot trace the step: {ops.detail}".splitlines()[0],
                "error_detail": error_detail(ops), "pred_basis": cal.label, "warnings": row_warnings, **context.environment}
    prediction = _price(ops, cal, run_mode, prec)
    row.update(prediction.columns(batch))
    row["pred_basis"] = cal.label
    if device != "cpu":
        unpriced = gpu_kernel_warnings(ops)
        row.update(error_band(cal, target.name, run_mode, warned=bool(unpriced)))
        row["pred_warning"] = "; ".join(w["message"] for w in unpriced) or None
        row_warnings.extend(unpriced)
    row["pred_seconds"] = time.perf_counter() - started
    row_warnings.extend(trace_warnings(row, prediction, run_mode))
    seen = context.measured_rows.get((target.name, target.overrides_text if target.overrides else "", run_mode, batch, prec))
    columns, cost_warnings = measured_and_cost(prediction.latency_s, seen, batch, run_mode, settings.epochs,
                                               settings.dataset_size, context.prices.get(device))
    row.update(columns)
    row_warnings.extend(cost_warnings)
    row.update(status=RowStatus.OK, error=None, warnings=row_warnings, **context.environment)
    return row


def _calibration(settings: PredictSettings, device: str, on_calibrate: Callable[[str], None] | None) -> tuple:
    """:func:`resolve_calibration` for ``device`` as ``settings`` ask it."""
    return resolve_calibration(device, settings.threads, [p for p in settings.precision if p in PRECISION_DTYPES],
                               settings.calibration, settings.recalibrate, on_calibrate)


def _pricing(settings: PredictSettings, early: dict, targets: list, on_calibrate: Callable[[str], None] | None) -> dict:
    """Each device's pricing: ``early`` (a calibration file and the GPUs, checked before any
    model was resolved: a py: module imported), then this machine's calibration, made (half a
    minute) only now that the models are known to be good, and not at all when every
    configuration is refused from its spec; the GPU host of ``host_dispatch`` applied."""
    pricing = dict(early)
    if "cpu" in settings.device and "cpu" not in pricing and all(_refusal(t, b) for t in targets for b in settings.batch_size):
        pricing["cpu"] = SimpleNamespace(threads=settings.threads, basis="none", device_name="",
                                         label="none: refused before pricing"), []
    pricing.update({each: _calibration(settings, each, on_calibrate) for each in settings.device if each not in pricing})
    host = resolve_host(settings.host_dispatch)
    if host is not None:
        pricing = {each: (with_host(cal, host), warnings) for each, (cal, warnings) in pricing.items()}
    return {each: pricing[each] for each in settings.device}


def _refusal(target: Any, batch: int) -> str | None:
    """Why the step of ``target`` at ``batch`` is not traced, decided from its spec (nothing built)."""
    return too_many_blocks(target.spec, MAX_TRACED_BLOCKS, "tracing the step") or _too_large(target, batch)


def _too_large(target: Any, batch: int) -> str | None:
    """Why the step's trace must not build ``target`` (too large to count, or its largest weight
    does not fit in memory)."""
    found = trace_refusal(target.spec, "tracing the step", batch)
    return found and (f"{target.overrides_text}: {found}" if target.overrides else found)


def _price(ops: list, cal: Any, mode: str, precision: str) -> Any:
    """The step's prediction on the CPU calibration or the GPU profile ``cal``."""
    if isinstance(cal, Calibration):
        return predict_ops(ops, cal, mode)

    return predict_gpu(ops, cal, mode, tf32=precision == "tf32")


# check_device, check_devices and PREDICT_DEVICES live in predict_settings (the one place that
# validates what predict is asked); they are kept importable from here, where they were
__all__ = ["PREDICT_DEVICES", "TABLE_COLUMNS", "TABLE_OPTIONAL", "PredictSettings", "check_device", "check_devices", "predict",
           "predict_device", "resolve_calibration", "traced_ops"]
