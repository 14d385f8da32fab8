"""Building a model to count and trace it: a timm hybrid ViT, whose constructor runs a dummy
forward through its CNN backbone and so cannot run with its parameters on the meta device, built
as the light build's fallback builds it (real parameters, every random initialiser filling zeros:
``vitbench.models.materialize.zero_init``) against an ordinary build (every initialiser drawing
its random numbers, as the fallback did before).

Run: ``pytest benchmarks/test_bench_build.py -s``

Each of ``VITBENCH_BENCH_ROUNDS`` rounds (default 6) builds the model both ways, in alternating
order; reported: the median over the rounds of the ratio fallback / ordinary, and each side's
median seconds. Checked: the fallback is taken (its parameters are real and zero) and is faster.
"""

from __future__ import annotations

import os
import statistics
import time

import pytest

timm = pytest.importorskip("timm")

import torch  # noqa: E402

from vitbench.models.materialize import light_build  # noqa: E402

ROUNDS = int(os.environ.get("VITBENCH_BENCH_ROUNDS", "6"))
MODELS = ("vit_base_r26_s32_224", "vitamin_large2_224")


def _ordinary(name: str):
    with torch.device("cpu"):
        return timm.create_model(name)


def _light(name: str):
    return light_build(lambda: timm.create_model(name))


@pytest.mark.parametrize("name", MODELS)
def test_the_fallback_build_skips_random_initialisation(name, benchmark, report):
    built = _light(name)
    parameter = next(built.parameters())
    assert parameter.device.type == "cpu" and parameter.count_nonzero() == 0  # the fallback, zero-filled
    seconds: dict[str, list[float]] = {"light": [], "ordinary": []}
    sides = {"light": lambda: _light(name), "ordinary": lambda: _ordinary(name)}

    def rounds() -> None:
        for index in range(ROUNDS):
            for side in (("light", "ordinary") if index % 2 == 0 else ("ordinary", "light")):
                start = time.perf_counter()
                sides[side]()
                seconds[side].append(time.perf_counter() - start)

    benchmark.pedantic(rounds, rounds=1, iterations=1)
    ratio = statistics.median(a / b for a, b in zip(seconds["light"], seconds["ordinary"]))
    report(f"build, {name}", f"fallback light build / ordinary build {ratio:.2f} (median of {ROUNDS} interleaved rounds; "
                             f"{statistics.median(seconds['light']):.2f} s against {statistics.median(seconds['ordinary']):.2f} s)")
    assert ratio < 1.0
