"""The calibration record: its fields, its validation, and the rates it interpolates.

    gemm_rate(m, k, n)      multilinear interpolation of log(rate) in log(m, k, n) between the
                            grid's points, held at the edge value beyond the grid
    efficiency_at(m, k, n)  inverse-distance-weighted mean of log(efficiency) over the four
                            nearest calibrated calls in log(m, k, n) (m weighted 0.25 for
                            attention kernels); 1 for a kernel without any
"""

from __future__ import annotations

import bisect
import json
import math
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

from vitbench.errors import VitbenchError, shown
from vitbench.input_files import load_json
from vitbench.row_warnings import warning

SCHEMA_VERSION = 4  # 3: a grouped convolution's backward MACs counted with its groups (efficiencies change);
#                   4: fused attention's backward counted on torch < 2.15 too (its efficiency measured there)
PRECISION_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
BASES = ("calibration", "datasheet")
#: the one device kind a calibration of this form is for
DEVICE = "cpu"


class CalibrationError(VitbenchError, ValueError):
    """A calibration that cannot be used: damaged, another schema or torch version, failed."""


#: the plausible range of each kind of value: a tampered file whose values would price a step at
#: 1e300 s or at nothing is refused (a cache's refusal recalibrates). Wide enough for any fit the
#: measuring makes (a bandwidth fitted on a flat operator can be far above the memory's)
RATE_RANGE = (1e3, 1e30)         # MAC/s and bytes/s
SECONDS_RANGE = (0.0, 10.0)      # a fixed cost per operator
EFFICIENCY_RANGE = (1e-9, 1e6)   # achieved / GEMM rate
FACTOR_RANGE = (1e-6, 1e6)       # in_step_factor
SIZE_RANGE = (1, 1e12)           # a GEMM's m, k, n
MAX_CALIBRATION_THREADS = 1024


def _number(value: Any) -> float | None:
    """A JSON number as a finite float; None for anything else (a bool, text, NaN, infinity,
    an integer too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _within(value: Any, bounds: tuple[float, float]) -> bool:
    number = _number(value)
    return number is not None and bounds[0] <= number <= bounds[1]


def _positive(value: Any) -> bool:
    number = _number(value)
    return number is not None and number > 0


def _non_negative(value: Any) -> bool:
    number = _number(value)
    return number is not None and number >= 0


def _positive_rows(rows: Any) -> bool:
    """A non-empty list of rows of four positive numbers."""
    return isinstance(rows, list) and bool(rows) and all(
        isinstance(r, list) and len(r) == 4 and all(_positive(v) for v in r) for r in rows)


def _rows_within(rows: list[list[Any]], last: tuple[float, float]) -> bool:
    """Rows [m, k, n, value] (already positive) with sizes in SIZE_RANGE and value in ``last``."""
    return all(all(_within(v, SIZE_RANGE) for v in r[:3]) and _within(r[3], last) for r in rows)


def _out_of(name: str, value: Any, bounds: tuple[float, float]) -> CalibrationError:
    return CalibrationError(f"{name}={_shown(value)}: must be from {bounds[0]:g} to {bounds[1]:g}")


def _check_device(device: Any) -> None:
    """A CPU calibration prices the CPU only: its ``device`` is ``cpu`` (issue 45: a file saying
    ``h100`` was accepted for ``--device cpu``); a GPU has its own calibration
    (:mod:`vitbench.timemodel.gpu_calibration`)."""
    if device != DEVICE:
        raise CalibrationError(f"device={_shown(device)}: a CPU calibration is for device {DEVICE!r} (a GPU is priced by the GPU model)")


def _check_scalars(calibration: Calibration) -> None:
    for name in ("device", "device_name", "torch", "basis"):
        if not isinstance(getattr(calibration, name), str):
            raise CalibrationError(f"{name}={_shown(getattr(calibration, name))}: must be text")
    _check_device(calibration.device)
    if calibration.basis not in BASES:
        raise CalibrationError(f"basis={calibration.basis!r}: must be one of {', '.join(BASES)}")
    threads = calibration.threads
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise CalibrationError(f"threads={_shown(threads)}: must be a positive integer")
    if threads > MAX_CALIBRATION_THREADS:
        raise CalibrationError(f"threads={_shown(threads)}: must be at most {MAX_CALIBRATION_THREADS}")
    for name, bounds in (("overhead_s", SECONDS_RANGE), ("bandwidth_bytes_s", RATE_RANGE), ("in_step_factor", FACTOR_RANGE)):
        value = getattr(calibration, name)
        if not _positive(value):
            raise CalibrationError(f"{name}={_shown(value)}: must be a positive number")
        if not _within(value, bounds):
            raise _out_of(name, value, bounds)
    if not _non_negative(calibration.seconds):
        raise CalibrationError(f"seconds={_shown(calibration.seconds)}: must be a number of seconds")
    if not isinstance(calibration.notes, dict):
        raise CalibrationError(f"notes={_shown(calibration.notes)}: must be an object")


def _shown(value: Any) -> str:
    return shown(value, 60)


def _check_gemm(gemm: Any) -> None:
    if not isinstance(gemm, dict) or not gemm:
        raise CalibrationError("gemm: needs rates for at least one dtype")
    for dtype, rows in gemm.items():
        if not _positive_rows(rows):
            raise CalibrationError(f"gemm[{dtype!r}]: needs rows of [m, k, n, macs_per_s], all positive")
        if not _rows_within(rows, RATE_RANGE):
            raise CalibrationError(f"gemm[{dtype!r}]: needs sizes from 1 to {SIZE_RANGE[1]:g} and rates from "
                                   f"{RATE_RANGE[0]:g} to {RATE_RANGE[1]:g} MAC/s")
        axes = [sorted({r[i] for r in rows}) for i in range(3)]
        points = {(float(r[0]), float(r[1]), float(r[2])) for r in rows}
        if len(rows) != len(points) or len(points) != len(axes[0]) * len(axes[1]) * len(axes[2]):
            raise CalibrationError(f"gemm[{dtype!r}]: the rows do not fill a grid")


def _check_tables(calibration: Calibration) -> None:
    _check_framework(calibration.framework_s)
    _check_efficiency(calibration.efficiency)
    _check_ops(calibration.ops)


def _check_framework(framework: Any) -> None:
    if not isinstance(framework, dict) or not all(isinstance(k, str) and _non_negative(v) for k, v in framework.items()):
        raise CalibrationError("framework_s: needs modes with non-negative seconds")
    if not all(_within(v, SECONDS_RANGE) for v in framework.values()):
        raise CalibrationError(f"framework_s: needs seconds from 0 to {SECONDS_RANGE[1]:g} per operator")


def _check_efficiency(efficiency: Any) -> None:
    if not isinstance(efficiency, dict) or not all(_positive_rows(rows) for rows in efficiency.values()):
        raise CalibrationError("efficiency: needs kernels with rows of [m, k, n, efficiency], all positive")
    if not all(_rows_within(rows, EFFICIENCY_RANGE) for rows in efficiency.values()):
        raise CalibrationError(f"efficiency: needs sizes from 1 to {SIZE_RANGE[1]:g} and efficiencies from "
                               f"{EFFICIENCY_RANGE[0]:g} to {EFFICIENCY_RANGE[1]:g}")


def _check_ops(ops: Any) -> None:
    if not isinstance(ops, dict) or any(
            not isinstance(v, list) or len(v) != 2 or not _non_negative(v[0]) or not _positive(v[1]) for v in ops.values()):
        raise CalibrationError("ops: needs names with [overhead_s >= 0, bandwidth_bytes_s > 0]")
    if not all(_within(v[0], SECONDS_RANGE) and _within(v[1], RATE_RANGE) for v in ops.values()):
        raise CalibrationError(f"ops: needs overhead_s from 0 to {SECONDS_RANGE[1]:g} and bandwidth_bytes_s from "
                               f"{RATE_RANGE[0]:g} to {RATE_RANGE[1]:g}")


def _corners(axis: list[float], x: float) -> list[tuple[float, float]]:
    """The grid values of one axis around ``x`` with their weights: linear between the two
    neighbours (w = (x - lo) / (hi - lo) on hi), the edge value alone at or beyond an edge."""
    if x <= axis[0]:
        return [(axis[0], 1.0)]
    if x >= axis[-1]:  # (so is every x of a one-point axis)
        return [(axis[-1], 1.0)]
    i = bisect.bisect_right(axis, x) - 1
    lo, hi = axis[i], axis[i + 1]
    w = (x - lo) / (hi - lo)
    return [(lo, 1 - w), (hi, w)]


@dataclass(frozen=True)
class Calibration:
    device: str
    device_name: str
    threads: int
    torch: str
    basis: str
    gemm: dict[str, list[list[float]]]      # dtype -> [[m, k, n, macs_per_s], ...]
    efficiency: dict[str, list[list[float]]]  # compute kernel -> [[m, k, n, achieved / gemm rate], ...]
    ops: dict[str, list[float]]             # operator name -> [overhead_s, bandwidth_bytes_s]
    overhead_s: float
    bandwidth_bytes_s: float
    framework_s: dict[str, float]           # mode -> seconds per operator
    in_step_factor: float
    seconds: float = 0.0
    schema_version: int = SCHEMA_VERSION
    notes: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # the device kind is checked on construction too: a record given to the API is never
        # checked field by field, but a CPU one made for another device must not price the CPU
        if isinstance(self.device, str):
            _check_device(self.device)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Calibration:
        """Parse and check a calibration; CalibrationError naming what is wrong."""
        data = load_json(text, "damaged", error=CalibrationError)  # bounded numbers and nesting, no NaN or infinity
        if not isinstance(data, dict):
            raise CalibrationError("damaged: not a JSON object")
        if data.get("schema_version") != SCHEMA_VERSION:
            raise CalibrationError(f"schema_version is {data.get('schema_version')!r}, this vitbench reads {SCHEMA_VERSION}")
        try:
            calibration = cls(**data)
        except TypeError as exc:
            raise CalibrationError(f"damaged: {exc}") from None
        calibration.check()
        return calibration

    def check(self) -> None:
        """CalibrationError naming the first field that is wrong (in field order)."""
        _check_scalars(self)
        _check_gemm(self.gemm)
        _check_tables(self)

    @property
    def label(self) -> str:
        """What a prediction rests on: the ``pred_basis`` column."""
        if self.basis == "datasheet":
            return f"datasheet:{self.device_name}"
        return f"calibration:{self.device}:{self.device_name or 'unknown'}:{self.threads} threads:torch {self.torch}"

    def dtypes(self) -> list[str]:
        return sorted(self.gemm)

    @cached_property
    def _grids(self) -> dict[str, tuple[list[list[float]], dict[tuple[float, float, float], float]]]:
        out = {}
        for dtype, rows in self.gemm.items():
            axes = [sorted({math.log(r[i]) for r in rows}) for i in range(3)]
            table = {(math.log(r[0]), math.log(r[1]), math.log(r[2])): math.log(r[3]) for r in rows}
            out[dtype] = (axes, table)
        return out

    @cached_property
    def _rates(self) -> dict[str, dict[tuple[float, float, float], float]]:
        return {dtype: {(math.log(r[0]), math.log(r[1]), math.log(r[2])): r[3] for r in rows} for dtype, rows in self.gemm.items()}

    def gemm_rate(self, shape: tuple[int, ...], dtype: str = "float32") -> float:
        """MAC/s of an (m, k, n) product: log(rate) interpolated multilinearly in log(m, k, n)
        between the grid's points, held at the edge value beyond the grid."""
        if dtype not in self.gemm:
            raise CalibrationError(f"no {dtype} GEMM rates in this calibration (calibrated: {', '.join(self.dtypes())})")
        axes, table = self._grids[dtype]
        corners = [_corners(axis, math.log(max(1, size))) for axis, size in zip(axes, shape)]  # per axis: (value, weight)
        if all(len(c) == 1 for c in corners):  # a grid point (or its edge): the measured rate itself
            return self._rates[dtype][(corners[0][0][0], corners[1][0][0], corners[2][0][0])]
        log_rate = 0.0
        for a, wa in corners[0]:
            for b, wb in corners[1]:
                for c, wc in corners[2]:
                    log_rate += wa * wb * wc * table[(a, b, c)]
        return math.exp(log_rate)

    @cached_property
    def _memo(self) -> dict[tuple[Any, ...], float]:
        return {}

    def compute_rate(self, kernel: str, shape: tuple[int, ...], dtype: str) -> float:
        """MAC/s of a compute kernel's call: gemm_rate x efficiency_at (remembered per shape)."""
        key = (kernel, shape, dtype)
        rate = self._memo.get(key)
        if rate is None:
            if len(self._memo) > 200_000:
                self._memo.clear()
            rate = self._memo[key] = self.gemm_rate(shape, dtype) * self.efficiency_at(kernel, shape)
        return rate

    def efficiency_at(self, kernel: str, shape: tuple[int, ...]) -> float:
        """A compute kernel's achieved / gemm rate at (m, k, n): inverse-distance-weighted mean
        of log(efficiency) over the four nearest calibrated calls in log(m, k, n); 1 without any."""
        rows = self.efficiency.get(kernel)
        if not rows:
            return 1.0
        point = [math.log(max(1, d)) for d in shape]
        # attention: its efficiency follows (head dim, tokens); batch x heads (in m) matters less
        scale = (0.25, 1.0, 1.0) if kernel.startswith("attention") else (1.0, 1.0, 1.0)
        scored = sorted((sum(scale[i] * (math.log(r[i]) - point[i]) ** 2 for i in range(3)), r[3]) for r in rows)[:4]
        if scored[0][0] < 1e-12:
            return scored[0][1]
        weights = [(1 / d, math.log(e)) for d, e in scored]
        return math.exp(sum(w * e for w, e in weights) / sum(w for w, _ in weights))

    def op_cost(self, name: str) -> tuple[float, float]:
        """(overhead_s, bandwidth_bytes_s) of a memory-bound operator."""
        fit = self.ops.get(name)
        return (fit[0], fit[1]) if fit else (self.overhead_s, self.bandwidth_bytes_s)


def summary(calibration: Calibration) -> dict[str, Any]:
    """One record that describes a calibration (what ``vitbench calibrate`` prints)."""
    peak = {dtype: max(r[3] for r in rows) for dtype, rows in calibration.gemm.items()}
    return {
        "device": calibration.device, "device_name": calibration.device_name, "threads": calibration.threads,
        "torch": calibration.torch, "basis": calibration.basis, "calibration_s": calibration.seconds,
        "gemm_peak_macs_per_s": peak.get("float32"), "bandwidth_bytes_s": calibration.bandwidth_bytes_s,
        "framework_infer_s": calibration.framework_s.get("infer"), "framework_train_s": calibration.framework_s.get("train"),
        "in_step_factor": calibration.in_step_factor, "operators_fitted": len(calibration.ops),
    }


def _load_number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def busy_warnings(calibration: Calibration) -> list[dict[str, str]]:
    """``[calibration-busy warning]`` when ``calibration`` was measured while other processes held
    the cores it needed, else ``[]`` (also for a file written before the ``machine`` note,
    :func:`~vitbench.timemodel.calibration.worker.load_finish`). Busy by the rule of
    ``profile``'s ``busy-machine`` warning: ``busy_cores + threads > cpus + 0.5``; where
    ``busy_cores`` is unknown, the load average as the calibration began in its place. A busy
    calibration is kept, with this warning: its rates are slower than the machine's at rest."""
    machine = calibration.notes.get("machine") if isinstance(calibration.notes, dict) else None
    if not isinstance(machine, dict):
        return []
    cpus = _load_number(machine.get("cpus")) or 1.0
    threads = _load_number(machine.get("threads")) or float(calibration.threads or 1)
    busy, load = _load_number(machine.get("busy_cores")), _load_number(machine.get("loadavg_1m_start"))
    others = busy if busy is not None else load
    if others is None or others + threads <= cpus + 0.5:
        return []
    held = f"other processes used {busy:.1f} of {cpus:.0f} cores" if busy is not None else \
        f"the load average was {load:.1f} on {cpus:.0f} cores"
    shown = f", load average {load:.1f}" if busy is not None and load is not None else ""
    return [warning(
        "calibration-busy",
        f"the CPU calibration was measured on a busy machine ({held}{shown}, with {threads:.0f} calibration "
        "thread(s)): its rates are slower than this machine's at rest, so predicted times are likely too long",
        "recalibrate on a quiet machine: `vitbench predict ... --recalibrate` (or `vitbench calibrate`)",
    )]
