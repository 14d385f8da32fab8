"""The CPU measurement harness on a tiny ViT: its overhead beyond the requested run time, in this
process (``runs=1``) and per worker process (``runs=2``)."""

from __future__ import annotations

import pytest

try:
    from vitbench.measure.profile import RunSettings, measure
except ImportError as exc:  # the harness is optional for this suite while it is written
    pytest.skip(f"vitbench.measure.profile is not available ({exc})", allow_module_level=True)

from vitbench.specs import ViTSpec

TINY = ViTSpec(name="tiny-vit", img_size=32, patch_size=8, embed_dim=64, depth=2, num_heads=4, num_classes=10)
MIN_RUN_TIME_S = 0.2
OVERHEAD_BUDGET_S = 5.0
#: a worker process imports torch and vitbench and warms up before it measures
WORKER_BUDGET_S = 15.0


def test_cpu_harness_tiny_vit(benchmark, run_timed, report):
    settings = RunSettings(device="cpu", batch_size=8, min_run_time_s=MIN_RUN_TIME_S, warmup=2, memory=False, threads=1, runs=1)
    record, median_s = run_timed(lambda: measure(TINY, settings), rounds=5)
    benchmark.extra_info.update(model="tiny-vit", min_run_time_s=MIN_RUN_TIME_S, median_s=median_s)
    report("CPU harness, tiny ViT (min_run_time 0.2 s)", f"median {median_s:.2f} s per measure() call")

    assert record["status"] == "ok", record.get("error")
    assert record["throughput_img_s"] > 0
    assert len(record["samples_s"]) == record["n_samples"] >= 1
    # The harness honours the minimum run time, and what it adds (build, warm-up, environment
    # and machine-state capture, statistics) stays small.
    # Each sample is the mean step time of `steps_per_sample` back-to-back steps.
    timed_s = sum(record["samples_s"]) * record.get("steps_per_sample", 1)
    assert timed_s >= MIN_RUN_TIME_S * 0.99
    assert MIN_RUN_TIME_S <= median_s < MIN_RUN_TIME_S + OVERHEAD_BUDGET_S


def test_cpu_harness_worker_runs(benchmark, run_timed, report):
    settings = RunSettings(device="cpu", batch_size=8, min_run_time_s=MIN_RUN_TIME_S, warmup=2, memory=False, threads=1, runs=2)
    record, median_s = run_timed(lambda: measure(TINY, settings), rounds=2, warmup_rounds=0)
    per_run = median_s / 2
    benchmark.extra_info.update(model="tiny-vit", runs=2, median_s=median_s, per_worker_run_s=per_run)
    report("CPU harness, tiny ViT, 2 worker runs", f"median {median_s:.2f} s per measure() call, {per_run:.2f} s per worker run")

    assert record["status"] == "ok", record.get("error")
    assert record["runs"] == 2 and record["isolate"] is True
    for samples, steps in zip(record["run_samples_s"], record["run_steps_per_sample"]):
        assert sum(samples) * steps >= MIN_RUN_TIME_S * 0.99  # each run filled its run time
    assert per_run < MIN_RUN_TIME_S + WORKER_BUDGET_S
