"""What ``predict`` and ``choose`` are asked, as frozen settings validated once:
:class:`PredictSettings` and :class:`ChooseSettings`. The CLI builds them from its flags; the API
takes one (``vitbench.predict(models, PredictSettings(...))``) or builds it from keyword arguments
(``vitbench.predict(models, device="h100", batch_size=[1, 64])``): either way the checks here are
the only ones, and a wrong value is one :class:`~vitbench.errors.SpecError` naming the field.

Files named by a setting (a calibration, a price file, measured results) are read when the
command runs, not here. Pure Python: no torch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from vitbench.errors import SpecError
from vitbench.settings import CHOOSE_SORTS, MAX_THREADS, MODES, OPTIMIZERS, PREDICT_PRECISIONS, KeywordSettings, check_batch_size
from vitbench.timemodel.gpus import GPU_DEVICES, gpu
from vitbench.timemodel.host import parse_host_dispatch
from vitbench.timemodel.interconnect import LINKS, MAX_GPUS_PER_NODE, MAX_NODES
from vitbench.timemodel.prices import device_prices

#: the most worker processes a prediction may trace in (``PredictSettings.jobs``)
MAX_JOBS = 256

#: every device a prediction prices: this machine's CPU and GPU, and the catalogue's GPUs
PREDICT_DEVICES = ("cpu", "cuda", *GPU_DEVICES)
#: the most epochs and images per epoch a training cost may ask for (costs a float holds)
MAX_EPOCHS = 10**6
MAX_DATASET_SIZE = 10**13


def check_device(device: str) -> str:
    """The canonical name of a prediction device.

    Args:
        device: ``cpu``, ``cuda`` or a catalogue GPU, any alias or case (``H100``, ``a100-80gb``).

    Returns:
        The device's catalogue key (``h100``), or ``cpu`` / ``cuda``.

    Raises:
        SpecError: an unknown device, the known ones listed.
    """
    name = device.strip().lower() if isinstance(device, str) else None
    if name in ("cpu", "cuda"):
        return name
    spec = gpu(name) if name else None
    if spec is None:
        raise SpecError("device", device, f"unknown device; known: {', '.join(PREDICT_DEVICES)} "
                                          "(`vitbench devices` lists the GPUs and their numbers)")
    return spec.key


def check_devices(device: Any) -> list[str]:
    """Devices from ``'a100,h100'`` or a list of names, each checked, in order, once each.

    Args:
        device: comma-separated names, or a list or tuple of names.

    Returns:
        The canonical names (:func:`check_device`), duplicates dropped.

    Raises:
        SpecError: no device, or an unknown one.
    """
    values = device.split(",") if isinstance(device, str) else list(device) if isinstance(device, (list, tuple)) else [device]
    if not values or values == [""]:
        raise SpecError("device", device, "needs at least one device")
    return list(dict.fromkeys(check_device(each) for each in values))


def values_of(name: str, value: Any, choices: tuple[str, ...] | None = None) -> tuple[Any, ...]:
    """``value`` (one, or a list or tuple of several) as a tuple, each among ``choices`` (a batch
    size: checked as one); SpecError naming ``name`` otherwise."""
    values = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    if not values:
        raise SpecError(name, value, "needs at least one value")
    for each in values:
        if choices is not None and each not in choices:
            raise SpecError(name, each, f"must be one of {', '.join(choices)}")
        if name == "batch_size":
            check_batch_size(each)
    return values


def check_positive(name: str, value: Any, most: float, integer: bool = False) -> None:
    """SpecError unless ``value`` is None or a positive finite number (an int with ``integer``)
    up to ``most``."""
    if value is None:
        return
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not value > 0 or value != value or value == float("inf"):
        raise SpecError(name, value, "must be a positive " + ("integer" if integer else "number"))
    if value > most:  # 10^400 images, 1e308 epochs: costs no float holds
        raise SpecError(name, value, f"must be at most {most:,.0f}")


def check_flag(name: str, value: Any) -> None:
    """SpecError unless ``value`` is True or False."""
    if not isinstance(value, bool):
        raise SpecError(name, value, "must be true or false")


def check_precisions(devices: tuple[str, ...], precisions: tuple[str, ...]) -> None:
    """SpecError for a precision a device cannot run: fp16 and tf32 on the CPU, bf16 or tf32 on
    a card without such tensor cores."""
    for device in devices:
        if device == "cpu":
            for precision in ("fp16", "tf32"):
                if precision in precisions:
                    raise SpecError("precision", precision, f"{precision} needs a GPU; use bf16 or fp32 on the CPU")
            continue
        spec = gpu(device)
        for precision, dtype in (("bf16", "bfloat16"), ("tf32", "tf32")) if spec is not None else ():
            if precision in precisions and not (spec.tf32_tflops if dtype == "tf32" else spec.peak_flops(dtype)):
                raise SpecError("precision", precision, f"{spec.name} ({spec.generation}) has no {precision} tensor cores")


def check_training_cost(epochs: Any, dataset_size: Any, price: Any, price_field: str) -> None:
    """SpecError unless ``epochs`` and ``dataset_size`` are both given (or both None) and valid,
    and a ``price`` comes with them."""
    check_positive("epochs", epochs, MAX_EPOCHS)
    check_positive("dataset_size", dataset_size, MAX_DATASET_SIZE, integer=True)
    if (epochs is None) != (dataset_size is None):
        raise SpecError("epochs" if epochs is None else "dataset_size", None,
                        "training cost needs both epochs and dataset_size")
    if price is not None and epochs is None:
        raise SpecError(price_field, price, "needs epochs and dataset_size")


@dataclass(frozen=True)
class PredictSettings(KeywordSettings):
    """What :func:`vitbench.predict` prices: devices x modes x batch sizes x precisions, the
    calibration, and the training run's cost. Validated on construction; ``device``, ``mode``,
    ``batch_size`` and ``precision`` hold tuples after it (one value or a list may be given;
    device names canonical), so that two settings asking the same question are equal.

    Attributes:
        device: ``cpu`` (this machine, calibrated), ``cuda`` (this machine's GPU) or catalogue
            GPUs (``vitbench devices``); several as ``"a100,h100"`` or a list: one trace,
            priced per device.
        mode: ``infer`` or ``train`` (or both).
        batch_size: images per step (one or several).
        precision: ``fp32``, ``tf32`` (GPU tensor cores), ``bf16`` or ``fp16`` (GPU).
        optimizer: ``adamw``, ``sgd`` or ``sgd-momentum`` (a training step's).
        threads: the CPU calibration's thread count (None: the default, or a given
            calibration's own); CPU only.
        calibration: a :class:`~vitbench.timemodel.calibration.schema.Calibration`, a GPU
            calibration, or the path of a calibration file (refused with the reason when it
            does not fit); None: the cache's, made on first use.
        recalibrate: calibrate the CPU again even if the cache has a calibration.
        epochs: epochs of a training run (with ``dataset_size``: ``pred_epoch_s``,
            ``pred_train_hours``).
        dataset_size: images per epoch.
        price_per_hour: an hour of one device: one price, ``"h100=2.5,a100=1.3"`` or a mapping
            (``pred_cost``; needs epochs and dataset_size).
        prices_file: a TOML price file (``docs/prices.example.toml``); ``price_per_hour``
            overrides it per device.
        measured: profile rows, or a results file of them: a configuration measured there is
            costed from its measured step (``pred_ratio`` = predicted / measured).
        reparam: the model in its deployed form (timm's ``reparameterize_model``).
        channels_last: the model and its images in channels-last memory format (NHWC), as
            ``profile --channels-last`` and NVIDIA's AMP CNN benchmarks run them: on a GPU, a
            half-precision convolution then pays none of cuDNN's NCHW relayout passes.
        trace_cache: use the trace and question caches (False: trace and resolve again).
        host_dispatch: a GPU host's time per operator: None / ``"default"`` (the documented
            host), ``"measured"`` (this machine's) or a time such as ``"12us"``.
        jobs: worker processes that resolve, count and trace the named models before pricing,
            filling the question and trace caches (1: this process does it, one model after
            another; each worker holds torch and the model library: about 1-2 GB, more while it
            builds a large model; from a script, call under ``if __name__ == "__main__":``).
    """

    device: Any = "cpu"
    mode: Any = "infer"
    batch_size: Any = 1
    precision: Any = "fp32"
    optimizer: str = "adamw"
    threads: int | None = None
    calibration: Any = None
    recalibrate: bool = False
    epochs: float | None = None
    dataset_size: int | None = None
    price_per_hour: Any = None
    prices_file: str | os.PathLike | None = None
    measured: Any = None
    reparam: bool = False
    trace_cache: bool = True
    host_dispatch: Any = None
    channels_last: bool = False
    jobs: int = 1

    def __post_init__(self) -> None:
        devices = tuple(check_devices(self.device))
        object.__setattr__(self, "device", devices)
        object.__setattr__(self, "mode", values_of("mode", self.mode, MODES))
        object.__setattr__(self, "batch_size", values_of("batch_size", self.batch_size))
        object.__setattr__(self, "precision", values_of("precision", self.precision, PREDICT_PRECISIONS))
        if self.optimizer not in OPTIMIZERS:
            raise SpecError("optimizer", self.optimizer, f"must be one of {', '.join(OPTIMIZERS)}")
        device_prices(self.price_per_hour, devices)  # the prices given here (a price file is read when it runs)
        self._check_threads()
        _check_count("jobs", self.jobs, MAX_JOBS)
        check_precisions(devices, self.precision)
        for name in ("reparam", "recalibrate", "trace_cache", "channels_last"):
            check_flag(name, getattr(self, name))
        check_training_cost(self.epochs, self.dataset_size, self.price_per_hour, "price_per_hour")
        if parse_host_dispatch(self.host_dispatch) is not None and devices == ("cpu",):
            raise SpecError("host_dispatch", self.host_dispatch, "is for GPU devices (--device h100, ...)")

    def _check_threads(self) -> None:
        threads = self.threads
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or not 0 < threads <= MAX_THREADS):
            raise SpecError("threads", threads, f"must be a positive integer up to {MAX_THREADS}")
        if "cpu" not in self.device and threads is not None:
            raise SpecError("threads", threads, "is for --device cpu")


def _check_count(name: str, value: Any, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise SpecError(name, value, f"must be a whole number from 1 to {most:,}")
    return value


@dataclass(frozen=True)
class ChooseSettings(KeywordSettings):
    """What :func:`vitbench.choose` is asked: which cards, at what batch, how many, for how long
    and at what price. Validated on construction; ``device`` holds a tuple of canonical card
    names after it.

    Attributes:
        device: the catalogue cards to compare (``"h100,a100,l4"`` or a list); required.
        mode: ``train`` (the default) or ``infer``.
        batch_size: the batch per card to check and price (None: the largest power of two that
            fits each card).
        precision: one of ``fp32``, ``tf32``, ``bf16``, ``fp16``.
        optimizer: ``adamw``, ``sgd`` or ``sgd-momentum``.
        epochs: epochs of the run (with ``dataset_size``: the run's hours and cost).
        dataset_size: images per epoch.
        price: an hour of one card: a number, ``"h100=2.5,a100=1.3"`` or a mapping.
        prices_file: a TOML price file; ``price`` overrides it per card.
        gpus: cards per node (data parallel).
        nodes: nodes.
        network_gbit_s: the network per node, Gb/s (None: the card's DGX's).
        sort: ``time`` (the run's hours, or throughput) or ``cost``.
        host_dispatch: a GPU host's time per operator (see :class:`PredictSettings`).
        trace_cache: use the trace and question caches.
    """

    device: Any
    mode: str = "train"
    batch_size: int | None = None
    precision: str = "fp32"
    optimizer: str = "adamw"
    epochs: float | None = None
    dataset_size: int | None = None
    price: Any = None
    prices_file: str | os.PathLike | None = None
    gpus: int = 1
    nodes: int = 1
    network_gbit_s: float | None = None
    sort: str = "time"
    host_dispatch: Any = None
    trace_cache: bool = True

    def __post_init__(self) -> None:
        devices = tuple(check_devices(self.device))
        object.__setattr__(self, "device", devices)
        if self.mode not in MODES:
            raise SpecError("mode", self.mode, f"must be one of {', '.join(MODES)}")
        if self.batch_size is not None:
            check_batch_size(self.batch_size)
        self._check_cards()
        device_prices(self.price, devices, field="price")  # the prices given here (a price file is read when it runs)
        if (self.epochs is None) != (self.dataset_size is None):
            raise SpecError("epochs" if self.epochs is None else "dataset_size", None,
                            "the run's time needs both epochs and dataset_size")
        check_positive("epochs", self.epochs, MAX_EPOCHS)
        check_positive("dataset_size", self.dataset_size, MAX_DATASET_SIZE, integer=True)
        if self.sort == "cost" and self.epochs is None:
            raise SpecError("sort", self.sort, "needs epochs and dataset_size (the cost of a run)")
        values_of("precision", self.precision, PREDICT_PRECISIONS)
        check_precisions(devices, (self.precision,))
        if self.optimizer not in OPTIMIZERS:
            raise SpecError("optimizer", self.optimizer, f"must be one of {', '.join(OPTIMIZERS)}")
        check_flag("trace_cache", self.trace_cache)
        parse_host_dispatch(self.host_dispatch)

    def _check_cards(self) -> None:
        for device in self.device:
            if device not in LINKS:
                raise SpecError("device", device, "choose compares GPUs of the catalogue (`vitbench devices`); "
                                                  "name the card (cpu and cuda are not cards)")
        if self.sort not in CHOOSE_SORTS:
            raise SpecError("sort", self.sort, f"must be one of {', '.join(CHOOSE_SORTS)}")
        _check_count("gpus", self.gpus, MAX_GPUS_PER_NODE)
        _check_count("nodes", self.nodes, MAX_NODES)
        network = self.network_gbit_s
        if network is not None and (isinstance(network, bool) or not isinstance(network, (int, float)) or not 0 < network < 1e6):
            raise SpecError("network_gbit_s", network, "must be a positive number of Gb/s per node, below 1,000,000")
        if self.nodes > 1 and self.mode == "train" and network is None:
            missing = [d for d in self.device if LINKS[d].network_gbit_s is None]
            if missing:
                raise SpecError("nodes", self.nodes, f"no reference network for {', '.join(missing)}: give the network "
                                                     "per node (--network-gbps, e.g. 400)")


__all__ = ["PREDICT_DEVICES", "ChooseSettings", "PredictSettings", "check_device", "check_devices"]
