"""Calibrating the GPU cost model on the GPU itself (``vitbench calibrate --device cuda``).

The cost model's parameters (:class:`~vitbench.timemodel.gpu_model.GenerationParams`) are
fitted per architecture generation on published measurements; a card of a generation without a
fit borrows another's. On the card itself they can be fitted to its own step times:

1. every configuration of :data:`SUITE` (small ViTs, ResNets, a ConvNeXt and an EfficientNet,
   batch 1 to 256, inference and training, fp32 / TF32 / bf16; never one of the models that
   ``benchmarks/gpu/predict_vs_profile.py`` judges the result on) is measured in this process
   with the CUDA harness (:func:`vitbench.measure.profile.measure`: warm-up, CUDA events,
   median step), and traced on fake CUDA tensors (the CUDA autocast policy);
2. the parameters are fitted to them (:func:`vitbench.timemodel.gpu_fit.fit`, soft-L1 on log
   error) starting from the generation's published fit;
3. the result is saved as JSON (:class:`GpuCalibration`) in the cache directory, one per card
   name and torch version, and read back by ``predict --device cuda`` on that card, or by
   ``predict --device <card> --calibration FILE`` anywhere.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vitbench.timemodel.calibration.cache import cache_dir, file_safe
from vitbench.timemodel.calibration.schema import CalibrationError

FORMAT = 1
KIND = "vitbench-gpu-calibration"

#: (model, mode, batch, precision): the calibration's configurations
SUITE: tuple[tuple[str, str, int, str], ...] = tuple(
    [(model, mode, batch, "bf16")
     for model in ("vit-ti/16", "vit-s/32", "resnet18", "resnet34", "timm:convnext_atto", "timm:efficientnet_b0")
     for mode in ("infer", "train") for batch in (1, 32, 256)]
    + [(model, mode, 128, precision)
       for model in ("vit-ti/16", "resnet18", "timm:convnext_atto")
       for mode in ("infer", "train") for precision in ("fp32", "tf32")]
)


class NotAGpuCalibration(CalibrationError):
    """A readable file that is not a GPU calibration (a CPU one, another JSON)."""


@dataclass(frozen=True)
class GpuCalibration:
    """A card's fitted parameters and what they were fitted to (``observations``: model, mode,
    batch, precision, measured and fitted step in seconds)."""

    device: str                      # catalogue key of the card (h100, ...)
    device_name: str                 # as torch.cuda.get_device_name() reports it
    torch: str
    vitbench: str
    params: dict[str, float]
    start_from: str                  # the generation whose published fit was the starting point
    observations: list[dict[str, Any]] = field(default_factory=list)
    fit_error_median: float | None = None   # |predicted / measured - 1| over the observations
    fit_error_p90: float | None = None
    start_error_median: float | None = None  # the same with the starting parameters
    created: float = 0.0
    seconds: float = 0.0
    kind: str = KIND
    format: int = FORMAT

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> GpuCalibration:
        from vitbench.input_files import load_json

        data = load_json(text, "damaged", error=CalibrationError)  # bounded numbers and nesting, no NaN or infinity
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise NotAGpuCalibration("not a GPU calibration (vitbench calibrate --device cuda makes one)")
        if data.get("format") != FORMAT:
            raise CalibrationError(f"format {data.get('format')!r}, this vitbench reads format {FORMAT}")
        from vitbench.timemodel.gpu_fit import BOUNDS

        params = data.get("params")
        if not isinstance(params, dict) or set(params) != set(BOUNDS):
            raise CalibrationError(f"params must name exactly {', '.join(sorted(BOUNDS))}")
        for name, value in params.items():
            low, high = BOUNDS[name]
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not low <= value <= high:
                raise CalibrationError(f"params.{name}={value!r} is outside its bounds [{low:g}, {high:g}]")
        _check_members(data)
        known = {f for f in cls.__dataclass_fields__}
        try:
            return cls(**{k: v for k, v in data.items() if k in known})
        except TypeError as exc:
            raise CalibrationError(f"damaged: {exc}") from None

    def profile(self) -> Any:
        """The :class:`~vitbench.timemodel.gpu_model.GpuProfile` priced with these parameters."""
        from vitbench.timemodel.gpu_model import GenerationParams, GpuProfile
        from vitbench.timemodel.gpus import gpu

        spec = gpu(self.device)
        if spec is None:
            raise CalibrationError(f"device {self.device!r} is not in this vitbench's GPU catalogue")
        band = {"median": self.fit_error_median, "p90": self.fit_error_p90, "n": len(self.observations)}
        validation = {"calibration": band}
        return GpuProfile(spec, GenerationParams.from_dict(self.params), spec.generation,
                          f"this card's calibration ({len(self.observations)} configurations)", validation,
                          calibrated_on=self.device_name)


def _check_members(data: dict[str, Any]) -> None:
    """The members beside the parameters have their types: a tampered file is refused in one
    line, never priced (text where text is, a list of observations, finite numbers or null)."""
    from vitbench.errors import shown

    for name in ("device", "device_name", "torch", "vitbench", "start_from"):
        if name in data and not isinstance(data[name], str):
            raise CalibrationError(f"{name}={shown(data[name], 60)}: must be text")
    if not isinstance(data.get("observations", []), list):
        raise CalibrationError(f"observations={shown(data['observations'], 60)}: must be a list")
    for name in ("fit_error_median", "fit_error_p90", "start_error_median", "created", "seconds"):
        value = data.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1e300):
            raise CalibrationError(f"{name}={shown(value, 60)}: must be a non-negative number")


def cache_path(device_name: str, torch_version: str) -> Path:
    return cache_dir() / f"cuda-{file_safe(device_name)}-torch{torch_version.split('+')[0]}.json"


def save(calibration: GpuCalibration, path: str | os.PathLike | None = None) -> Path:
    """Write atomically to ``path`` or the cache; the path written."""
    from vitbench.results import atomic_write_text

    target = Path(path) if path else cache_path(calibration.device_name, calibration.torch)
    atomic_write_text(target, calibration.to_json() + "\n")
    return target


def load(path: str | os.PathLike) -> GpuCalibration:
    from vitbench.input_files import MAX_CALIBRATION_BYTES, read_input_text

    # the one gate: a FIFO or device refused without blocking, the size capped, UTF-8, not empty
    text = read_input_text(path, f"cannot read {path}", max_bytes=MAX_CALIBRATION_BYTES, error=CalibrationError)
    return GpuCalibration.from_json(text)


def relative_errors(predicted: Sequence[float], measured: Sequence[float]) -> list[float]:
    """|p / m - 1| for each pair."""
    return [abs(p / m - 1.0) for p, m in zip(predicted, measured)]


def measure_step(model: str, mode: str, batch: int, precision: str, min_run_time_s: float = 0.3,
                 memory: bool = False) -> dict[str, Any]:
    """One configuration measured on this CUDA device in this process (``fp32``: PyTorch's
    defaults, TF32 for convolutions only; ``tf32``: also for matrix products)."""
    import torch

    from vitbench.measure.profile import measure
    from vitbench.settings import RunSettings

    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    # fp32 as PyTorch runs it by default: TF32 for convolutions (cuDNN), not for matrix products
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = True
    try:
        settings = RunSettings(device="cuda", mode=mode, batch_size=batch,
                               precision="fp32" if precision == "tf32" else precision, runs=1, warmup=5,
                               min_run_time_s=min_run_time_s, memory=memory)
        row = measure(model, settings)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn
        torch.cuda.empty_cache()
    return row


def observation(model: str, mode: str, batch: int, precision: str, measured_s: float, spec: Any) -> Any:
    """The fit's :class:`~vitbench.timemodel.gpu_fit.Observation` of one measured configuration."""
    from vitbench.models.references import resolve
    from vitbench.timemodel.gpu_fit import Observation
    from vitbench.timemodel.gpu_model import op_table
    from vitbench.timemodel.trace_cache import cached_trace

    ops = cached_trace(resolve(model), batch, mode, "fp32" if precision == "tf32" else precision, "adamw", "cuda")
    return Observation(op_table(ops), spec, mode, measured_s, tf32=precision == "tf32")


def calibrate_gpu(suite: Sequence[tuple[str, str, int, str]] = SUITE, min_run_time_s: float = 0.3,
                  on_progress: Callable[[str], None] | None = None) -> GpuCalibration:
    """Measure ``suite`` on this machine's CUDA device, fit the cost model's parameters to it."""
    import torch

    from vitbench import __version__
    from vitbench.errors import SpecError
    from vitbench.measure.stats import quantile
    from vitbench.timemodel.gpu_fit import Stacked, fit
    from vitbench.timemodel.gpu_model import profile_for
    from vitbench.timemodel.gpus import GPU_DEVICES, match_device_name

    if not torch.cuda.is_available():
        raise SpecError("device", "cuda", "no CUDA device here: a GPU calibration is measured on the GPU")
    name = torch.cuda.get_device_name()
    spec = match_device_name(name)
    if spec is None:
        raise SpecError("device", "cuda", f"{name} is not in the GPU catalogue ({', '.join(GPU_DEVICES)})")
    started = time.time()
    start = profile_for(spec)
    observations, kept = [], []
    for index, (model, mode, batch, precision) in enumerate(suite):
        row = measure_step(model, mode, batch, precision, min_run_time_s)
        if row.get("status") != "ok" or not row.get("latency_p50_s"):
            if on_progress:
                on_progress(f"[{index + 1}/{len(suite)}] {model} {mode} {batch} {precision}: skipped ({row.get('status')}: {row.get('error')})")
            continue
        observations.append(observation(model, mode, batch, precision, row["latency_p50_s"], spec))
        kept.append((model, mode, batch, precision, row["latency_p50_s"]))
        if on_progress:
            on_progress(f"[{index + 1}/{len(suite)}] {model} {mode} batch {batch} {precision}: {row['latency_p50_s'] * 1e3:.3f} ms")
    if len(observations) < 8:
        raise CalibrationError(f"only {len(observations)} of {len(suite)} configurations measured; too few to fit")
    stacked = Stacked(observations)
    measured = [o.measured_s for o in observations]
    before = relative_errors(list(stacked.latencies(start.params)), measured)
    params = fit(observations, start.params)
    after_s = list(stacked.latencies(params))
    after = relative_errors(after_s, measured)
    return GpuCalibration(
        device=spec.key, device_name=name, torch=torch.__version__, vitbench=__version__, params=asdict(params),
        start_from=start.params_from,
        observations=[dict(model=m, mode=mo, batch_size=b, precision=p, measured_s=s, fitted_s=f)
                      for (m, mo, b, p, s), f in zip(kept, after_s)],
        fit_error_median=statistics.median(after), fit_error_p90=quantile(after, 0.9),
        start_error_median=statistics.median(before), created=started, seconds=time.time() - started)


def summary(calibration: GpuCalibration) -> dict[str, Any]:
    """One row describing a GPU calibration."""
    return {"device": calibration.device, "device_name": calibration.device_name, "torch": calibration.torch,
            "configurations": len(calibration.observations), "start_from": calibration.start_from,
            "fit_error_median": calibration.fit_error_median, "fit_error_p90": calibration.fit_error_p90,
            "start_error_median": calibration.start_error_median, "seconds": calibration.seconds,
            **{f"param_{k}": v for k, v in sorted(calibration.params.items())}}


__all__ = [
    "FORMAT",
    "SUITE",
    "GpuCalibration",
    "NotAGpuCalibration",
    "cache_path",
    "calibrate_gpu",
    "load",
    "measure_step",
    "observation",
    "relative_errors",
    "save",
    "summary",
]
