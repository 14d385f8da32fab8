"""The machine's state (load, affinity, governor, memory, other GPU processes), the default
thread count that does not oversubscribe a busy machine, and the warnings about it."""

from __future__ import annotations

import os
import time

import pytest

from vitbench.measure.env import choose_threads
from vitbench.measure.machine import (
    affinity_cpus,
    busy_cores,
    free_cores,
    machine_state,
    meminfo,
    parse_compute_apps,
    state_warnings,
)
from vitbench.settings import RunSettings


def test_free_cores_by_hand():
    assert free_cores(2, 0.0) == 2
    assert free_cores(2, 0.4) == 2  # rounds: less than half a core busy leaves it free
    assert free_cores(2, 1.0) == 1
    assert free_cores(2, 1.6) == 1 and free_cores(2, 7.5) == 1  # at least one
    assert free_cores(16, 3.2) == 13
    assert free_cores(4, None) == 4  # unknown load: every core


def test_default_threads_are_fixed_by_the_machine_not_its_load_and_an_explicit_count_is_kept():
    busy = {"machine_cpus": 2, "machine_busy_cores": 1.0}
    idle = {"machine_cpus": 2, "machine_busy_cores": 0.0}
    # the same count whatever the load at the start; the busy machine only adds a warning
    threads, warnings = choose_threads(RunSettings(device="cpu"), "cpu", busy)
    assert threads == 2 and [w["code"] for w in warnings] == ["threads-compete"] and "--threads 1" in warnings[0]["advice"]
    assert choose_threads(RunSettings(device="cpu"), "cpu", idle) == (2, [])
    assert choose_threads(RunSettings(device="cpu"), "cpu", {"machine_cpus": 64, "machine_busy_cores": 0.0}) == (4, [])
    threads, warnings = choose_threads(RunSettings(device="cpu", threads=2), "cpu", busy)
    assert threads == 2 and [w["code"] for w in warnings] == ["threads-compete"] and "--threads 1" in warnings[0]["advice"]
    assert choose_threads(RunSettings(device="cpu", threads=1), "cpu", busy) == (1, [])
    assert choose_threads(RunSettings(device="auto"), "cuda", busy) == (None, [])  # torch's default


def test_default_thread_count_by_hand():
    from vitbench.settings import DEFAULT_MAX_THREADS, default_threads

    assert [default_threads(n) for n in (0, 1, 2, 3, 4, 16)] == [1, 1, 2, 3, 4, DEFAULT_MAX_THREADS]


def test_warning_when_other_processes_use_the_cores_this_run_needs():
    state = {"machine_cpus": 2, "machine_busy_cores": 1.6, "machine_loadavg_1m": 3.4}
    (found,) = state_warnings(state, threads=1)
    assert found["code"] == "busy-machine"
    assert "busy machine" in found["message"] and "1.6 of 2 cores" in found["message"] and "load average 3.4" in found["message"]
    assert "idle machine" in found["advice"]  # says what to do
    assert "fewer --threads" in state_warnings(state, threads=2)[0]["advice"]
    assert state_warnings({"machine_cpus": 2, "machine_busy_cores": 0.2}, threads=1) == []
    assert state_warnings({"machine_cpus": 2, "machine_busy_cores": 0.2}, threads=2) == []


def test_governor_and_gpu_warnings():
    (found,) = state_warnings({"machine_cpus": 4, "machine_busy_cores": 0.0, "machine_governor": "powersave"}, 1)
    assert found["code"] == "cpu-governor" and "'powersave'" in found["message"] and "performance" in found["advice"]
    assert state_warnings({"machine_cpus": 4, "machine_busy_cores": 0.0, "machine_governor": "performance"}, 1) == []
    (found,) = state_warnings({"machine_cpus": 4, "machine_busy_cores": 0.0, "machine_gpu_other_processes": 2}, 1)
    assert found["code"] == "gpu-shared" and "2 other process(es) on the GPU" in found["message"]


def test_parse_nvidia_smi_compute_apps():
    text = "1234, python, 20480\n5678, /usr/bin/other, 1024\n 99, ours, 10\n[N/A], x, 1\n"
    others = parse_compute_apps(text, own_pids={99})
    assert others == [
        {"pid": 1234, "name": "python", "memory_bytes": 20480 * 2**20},
        {"pid": 5678, "name": "/usr/bin/other", "memory_bytes": 1024 * 2**20},
    ]
    assert parse_compute_apps("", set()) == []


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="Linux /proc")
def test_busy_cores_sees_a_competing_process():
    import subprocess
    import sys

    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        busy = busy_cores(0.5)
    finally:
        spinner.kill()
        spinner.wait()
    assert busy is not None and busy >= 0.7  # the spinner keeps one core busy (others may add)
    assert busy <= affinity_cpus() + 0.5 or busy <= os.cpu_count() + 0.5


@pytest.mark.skipif(not os.path.exists("/proc/meminfo"), reason="Linux /proc")
def test_machine_state_columns():
    state = machine_state("cpu", window_s=0.1)
    assert state["machine_cpus"] == len(os.sched_getaffinity(0))
    assert state["machine_loadavg_1m"] == pytest.approx(os.getloadavg()[0], abs=2.0)
    assert 0 < state["machine_mem_available_bytes"] <= state["machine_mem_total_bytes"]
    info = meminfo()
    assert info["MemTotal"] == state["machine_mem_total_bytes"]
    assert "machine_gpu_other_processes" not in state  # only on CUDA
