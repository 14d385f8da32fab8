"""Calibrating the GPU cost model on the GPU itself (``vitbench calibrate --device cuda``).

The cost model's parameters (:class:`~vitbench.timemodel.gpu_model.GenerationParams`) are
fitted per architecture generation on published measurements; a card of a generation without a
fit borrows another's. On the card itself they can be fitted to its own step times:

1. every configuration of :data:`SUITE` is measured in this process with the CUDA harness
   (:func:`vitbench.measure.profile.measure`: warm-up, CUDA events, median step), and traced on
   fake CUDA tensors (the CUDA autocast policy). Most are *device-bound* (ViT-B/16, ViT-L/16,
   ResNet-50/101, ConvNeXt-T/B, Swin-T at batches that fill a data-centre card: their kernels,
   not the host, set the step), so the device's parameters can be identified; a few at batch 1
   are *host-bound* and give the host's dispatch time per operator (:func:`_fit_host`). Each
   configuration is written to a progress file as it is measured (:func:`progress_path`), so
   that a calibration stopped part-way (killed, out of time) loses nothing: the next one on the
   card, with the same torch and vitbench, measures only what is missing;
2. the configurations are split into :data:`HOLD_OUT` folds (every :data:`HOLD_OUT`-th one
   in a fold) and each fold is predicted by a fit of the others (cross-validation): the host
   fitted on their host-bound steps, then the device parameters with the host held
   (:func:`vitbench.timemodel.gpu_fit.fit`, soft-L1 on log error), regularised toward the
   card's published fit (the prior: a parameter the suite cannot identify stays at the prior
   instead of running to a bound) at each weight of :data:`PRIOR_WEIGHTS`; the weight whose
   held-out predictions are best is kept, and the saved parameters are fitted to every
   configuration at that weight;
3. the held-out predictions judge the fit: one no better than the prior on the same
   configurations is refused with the reason (:class:`CalibrationError`), never saved;
4. the result is saved as JSON (:class:`GpuCalibration`) in the cache directory, one per card
   name and torch version, and read back by ``predict --device cuda`` on that card, or by
   ``predict --device <card> --calibration FILE`` anywhere.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from vitbench import input_files
from vitbench.errors import OutputFileError, SpecError, shown
from vitbench.input_files import load_json, read_input_text
from vitbench.measure.profile import measure
from vitbench.measure.stats import quantile
from vitbench.models.references import resolve
from vitbench.results import atomic_write_text
from vitbench.row_status import RowStatus
from vitbench.settings import RunSettings
from vitbench.timemodel.calibration.schema import CalibrationError
from vitbench.timemodel.gpu_calibration_files import (
    MEASUREMENTS_KIND,
    CalibrationRefused,
    cache_path,
    earlier_steps,
    measurements_document,
    measurements_json,
    measurements_path,
    progress_path,
    remove,
    resumable,
    save_measurements,
)
from vitbench.timemodel.gpu_fit import BOUNDS, Observation, Stacked, fit
from vitbench.timemodel.gpu_model import GenerationParams, GpuProfile, kernel_times, op_table, profile_for
from vitbench.timemodel.gpus import GPU_DEVICES, gpu, match_device_name
from vitbench.timemodel.trace_cache import cached_trace
from vitbench.version import __version__

FORMAT = 1
KIND = "vitbench-gpu-calibration"

#: (model, mode, batch, precision): the calibration's configurations. Device-bound first (large
#: models at batches that fill a data-centre card), then host-bound ones at batch 1
SUITE: tuple[tuple[str, str, int, str], ...] = tuple(
    [(model, "infer", 256, "bf16") for model in ("vit-b/16", "resnet50", "timm:convnext_tiny",
                                                 "timm:swin_tiny_patch4_window7_224", "resnet101")]
    + [(model, "infer", 128, "bf16") for model in ("vit-l/16", "timm:convnext_base")]
    + [(model, "train", 128, "bf16") for model in ("vit-b/16", "resnet50", "timm:convnext_tiny",
                                                   "timm:swin_tiny_patch4_window7_224")]
    + [(model, "train", 64, "bf16") for model in ("vit-l/16", "resnet101", "timm:convnext_base")]
    + [(model, mode, 128, precision) for model in ("vit-b/16", "resnet50") for mode in ("infer", "train")
       for precision in ("fp32", "tf32")]
    + [(model, mode, 1, "bf16") for model in ("vit-ti/16", "resnet18", "timm:convnext_atto") for mode in ("infer", "train")]
)
#: the folds of the cross-validation: every HOLD_OUT-th configuration of the suite is in one fold,
#: predicted by a fit of the other folds
HOLD_OUT = 4
#: the prior's weights a calibration's fit tries (gpu_fit.fit's prior_weight), weakest first: the
#: one whose held-out predictions are best is kept (a suite that identifies the card wants a weak
#: pull toward the published fit; one that cannot, a strong one)
PRIOR_WEIGHTS = (0.3, 1.0, 3.0, 10.0)
#: a configuration is host-bound when its kernels alone take at most this fraction of its step
HOST_BOUND_SHARE = 0.3


class NotAGpuCalibration(CalibrationError):
    """A readable file that is not a GPU calibration (a CPU one, another JSON)."""


#: parameters a calibration made before they existed leaves out: each is 0, which prices as that
#: calibration did (gpu_model.GenerationParams: "0: ...")
ADDED_LATER = frozenset(("conv_backward_eff", "grouped_wgrad_eff", "grouped_channels_half", "layout_passes",
                         "depthwise_eff", "depthwise_wgrad_eff", "sm_bytes_per_clock"))


def _checked_params(params: Any) -> dict[str, float]:
    """A calibration file's ``params``: every parameter of :data:`BOUNDS` within its bounds; those
    of :data:`ADDED_LATER` may be missing or 0 (an earlier vitbench's file: priced as it was)."""
    required = set(BOUNDS) - ADDED_LATER
    if not isinstance(params, dict) or not required <= set(params) <= set(BOUNDS):
        raise CalibrationError(f"params must name {', '.join(sorted(required))} and may name "
                               f"{', '.join(sorted(ADDED_LATER))}")
    for name, value in params.items():
        low, high = BOUNDS[name]
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise CalibrationError(f"params.{name}={value!r} is not a number")
        if not (low <= value <= high or (name in ADDED_LATER and value == 0)):
            raise CalibrationError(f"params.{name}={value!r} is outside its bounds [{low:g}, {high:g}]")
    return {**dict.fromkeys(ADDED_LATER, 0.0), **params}


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
    holdout_error_median: float | None = None  # |predicted / measured - 1| on the held-out configurations
    holdout_error_p90: float | None = None
    prior_holdout_error_median: float | None = None  # the same with the published fit (the prior)
    prior_weight: float | None = None         # the prior's weight the fit kept (PRIOR_WEIGHTS)
    rates: str = "datasheet"                  # what the efficiencies are relative to (gpu_model.SUSTAINED...)
    light_dispatch: float = 1.0               # a light operator's host time, in operators (gpu_model.OpTable.light)
    created: float = 0.0
    seconds: float = 0.0
    kind: str = KIND
    format: int = FORMAT

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> GpuCalibration:
        data = load_json(text, "damaged", error=CalibrationError)  # bounded numbers and nesting, no NaN or infinity
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise NotAGpuCalibration("not a GPU calibration (vitbench calibrate --device cuda makes one)")
        if data.get("format") != FORMAT:
            raise CalibrationError(f"format {data.get('format')!r}, this vitbench reads format {FORMAT}")

        data["params"] = _checked_params(data.get("params"))
        _check_members(data)
        known = {f for f in cls.__dataclass_fields__}
        try:
            return cls(**{k: v for k, v in data.items() if k in known})
        except TypeError as exc:
            raise CalibrationError(f"damaged: {exc}") from None

    def profile(self) -> Any:
        """The :class:`~vitbench.timemodel.gpu_model.GpuProfile` priced with these parameters."""
        spec = gpu(self.device)
        if spec is None:
            raise CalibrationError(f"device {self.device!r} is not in this vitbench's GPU catalogue")
        if self.holdout_error_median is not None:
            band = {"median": self.holdout_error_median, "p90": self.holdout_error_p90,
                    "n": sum(1 for o in self.observations if o.get("held_out")), "held_out": True}
        else:
            band = {"median": self.fit_error_median, "p90": self.fit_error_p90, "n": len(self.observations)}
        validation = {"calibration": band}
        rates = self.rates if self.rates in ("datasheet", "sustained") else "datasheet"
        return GpuProfile(spec, GenerationParams.from_dict(self.params), spec.generation,
                          f"this card's calibration ({len(self.observations)} configurations)", validation,
                          calibrated_on=self.device_name, rates=rates, host_from="this card's calibration",
                          light_dispatch=self.light_dispatch)


def _check_members(data: dict[str, Any]) -> None:
    """The members beside the parameters have their types: a tampered file is refused in one
    line, never priced (text where text is, a list of observations, finite numbers or null)."""
    if data.get("rates", "datasheet") not in ("datasheet", "sustained"):
        raise CalibrationError(f"rates={shown(data['rates'], 60)}: must be datasheet or sustained")
    for name in ("device", "device_name", "torch", "vitbench", "start_from"):
        if name in data and not isinstance(data[name], str):
            raise CalibrationError(f"{name}={shown(data[name], 60)}: must be text")
    if not isinstance(data.get("observations", []), list):
        raise CalibrationError(f"observations={shown(data['observations'], 60)}: must be a list")
    light = data.get("light_dispatch", 1.0)
    if isinstance(light, bool) or not isinstance(light, (int, float)) or not 0.01 <= light <= 1.0:
        raise CalibrationError(f"light_dispatch={shown(light, 60)}: must be a number from 0.01 to 1")
    for name in ("fit_error_median", "fit_error_p90", "start_error_median", "holdout_error_median", "holdout_error_p90",
                 "prior_holdout_error_median", "prior_weight", "created", "seconds"):
        value = data.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1e300):
            raise CalibrationError(f"{name}={shown(value, 60)}: must be a non-negative number")


def save(calibration: GpuCalibration, path: str | os.PathLike | None = None) -> Path:
    """Write atomically to ``path`` or the cache; the path written."""
    target = Path(path) if path else cache_path(calibration.device_name, calibration.torch)
    atomic_write_text(target, calibration.to_json() + "\n")
    return target


def load(path: str | os.PathLike) -> GpuCalibration:
    # the one gate: a FIFO or device refused without blocking, the size capped, UTF-8, not empty
    text = read_input_text(path, f"cannot read {path}", max_bytes=input_files.MAX_CALIBRATION_BYTES, error=CalibrationError)
    return GpuCalibration.from_json(text)


def relative_errors(predicted: Sequence[float], measured: Sequence[float]) -> list[float]:
    """|p / m - 1| for each pair."""
    return [abs(p / m - 1.0) for p, m in zip(predicted, measured)]


def measure_step(model: str, mode: str, batch: int, precision: str, min_run_time_s: float = 0.3,
                 memory: bool = False) -> dict[str, Any]:
    """One configuration measured on this CUDA device in this process (``fp32``: PyTorch's
    defaults, TF32 for convolutions only; ``tf32``: also for matrix products)."""
    import torch

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
    ops = cached_trace(resolve(model), batch, mode, "fp32" if precision == "tf32" else precision, "adamw", "cuda")
    return Observation(op_table(ops), spec, mode, measured_s, tf32=precision == "tf32")


def calibrate_gpu(suite: Sequence[tuple[str, str, int, str]] = SUITE, min_run_time_s: float = 0.3,
                  on_progress: Callable[[str], None] | None = None, resume: bool = True) -> GpuCalibration:
    """Measure ``suite`` on this machine's CUDA device, fit the cost model's parameters to it.

    Each configuration is written to the card's progress file (:func:`progress_path`) as soon as it
    is measured; with ``resume`` (the default) those a calibration stopped part-way measured
    with the same card, torch, vitbench and ``min_run_time_s`` are read back (:func:`resumable`)
    and not measured again. A finished calibration removes the file. A fit that is refused
    raises :class:`CalibrationRefused`, which holds what was measured and the file it is kept in
    (a new one beside the cache entry, :func:`measurements_path`; the next calibration measures
    afresh); a fit that fails otherwise leaves the progress file, which the next one resumes from."""
    import torch

    if not torch.cuda.is_available():
        raise SpecError("device", "cuda", "no CUDA device here: a GPU calibration is measured on the GPU")
    name = torch.cuda.get_device_name()
    spec = match_device_name(name)
    if spec is None:
        raise SpecError("device", "cuda", f"{name} is not in the GPU catalogue ({', '.join(GPU_DEVICES)})")
    say = on_progress or (lambda line: None)
    started = time.time()
    start = profile_for(spec)
    progress_file = progress_path(name, torch.__version__)
    earlier = earlier_steps(progress_file, name, torch.__version__, min_run_time_s, say, resume)
    observations, kept = [], []
    keeping = True  # the progress file holds every configuration in ``kept``
    for index, (model, mode, batch, precision) in enumerate(suite):
        key = (model, mode, batch, precision)
        if key in earlier:
            seconds = earlier[key]
            say(f"[{index + 1}/{len(suite)}] {model} {mode} batch {batch} {precision}: {seconds * 1e3:.3f} ms "
                f"(measured before, kept in {str(progress_file)!r})")
        else:
            row = measure_step(model, mode, batch, precision, min_run_time_s)
            if row.get("status") != RowStatus.OK or not row.get("latency_p50_s"):
                why = f"{row.get('status')}: {row.get('error')}" if row.get("status") != RowStatus.OK else "no time measured"
                say(f"[{index + 1}/{len(suite)}] {model} {mode} {batch} {precision}: skipped ({why})")
                continue
            seconds = row["latency_p50_s"]
            say(f"[{index + 1}/{len(suite)}] {model} {mode} batch {batch} {precision}: {seconds * 1e3:.3f} ms")
        kept.append(dict(model=model, mode=mode, batch_size=batch, precision=precision, measured_s=seconds))
        if keeping and key not in earlier:
            try:
                atomic_write_text(progress_file, measurements_document(
                    spec.key, name, torch.__version__, kept, min_run_time_s=min_run_time_s, started=started))
            except OutputFileError as exc:
                keeping = False
                say(f"the measurements are not kept as they come ({exc}): a calibration stopped now loses them")
        observations.append(observation(model, mode, batch, precision, seconds, start.priced_spec))
    fitted = _fit_keeping(observations, start, (spec.key, name, torch.__version__), kept,
                          progress_file if keeping else None, say)
    calibration = GpuCalibration(
        device=spec.key, device_name=name, torch=torch.__version__, vitbench=__version__, params=asdict(fitted.params),
        start_from=start.params_from,
        observations=[dict(**measured, fitted_s=f, held_out=True, held_out_s=h)
                      for measured, f, h in zip(kept, fitted.predicted_s, fitted.held_out_s)],
        fit_error_median=fitted.fit_error_median, fit_error_p90=fitted.fit_error_p90,
        start_error_median=fitted.start_error_median, holdout_error_median=fitted.holdout_error_median,
        holdout_error_p90=fitted.holdout_error_p90, prior_holdout_error_median=fitted.prior_holdout_error_median,
        prior_weight=fitted.prior_weight, rates=start.rates, light_dispatch=start.light_dispatch, created=started,
        seconds=time.time() - started)
    remove(progress_file)  # the calibration holds every step now
    return calibration


def _fit_keeping(observations: list[Any], start: Any, card: tuple[str, str, str], kept: list[dict[str, Any]],
                 progress_file: Path | None, say: Callable[[str], None]) -> CardFit:
    """:func:`fit_on_card`, losing no measured step when it fails: a refusal raises
    :class:`CalibrationRefused` with the steps saved apart (:func:`save_measurements`, the
    progress file then removed; ``progress_file``, which holds them all, where that cannot be
    written); any other failure keeps the progress file and says so in its note. ``card``: the
    catalogue key, the device's name and the torch release."""
    try:
        return fit_on_card(observations, start)
    except CalibrationError as refused:
        error = CalibrationRefused(str(refused), *card, kept)
        try:
            error.path = save_measurements(error)
        except OutputFileError:
            error.path = progress_file if kept else None
        else:
            if progress_file is not None:
                remove(progress_file)
        raise error from None
    except Exception as exc:
        if progress_file is not None and kept:
            note = (f"the {len(kept)} measured step times are kept in {str(progress_file)!r}; "
                    "the next calibration resumes from them")
            if hasattr(exc, "add_note"):  # Python 3.11+: the CLI's one line ends with it
                exc.add_note(note)
            else:
                say(note)
        raise


def _fit_host(observations: Sequence[Any], params: Any, light: float) -> tuple[Any, int]:
    """``params`` with the host's dispatch fitted on the host-bound ``observations`` (the kernels
    alone at most HOST_BOUND_SHARE of the step), inference and training apart (as they were where
    a mode has none), and how many were host-bound."""
    host_bound = [o for o in observations
                  if float(kernel_times(o.table, o.spec, params, o.tf32)[1].sum()) <= HOST_BOUND_SHARE * o.measured_s]
    names = [f.name for f in fields(GenerationParams)]
    for mode, name in (("infer", "host_infer_s"), ("train", "host_train_s")):
        mine = [o for o in host_bound if o.mode == mode]
        if mine:
            fitted = fit(mine, params, fixed=[n for n in names if n != name], light_dispatch=light)
            params = replace(params, **{name: getattr(fitted, name)})
    return params, len(host_bound)


@dataclass(frozen=True)
class CardFit:
    """What :func:`fit_on_card` found: the parameters (with the host's dispatch) fitted to every
    configuration, each configuration's step as they predict it (``predicted_s``) and as the fit
    of the other folds predicts it (``held_out_s``), the prior's weight kept, and the errors."""

    params: Any
    predicted_s: list[float]
    held_out_s: list[float]
    prior_weight: float
    fit_error_median: float           # the saved parameters on the configurations they were fitted to
    fit_error_p90: float
    start_error_median: float         # the prior on every configuration (what the held-out error is judged against)
    holdout_error_median: float       # each configuration predicted by a fit that did not see it
    holdout_error_p90: float
    host_bound: int

    @property
    def prior_holdout_error_median(self) -> float:
        """The prior on the configurations the held-out error covers: every one."""
        return self.start_error_median


#: the parameters a calibration does not fit: the kernel floor and tail and L2 reuse (step times
#: cannot tell them from the host's dispatch), and the host's, fitted apart (_fit_host)
HELD_PARAMETERS = ("launch_floor_s", "kernel_tail_s", "l2_gain", "host_infer_s", "host_train_s")


def _fit_device(observations: Sequence[Any], host_fitted: Any, prior: Any, prior_weight: float) -> Any:
    """Every device parameter but :data:`HELD_PARAMETERS`, fitted to ``observations`` from
    ``host_fitted`` (the prior's parameters with the host's dispatch fitted), regularised toward
    it with ``prior_weight``."""
    return fit(observations, host_fitted, fixed=HELD_PARAMETERS, prior_weight=prior_weight,
               light_dispatch=prior.light_dispatch)


def held_out_steps(observations: Sequence[Any], prior: Any,
                   weights: Sequence[float] = PRIOR_WEIGHTS) -> dict[float, list[float]]:
    """For each prior weight of ``weights``, each observation's step predicted by a fit of the
    other folds only (fold ``f``: the observations whose index is ``f`` modulo
    :data:`HOLD_OUT`): the host fitted on them once (:func:`_fit_host`), the device at each weight
    (:func:`_fit_device`)."""
    out = {weight: [0.0] * len(observations) for weight in weights}
    for fold in range(HOLD_OUT):
        judged = [i for i in range(len(observations)) if i % HOLD_OUT == fold]
        rest = [o for i, o in enumerate(observations) if i % HOLD_OUT != fold]
        host_fitted, _ = _fit_host(rest, prior.params, prior.light_dispatch)
        stacked = Stacked([observations[i] for i in judged], prior.light_dispatch)
        for weight in weights:
            for i, step in zip(judged, stacked.latencies(_fit_device(rest, host_fitted, prior, weight))):
                out[weight][i] = float(step)
    return out


def fit_on_card(observations: Sequence[Any], prior: Any) -> CardFit:
    """Fit a card's parameters to its measured ``observations`` (:func:`observation`, priced at
    ``prior.priced_spec``), starting from and regularised toward ``prior`` (a
    :class:`~vitbench.timemodel.gpu_model.GpuProfile`):

    1. cross-validation: each of :data:`HOLD_OUT` folds (every HOLD_OUT-th configuration) is
       predicted by a fit of the others (:func:`held_out_steps`): the host's dispatch per
       operator on their host-bound steps (the prior's kernels alone take at most
       HOST_BOUND_SHARE of the step), inference and training apart (the prior's where a mode has
       none), then the device's parameters with the host held, at each weight of
       :data:`PRIOR_WEIGHTS`; the weight whose held-out median |error| is lowest is kept (the
       stronger on a tie);
    2. judged: a fit whose held-out median |error| is not below the prior's on the same
       configurations is refused (:class:`CalibrationError`);
    3. the parameters saved are those fitted to every configuration at the kept weight.

    Every configuration is judged by a fit that did not see it, so the judgement rests on all of
    them, not on a quarter (with a quarter, which quarter decided whether a calibration of the
    recorded steps was accepted). Choosing the weight on the same held-out predictions flatters
    them a little: one of four weights."""
    if len(observations) < 2 * HOLD_OUT:
        raise CalibrationError(f"only {len(observations)} configurations measured; at least {2 * HOLD_OUT} are needed to fit "
                               "and judge a calibration")
    measured = [o.measured_s for o in observations]
    held_by_weight = held_out_steps(observations, prior)
    medians = {weight: statistics.median(relative_errors(steps, measured)) for weight, steps in held_by_weight.items()}
    weight = min(medians, key=lambda w: (medians[w], -w))
    held = relative_errors(held_by_weight[weight], measured)
    stacked = Stacked(observations, prior.light_dispatch)
    before = statistics.median(relative_errors(list(stacked.latencies(prior.params)), measured))
    if medians[weight] >= before:
        raise CalibrationError(f"the fit predicts its {len(observations)} configurations, each held out of the fit that "
                               f"predicts it, no better than the published parameters (median |error| {medians[weight]:.1%} "
                               f"against {before:.1%}): not saved; the published fit stays in use")
    host_fitted, host_bound = _fit_host(observations, prior.params, prior.light_dispatch)
    fitted = _fit_device(observations, host_fitted, prior, weight)
    after_s = [float(v) for v in stacked.latencies(fitted)]
    after = relative_errors(after_s, measured)
    return CardFit(fitted, after_s, held_by_weight[weight], weight, statistics.median(after), quantile(after, 0.9),
                   before, medians[weight], quantile(held, 0.9), host_bound)


def summary(calibration: GpuCalibration) -> dict[str, Any]:
    """One row describing a GPU calibration."""
    return {"device": calibration.device, "device_name": calibration.device_name, "torch": calibration.torch,
            "configurations": len(calibration.observations), "start_from": calibration.start_from,
            "fit_error_median": calibration.fit_error_median, "fit_error_p90": calibration.fit_error_p90,
            "start_error_median": calibration.start_error_median, "holdout_error_median": calibration.holdout_error_median,
            "holdout_error_p90": calibration.holdout_error_p90,
            "prior_holdout_error_median": calibration.prior_holdout_error_median,
            "prior_weight": calibration.prior_weight, "seconds": calibration.seconds,
            **{f"param_{k}": v for k, v in sorted(calibration.params.items())}}


__all__ = [
    "FORMAT",
    "HELD_PARAMETERS",
    "HOLD_OUT",
    "MEASUREMENTS_KIND",
    "PRIOR_WEIGHTS",
    "SUITE",
    "CalibrationRefused",
    "CardFit",
    "GpuCalibration",
    "NotAGpuCalibration",
    "cache_path",
    "calibrate_gpu",
    "fit_on_card",
    "held_out_steps",
    "load",
    "measure_step",
    "measurements_json",
    "measurements_path",
    "observation",
    "progress_path",
    "relative_errors",
    "resumable",
    "save",
    "save_measurements",
    "summary",
]
