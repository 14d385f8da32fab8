"""The host allocator a measurement runs with: glibc malloc in a steady state, or left as it is.

PyTorch's CPU allocator does not cache: every step's activations are ``malloc``-ed and freed.
glibc's defaults move the threshold between ``mmap``-ed and heap chunks, and trim the heap top,
as the process runs (the "dynamic mmap threshold"), so whether a step's large tensors come from
fresh pages (page faults and kernel zeroing, counted in the step's time) or from reused heap
memory depends on the process's allocation history. On a 2-core VM with a busy process beside
it, the gate experiment's per-run median CPU time per step varied by 12-22% (CV) from one worker
process to the next, while blocks within one process agreed within 1%; with the thresholds
fixed, by 1.2-8.8% (``tests/test_measure_gate_e2e.py``; docs/gate.md).

``steady`` (``--allocator steady``; the default is ``system``, what a plain loop in the user's
process gets: docs/measuring.md compares the two) fixes them, as a long-running process with a caching allocator
(jemalloc, tcmalloc; the CUDA caching allocator on the GPU) would see: chunks up to
:data:`MMAP_THRESHOLD_BYTES` (glibc's largest) come from the heap, and the heap top is kept
up to :data:`TRIM_THRESHOLD_BYTES`; and every thread allocates from that one heap
(``M_ARENA_MAX`` = 1). A CPU run's steps execute on a thread of their own
(:mod:`vitbench.measure.step_thread`), and glibc gives a second thread its own arena: a chain of
64 MiB heaps whose freed pages stay mapped, so under a memory cap the same steps needed more
address space there (a tiny ViT's batch 2073 fit a 128 MiB cap 2 times in 8 on its own arena,
8 in 8 on the main heap) and, with glibc's other defaults, timed differently (a small ViT's
steps took 0.74-0.82x the main thread's time). glibc fixes the number of arenas when the first
thread arena is made, so in a process whose threads already allocated, later threads may keep
arenas of their own: ``env_malloc`` then says so. ``system`` leaves glibc's defaults. The setting is process
wide and cannot be undone (worker processes are fresh; in this process it stays in force, and a
later ``system`` run here says so). What is in force is recorded with every result
(``env_malloc``). Nothing to do on a libc other than glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import threading

from vitbench.settings import ALLOCATORS

#: glibc's M_MMAP_THRESHOLD maximum on 64-bit (HEAP_MAX_SIZE / 2 = 32 MiB)
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
TRIM_THRESHOLD_BYTES = 1024 * 1024 * 1024
#: one arena: every thread allocates from the main heap
ARENA_MAX = 1

#: what the steady setting made of this process, once set (there is no undoing it)
_steady_in_force: str | None = None
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8


@functools.lru_cache(maxsize=1)
def glibc():
    """(glibc's handle, its version), or None (another libc, or no mallopt / malloc_trim)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version.restype = ctypes.c_char_p
        version = libc.gnu_get_libc_version().decode()
        libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
        libc.mallopt.restype = ctypes.c_int
        libc.malloc_trim.argtypes = (ctypes.c_size_t,)
        libc.malloc.argtypes = (ctypes.c_size_t,)
        libc.malloc.restype = ctypes.c_void_p
        libc.free.argtypes = (ctypes.c_void_p,)
    except (OSError, AttributeError):
        return None
    return libc, version


def new_threads_share_the_main_heap() -> bool:
    """Whether a thread started now allocates from the main heap (``[heap]`` in
    /proc/self/maps), not from an arena of its own."""
    found = glibc()
    if found is None:
        return False
    libc = found[0]
    addresses: list[int] = []

    def allocate() -> None:
        address = libc.malloc(4096)
        addresses.append(address or 0)
        libc.free(address)

    probe = threading.Thread(target=allocate, name="vitbench-arena-probe")
    probe.start()
    probe.join()
    try:
        with open("/proc/self/maps", encoding="ascii") as maps:
            heaps = [line.split()[0].split("-") for line in maps if line.rstrip().endswith("[heap]")]
    except OSError:
        return False
    return any(int(lo, 16) <= addresses[0] < int(hi, 16) for lo, hi in heaps)


def apply_allocator(choice: str) -> str:
    """Set the process's allocator for ``choice`` (:data:`ALLOCATORS`); the ``env_malloc``
    text that describes what is in force."""
    if choice not in ALLOCATORS:
        raise ValueError(f"allocator must be one of {', '.join(ALLOCATORS)}, not {choice!r}")
    found = glibc()
    if found is None:
        return "system (not glibc: left as it is)"
    libc, version = found
    global _steady_in_force
    steady = (f"glibc {version} steady: mmap_threshold={MMAP_THRESHOLD_BYTES} trim_threshold={TRIM_THRESHOLD_BYTES} "
              f"arena_max={ARENA_MAX}")
    if choice == "system":
        # glibc cannot return to its dynamic thresholds: say what is really in force
        return f"{_steady_in_force} (set earlier in this process)" if _steady_in_force else f"glibc {version} defaults"
    ok = (libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
          and libc.mallopt(_M_ARENA_MAX, ARENA_MAX))
    if not ok:
        return f"glibc {version} defaults (mallopt refused the steady thresholds)"
    if not new_threads_share_the_main_heap():
        steady += " (not in force for new threads: this process made thread arenas before)"
    _steady_in_force = steady
    return steady
