"""Fitting a generation's parameters (:class:`~vitbench.timemodel.gpu_model.GenerationParams`)
to measured step times: published ones (``benchmarks/gpu_published/``) or a calibration on the
device itself.

    minimise  sum over configurations of  rho(log(predicted_i / measured_i))

over the parameters (in log space, within physical bounds), rho the soft-L1 loss (quadratic
near 0, linear beyond 10%: one odd model cannot drag the rest). The parameters describe the
device and the framework, never a model: every configuration shares them.

With a prior (a calibration on the card starts from its generation's fit) the fit is
regularised toward it:

    minimise  sum_i rho(log(predicted_i / measured_i)) + sum_j (w x log(p_j / prior_j))^2

so a parameter the observations cannot identify stays where the prior put it instead of running
to a bound. An observation may carry its own host (``host``: the dispatch time per operator
of the machine it was measured on), so that measurements from several machines fit one card.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from vitbench.timemodel.gpu_model import (
    GenerationParams,
    GpuProfile,
    OpTable,
    host_weights,
    kernel_times,
    predict_table,
)
from vitbench.timemodel.gpus import GpuSpec

#: (lower, upper) bound of each parameter. Efficiencies may pass 1: they are relative to the
#: vendor's peak at the rated boost clock, and GeForce cards run above it when cool
BOUNDS = {
    "gemm_eff": (0.05, 1.5), "conv_eff": (0.05, 1.5), "conv_backward_eff": (0.02, 1.5), "attention_eff": (0.05, 1.5), "k_half": (1.0, 1024.0),
    "bandwidth_eff": (0.1, 1.2), "grouped_eff": (0.005, 1.5), "grouped_wgrad_eff": (0.001, 1.5), "grouped_channels_half": (1.0, 4096.0),
    "layout_passes": (0.05, 8.0), "depthwise_eff": (0.005, 1.5),
    "depthwise_wgrad_eff": (0.001, 1.5), "sm_bytes_per_clock": (1.0, 64.0), "l2_gain": (1.0, 10.0),
    "launch_floor_s": (0.5e-6, 30e-6), "kernel_tail_s": (0.01e-6, 30e-6), "host_infer_s": (0.5e-6, 200e-6), "host_train_s": (0.5e-6, 300e-6),
}


@dataclass(frozen=True)
class Observation:
    table: OpTable
    spec: GpuSpec
    mode: str
    measured_s: float
    tf32: bool = False
    host: tuple[float, float] | None = None   # (inference, training) host s per operator; None: the params'


def predicted(observations: Sequence[Observation], params: GenerationParams, light_dispatch: float = 1.0) -> list[float]:
    """Each observation's predicted step (:func:`~vitbench.timemodel.gpu_model.predict_table`)."""
    def own(o: Observation) -> GenerationParams:
        return params if o.host is None else replace(params, host_infer_s=o.host[0], host_train_s=o.host[1])

    return [predict_table(o.table, GpuProfile(o.spec, own(o), o.spec.generation, light_dispatch=light_dispatch), o.mode,
                          o.tf32).latency_s for o in observations]


class Stacked:
    """Observations' tables concatenated, so that one evaluation prices them all at once (the
    fit evaluates thousands of parameter sets): the same numbers as :func:`predicted`."""

    def __init__(self, observations: Sequence[Observation], light_dispatch: float = 1.0) -> None:
        import numpy as np

        self.observations = list(observations)
        self.light_dispatch = light_dispatch
        self.groups = []  # (spec, tf32, indices of observations, stacked table, segment starts, train flags)
        keys: dict[tuple, list[int]] = {}
        for index, o in enumerate(self.observations):
            keys.setdefault((o.spec, o.tf32), []).append(index)
        for (_, tf32), indices in keys.items():
            tables = [self.observations[i].table for i in indices]
            lengths = np.array([len(t.kind) for t in tables])
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
            columns = {name: np.concatenate([getattr(t, name) for t in tables])
                       for name in ("kind", "component", "flops", "bytes", "m", "k", "n", "low_precision", "launches",
                                    "host_units", "light", "relayout", "channels")}
            stacked = OpTable(**columns, macs=0, total_bytes=0)
            train = np.repeat([self.observations[i].mode == "train" for i in indices], lengths)
            # each operator's own host time where its observation states one (NaN: the params')
            own = np.repeat([np.nan if self.observations[i].host is None
                             else self.observations[i].host[self.observations[i].mode == "train"] for i in indices], lengths)
            self.groups.append((self.observations[indices[0]].spec, tf32, np.array(indices), stacked, starts, lengths,
                                train, own))
        self.measured = np.array([o.measured_s for o in self.observations])

    def latencies(self, params: GenerationParams) -> Any:
        import numpy as np

        out = np.zeros(len(self.observations))
        for spec, tf32, indices, table, starts, lengths, train, own in self.groups:
            _, device = kernel_times(table, spec, params, tf32)
            per_op = np.where(train, params.host_train_s, params.host_infer_s)
            host = host_weights(table, self.light_dispatch) * np.where(np.isnan(own), per_op, own)
            cumulative = np.cumsum(host)
            before = np.concatenate([[0.0], cumulative])[starts]
            host_seg = cumulative - np.repeat(before, lengths)
            suffix = np.cumsum(device[::-1])[::-1]
            after = np.concatenate([suffix, [0.0]])[starts + lengths]
            suffix_seg = suffix - np.repeat(after, lengths)
            out[indices] = np.maximum.reduceat(host_seg + suffix_seg, starts)
        return out

    def log_errors(self, params: GenerationParams) -> Any:
        import numpy as np

        return np.log(np.maximum(self.latencies(params), 1e-12) / self.measured)


def log_errors(observations: Sequence[Observation], params: GenerationParams) -> list[float]:
    return [math.log(max(p, 1e-12) / o.measured_s) for p, o in zip(predicted(observations, params), observations)]


def fit(observations: Sequence[Observation], start: GenerationParams | None = None,
        fixed: Sequence[str] = (), max_evaluations: int = 400, prior_weight: float | Mapping[str, float] = 0.0,
        light_dispatch: float = 1.0, prior: GenerationParams | None = None) -> GenerationParams:
    """The parameters that minimise the soft-L1 of the log errors (``fixed`` ones kept at
    ``start``), regularised toward ``prior`` (default ``start``) with ``prior_weight`` (0: not at
    all; a mapping: each parameter's own weight, 0 for one it does not name)."""
    import numpy as np
    from scipy.optimize import least_squares

    start = start or GenerationParams()
    # a parameter at 0 means "none" (sm_bytes_per_clock: no bound): not fitted
    names = [f.name for f in fields(GenerationParams) if f.name not in fixed and getattr(start, f.name) > 0]
    low = np.log([BOUNDS[n][0] for n in names])
    high = np.log([BOUNDS[n][1] for n in names])
    x0 = np.clip(np.log([getattr(start, n) for n in names]), low + 1e-9, high - 1e-9)

    def params_at(x) -> GenerationParams:
        values = {f.name: getattr(start, f.name) for f in fields(GenerationParams)}
        values.update({n: float(math.exp(v)) for n, v in zip(names, x)})
        return GenerationParams(**values)

    stacked = Stacked(observations, light_dispatch)
    prior_at = np.log([max(getattr(prior, n), 1e-300) for n in names]) if prior is not None else x0.copy()
    weights = np.array([prior_weight.get(n, 0.0) if isinstance(prior_weight, Mapping) else prior_weight for n in names])

    def residuals(x):
        errors = stacked.log_errors(params_at(x))
        if not (weights > 0).any():
            return errors
        # soft_l1 applies to every residual: the prior's are scaled so that it stays quadratic
        # where it matters (a factor e^1 away costs weight^2)
        return np.concatenate([errors, weights * (x - prior_at)])

    result = least_squares(residuals, x0, bounds=(low, high), loss="soft_l1", f_scale=0.1,
                           max_nfev=max_evaluations, diff_step=1e-3)
    return params_at(result.x)


def at_bounds(params: GenerationParams, fixed: Sequence[str] = (), tolerance: float = 0.01) -> list[str]:
    """The parameters (not ``fixed``) within ``tolerance`` (relative, in log space) of a bound:
    what the data could not identify."""
    out = []
    for f in fields(GenerationParams):
        if f.name in fixed or getattr(params, f.name) <= 0:
            continue
        low, high = BOUNDS[f.name]
        value = getattr(params, f.name)
        span = math.log(high / low)
        if min(math.log(value / low), math.log(high / value)) <= tolerance * span:
            out.append(f.name)
    return out


__all__ = ["BOUNDS", "Observation", "Stacked", "at_bounds", "fit", "log_errors", "predicted"]
