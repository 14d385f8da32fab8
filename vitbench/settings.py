"""What to run and how: the run choices, defined here and nowhere else, and
:class:`RunSettings` (how one configuration is measured), validated on construction.
No torch import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar

from vitbench.errors import SpecError
from vitbench.specs.vit import ATTENTIONS

#: where a measurement runs: ``auto`` = CUDA when available, else the CPU
DEVICES = ("auto", "cpu", "cuda")
#: ``infer`` = one forward pass; ``train`` = forward, loss, backward, optimizer step
MODES = ("infer", "train")
#: ``fp32``, or bf16 / fp16 autocast (weights stay fp32)
PRECISIONS = ("fp32", "bf16", "fp16")
#: ``sgd`` = plain SGD; ``sgd-momentum`` = SGD with momentum 0.9; ``adamw`` = AdamW
OPTIMIZERS = ("adamw", "sgd", "sgd-momentum")
#: the traced counters (the analytic model is not a counter)
COUNTERS = ("fvcore", "dispatch")
#: what ``analyze --counters`` may ask for: the formulas and the traced counters
COUNT_METHODS = ("analytic", *COUNTERS)
#: fresh worker processes per measured configuration by default: the per-run medians are the
#: replicates of the gate's between-run test, and one disturbed run of five moves their median
#: little (pyperf runs 20 processes; 5 keeps a profile of one model under half a minute)
DEFAULT_RUNS = 5
#: what a timing sample measures: ``wall`` = elapsed time (what a user waits for); ``cpu`` = the
#: process's CPU time per thread (what the step costs when it has the cores to itself: on a
#: time-shared machine it grows far less than wall time; Google Benchmark's default clock). CPU only.
CLOCKS = ("wall", "cpu")
#: the host allocator during a measurement: ``system`` (the default) = glibc's malloc as the user's
#: own process has it, so a step costs what a plain PyTorch loop measures; ``steady`` = glibc malloc
#: with fixed mmap and trim thresholds (no page-fault churn that varies from process to process:
#: lower noise between runs, for comparisons measured the same way, but ~10% faster steps than a
#: plain loop on some models)
ALLOCATORS = ("system", "steady")
#: the most CPU threads the default thread count uses (``default_threads``)
DEFAULT_MAX_THREADS = 4
#: the stages of a sweep row
STAGES = ("analytic", "counters", "predict", "measured")
#: how a sweep runs: ``local`` = this process; ``gpus`` = one worker per GPU; ``submitit`` = a Slurm job array
LAUNCHERS = ("local", "gpus", "submitit")
#: the precisions ``predict`` prices (tf32: fp32 on a GPU's tensor cores)
PREDICT_PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
#: how ``choose`` orders the cards: the step's time, or the training's cost
CHOOSE_SORTS = ("time", "cost")
#: the measuring paths ``vitbench selftest`` checks
SELFTEST_CHECKS = ("environment", "timing", "attention-kernel", "peak-memory", "oom", "batch-size-auto", "trace", "isolate")

__all__ = [
    "ALLOCATORS",
    "ATTENTIONS",
    "CLOCKS",
    "COUNTERS",
    "COUNT_METHODS",
    "DEFAULT_MAX_THREADS",
    "DEFAULT_RUNS",
    "DEVICES",
    "LAUNCHERS",
    "MODES",
    "OPTIMIZERS",
    "PRECISIONS",
    "STAGES",
    "KeywordSettings",
    "RunSettings",
    "check_batch_size",
    "default_threads",
    "settings_fields",
]

BatchSize = int | str


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _positive_number(name: str, value: Any, allow_none: bool = True, most: float = 1e30) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise SpecError(name, value, "must be a positive number")
    if value > most:
        raise SpecError(name, value, f"must be at most {most:g}")


#: the longest a run's timing or timeout may be asked to last (11.6 days)
MAX_SECONDS = 10**6
#: the most warm-up steps, samples and pooled runs a measurement may ask for
MAX_STEPS = 10**6


def check_batch_size(batch_size: Any, *, auto: bool = False) -> None:
    """SpecError unless ``batch_size`` is an int in [1, MAX_BATCH_SIZE] (a bool is not an int
    here), or ``'auto'`` where ``auto`` allows it. Every entry point checks a batch size with this."""
    if auto and batch_size == "auto":
        return
    if not (_is_int(batch_size) and 0 < batch_size <= MAX_BATCH_SIZE):
        raise SpecError("batch_size", batch_size, f"must be a positive integer up to {MAX_BATCH_SIZE:,}" + (" or 'auto'" if auto else ""))


def default_threads(cpus: int) -> int:
    """The CPU thread count a measurement uses when none is given: the CPUs this process may run
    on, at most :data:`DEFAULT_MAX_THREADS`. Fixed by the machine, never by its load at the start,
    so the same command measures with the same count whenever it runs.

        threads = min(max(1, cpus), DEFAULT_MAX_THREADS)"""
    return min(max(1, cpus), DEFAULT_MAX_THREADS)


#: the most intra-op threads a run may ask for (libgomp crashed at 100,000)
MAX_THREADS = 1024
#: the largest batch size anything accepts (a tensor dimension of 2^31 images is already absurd)
MAX_BATCH_SIZE = 2**31 - 1


@dataclass(frozen=True)
class RunSettings:
    """How one configuration is measured.

    ``batch_size='auto'``: the largest batch the memory model (``vitbench plan``) predicts to fit
    the memory budget (``memory_limit_bytes``, else the machine's available memory), verified by
    running it and backed off while it does not fit. ``threads=None``: on the CPU, :func:`default_threads`
    of the CPUs this process may use (at most :data:`DEFAULT_MAX_THREADS`; never the load at the
    start); the count used is the row's ``threads`` column (``threads_auto`` when defaulted). ``runs``: fresh worker
    processes per configuration, pooled (``run_medians_s`` carries the between-run spread);
    ``runs=1`` with ``isolate=False`` measures in this process. ``timeout_s`` applies to each
    worker (a timeout alone makes the run a worker). ``memory_limit_bytes``: a cap from the
    first allocation (a fraction of the GPU, or an RLIMIT_DATA data limit on the CPU) that the
    measured peak is verified against. ``memory_check``: refuse, without running, a
    configuration the memory model predicts over the cap or over the machine's memory.
    ``clock``: what the timing samples measure (``CLOCKS``: wall time, or the process's CPU
    time per thread, which a busy machine inflates far less). ``allocator``: ``system`` (the default)
    leaves glibc malloc as the user's process has it (what a plain training loop measures);
    ``steady`` fixes its thresholds for the run (:mod:`vitbench.measure.allocator`: less noise
    between runs, faster steps than a plain loop on some models).
    ``peak_flops`` / ``peak_bandwidth`` (FLOP/s, bytes/s) override the device table (needed for
    MFU on a CPU); ``max_batch_size`` bounds the auto batch size."""

    device: str = "auto"
    mode: str = "infer"
    batch_size: BatchSize = 1
    precision: str = "fp32"
    channels_last: bool = False
    compile: bool = False
    attention: str | None = None
    threads: int | None = None
    optimizer: str = "adamw"
    min_run_time_s: float = 1.0
    warmup: int = 3
    memory: bool = True
    trace_dir: str | None = None
    isolate: bool = False
    peak_flops: float | None = None
    peak_bandwidth: float | None = None
    memory_limit_bytes: int | None = None
    max_batch_size: int = 4096
    min_samples: int = 5
    timeout_s: float | None = None
    runs: int = DEFAULT_RUNS
    memory_check: bool = True
    clock: str = "wall"
    allocator: str = "system"

    def __post_init__(self) -> None:
        self._check_choices()
        self._check_counts()
        self._check_numbers()
        if self.device == "cuda" and self.clock == "cpu":
            raise SpecError("clock", "cpu", "the CPU-time clock is for --device cpu (on CUDA the CPU only launches kernels)")
        if self.device == "cpu" and self.precision == "fp16":
            raise SpecError(
                "precision", "fp16", "fp16 autocast needs --device cuda; use bf16 or fp32 on the CPU"
            )

    def _check_choices(self) -> None:
        for name, choices in (
            ("device", DEVICES),
            ("mode", MODES),
            ("precision", PRECISIONS),
            ("attention", (None, *ATTENTIONS)),
            ("optimizer", OPTIMIZERS),
            ("clock", CLOCKS),
            ("allocator", ALLOCATORS),
        ):
            if getattr(self, name) not in choices:
                shown = ", ".join("none" if c is None else c for c in choices)
                raise SpecError(name, getattr(self, name), f"must be one of {shown}")
        for name in ("channels_last", "compile", "memory", "isolate", "memory_check"):
            if not isinstance(getattr(self, name), bool):
                raise SpecError(name, getattr(self, name), "must be true or false")

    def _check_counts(self) -> None:
        check_batch_size(self.batch_size, auto=True)
        if self.threads is not None and not (_is_int(self.threads) and 0 < self.threads <= MAX_THREADS):
            # 100,000 threads crashed libgomp (SIGSEGV) instead of failing
            raise SpecError("threads", self.threads, f"must be a positive integer up to {MAX_THREADS}")
        for name in ("warmup", "min_samples", "runs"):
            if not (_is_int(getattr(self, name)) and getattr(self, name) >= 1):
                raise SpecError(name, getattr(self, name), "must be an integer >= 1")
            if getattr(self, name) > MAX_STEPS:
                raise SpecError(name, getattr(self, name), f"must be at most {MAX_STEPS:,}")
        if not (_is_int(self.max_batch_size) and 1 <= self.max_batch_size <= MAX_BATCH_SIZE):
            raise SpecError("max_batch_size", self.max_batch_size, f"must be a positive integer up to {MAX_BATCH_SIZE:,}")

    def _check_numbers(self) -> None:
        _positive_number("min_run_time_s", self.min_run_time_s, allow_none=False, most=MAX_SECONDS)
        _positive_number("timeout_s", self.timeout_s, most=MAX_SECONDS)
        for name in ("peak_flops", "peak_bandwidth"):
            _positive_number(name, getattr(self, name))
        if self.memory_limit_bytes is not None and not (
            _is_int(self.memory_limit_bytes) and 0 < self.memory_limit_bytes <= 2**60
        ):
            raise SpecError("memory_limit_bytes", self.memory_limit_bytes, "must be a positive integer up to 2^60 (1 EiB)")

    @property
    def in_worker(self) -> bool:
        """Whether each run happens in a fresh worker process (``vitbench.measure.worker``)."""
        return self.runs > 1 or self.isolate or self.timeout_s is not None

    def replace(self, **changes: Any) -> RunSettings:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSettings:
        known = {f.name for f in fields(cls)}
        for name, value in data.items():
            if name not in known:
                raise SpecError(name, value, "unknown run setting")
        return cls(**data)


S = TypeVar("S", bound="KeywordSettings")


class KeywordSettings:
    """What a command's frozen settings dataclass shares (:class:`PredictSettings`,
    :class:`ChooseSettings`, :class:`SweepSettings`): the command's keyword arguments split into
    its settings and the rest, and a validated copy with changes."""

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The names of the settings' fields (the keyword arguments the command takes for them)."""
        return tuple(f.name for f in fields(cls))  # type: ignore[arg-type]

    @classmethod
    def split(cls: type[S], settings: S | None, keywords: Mapping[str, Any]) -> tuple[S, dict[str, Any]]:
        """``(settings, rest)`` from a command's keyword arguments: those that name a field of
        the settings change ``settings`` (the defaults when None); the rest are the command's to
        use (spec fields to override, ``img_size=384``, for predict and choose).

        Raises:
            SpecError: a field's value is wrong (the settings validate themselves; a sweep's
                say so as a SweepFileError or StoreError).
            TypeError: ``settings`` is not of this class.
        """
        if settings is not None and not isinstance(settings, cls):
            raise TypeError(f"settings must be a {cls.__name__}, got {type(settings).__name__}")
        names = set(cls.field_names())
        changes = {k: v for k, v in keywords.items() if k in names}
        rest = {k: v for k, v in keywords.items() if k not in names}
        if settings is None:
            return cls(**changes), rest
        return (replace(settings, **changes) if changes else settings), rest  # type: ignore[type-var]

    def replace(self: S, **changes: Any) -> S:
        """A copy with ``changes``, validated again."""
        return replace(self, **changes)  # type: ignore[type-var]


def settings_fields() -> tuple[str, ...]:
    return tuple(f.name for f in fields(RunSettings))
