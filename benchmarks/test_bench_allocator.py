"""``--allocator steady`` against ``--allocator system`` (the default: glibc's defaults), in fresh
worker processes, on a ViT and a CNN.

Run: ``pytest benchmarks/test_bench_allocator.py -s``

Interleaved as pyperf would compare on a noisy machine: each of ``VITBENCH_BENCH_ROUNDS`` rounds
(default 12) measures one worker run with each allocator, in alternating order, in CPU time per
thread (``clock='cpu'``, one thread). Reported per model: the median over the rounds of the
ratio steady / system of the run medians (below 1: steps are faster with the steady heap), and
each side's spread between runs (standard deviation of the logarithms of the run medians; the
gate's test works on exactly these). Checked: the steady heap is not slower (median ratio at most
1.05); the spreads are reported, not asserted (on a shared machine the load that comes and goes
moves both).
"""

from __future__ import annotations

import math
import os
import statistics

import pytest

pytest.importorskip("torch")

from vitbench.measure.allocator import glibc  # noqa: E402
from vitbench.measure.profile import RunSettings, measure  # noqa: E402
from vitbench.presets import resolve  # noqa: E402
from vitbench.specs import ViTSpec, with_overrides  # noqa: E402

pytestmark = pytest.mark.skipif(glibc() is None, reason="glibc malloc only")

ROUNDS = int(os.environ.get("VITBENCH_BENCH_ROUNDS", "12"))
MODELS = {
    "vit 32px/4 d4 w128": ViTSpec(name="small-vit", img_size=32, patch_size=4, embed_dim=128, depth=4, num_heads=4,
                                  num_classes=10),
    "resnet18 64px": with_overrides(resolve("resnet18"), img_size=64),
}


def _run_median(spec, allocator: str) -> float:
    settings = RunSettings(device="cpu", batch_size=8, threads=1, runs=1, isolate=True, clock="cpu",
                           min_run_time_s=0.3, warmup=2, memory=False, allocator=allocator)
    row = measure(spec, settings)
    assert row["status"] == "ok", row["error"]
    return row["run_medians_s"][0]


def _spread(values: list[float]) -> float:
    return statistics.stdev(math.log(v) for v in values)


@pytest.mark.parametrize("name", list(MODELS))
def test_steady_allocator_againstglibc_defaults(name, benchmark, report):
    spec = MODELS[name]
    steady: list[float] = []
    system: list[float] = []

    def rounds():
        for k in range(ROUNDS):
            for choice in (("steady", "system") if k % 2 == 0 else ("system", "steady")):
                (steady if choice == "steady" else system).append(_run_median(spec, choice))

    benchmark.pedantic(rounds, rounds=1, iterations=1)
    ratio = statistics.median(a / b for a, b in zip(steady, system))
    figures = dict(model=name, rounds=ROUNDS, median_ratio_steady_over_system=ratio,
                   spread_steady=_spread(steady), spread_system=_spread(system),
                   median_steady_s=statistics.median(steady), median_system_s=statistics.median(system))
    benchmark.extra_info.update(figures)
    report(f"allocator, {name}", f"steady/system step time {ratio:.3f} (median of {ROUNDS} interleaved rounds); "
           f"between-run spread steady {figures['spread_steady']:.3f}, system {figures['spread_system']:.3f}")
    assert ratio <= 1.05, figures
