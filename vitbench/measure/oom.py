"""Out-of-memory: recognising it, releasing memory after it, and an artificial memory cap."""

from __future__ import annotations

import contextlib
import gc
import re
from collections.abc import Iterator

_CPU_OOM = re.compile(r"can't allocate memory|not enough memory|out of memory|Cannot allocate memory", re.I)


def is_oom(exc: BaseException) -> bool:
    """True for CUDA ``OutOfMemoryError``, ``MemoryError`` and the CPU allocator's failure
    ("DefaultCPUAllocator: can't allocate memory")."""
    if isinstance(exc, MemoryError):
        return True
    try:
        import torch

        if isinstance(exc, torch.cuda.OutOfMemoryError):
            return True
    except ImportError:  # pragma: no cover
        pass
    return isinstance(exc, RuntimeError) and bool(_CPU_OOM.search(str(exc)))


def error_text(exc: BaseException, limit: int = 300) -> str:
    """One line naming the exception: ``OutOfMemoryError: CUDA out of memory. Tried ...``."""
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
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _malloc_trim() -> None:
    """Return free heap memory to the OS (glibc), so that it is not silently reused under a cap."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


@contextlib.contextmanager
def memory_cap(device: str, limit_bytes: int | None) -> Iterator[None]:
    """Make allocations beyond about ``limit_bytes`` (more than now) fail, then lift the cap.

    CUDA: ``torch.cuda.set_per_process_memory_fraction(limit / total)`` (the caching allocator
    raises ``OutOfMemoryError`` past it). CPU (Linux): the soft ``RLIMIT_DATA`` is set to the
    current data size plus ``limit_bytes`` (the CPU allocator then fails with "can't allocate
    memory"); it counts mappings, not touched pages, and free memory the C allocator keeps mapped
    is reused without counting (it is trimmed first), so treat it as approximate."""
    if limit_bytes is None:
        yield
        return
    if device.startswith("cuda"):
        import torch

        index = torch.cuda.current_device()
        gc.collect()
        torch.cuda.empty_cache()  # cached free blocks would otherwise be reused beyond the cap
        total = torch.cuda.get_device_properties(index).total_memory
        used = torch.cuda.memory_reserved(index)
        torch.cuda.set_per_process_memory_fraction(min(1.0, (used + limit_bytes) / total), index)
        try:
            yield
        finally:
            torch.cuda.set_per_process_memory_fraction(1.0, index)
        return
    import resource

    gc.collect()
    _malloc_trim()
    current = _vm_data_bytes()
    if current is None:
        raise OSError("memory_limit_bytes needs Linux (/proc/self/status) on the CPU")
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    new = current + limit_bytes
    if hard != resource.RLIM_INFINITY:
        new = min(new, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (new, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
