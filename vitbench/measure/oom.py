"""Out-of-memory: recognising it, releasing memory after it, and an artificial memory cap."""

from __future__ import annotations

import contextlib
import gc
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeVar

from vitbench.errors import ModelError
from vitbench.measure.allocator import glibc
from vitbench.procfs import proc_bytes

if TYPE_CHECKING:
    from vitbench.measure.step_thread import InlineSteps, StepThread

T = TypeVar("T")

_CPU_OOM = re.compile(r"can't allocate memory|not enough memory|out of memory|Cannot allocate memory", re.I)
#: oneDNN failing to allocate its primitive (JIT code, scratchpad) reads only "could not create a
#: primitive [descriptor]": under a memory cap that is running out of memory (and it leaves the
#: thread unable to create primitives: vitbench.measure.step_thread)
_ONEDNN_FAILURE = re.compile(r"could not create a primitive", re.I)


def is_oom(exc: BaseException, capped: bool = False) -> bool:
    """True for CUDA ``OutOfMemoryError``, ``MemoryError`` and the CPU allocator's failure
    ("DefaultCPUAllocator: can't allocate memory"); with ``capped`` (the step ran under a
    memory cap) also oneDNN's "could not create a primitive", which is how an allocation
    failing inside oneDNN surfaces."""
    if isinstance(exc, ModelError) and exc.__cause__ is not None:  # the model's build or step ran out
        return is_oom(exc.__cause__, capped)
    if isinstance(exc, MemoryError):
        return True
    if capped and isinstance(exc, RuntimeError) and _ONEDNN_FAILURE.search(str(exc)):
        return True
    try:
        import torch

        if isinstance(exc, torch.cuda.OutOfMemoryError):
            return True
    except ImportError:  # pragma: no cover
        pass
    return isinstance(exc, RuntimeError) and bool(_CPU_OOM.search(str(exc)))


def error_text(exc: BaseException, limit: int = 300) -> str:
    """One line naming the exception: ``OutOfMemoryError: CUDA out of memory. Tried ...``; for a
    :class:`~vitbench.errors.ModelError`, what the model's code raised."""
    if isinstance(exc, ModelError) and exc.__cause__ is not None:
        exc = exc.__cause__
    text = " ".join(str(exc).split())
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{exc.__class__.__name__}: {text}" if text else exc.__class__.__name__


def release_memory(device: str) -> None:
    """Drop unreachable objects (tracebacks keep tensors alive) and the CUDA cache."""
    gc.collect()
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def _vm_data_bytes() -> int | None:
    """This process's private writable memory (VmData, Linux), which RLIMIT_DATA limits."""
    return proc_bytes("/proc/self/status", "VmData")


def _malloc_trim() -> None:
    """Return free heap memory to the OS (glibc), so that it is not silently reused under a cap."""
    found = glibc()
    if found is not None:
        found[0].malloc_trim(0)


#: RLIMIT_DATA headroom on the CPU beyond the limit: half of it, at least this
MIN_CPU_HEADROOM = 64 * 2**20


def cpu_headroom(limit_bytes: int) -> int:
    """Bytes of mappings beyond the tensors' limit that a CPU cap allows (the C allocator's
    fragmentation and oneDNN's buffers; a large inference batch fragments the heap most):
    max(MIN_CPU_HEADROOM, limit / 2)."""
    return max(MIN_CPU_HEADROOM, limit_bytes // 2)


class MemoryCap:
    """A memory cap of ``limit_bytes`` beyond what the process holds when the cap is created:
    create it before the first allocation of what it caps, then run each capped block under
    :meth:`applied`. The level is fixed at creation, so memory that earlier blocks freed but the
    C allocator kept cannot be reused beyond it.

    CUDA: ``torch.cuda.set_per_process_memory_fraction((reserved + limit + headroom) / total)``
    (the caching allocator raises ``OutOfMemoryError`` past it). The fraction bounds what the
    allocator *reserves*: segments of 2 and 20 MiB and rounded large blocks, which can
    exceed the tensors' peak by a large fraction, so a cap at the limit itself would fail
    batches whose tensors fit. The same headroom as on the CPU applies, and the tensors' peak
    (``max_memory_allocated``) is checked against the limit itself.
    CPU (Linux): the soft ``RLIMIT_DATA`` at the data size (VmData) plus the limit plus
    ``cpu_headroom(limit)`` (the CPU allocator then fails with "can't allocate memory", oneDNN
    with "could not create a primitive"). RLIMIT_DATA counts mappings, not tensors: the C
    allocator's fragmentation and oneDNN's primitives and scratchpads (more with more threads)
    count too, so a cap at the limit itself would fail configurations whose tensors fit. The
    headroom keeps those from failing; the tensors' measured peak is checked against the limit
    itself (``vitbench.measure.single``).

    ``steps`` (a :mod:`vitbench.measure.step_thread` runner, created before the cap) is where
    :meth:`run` runs capped blocks; :meth:`recover` replaces its thread after one ran out of
    memory. Without it blocks run in the calling thread."""

    def __init__(self, device: str, limit_bytes: int | None, headroom: bool = True,
                 steps: InlineSteps | StepThread | None = None):
        self.device = device
        self.limit_bytes = limit_bytes
        self.headroom = headroom
        self.steps = steps
        self.level: int | None = None  # bytes: the data size (CPU) or reserved memory (CUDA) allowed
        if limit_bytes is not None:
            self.level = self._held() + self._allowance()

    def strict(self) -> MemoryCap:
        """The same limit without the CPU headroom, from what the process holds now: what a
        search for the largest batch runs its probes under, so that a probe that fits leaves
        room for the tensors alone. Its blocks run on the same step thread."""
        return MemoryCap(self.device, self.limit_bytes, headroom=False, steps=self.steps)

    def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` under the cap, on the step thread (or here, without one)."""

        def capped() -> T:
            with self.applied():
                return fn()

        return capped() if self.steps is None else self.steps.call(capped)

    def recover(self) -> None:
        """After a block ran out of memory: drop what can be dropped, replace the step thread
        (oneDNN's per-thread state may be broken), and :meth:`rebase`."""
        release_memory(self.device)
        if self.steps is not None:
            self.steps.renew()
        self.rebase()

    def _allowance(self) -> int:
        if not self.headroom:
            return self.limit_bytes
        return self.limit_bytes + cpu_headroom(self.limit_bytes)

    def _held(self) -> int:
        """Bytes the process holds now, as the cap counts them (after dropping what it can)."""
        gc.collect()
        if self.device.startswith("cuda"):
            import torch

            torch.cuda.empty_cache()  # cached free blocks would otherwise be reused beyond the cap
            return torch.cuda.memory_reserved(torch.cuda.current_device())
        _malloc_trim()
        current = _vm_data_bytes()
        if current is None:
            raise OSError("memory_limit_bytes needs Linux (/proc/self/status) on the CPU")
        return current

    def rebase(self) -> None:
        """After an attempt that ran out of memory: memory it freed but the C allocator keeps
        mapped (a fragmented heap) still counts towards RLIMIT_DATA, and would make every later
        attempt fail. Raise the level to what is held now plus the limit; what the later
        attempts' tensors really use is the measured peak, checked against the limit."""
        if self.limit_bytes is not None:
            self.level = max(self.level or 0, self._held() + self._allowance())

    @contextlib.contextmanager
    def applied(self) -> Iterator[None]:
        if self.level is None:
            yield
            return
        if self.device.startswith("cuda"):
            import torch

            index = torch.cuda.current_device()
            total = torch.cuda.get_device_properties(index).total_memory
            torch.cuda.set_per_process_memory_fraction(min(1.0, self.level / total), index)
            try:
                yield
            finally:
                torch.cuda.set_per_process_memory_fraction(1.0, index)
            return
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        level = self.level if hard == resource.RLIM_INFINITY else min(self.level, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (level, hard))
        try:
            yield
        finally:
            resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


@contextlib.contextmanager
def memory_cap(device: str, limit_bytes: int | None) -> Iterator[None]:
    """Make allocations beyond about ``limit_bytes`` (more than now) fail, then lift the cap
    (a :class:`MemoryCap` created and applied at once)."""
    with MemoryCap(device, limit_bytes).applied():
        yield
