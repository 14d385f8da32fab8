"""Typed rows: a result row stays the dict it always was (every column by its name,
``row["pred_latency_s"]``; CSV, JSON, markdown and DataFrames render it byte for byte as
before) and also answers by attribute, typed, with the unit in the name: ``row.latency_s``,
``row.throughput_img_s``, ``row.fits``, ``row.error_band``.

- :class:`Row`: every command's identity (``model``, ``batch_size``, ``params``, ``macs`` ...),
  ``status`` and ``warnings`` (as :class:`~vitbench.row_warnings.RowWarning` objects);
- :class:`PredictionRow`: a row of :func:`vitbench.predict` (``latency_s``, ``components_s``,
  ``error_band``, the training run's ``train_hours`` and ``cost`` ...);
- :class:`ChoiceRow`: a row of :func:`vitbench.choose` (``fits``, ``global_batch_size``,
  ``allreduce_exposed_s`` ...);
- :class:`MeasuredRow`: a row of :func:`vitbench.profile` (``latency_p50_s``, ``peak_memory_bytes`` ...).

An attribute reads its column when asked (a column the row lacks reads as None), so a row
changed by key answers by attribute with the change. Attributes are read-only: a column is set
by key. Pure Python, the bottom layer (no torch, nothing above the records).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

from vitbench.row_status import RowStatus, has_result
from vitbench.row_warnings import RowWarning, normalize

T = TypeVar("T")

#: the components of a predicted step, each a ``pred_<component>_s`` column
COMPONENTS = ("attention", "linear", "conv", "elementwise", "optimizer", "overhead")


class Column(Generic[T]):
    """A row's column as a typed, read-only attribute: ``latency_s = Column("pred_latency_s",
    "one step at the batch")`` reads ``row.get("pred_latency_s")``."""

    def __init__(self, key: str, doc: str = "") -> None:
        self.key = key
        self.__doc__ = f"``{key}``: {doc}" if doc else f"``{key}``"

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, row: None, owner: type) -> Column[T]: ...

    @overload
    def __get__(self, row: Row, owner: type) -> T: ...

    def __get__(self, row: Row | None, owner: type) -> Any:
        if row is None:
            return self
        return row.get(self.key)

    def __set__(self, row: Row, value: Any) -> None:
        raise AttributeError(f"{self.name} is read-only; set the column instead: row[{self.key!r}] = ...")


class StatusColumn(Column[RowStatus | None]):
    """The ``status`` column as a :class:`~vitbench.row_status.RowStatus` (text read back from a
    file becomes its member; text that names none, from a hand-made file, is given as it is)."""

    def __get__(self, row: Row | None, owner: type) -> Any:
        value = super().__get__(row, owner)
        if row is None or value is None:
            return value
        try:
            return RowStatus(value)
        except ValueError:
            return value


def columns_of(row_type: type) -> dict[str, Column]:
    """The typed attributes of ``row_type`` (its own and inherited), by attribute name."""
    found: dict[str, Column] = {}
    for klass in reversed(row_type.__mro__):
        found.update({name: value for name, value in vars(klass).items() if isinstance(value, Column)})
    return found


class Row(dict):
    """One result row: a dict of columns with typed attributes for every command's identity."""

    __slots__ = ()

    model: Column[str | None] = Column("model", "the model's name (a preset, a reference, or a module's class)")
    source: Column[str | None] = Column("source", "where the model came from: preset, spec, torchvision, timm, hf, py, module")
    kind: Column[str | None] = Column("kind", "the model's family: vit, resnet, cnn, swin, convnext ...")
    overrides: Column[str | None] = Column("overrides", "the spec fields changed, as text (depth=13)")
    img_size: Column[int | None] = Column("img_size", "the input's side, in pixels")
    patch_size: Column[int | None] = Column("patch_size", "a ViT's patch side, in pixels")
    batch_size: Column[int | None] = Column("batch_size", "images per step")
    params: Column[int | None] = Column("params", "parameters (exact count)")
    macs: Column[int | None] = Column("macs", "multiply-accumulates of one forward pass of the batch (exact count)")
    device: Column[str | None] = Column("device", "where the row's step runs or is priced")
    mode: Column[str | None] = Column("mode", "infer (forward) or train (forward, loss, backward, optimizer step)")
    precision: Column[str | None] = Column("precision", "fp32, tf32, bf16 or fp16")
    status: StatusColumn = StatusColumn("status", "ok, or why the row has no result: refused, error, oom, invalid")
    error: Column[str | None] = Column("error", "the reason of a row that is not ok")

    @property
    def ok(self) -> bool:
        """Whether the row has its result (``status == "ok"``; a row without a status is ok)."""
        return has_result(self)

    @property
    def warnings(self) -> tuple[RowWarning, ...]:
        """The row's warnings (``warnings`` column), each with its code, message and advice."""
        return tuple(RowWarning(w["code"], w["message"], w["advice"]) for w in normalize(self.get("warnings")))


@dataclass(frozen=True)
class ErrorBand:
    """How far to trust a GPU prediction: the median and the 90th percentile of
    ``|predicted / measured - 1|`` that the validation found for such models on such a card
    (fractions: 0.13 is 13%), and which measurements those are (``basis``). ``median`` and
    ``p90`` are None when no validation covers the case (``basis`` says so)."""

    median: float | None
    p90: float | None
    basis: str

    def bounds(self, value: float, quantile: str = "median") -> tuple[float, float] | None:
        """``value`` less and plus its error at ``quantile`` (``median`` or ``p90``): ``(value *
        (1 - e), value * (1 + e))``; None when the band is unknown."""
        error = self.median if quantile == "median" else self.p90
        return None if error is None else (value * (1 - error), value * (1 + error))

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> ErrorBand | None:
        """The band of a prediction row (``pred_error_median``, ``pred_error_p90``,
        ``pred_error_basis``); None for a row without one (the CPU's, a refused row)."""
        if row.get("pred_error_basis") is None and row.get("pred_error_median") is None:
            return None
        return cls(row.get("pred_error_median"), row.get("pred_error_p90"), row.get("pred_error_basis") or "")


class PredictionRow(Row):
    """A row of :func:`vitbench.predict`: the predicted step, what bounds it, the training run."""

    __slots__ = ()

    latency_s: Column[float | None] = Column("pred_latency_s", "one step at the batch, predicted (profile's latency_p50_s)")
    throughput_img_s: Column[float | None] = Column("pred_throughput_img_s", "images per second: batch / latency_s")
    bound: Column[str | None] = Column("pred_bound", "what bounds the GPU step: host, compute or memory")
    host_s: Column[float | None] = Column("pred_host_s", "the GPU host's dispatch of the step, alone")
    device_s: Column[float | None] = Column("pred_device_s", "the GPU's kernels of the step, alone")
    optimizer: Column[str | None] = Column("optimizer", "a training step's optimizer (None for inference)")
    threads: Column[int | None] = Column("threads", "CPU threads of the calibration priced")
    steps_per_epoch: Column[int | None] = Column("pred_steps_per_epoch", "steps of one epoch")
    epoch_s: Column[float | None] = Column("pred_epoch_s", "one epoch (with epochs and dataset_size)")
    train_hours: Column[float | None] = Column("pred_train_hours", "the training run, in hours")
    cost: Column[float | None] = Column("pred_cost", "the training run's price (with a price of an hour)")
    measured_latency_s: Column[float | None] = Column("measured_latency_s", "the measured step of the same configuration")
    ratio: Column[float | None] = Column("pred_ratio", "predicted / measured step")
    basis: Column[str | None] = Column("pred_basis", "what the price rests on: the calibration or the GPU model")
    cost_basis: Column[str | None] = Column("cost_basis", "predicted or measured: the step the cost is from")

    @property
    def components_s(self) -> dict[str, float]:
        """The step's components (attention, linear, conv, elementwise, optimizer, overhead),
        seconds each, as the row has them; on the CPU they sum to ``latency_s``."""
        return {c: self[f"pred_{c}_s"] for c in COMPONENTS if self.get(f"pred_{c}_s") is not None}

    @property
    def error_band(self) -> ErrorBand | None:
        """The validation's error band of a GPU prediction (None on the CPU)."""
        return ErrorBand.of(self)


class ChoiceRow(PredictionRow):
    """A row of :func:`vitbench.choose`: one card, its batch, whether it fits, the data-parallel
    step over ``gpus`` x ``nodes`` cards and the run's time and cost (``latency_s`` is that step)."""

    __slots__ = ()

    fits: Column[bool | None] = Column("fits", "whether the batch's predicted peak fits the card (None: not checked)")
    note: Column[str | None] = Column("note", "why a card has no time (it does not fit, ...)")
    gpus: Column[int | None] = Column("gpus", "cards per node")
    nodes: Column[int | None] = Column("nodes", "nodes")
    global_batch_size: Column[int | None] = Column("global_batch_size", "images per step over every card")
    max_batch_size: Column[int | None] = Column("max_batch_size", "the largest batch that fits one card")
    peak_memory_bytes: Column[int | None] = Column("pred_peak_memory_bytes", "the step's predicted peak on one card")
    memory_budget_bytes: Column[int | None] = Column("memory_budget_bytes", "the card's memory less the reserve")
    device_memory_bytes: Column[int | None] = Column("device_memory_bytes", "the card's memory")
    step_one_gpu_s: Column[float | None] = Column("pred_step_one_gpu_s", "one card's step at the batch")
    allreduce_s: Column[float | None] = Column("pred_allreduce_s", "the gradients' all-reduce")
    allreduce_exposed_s: Column[float | None] = Column("pred_allreduce_exposed_s", "the all-reduce not hidden by backward")
    price_per_hour: Column[float | None] = Column("price_per_hour", "the price of one card's hour")


class MeasuredRow(Row):
    """A row of :func:`vitbench.profile`: one configuration measured on this machine."""

    __slots__ = ()

    latency_p50_s: Column[float | None] = Column("latency_p50_s", "the median step")
    latency_p90_s: Column[float | None] = Column("latency_p90_s", "the 90th percentile step")
    latency_iqr_s: Column[float | None] = Column("latency_iqr_s", "the steps' interquartile range")
    throughput_img_s: Column[float | None] = Column("throughput_img_s", "images per second: batch / latency_p50_s")
    peak_memory_bytes: Column[int | None] = Column("peak_memory_bytes", "the step's measured peak memory")
    run_medians_s: Column[list[float] | None] = Column("run_medians_s", "each worker run's median step")
    threads: Column[int | None] = Column("threads", "CPU threads used")
    mfu: Column[float | None] = Column("mfu", "model FLOP/s over the device's peak")


def typed(rows: Any, row_type: type[Row] = Row) -> list[Row]:
    """Each row of ``rows`` as ``row_type`` (a row already of that type is kept as it is)."""
    return [row if type(row) is row_type else row_type(row) for row in rows]


__all__ = ["COMPONENTS", "ChoiceRow", "Column", "ErrorBand", "MeasuredRow", "PredictionRow", "Row", "columns_of", "typed"]
