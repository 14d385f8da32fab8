"""Steps timed on the step thread (where capped CPU runs time them: ``--memory-limit``,
``--batch-size auto``) against the same steps timed in the calling thread (where uncapped runs
time them), on a ViT and a CNN.

Run: ``pytest benchmarks/test_bench_step_thread.py -s``

One built workload per model; each of ``VITBENCH_BENCH_ROUNDS`` rounds (default 12) times it with
``time_steps`` once in each place, in alternating order, in CPU time per step (one and then two
intra-op threads), with the steady allocator that measurements apply (with glibc's defaults a
second thread gets its own malloc arena, and the ViT's steps took 0.74-0.82x the time there: see
``vitbench.measure.step_thread``). Reported: the median over the rounds of the ratio step
thread / calling thread of the per-block medians. Checked: within 5% either way.
"""

from __future__ import annotations

import os
import statistics

import pytest

pytest.importorskip("torch")

import torch  # noqa: E402

from vitbench.measure.allocator import apply_allocator  # noqa: E402
from vitbench.measure.env import thread_count  # noqa: E402
from vitbench.measure.profile import RunSettings  # noqa: E402
from vitbench.measure.step_thread import StepThread  # noqa: E402
from vitbench.measure.timer import time_steps  # noqa: E402
from vitbench.measure.workload import build_workload  # noqa: E402
from vitbench.presets import resolve  # noqa: E402
from vitbench.specs import ViTSpec, with_overrides  # noqa: E402

ROUNDS = int(os.environ.get("VITBENCH_BENCH_ROUNDS", "12"))
MODELS = {
    "vit 32px/4 d4 w128": ViTSpec(name="small-vit", img_size=32, patch_size=4, embed_dim=128, depth=4, num_heads=4,
                                  num_classes=10),
    "resnet18 64px": with_overrides(resolve("resnet18"), img_size=64),
}


def _cpu_median(workload) -> float:
    timing = time_steps(workload.run, "cpu", min_run_time_s=0.3, warmup=2, min_samples=5)
    return statistics.median(timing.cpu_samples_s) / torch.get_num_threads()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", list(MODELS))
def test_steps_on_the_step_thread_time_like_the_calling_thread(name, threads, benchmark, report):
    settings = RunSettings(device="cpu", batch_size=8, threads=threads, memory=False)
    apply_allocator(settings.allocator)  # as measure_run does: steady by default
    with thread_count(threads):
        workload = build_workload(MODELS[name], settings, 8, "cpu")
        steps = StepThread(warm=lambda: workload.run(2))
        here: list[float] = []
        there: list[float] = []
        try:
            def rounds():
                for k in range(ROUNDS):
                    for side in (("here", "there") if k % 2 == 0 else ("there", "here")):
                        if side == "here":
                            here.append(_cpu_median(workload))
                        else:
                            there.append(steps.call(lambda: _cpu_median(workload)))

            benchmark.pedantic(rounds, rounds=1, iterations=1)
        finally:
            steps.close()
            workload.close()
    ratio = statistics.median(a / b for a, b in zip(there, here))
    benchmark.extra_info.update(model=name, threads=threads, rounds=ROUNDS, median_ratio_thread_over_caller=ratio)
    report(f"step thread, {name}, {threads} thread(s)",
           f"step thread / calling thread step time {ratio:.3f} (median of {ROUNDS} interleaved rounds)")
    assert 0.95 <= ratio <= 1.05, (ratio, here, there)
