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
from vitbench.row_warnings import warning
from vitbench.settings import MAX_THREADS, MODES, OPTIMIZERS, PREDICT_PRECISIONS, check_batch_size
from vitbench.specs.limits import MAX_TRACED_BLOCKS, too_many_blocks
from vitbench.timemodel.cached_models import resolve_cached
from vitbench.timemodel.calibration.cache import cache_path, load, save
from vitbench.timemodel.calibration.schema import PRECISION_DTYPES, Calibration, CalibrationError, busy_warnings
from vitbench.timemodel.calibration.worker import calibrate, default_threads
from vitbench.timemodel.gpu_calibration import GpuCalibration
from vitbench.timemodel.gpu_model import predict_gpu
from vitbench.timemodel.gpu_pricing import gpu_pricing, gpu_profile, refuse_a_gpu_calibration  # noqa: F401 - gpu_profile: run.gpu_profile, as before
from vitbench.timemodel.gpus import GPU_DEVICES, gpu
from vitbench.timemodel.host import parse_host_dispatch, resolve_host, with_host
from vitbench.timemodel.model import predict_ops
from vitbench.timemodel.prediction_rows import (
    error_band,
    gpu_kernel_warnings,
    measured_and_cost,
    measured_index,
    row_head,
    trace_warnings,
)
from vitbench.timemodel.prices import device_prices
from vitbench.timemodel.trace_cache import cached_trace, take_refused
from vitbench.version import __version__

PREDICT_DEVICES = ("cpu", "cuda", *GPU_DEVICES)
#: what a prediction's step may run in: fp32 (on a GPU, CUDA cores), tf32 (fp32 with TF32 tensor
#: cores for matrix products and convolutions: ``torch.backends.cuda.matmul.allow_tf32``; GPUs
#: only), bf16 / fp16 autocast (fp16: GPUs only)

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


def check_device(device: str) -> str:
    """The canonical name of a prediction device (``cpu``, ``cuda`` or a catalogue GPU, any
    alias or case); SpecError listing the known ones."""
    name = device.strip().lower() if isinstance(device, str) else None
    if name in ("cpu", "cuda"):
        return name
    spec = gpu(name) if name else None
    if spec is None:
        raise SpecError("device", device, f"unknown device; known: {', '.join(PREDICT_DEVICES)} "
                                          "(`vitbench devices` lists the GPUs and their numbers)")
    return spec.key


def check_devices(device: Any) -> list[str]:
    """Devices from ``'a100,h100'`` or a list of names, each checked, in order, once each."""
    values = device.split(",") if isinstance(device, str) else list(device) if isinstance(device, (list, tuple)) else [device]
    if not values or values == [""]:
        raise SpecError("device", device, "needs at least one device")
    return list(dict.fromkeys(check_device(each) for each in values))


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
    starts (it takes about half a minute)."""
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
                     f"(once per machine, thread count and torch version; about 30 s); it will be saved to {path}")
    made = calibrate("cpu", threads, tuple(sorted(precisions)))

    try:
        save(made, path)
    except (OSError, OutputFileError) as exc:  # a cache that cannot be written never costs the prediction
        reason = getattr(exc, "strerror", None) or str(exc)
        warnings.append(warning("calibration-not-saved", f"calibration not saved to {path}: {reason}",
                                "it is made again on the next prediction; make the cache folder writable"))
    return made, warnings


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
               reparam: bool = False, trace_cache: bool = True) -> list:
    """The operators of one step (:func:`~vitbench.timemodel.ops.trace_target_ops`), remembered
    per configuration in this process and, for models named by a stable reference, on disk
    (:mod:`vitbench.timemodel.trace_cache`)."""
    traced_precision = "fp32" if precision == "tf32" else precision
    key = (target, id(target.module) if target.module is not None else None, batch_size, mode, traced_precision,
           optimizer, device_type, reparam)
    if key not in _OPS_CACHE:
        if len(_OPS_CACHE) > 256:
            _OPS_CACHE.clear()
        _OPS_CACHE[key] = cached_trace(target, batch_size, mode, traced_precision, optimizer, device_type, reparam,
                                       use_cache=trace_cache)
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


def _positive_or_none(name: str, value: Any, most: float, integer: bool = False) -> None:
    if value is None:
        return
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not value > 0 or value != value or value == float("inf"):
        raise SpecError(name, value, "must be a positive " + ("integer" if integer else "number"))
    if value > most:  # 10^400 images, 1e308 epochs: costs no float holds
        raise SpecError(name, value, f"must be at most {most:,.0f}")


def _check_precisions(devices: list[str], precisions: list[str]) -> None:
    for device in devices:
        if device == "cpu":
            for precision in ("fp16", "tf32"):
                if precision in precisions:
                    raise SpecError("precision", precision, f"{precision} needs a GPU; use bf16 or fp32 on the CPU")
            continue
        spec = gpu(device)
        if spec is None:
            continue
        for precision, dtype in (("bf16", "bfloat16"), ("tf32", "tf32")):
            if precision in precisions and not (spec.tf32_tflops if dtype == "tf32" else spec.peak_flops(dtype)):
                raise SpecError("precision", precision, f"{spec.name} ({spec.generation}) has no {precision} tensor cores")


def predict(
    models: Any,
    *,
    device: str | list[str] = "cpu",
    mode: str | list[str] = "infer",
    batch_size: int | list[int] = 1,
    precision: str | list[str] = "fp32",
    optimizer: str = "adamw",
    threads: int | None = None,
    calibration: Calibration | str | os.PathLike | None = None,
    recalibrate: bool = False,
    epochs: float | None = None,
    dataset_size: int | None = None,
    price_per_hour: Any = None,
    prices_file: str | os.PathLike | None = None,
    measured: Any = None,
    input_size: Any = None,
    overrides: dict[str, Any] | None = None,
    on_calibrate: Callable[[str], None] | None = None,
    on_progress: Callable[[int, int, str], None] | None = None,
    reparam: bool = False,
    trace_cache: bool = True,
    host_dispatch: Any = None,
    **field_overrides: Any,
) -> Records:
    """Predicted time of one step for every model x device x mode x batch size x precision, from
    the CPU's calibration (see :func:`resolve_calibration`) or the GPU cost model, and what
    training costs.

    Rows carry ``pred_latency_s`` (one step at the batch: what ``profile`` reports as
    ``latency_p50_s``), ``pred_throughput_img_s``, the breakdown ``pred_<component>_s``
    (attention, linear, conv, elementwise, optimizer, overhead; they sum to the latency),
    ``pred_basis``; on a GPU also ``pred_host_s`` and ``pred_device_s`` (the host's dispatch and
    the kernels, each alone) and the validation's error band (``pred_error_median``,
    ``pred_error_p90``, ``pred_error_basis``); with ``epochs`` and ``dataset_size`` also
    ``pred_epoch_s``, ``pred_train_hours`` and (with ``price_per_hour``: one price, or per device
    ``'h100=2.5,a100=1.3'`` or a mapping; ``prices_file``: a TOML price file,
    :mod:`vitbench.timemodel.prices`) ``pred_cost``, from the
    measured step instead when ``measured`` (profile rows, or a CSV / JSON-lines file of them)
    has the same configuration. ``device`` may name several (``"a100,h100"``): one trace, priced
    per device. ``on_progress(done, total, label)`` is called as each configuration starts (after
    the calibration, which ``on_calibrate`` announces). ``reparam``: the model in its deployed form (timm's ``reparameterize_model``).
    A model that cannot be traced gives a row with ``status='error'``. ``host_dispatch``: the GPU
    host's time per operator (``None``/``'default'``: the documented default host;
    ``'measured'``: this machine's; a time such as ``'12us'``: :mod:`vitbench.timemodel.host`).

    >>> predict(["vit-s/16", "resnet50"], mode=["infer", "train"], batch_size=[1, 32])  # doctest: +SKIP
    """
    import torch

    devices = check_devices(device)
    modes = _as_list("mode", mode, MODES)
    batches = _as_list("batch_size", batch_size)
    precisions = _as_list("precision", precision, PREDICT_PRECISIONS)
    _as_list("optimizer", optimizer, OPTIMIZERS)

    prices = device_prices(price_per_hour, devices, prices_file)
    _check_arguments(devices, precisions, threads, reparam, epochs, dataset_size, price_per_hour)

    if parse_host_dispatch(host_dispatch) is not None and devices == ["cpu"]:
        raise SpecError("host_dispatch", host_dispatch, "is for GPU devices (--device h100, ...)")
    measured_rows = measured_index(measured) if measured is not None else {}

    if isinstance(models, (str, os.PathLike)) or not isinstance(models, Iterable) or is_module(models):
        models = [models]
    resolved: dict[int, list] = {}  # a refused question-cache entry's warnings, by id() of the target

    def resolve_models() -> list:
        targets, refused = resolve_cached(models, {**(overrides or {}), **field_overrides}, input_size=input_size,
                                          use_cache=trace_cache)
        resolved.update(refused)
        return targets

    targets, pricing = _resolved_and_priced(
        devices, (threads, precisions, calibration, recalibrate, on_calibrate), resolve_models, batches)
    host = resolve_host(host_dispatch)
    if host is not None:
        pricing = {each: (with_host(cal, host), warnings) for each, (cal, warnings) in pricing.items()}
    context = _Context(optimizer, reparam, trace_cache, {}, measured_rows, epochs, dataset_size, prices,
                       {"env_torch": torch.__version__, "vitbench_version": __version__}, resolved)
    records = Records()
    configurations = list(itertools.product(targets, modes, batches, precisions))
    for index, (target, run_mode, batch, prec) in enumerate(configurations):
        if on_progress is not None:
            on_progress(index, len(configurations), f"{target.label} batch {batch} {run_mode} {prec}")
        refusal = _refusal(target, batch)
        traces: dict[str, Any] = {}  # one trace per device type, priced for every device
        for each in devices:
            records.append(_device_row((target, run_mode, batch, prec), each, pricing[each], refusal, traces, context))
    return records


@dataclass(frozen=True)
class _Context:
    """What every row of one :func:`predict` call shares."""

    optimizer: str
    reparam: bool
    trace_cache: bool
    counts: dict          # params and MACs counted for models without a formula, by (target, batch)
    measured_rows: dict   # measured steps by configuration (``measured``)
    epochs: float | None
    dataset_size: int | None
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
    row = row_head(target, batch, device, run_mode, prec, context.optimizer, cal, context.reparam, context.counts,
                   row_warnings, context.trace_cache)
    started = time.perf_counter()
    if refusal is not None:  # decided from the spec: nothing is built
        return {**row, "status": "refused", "error": refusal, "pred_basis": cal.label, "warnings": row_warnings,
                **context.environment}
    device_type = "cpu" if device == "cpu" else "cuda"
    if device_type not in traces:
        try:
            traces[device_type] = traced_ops(target, batch, run_mode, prec, context.optimizer, device_type,
                                             context.reparam, context.trace_cache)
        # the model's code failing (its forward, its backward on fake tensors) becomes its row, the
        # traceback kept in it; vitbench's own exception ends the command (exit 3)
        except ModelError as exc:
            traces[device_type] = exc
    ops = traces[device_type]

    row_warnings.extend(take_refused())
    if isinstance(ops, ModelForwardError):  # the model's own forward failed: the user's to fix (exit 2)
        return {**row, "status": "refused", "error": ops.detail, "pred_basis": cal.label, "warnings": row_warnings,
                **context.environment}
    if isinstance(ops, ModelError):  # the model's code cannot run on fake tensors (its backward, say)
        return {**row, "status": "refused", "error": f"cannot trace the step: {ops.detail}".splitlines()[0],
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
    columns, cost_warnings = measured_and_cost(prediction.latency_s, seen, batch, run_mode, context.epochs,
                                               context.dataset_size, context.prices.get(device))
    row.update(columns)
    row_warnings.extend(cost_warnings)
    row.update(status="ok", error=None, warnings=row_warnings, **context.environment)
    return row


def _resolved_and_priced(devices: list[str], calibrated: tuple, resolve_targets: Callable[[], Any],
                         batches: list[int]) -> tuple[Any, dict]:
    """The models (``resolve_targets()``) and each device's pricing: a calibration file and the
    devices are checked before any model is resolved (a py: module imported); a calibration run
    (half a minute) happens only once the models are known to be good."""
    threads, precisions, calibration, recalibrate, on_calibrate = calibrated
    arguments = (threads, [p for p in precisions if p in PRECISION_DTYPES], calibration, recalibrate, on_calibrate)
    early = {each: resolve_calibration(each, *arguments) for each in devices if calibration is not None or each != "cpu"}
    targets = resolve_targets()
    if "cpu" not in early and all(_refusal(t, b) for t in targets for b in batches):  # nothing to price: no calibration run
        early["cpu"] = SimpleNamespace(threads=threads, basis="none", device_name="", label="none: refused before pricing"), []
    return targets, {each: early[each] if each in early else resolve_calibration(each, *arguments) for each in devices}


def _refusal(target: Any, batch: int) -> str | None:
    """Why the step of ``target`` at ``batch`` is not traced, decided from its spec (nothing built)."""
    return too_many_blocks(target.spec, MAX_TRACED_BLOCKS, "tracing the step") or _too_large(target, batch)


def _too_large(target: Any, batch: int) -> str | None:
    """Why the step's trace must not build ``target`` (too large to count, or its largest weight
    does not fit in memory)."""
    found = trace_refusal(target.spec, "tracing the step", batch)
    return found and (f"{target.overrides_text}: {found}" if target.overrides else found)


def _check_arguments(devices: list[str], precisions: list[str], threads: Any, reparam: Any, epochs: Any,
                     dataset_size: Any, price_per_hour: Any) -> None:
    """SpecError for the first of :func:`predict`'s arguments that is wrong or that another rules out."""
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or not 0 < threads <= MAX_THREADS):
        raise SpecError("threads", threads, f"must be a positive integer up to {MAX_THREADS}")
    if "cpu" not in devices and threads is not None:
        raise SpecError("threads", threads, "is for --device cpu")
    _check_precisions(devices, precisions)
    if not isinstance(reparam, bool):
        raise SpecError("reparam", reparam, "must be true or false")
    _positive_or_none("epochs", epochs, 10**6)
    _positive_or_none("dataset_size", dataset_size, 10**13, integer=True)
    if (epochs is None) != (dataset_size is None):
        raise SpecError("epochs" if epochs is None else "dataset_size", None,
                        "training cost needs both epochs and dataset_size")
    if price_per_hour is not None and epochs is None:
        raise SpecError("price_per_hour", price_per_hour, "needs epochs and dataset_size")


def _price(ops: list, cal: Any, mode: str, precision: str) -> Any:
    """The step's prediction on the CPU calibration or the GPU profile ``cal``."""
    if isinstance(cal, Calibration):
        return predict_ops(ops, cal, mode)

    return predict_gpu(ops, cal, mode, tf32=precision == "tf32")
