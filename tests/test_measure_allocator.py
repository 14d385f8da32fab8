"""The host allocator a measurement runs with (``--allocator``): with ``steady`` glibc serves
chunks up to 32 MiB from the heap (a step's activations are reused heap memory, not fresh
mappings), whatever the process allocated before; the choice is validated and recorded.

Each check runs in a fresh interpreter: glibc's thresholds are process-wide and move with the
process's allocation history."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from vitbench.errors import SpecError
from vitbench.measure.allocator import MMAP_THRESHOLD_BYTES, apply_allocator, glibc
from vitbench.settings import RunSettings

pytestmark = pytest.mark.skipif(glibc() is None, reason="glibc malloc only (mallopt)")

PROBE = r"""
import ctypes, json, sys
from vitbench.measure.allocator import apply_allocator
described = apply_allocator(sys.argv[1])
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = (ctypes.c_size_t,)
libc.free.argtypes = (ctypes.c_void_p,)
import threading

def in_heap(size):
    address = libc.malloc(size)
    heap = [line.split()[0].split("-") for line in open("/proc/self/maps") if line.rstrip().endswith("[heap]")]
    libc.free(address)
    return any(int(lo, 16) <= address < int(hi, 16) for lo, hi in heap)

from_thread = []
thread = threading.Thread(target=lambda: from_thread.append(in_heap(64 * 1024)))
thread.start()
thread.join()
# 24 MiB: over glibc's starting mmap threshold (128 KiB); 64 KiB from a thread started afterwards
print(json.dumps({"described": described, "in_heap": in_heap(24 * 2**20), "thread_in_heap": from_thread[0]}))
"""


def _probe(choice: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, choice], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_steady_serves_large_chunks_from_the_heap():
    steady, system = _probe("steady"), _probe("system")
    assert steady["described"].startswith("glibc ") and f"mmap_threshold={MMAP_THRESHOLD_BYTES}" in steady["described"]
    assert system["described"].endswith("defaults")
    # 24 MiB is under the steady mmap threshold (32 MiB): a heap chunk; glibc's default mmaps it
    assert steady["in_heap"] and not system["in_heap"]
    # one arena: a thread started later (as the step thread is) allocates from the main heap;
    # with glibc's defaults it gets an arena of its own
    assert "arena_max=1" in steady["described"] and "not in force" not in steady["described"]
    assert steady["thread_in_heap"] and not system["thread_in_heap"]


def test_the_choice_is_validated_and_recorded():
    with pytest.raises(SpecError, match="allocator"):
        RunSettings(allocator="jemalloc")
    with pytest.raises(ValueError, match="allocator"):
        apply_allocator("jemalloc")


ROWS = r"""
import json
from vitbench.measure.profile import measure
from vitbench.settings import RunSettings
from vitbench.specs import ViTSpec

spec = ViTSpec(name="tiny-vit", img_size=32, patch_size=8, embed_dim=64, depth=2, num_heads=2, num_classes=10)
# capped, so that each run's steps run on a step thread of its own
rows = [measure(spec, RunSettings(device="cpu", threads=1, runs=1, min_run_time_s=0.05, warmup=1, memory=False,
                                  allocator=choice, memory_limit_bytes=256 * 2**20))
        for choice in ("system", "steady", "system")]
print(json.dumps([{k: r[k] for k in ("status", "error", "allocator", "env_malloc")} for r in rows]))
"""


@pytest.mark.slow  # a few seconds: kept out of the default run
def test_measured_rows_record_what_is_in_force():
    done = subprocess.run([sys.executable, "-c", ROWS], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    first, second, third = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(r["status"] == "ok" for r in (first, second, third)), (first, second, third)
    assert [r["allocator"] for r in (first, second, third)] == ["system", "steady", "system"]
    assert first["env_malloc"].endswith("defaults")
    assert "steady: mmap_threshold=" in second["env_malloc"]
    # the system run's step thread got an arena of its own, which fixed glibc's arena count:
    # the steady run says its one-arena setting does not reach new threads
    assert second["env_malloc"].endswith("(not in force for new threads: this process made thread arenas before)")
    # glibc cannot return to its dynamic thresholds: a later system run in the same process says so
    assert third["env_malloc"] == second["env_malloc"] + " (set earlier in this process)"
