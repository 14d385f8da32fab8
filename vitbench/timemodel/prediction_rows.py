"""The columns of one prediction row beside the priced step: the model's identity and counted
figures (of the form that is priced), the measured latency and training cost columns, the
warning when the trace misses work, and the index of measured rows (``--measured``)."""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any

from vitbench.analytic.identity import identity_record
from vitbench.errors import InputFileError, shown
from vitbench.reading import read_results
from vitbench.row_status import has_result
from vitbench.row_warnings import warning
from vitbench.timemodel.cached_models import cached_counts
from vitbench.timemodel.cost import training_cost
from vitbench.timemodel.families import family
from vitbench.timemodel.trace_setup import deployed


def measured_and_cost(latency_s: float, seen: float | None, batch: int, mode: str, epochs: float | None,
                       dataset_size: int | None, price_per_hour: float | None) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """A row's measured columns (``measured_latency_s``, ``pred_ratio = latency_s / seen``, when
    ``seen``: the measured step) and training cost (from the measured step when there is one,
    else the predicted one; with ``epochs``), and the warning that a cost rests on an inference step."""
    columns: dict[str, Any] = {}
    warnings: list[dict[str, str]] = []
    if seen is not None:
        columns["measured_latency_s"] = seen
        columns["pred_ratio"] = latency_s / seen
    if epochs is not None:
        step_s = seen if seen is not None else latency_s
        columns.update(training_cost(step_s, batch, epochs, dataset_size, price_per_hour))
        columns["cost_basis"] = "measured" if seen is not None else "predicted"
        if mode != "train":
            warnings.append(warning("cost-from-inference", "training cost from an inference step", "use --mode train for training"))
    return columns, warnings


def deployed_target(target: Any, counts: dict | None) -> Any:
    """``target`` built in its deployed (reparameterised) form, made once per command."""
    if getattr(target, "build", None) is None or getattr(target, "spec", None) is not None:
        return target
    cache = counts if counts is not None else {}
    key = ("deployed", id(target))
    if key not in cache:
        cache[key] = dataclasses.replace(target, build=functools.partial(deployed, target.build))
    return cache[key]


def row_head(target: Any, batch: int, device: str, mode: str, precision: str, optimizer: str, cal: Any,
              reparam: bool, counts: dict | None = None, warnings: list | None = None, use_cache: bool = True) -> dict[str, Any]:
    """A prediction row's identity, counted figures and settings; a refused question-cache entry
    of the counts adds its warning to ``warnings``."""

    row: dict[str, Any] = identity_record(target, batch)
    # no formula: params and MACs as analyze counts them, of the form that is priced
    figures, refused = cached_counts(deployed_target(target, counts) if reparam else target, batch, reparam, counts, use_cache)
    row.update(figures)
    if warnings is not None:
        warnings.extend(refused)
    row.update(device=device, mode=mode, precision=precision, optimizer=optimizer if mode == "train" else None,
               threads=cal.threads if cal.basis == "calibration" else None)
    if device != "cpu":
        row["device_name"] = cal.device_name
    if reparam:
        row["reparam"] = True
    if target.overrides:
        row["overrides"] = target.overrides_text
    return row


def trace_warnings(row: dict[str, Any], prediction: Any, mode: str) -> list[dict[str, str]]:
    """A warning when the traced forward's MACs differ from the analytic count: operators the
    trace could not price by their work (a fused fast path) make the prediction too fast."""
    counted = row.get("macs")
    if mode != "infer" or not isinstance(counted, int) or counted <= 0:
        return []
    traced = prediction.macs
    if abs(traced - counted) <= 0.01 * counted:
        return []
    return [warning("trace-misses-work", f"the traced step has {traced:,} MACs, the count {counted:,}",
                    "part of the work runs in operators the time model cannot see into; treat the time as a lower estimate")]


#: a matrix product whose inner or output size is at most this runs far below cuBLAS's rate
TINY_GEMM_SIZE = 8
#: ... when it does at least this much work (smaller ones are launch-bound and priced so)
TINY_GEMM_MACS = 10**7
#: half-precision grouped / depthwise convolutions worth a warning: this share of the step's bytes
DEPTHWISE_HALF_SHARE = 0.05


def gpu_kernel_warnings(ops: list[Any]) -> list[dict[str, str]]:
    """Warnings for kernels the GPU cost model prices by a rule the real kernel may not follow
    (what the trace cannot see): matrix products with an inner or output size of a few elements
    (talking-heads attention, mixing over heads: cuBLAS runs these at a small fraction of its
    rate, and they usually come with strided copies); cuDNN's grouped and depthwise convolutions
    in fp16 / bf16 (their speed varies by an order of magnitude with the channels, the filter and
    the layout; one rule prices them); attention on other than 4-D tensors (PyTorch's math path:
    its products and maps are priced, not the strided copies of q, k and v around them)."""
    out = []
    tiny = [op for op in ops if op.kernel in ("gemm", "bmm") and len(op.shape) == 3
            and min(op.shape[1], op.shape[2]) <= TINY_GEMM_SIZE and op.macs >= TINY_GEMM_MACS]
    if tiny:
        m, k, n = tiny[0].shape
        out.append(warning("gpu-unpriced-kernels", f"{len(tiny)} matrix products with an inner or output size of at most "
                           f"{TINY_GEMM_SIZE} (e.g. {m} x {k} x {n}): cuBLAS runs these far below the rate priced",
                           "treat the GPU time as a lower estimate; measure it (vitbench profile --device cuda)"))
    total = sum(op.bytes for op in ops) or 1
    grouped = sum(op.bytes for op in ops if op.kernel.startswith("conv_grouped") and op.dtype in ("float16", "bfloat16"))
    if grouped / total >= DEPTHWISE_HALF_SHARE:
        out.append(warning("gpu-unpriced-kernels", f"cuDNN's grouped / depthwise convolutions in half precision move "
                           f"{grouped / total:.0%} of the step's bytes: their speed varies widely with channels and layout",
                           "treat the GPU time as uncertain; measuring it (vitbench profile --device cuda) settles it"))
    math_path = sum(op.bytes for op in ops if op.kernel == "bmm" and op.name.startswith("scaled_dot_product"))
    if math_path / total >= DEPTHWISE_HALF_SHARE:
        out.append(warning("gpu-unpriced-kernels", f"attention on other than 4-D tensors runs PyTorch's math path "
                           f"({math_path / total:.0%} of the step's bytes): the strided copies around it are not priced",
                           "treat the GPU time as a lower estimate; measure it (vitbench profile --device cuda)"))
    return out


def measured_index(measured: Any) -> dict[tuple[str, str, str, int, str], float]:
    """(model, overrides, mode, batch_size, precision) -> latency_p50_s of measured rows (ok ones
    only). A row that would be matched on a value that is no batch size (``x``, a list, 1.5,
    true, missing) or priced from a latency that is no time (text, true, infinity, under a
    nanosecond) is refused in one line naming the row, the column and the value, never skipped
    or matched to batch 1; so are two rows of one key (as ``report`` refuses them)."""
    rows, _ = read_results(measured, "measured")
    where = f"measured file={str(measured)!r}" if isinstance(measured, (str, os.PathLike)) else "measured records"
    if not rows and isinstance(measured, (str, os.PathLike)):  # an empty store, a header-only CSV: nothing measured
        raise InputFileError(f"{where}: no rows (the file holds no records)")
    out: dict[tuple[str, str, str, int, str], float] = {}
    first: dict[tuple[str, str, str, int, str], int] = {}
    for number, row in enumerate(rows, 1):
        latency = row.get("latency_p50_s")
        if not has_result(row) or latency is None:
            continue
        if isinstance(latency, bool) or not isinstance(latency, (int, float)) or not MIN_LATENCY_S <= latency <= MAX_LATENCY_S:
            raise InputFileError(f"{where}: row {number}: latency_p50_s={shown(latency, 60)}: must be a time in seconds "
                                 f"from {MIN_LATENCY_S:g} to {MAX_LATENCY_S:g}")
        batch = row.get("batch_size")
        if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= MAX_MEASURED_BATCH:
            raise InputFileError(f"{where}: row {number}: batch_size={shown(batch, 60)}: must be a whole number from 1 "
                                 f"to {MAX_MEASURED_BATCH:,}")
        key = (str(row.get("model")), str(row.get("overrides") or ""), str(row.get("mode", "infer")),
               batch, str(row.get("precision") or "fp32"))
        if key in out:  # two times for one step: which one to price against would be a guess
            raise InputFileError(f"{where}: rows {first[key]} and {number} both measure model={shown(key[0], 60)} at "
                                 f"batch_size={batch} ({key[2]} {key[4]}); keep one of them")
        out[key], first[key] = float(latency), number
    return out


#: the shortest step a measured row may claim (a nanosecond: 1e-320 s is a damaged cell) and the
#: largest batch it may name
MIN_LATENCY_S = 1e-9
#: the longest step a measured row may claim (a million seconds, 11.6 days: 1e300 s is a damaged cell)
MAX_LATENCY_S = 1e6
MAX_MEASURED_BATCH = 10**9


#: the band of a row with a gpu-unpriced-kernels warning: the model cannot say, so +-100% at p90
UNPRICED_P90 = 1.0
#: how much wider a data-centre card's band is when its fit was not made on it (transferred
#: through its sustained rates): what the Hopper fit's errors grew to on NVIDIA's published A100,
#: V100 and T4 figures before their own fits (docs/time.md)
TRANSFER_WIDENING = 1.5


def error_band(profile: Any, model: str, mode: str, warned: bool = False) -> dict[str, Any]:
    """How far to trust a GPU prediction: the median and 90th percentile of |predicted /
    published - 1| that the validation on timm's published throughputs measured for this
    family of model on this GPU (``pred_error_basis`` says which measurements), or on the GPUs
    held out of fitting when this GPU was not measured."""
    if getattr(profile, "calibrated_on", ""):
        band = profile.validation.get("calibration", {})
        basis = (f"held-out configurations of this card's calibration (n={band.get('n')})" if band.get("held_out") else
                 f"the fit's residuals on this card's calibration (n={band.get('n')}); not an error on held-out models")
        return {"pred_error_median": band.get("median"), "pred_error_p90": band.get("p90"), "pred_error_basis": basis}
    kind = family(model)
    if getattr(profile, "params_from", "").startswith("datacenter"):
        return _datacenter_band(profile, kind, warned)
    bands = (profile.validation or {}).get(mode, {})
    device = profile.spec.key
    if device in bands:
        source, basis = device, f"{mode}: held-out models on {profile.spec.name}"
    else:
        held_out = bands.get("unvalidated", {}).get("devices", "none")
        source, basis = "unvalidated", f"{mode}: GPUs held out of fitting ({held_out}); {profile.spec.name} not validated"
    band = bands.get(source, {}).get(kind) or bands.get(source, {}).get("all")
    if not band:
        return {"pred_error_median": None, "pred_error_p90": None, "pred_error_basis": "no validation for this case"}
    return {"pred_error_median": band["median"], "pred_error_p90": band["p90"],
            "pred_error_basis": f"{basis}; family {kind} (n={band['n']})"}


def _datacenter_band(profile: Any, kind: str, warned: bool) -> dict[str, Any]:
    """The data-centre fit's band (the fit that prices the card: the Hopper steps', or its
    generation's on NVIDIA's figures): its leave-one-model-out errors, the family's where it has
    three or more configurations and no smaller than all families' (a family seen on a few
    models is no surer than the rest); x TRANSFER_WIDENING for a card the fit was not made on;
    +-UNPRICED_P90 at the 90th percentile for a row whose kernels the model cannot price (its
    gpu-unpriced-kernels warning)."""
    bands = (profile.validation or {}).get(profile.params_from, {})
    overall = bands.get("all")
    if not overall:
        return {"pred_error_median": None, "pred_error_p90": None, "pred_error_basis": "no validation for this case"}
    own = bands.get(kind) if bands.get(kind, {}).get("n", 0) >= 3 else None
    median = max(own["median"], overall["median"]) if own else overall["median"]
    p90 = max(own["p90"], overall["p90"]) if own else overall["p90"]
    measured = profile.spec.key in bands.get("cards", ())
    where = (f"{profile.spec.name} is one of the fit's cards" if measured else
             f"{profile.spec.name} not measured: transferred through its sustained rates, band x{TRANSFER_WIDENING:g}")
    if not measured:
        median, p90 = median * TRANSFER_WIDENING, p90 * TRANSFER_WIDENING
    if warned:
        p90, where = max(p90, UNPRICED_P90), f"{where}; kernels it cannot price (pred_warning): p90 {UNPRICED_P90:.0%}"
    family_text = f"family {kind} (n={own['n']}) or all" if own else f"all families (n={overall['n']})"
    return {"pred_error_median": round(median, 4), "pred_error_p90": round(p90, 4),
            "pred_error_basis": f"{bands.get('basis', 'data-centre fit')}; {family_text}; {where}"}
