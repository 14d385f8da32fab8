"""The GPU cost model: one eager-PyTorch step's time on a GPU from its traced operators
(:mod:`vitbench.timemodel.ops`, traced for CUDA), the card's published numbers
(:mod:`vitbench.timemodel.gpus`) and a handful of parameters per architecture generation,
fitted on published measurements (``vitbench/data/gpu_params.json``; docs/time.md names each).

Each operator is one of five kinds, priced on the device:

    matrix products, convolutions, attention kernels (implicit GEMM of shape m x k x n):
        t = max(2 x MACs / (peak[dtype] x eff[kind] x wave(m, n) x k / (k + k_half)),
                bytes / (bandwidth x bandwidth_eff))
        wave(m, n) = tiles / (ceil(tiles / SMs) x SMs), tiles = ceil(m / 128) x ceil(n / 128)
                     (or 64 x 64 tiles at 0.8 of the rate, whichever is faster): the last wave
                     of tiles leaves SMs idle
    grouped and depthwise convolutions cuDNN runs (CUDA cores, not tensor cores):
        t = max(2 x MACs / (lanes x peak_fp32 x grouped_eff), bytes / (bandwidth x grouped_eff))
        lanes = 2 in half precision (half2), 2 / min(half_cuda_ratio, 2) in float32 (1 on a card whose
        CUDA cores run half precision at twice FP32's rate or more: Hopper, A100, V100, T4)
    depthwise convolutions PyTorch runs with its own kernels (:mod:`~vitbench.timemodel.conv_kernels`
    says which: every bfloat16 one in NCHW, 7x7 ones in any precision), forward and the
    input's gradient at ``depthwise_eff``, the weight's gradient at ``depthwise_wgrad_eff``:
        t = max(2 x MACs_d / (peak_fp32 x depthwise_eff) + 2 x MACs_w / (peak_fp32 x depthwise_wgrad_eff),
                bytes / memory_rate)
    everything else (norms, activations, casts, copies, reductions, pooling, the loss):
        t = bytes x (f / (memory_rate x l2_gain) + (1 - f) / memory_rate)
        f = min(1, L2 / bytes)  (the part of its traffic an L2 of that size can hold)
        memory_rate = min(bandwidth x bandwidth_eff, SMs x clock x sm_bytes_per_clock)
                      (PyTorch's own kernels keep a bounded number of loads in flight per SM: a
                      card with more bandwidth but the same SMs, an H200 against an H100, runs
                      them little faster; sm_bytes_per_clock 0: no such bound)
    operators that launch nothing (dropout in eval, ``to`` the same dtype, views): t = 0
    the optimizer's per-parameter operators run as ``_foreach`` kernels: one launch per 48
        tensors, their bytes at the bandwidth

and every launched kernel adds ``kernel_tail_s`` (its waves' ramp-up and drain) and takes at least
``launch_floor_s``. The host dispatches operators one
after another at ``host_s`` each (``host_infer_s`` or ``host_train_s``); the GPU runs a kernel
once it is dispatched and the previous one is done:

    d_i = max(d_{i-1}, h_i) + t_i,   h_i = (i + 1) x host_s,   step = d_N

so a small batch is bound by the host, as eager PyTorch is, and a large one by the kernels
(``pred_bound`` says which: ``host`` when the host's dispatch alone takes at least as long as the
kernels alone). The host is the machine's, not the GPU's: ``host_s`` comes from
:class:`HostParams` (a documented default host, a stated one, or this machine's measured
dispatch), except for consumer cards, whose generation fit keeps the host of the published
measurements it was fitted on. Data-centre cards are priced at their measured *sustained* rates
(:meth:`~vitbench.timemodel.gpus.GpuSpec.at_sustained_rates`), with efficiencies fitted
relative to those (``rates: sustained`` in the parameter file). The
breakdown charges each kernel's time to its component and the GPU's idle time (waiting for the
host) plus the launch floors' excess to ``overhead``: the components sum to the step.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from importlib import resources
from typing import Any

from vitbench.timemodel.gpus import GENERATIONS, GpuSpec
from vitbench.timemodel.model import BREAKDOWN, Prediction
from vitbench.timemodel.ops import COMPONENTS, Op

TILE = 128
SMALL_TILE = 64
SMALL_TILE_RATE = 0.8
FOREACH_TENSORS_PER_LAUNCH = 48
#: a foreach call's host time grows with its tensor lists: each tensor adds this fraction of one
#: operator's dispatch (about 0.2 us against about 10 us)
FOREACH_HOST_UNITS_PER_TENSOR = 0.02

#: operators dispatched without a Python frame of their own: autocast inserts its casts inside the
#: dispatcher (their host time is a fraction of a module's operator: ``light_dispatch``)
LIGHT_OPS = frozenset({"to", "_to_copy"})

#: kinds of operator (the pricing rule each follows)
NONE, GEMM, CONV, ATTENTION, GROUPED, MEMORY, DEPTHWISE, DEPTHWISE_BACKWARD, GROUPED_BACKWARD, CONV_BACKWARD = range(10)
_KIND_OF_KERNEL = {"gemm": GEMM, "bmm": GEMM, "conv": CONV, "conv_backward": CONV_BACKWARD, "conv_nchw": CONV,
                   "conv_nchw_backward": CONV_BACKWARD, "attention": ATTENTION, "attention_backward": ATTENTION,
                   "conv_grouped": GROUPED, "conv_grouped_backward": GROUPED_BACKWARD,
                   "conv_depthwise": DEPTHWISE, "conv_depthwise_backward": DEPTHWISE_BACKWARD}
#: memory-bound operators whose CUDA kernels pass over their tensors more often than once: the
#: traffic they move, in multiples of their arguments' and results' bytes. PyTorch's batch norm in
#: training collects the statistics in one kernel and normalises in another (input read twice:
#: 3 tensor passes for 2); its backward reduces grad_output and input, then reads both again to
#: write grad_input (5 for 3); layer norm's backward computes grad_input and the weight's
#: gradients in separate kernels over dy and x (5 for 3). cuDNN's batch norm (PyTorch's choice on
#: a GPU in float32 and float16, a GPU trace's ``cudnn_batch_norm``) is the same two-pass algorithm
TRAFFIC_PASSES = {"native_batch_norm": 1.5, "_native_batch_norm_legit": 1.5, "cudnn_batch_norm": 1.5,
                  "native_batch_norm_backward": 5 / 3, "cudnn_batch_norm_backward": 5 / 3,
                  "native_layer_norm_backward": 5 / 3}
#: kernels whose activations a CUDA device rewrites from NCHW to NHWC and back (conv_kernels.nchw_half)
_RELAYOUT_KERNELS = frozenset({"conv_nchw", "conv_nchw_backward"})
_LOW_PRECISION = {"float16": 1, "bfloat16": 2}


@dataclass(frozen=True)
class GenerationParams:
    """The fitted parameters of one architecture generation (docs/time.md: what each means)."""

    gemm_eff: float = 0.7          # achieved fraction of the tensor peak, matrix products
    conv_eff: float = 0.6          # ... convolutions (implicit GEMM, forward)
    conv_backward_eff: float = 0.0  # ... their backward (the input's and the weight's gradients; 0: conv_eff)
    attention_eff: float = 0.5     # ... fused attention kernels
    k_half: float = 32.0           # reduction length at which a GEMM reaches half its rate
    bandwidth_eff: float = 0.8     # achieved fraction of DRAM bandwidth, memory-bound kernels
    grouped_eff: float = 0.4       # achieved fraction for grouped / depthwise convolutions cuDNN runs
    grouped_wgrad_eff: float = 0.0  # ... their weight's gradient (0: grouped_eff)
    grouped_channels_half: float = 0.0  # output channels at which those run at half their rate (0: any)
    layout_passes: float = 0.0     # passes over a half-precision NCHW convolution's bytes to rewrite its layout
    depthwise_eff: float = 0.0     # ... of the FP32 peak, PyTorch's own depthwise kernels (forward, input's
    #                                gradient; 0: priced as cuDNN's grouped ones, as fits made before the two were told apart)
    depthwise_wgrad_eff: float = 0.0  # ... their weight's gradient
    sm_bytes_per_clock: float = 0.0  # bytes an SM moves per clock in PyTorch's memory-bound kernels (0: no bound)
    l2_gain: float = 2.0           # how much faster L2-resident traffic moves than DRAM's
    launch_floor_s: float = 3e-6   # the least a launched kernel takes
    kernel_tail_s: float = 1e-6    # what every launched kernel adds (ramp-up and drain of its waves)
    host_infer_s: float = 10e-6    # host time per operator, inference
    host_train_s: float = 15e-6    # host time per operator, training (autograd's included)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GenerationParams:
        names = {f.name for f in fields(cls)}
        return cls(**{k: float(v) for k, v in data.items() if k in names})


@dataclass(frozen=True)
class HostParams:
    """The host's time to dispatch one operator of an eager step (Python, the dispatcher,
    autograd's bookkeeping in training, the CUDA launch call): a property of the CPU and the
    PyTorch build, not of the GPU."""

    infer_s: float
    train_s: float
    source: str      # where the figures come from (docs/time.md)

    def __post_init__(self) -> None:
        for name in ("infer_s", "train_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and 0 < value < 1.0):
                raise ValueError(f"host {name}={value!r}: must be a positive time under 1 s")


#: the kinds of rate a generation's efficiencies are relative to
DATASHEET, SUSTAINED = "datasheet", "sustained"


@dataclass(frozen=True)
class GpuProfile:
    """What a GPU prediction rests on: the card's numbers and its generation's parameters
    (their host fields already the host's: :func:`profile_for`)."""

    spec: GpuSpec
    params: GenerationParams
    params_from: str                     # the generation whose fit the parameters are
    fitted_on: str = ""                  # what that fit used
    validation: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    calibrated_on: str = ""              # the card a calibration on the device was measured on
    rates: str = DATASHEET               # DATASHEET or SUSTAINED: what the efficiencies are relative to
    host_from: str = ""                  # where the host's dispatch time comes from
    light_dispatch: float = 1.0          # a light operator's host time, in operators (OpTable.light)

    @property
    def priced_spec(self) -> GpuSpec:
        """The card as the parameters price it: at its sustained rates where they are relative to them."""
        return self.spec.at_sustained_rates() if self.rates == SUSTAINED else self.spec

    # what the CPU path's Calibration offers the callers
    basis = "gpu-model"
    threads = None

    @property
    def device(self) -> str:
        return self.spec.key

    @property
    def device_name(self) -> str:
        return self.spec.name

    @property
    def label(self) -> str:
        if self.calibrated_on:
            return f"gpu-model:{self.spec.key} (calibrated on {self.calibrated_on})"
        borrowed = "" if self.params_from == self.spec.generation else f", {self.params_from}'s parameters"
        return f"gpu-model:{self.spec.key} ({self.spec.generation}{borrowed})"



@lru_cache(maxsize=1)
def parameter_file() -> dict[str, Any]:
    """``vitbench/data/gpu_params.json``: fitted parameters per generation, which generation a
    generation without a fit borrows from, and the validation's error bands."""
    text = resources.files("vitbench").joinpath("data/gpu_params.json").read_text(encoding="utf-8")
    return json.loads(text)


def default_host() -> HostParams:
    """The documented default host (``hosts.default`` of the parameter file; docs/time.md)."""
    entry = parameter_file()["hosts"]["default"]
    return HostParams(float(entry["infer_s"]), float(entry["train_s"]), str(entry["source"]))


def fit_source(spec: GpuSpec) -> str:
    """The parameter set that prices ``spec``: a data-centre card its generation's data-centre fit
    (``datacenter-ampere``, ``-volta``, ``-turing``: fitted on NVIDIA's published figures), else
    the data-centre fit of the measured Hopper steps (relative to sustained rates, so it transfers
    across generations); a consumer or workstation card its generation's published fit, or the
    one its generation borrows."""
    data = parameter_file()
    if spec.market == "datacenter" and spec.sustained is not None:
        own = f"datacenter-{spec.generation}"
        return own if own in data["generations"] else "datacenter"
    generation = spec.generation
    return generation if generation in data["generations"] else data["borrow"].get(generation, "ada")


#: the efficiencies of cuDNN's convolution kernels, which differ by architecture (Hopper's
#: NCHW half-precision convolutions rewrite their layout and run at a fraction of its tensor
#: rate; Ampere's and Ada's published steps say theirs do not): a data-centre card of a
#: generation with its own fit takes its forward efficiencies from it, and its backward ones as
#: the same multiple of them as the data-centre fit found (a backward kernel against its
#: forward); that generation's fit absorbs the layout rewrite and PyTorch's own depthwise
#: kernels (it priced them as cuDNN's), so the data-centre fit's terms for them are left out
LIBRARY_KERNELS = ("conv_eff", "grouped_eff")
_BACKWARD_OF = {"conv_backward_eff": "conv_eff", "grouped_wgrad_eff": "grouped_eff"}


def _library_kernels(generation: str, params: GenerationParams) -> dict[str, float]:
    """The convolution efficiencies of ``generation``'s own fit (or of the one it borrows) for a
    data-centre card whose parameters are otherwise ``params`` (the data-centre fit's); nothing
    for Hopper, whose fit the data-centre fit is."""
    data = parameter_file()
    if generation == data.get("datacenter_generation", "hopper"):
        return {}
    source = generation if generation in data["generations"] else data["borrow"].get(generation)
    own = data["generations"].get(source or "", {}).get("params", {})
    out = {name: float(own[name]) for name in LIBRARY_KERNELS if name in own}
    for backward, forward in _BACKWARD_OF.items():
        ratio = getattr(params, backward) / getattr(params, forward) if getattr(params, backward) > 0 else 1.0
        if forward in out:
            out[backward] = out[forward] * ratio
    return {**out, "layout_passes": 0.0, "depthwise_eff": 0.0, "depthwise_wgrad_eff": 0.0} if out else {}


def profile_for(spec: GpuSpec, host: HostParams | None = None) -> GpuProfile:
    """The profile of ``spec``: the parameters of :func:`fit_source` and the host's dispatch
    time (``host``; else the default host for data-centre cards, whichever fit prices them, and
    the published fit's own host for consumer and workstation cards)."""
    data = parameter_file()
    source = fit_source(spec)
    entry = data["generations"][source]
    params = GenerationParams.from_dict(entry["params"])
    if source == "datacenter":
        params = replace(params, **_library_kernels(spec.generation, params))
    host_from = f"{source} fit's host"
    if host is None and source.startswith("datacenter"):  # a published fit's host is NVIDIA's DGX, not the user's
        host = default_host()
    if host is not None:
        params = replace(params, host_infer_s=host.infer_s, host_train_s=host.train_s)
        host_from = host.source
    return GpuProfile(spec, params, source, entry.get("fitted_on", ""), data.get("validation", {}),
                      rates=entry.get("rates", DATASHEET), host_from=host_from,
                      light_dispatch=float(entry.get("light_dispatch", 1.0)))


# --- the operator table: a trace as arrays, priced without a Python loop per operator ------------

@dataclass(frozen=True)
class OpTable:
    """A traced step as columns (numpy arrays), in dispatch order; the optimizer's
    per-parameter operators folded into ``_foreach`` kernels."""

    kind: Any
    component: Any
    flops: Any
    bytes: Any
    m: Any
    k: Any
    n: Any
    low_precision: Any   # 0 float32 (or another dtype), 1 float16, 2 bfloat16
    launches: Any        # kernels launched (0 for operators that launch nothing)
    host_units: Any      # host dispatches (a foreach call: 1 + its tensors x a small per-tensor cost)
    light: Any           # 1 for a dispatch with no Python frame of its own: autocast's casts, operators
    #                      that launch nothing (a view, dropout in eval); 0 otherwise
    relayout: Any        # 1 for a convolution whose activations the device rewrites NCHW <-> NHWC
    channels: Any        # a grouped convolution's output channels (0: not known, or not one)
    macs: int
    total_bytes: int


def op_table(ops: Sequence[Op]) -> OpTable:
    import numpy as np

    rows: list[tuple] = []
    foreach: dict[str, list[float]] = {}
    order: list[str] = []
    for op in ops:
        if op.component == "optimizer":
            if op.name not in foreach:
                foreach[op.name] = [0.0, 0.0]
                order.append(op.name)
            foreach[op.name][0] += op.bytes
            foreach[op.name][1] += 1
            continue
        kind = NONE if op.aliases else _KIND_OF_KERNEL.get(op.kernel, MEMORY)
        if kind not in (NONE, MEMORY) and (not op.macs or len(op.shape) not in (3, 4)):
            kind = MEMORY
        m, k, n = op.shape[:3] if len(op.shape) >= 3 else (0, 0, 0)
        channels = op.shape[3] * n if len(op.shape) == 4 else 0  # a grouped convolution's output channels
        light = 1 if kind == NONE or op.name in LIGHT_OPS else 0
        moved = float(op.bytes) * (TRAFFIC_PASSES.get(op.name, 1.0) if kind == MEMORY else 1.0)
        rows.append((kind, COMPONENTS.index(op.component), 2.0 * op.macs, moved, m, k, n,
                     _LOW_PRECISION.get(op.dtype, 0), 0 if kind == NONE else 1, 1.0, light,
                     int(op.kernel in _RELAYOUT_KERNELS), channels))
    for name in order:
        moved, tensors = foreach[name]
        rows.append((MEMORY, COMPONENTS.index("optimizer"), 0.0, moved, 0, 0, 0, 0,
                     math.ceil(tensors / FOREACH_TENSORS_PER_LAUNCH),
                     1.0 + tensors * FOREACH_HOST_UNITS_PER_TENSOR, 0, 0, 0))
    columns = list(zip(*rows)) if rows else [()] * 13
    ints = (0, 1, 7, 8, 10, 11)
    arrays = [np.asarray(c, dtype=np.int64 if i in ints else np.float64) for i, c in enumerate(columns)]
    return OpTable(*arrays, macs=sum(op.macs for op in ops), total_bytes=sum(op.bytes for op in ops))


def _wave(m: Any, n: Any, sms: int) -> Any:
    """wave(m, n): the fraction of the SMs' time the tiles of an m x n output keep busy."""
    import numpy as np

    best = np.zeros_like(m, dtype=np.float64)
    for tile, rate in ((TILE, 1.0), (SMALL_TILE, SMALL_TILE_RATE)):
        tiles = np.ceil(np.maximum(m, 1) / tile) * np.ceil(np.maximum(n, 1) / tile)
        best = np.maximum(best, rate * tiles / (np.ceil(tiles / sms) * sms))
    return best


def kernel_times(table: OpTable, spec: GpuSpec, params: GenerationParams, tf32: bool = False) -> Any:
    """Seconds each operator's kernels take on ``spec`` (the module docstring's equations)."""
    import numpy as np

    bandwidth = spec.bandwidth_bytes_s * params.bandwidth_eff
    peak_fp32 = spec.peak_flops("float32", tf32) or 1.0
    peaks = np.array([peak_fp32, spec.peak_flops("float16") or peak_fp32, spec.peak_flops("bfloat16") or peak_fp32])
    # cuDNN runs float32 convolutions on TF32 tensor cores unless told not to
    # (torch.backends.cudnn.allow_tf32 is True by default); matrix products only with --precision tf32
    conv_fp32 = spec.peak_flops("float32", True) or peak_fp32
    convolution = np.isin(table.kind, (CONV, CONV_BACKWARD))
    peak = np.where(convolution & (table.low_precision == 0), conv_fp32, peaks[table.low_precision])
    eff = np.select([table.kind == GEMM, table.kind == CONV, table.kind == CONV_BACKWARD, table.kind == ATTENTION],
                    [params.gemm_eff, params.conv_eff, params.conv_backward_eff or params.conv_eff,
                     params.attention_eff], 1.0)
    rate = peak * eff * _wave(table.m, table.n, spec.sms) * (table.k / (table.k + params.k_half))
    with np.errstate(divide="ignore", invalid="ignore"):
        compute = np.where(rate > 0, table.flops / np.where(rate > 0, rate, 1.0), 0.0)
    dram = table.bytes / bandwidth
    native = table.bytes / memory_rate(spec, params)
    fraction = np.minimum(1.0, spec.l2_bytes / np.maximum(table.bytes, 1.0))
    memory = native * (fraction / params.l2_gain + (1.0 - fraction))
    relayout = table.relayout * params.layout_passes * native
    grouped_kinds, depthwise_kinds = (GROUPED, GROUPED_BACKWARD), (DEPTHWISE, DEPTHWISE_BACKWARD)
    if params.depthwise_eff <= 0:  # a fit that does not tell PyTorch's depthwise kernels from cuDNN's
        grouped_kinds, depthwise_kinds = (*grouped_kinds, *depthwise_kinds), ()
    # cuDNN's grouped kernels spread a pixel's channels over a warp: few channels, little of it busy
    width = np.where(table.channels > 0, table.channels / np.maximum(table.channels + params.grouped_channels_half, 1.0), 1.0)
    # cuDNN's grouped kernels run on CUDA cores: the fitted rate is half precision's, two FMAs a lane
    # (half2); float32 runs at 1 / min(half_cuda_ratio, 2) of it (Hopper, A100, V100, T4: half the rate;
    # GA10x, AD10x, GB20x run half precision at FP32's rate: the same)
    lanes = np.where(table.low_precision > 0, 2.0, 2.0 / min(max(spec.half_cuda_ratio, 1.0), 2.0))
    grouped = np.maximum(_split_compute(table, lanes * spec.peak_flops("float32"), params.grouped_eff,
                                        params.grouped_wgrad_eff or params.grouped_eff, grouped_kinds[1::2]) / width,
                         table.bytes / (spec.bandwidth_bytes_s * params.grouped_eff))
    depthwise = np.maximum(_split_compute(table, spec.peak_flops("float32") or 1.0, params.depthwise_eff or 1.0,
                                          params.depthwise_wgrad_eff or 1.0, depthwise_kinds[1::2]), native)
    t = np.select([table.kind == NONE, table.kind == MEMORY, np.isin(table.kind, grouped_kinds),
                   np.isin(table.kind, depthwise_kinds)],
                  [0.0, memory, grouped, depthwise], np.maximum(compute, dram) + relayout)
    return t, np.maximum(t + table.launches * params.kernel_tail_s, table.launches * params.launch_floor_s)


def memory_rate(spec: GpuSpec, params: GenerationParams) -> float:
    """Bytes per second PyTorch's memory-bound kernels move on ``spec`` (the module docstring's
    memory_rate)."""
    rate = spec.bandwidth_bytes_s * params.bandwidth_eff
    if params.sm_bytes_per_clock > 0:
        rate = min(rate, spec.sms * spec.boost_mhz * 1e6 * params.sm_bytes_per_clock)
    return rate


def _split_compute(table: OpTable, peak: float, eff: float, wgrad_eff: float, backward_kinds: tuple) -> Any:
    """Compute time of grouped or depthwise convolutions: the forward and the input's gradient at
    ``eff`` of ``peak``, the weight's gradient at ``wgrad_eff``. A backward's FLOPs are one
    forward's (2 m k n) per gradient asked for; one alone is the weight's (the first layer)."""
    import numpy as np

    forward = 2.0 * table.m * table.k * table.n
    wgrad = np.where(np.isin(table.kind, backward_kinds), np.minimum(forward, table.flops), 0.0)
    return (table.flops - wgrad) / (peak * eff) + wgrad / (peak * wgrad_eff)


def host_weights(table: OpTable, light_dispatch: float) -> Any:
    """Each operator's host dispatches, a light one's (:data:`LIGHT_OPS`, views) at ``light_dispatch``."""
    import numpy as np

    return table.host_units * np.where(table.light == 1, light_dispatch, 1.0)


def step_time(device: Any, host: Any) -> float:
    """d_N of the module docstring: kernels ``device`` (s each) dispatched at host times ``host``
    (cumulative, s): max over i of (h_i + the kernels from i on)."""
    import numpy as np

    if len(device) == 0:
        return 0.0
    suffix = np.cumsum(device[::-1])[::-1]
    return float(np.max(host + suffix))


@dataclass(frozen=True)
class GpuPrediction(Prediction):
    """A :class:`~vitbench.timemodel.model.Prediction` with the host's and the kernels' times."""

    host_s: float = 0.0     # the host's dispatch time alone
    device_s: float = 0.0   # the kernels' time alone

    @property
    def bound(self) -> str:
        """``host`` when the host's dispatch alone takes at least as long as the kernels alone
        (a faster GPU would not shorten the step), else ``device``."""
        return "host" if self.host_s >= self.device_s else "device"

    def columns(self, batch_size: int) -> dict[str, float | int | str]:
        return {**super().columns(batch_size), "pred_host_s": self.host_s, "pred_device_s": self.device_s,
                "pred_bound": self.bound}


def predict_table(table: OpTable, profile: GpuProfile, mode: str, tf32: bool = False) -> GpuPrediction:
    """One step's time of ``table`` on ``profile``'s card."""
    import numpy as np

    params = profile.params
    raw, device = kernel_times(table, profile.priced_spec, params, tf32)
    host_s = params.host_train_s if mode == "train" else params.host_infer_s
    host = np.cumsum(host_weights(table, profile.light_dispatch) * host_s)
    latency = step_time(device, host)
    components = dict.fromkeys(BREAKDOWN, 0.0)
    for index, name in enumerate(COMPONENTS):
        components[name] = float(raw[table.component == index].sum())
    components["overhead"] = max(0.0, latency - sum(components.values()))
    # the components sum to the step: rounding is charged to overhead
    total = sum(components.values())
    if total > latency and total > 0:
        components["overhead"] -= total - latency
    return GpuPrediction(latency, components, len(table.kind), table.macs, table.total_bytes,
                         float(host[-1]) if len(host) else 0.0, float(device.sum()))


def predict_gpu(ops: Iterable[Op], profile: GpuProfile, mode: str, tf32: bool = False) -> GpuPrediction:
    return predict_table(op_table(list(ops)), profile, mode, tf32)


__all__ = [
    "BREAKDOWN",
    "DATASHEET",
    "GENERATIONS",
    "SUSTAINED",
    "GenerationParams",
    "GpuPrediction",
    "GpuProfile",
    "HostParams",
    "OpTable",
    "default_host",
    "fit_source",
    "host_weights",
    "kernel_times",
    "memory_rate",
    "op_table",
    "parameter_file",
    "predict_gpu",
    "predict_table",
    "profile_for",
    "step_time",
]
