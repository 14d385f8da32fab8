"""How fast the time model predicts, after calibration (torch already imported):

- one configuration traced on its own (``vitbench.predict``): ViT-S/16 inference and training,
  ResNet-50 inference, at batch 8;
- a 10^4-configuration ViT grid through the sweep's predictor (:class:`vitbench.timemodel.fast.Predictor`:
  anchor traces shared across batches and depths), without the store;
- and the same predictor against a full trace per configuration on a sample, as a ratio.

The calibration is a real one of this machine when the cache has it (``vitbench calibrate``),
else a synthetic one: how fast a prediction is does not depend on the calibration's numbers.
Accuracy is ``benchmarks/predict/`` (measure.py, accuracy.py), not this file.
"""

from __future__ import annotations

import itertools
import time

import pytest

from vitbench.timemodel.calibration.schema import Calibration

PATCHES = (8, 16, 32)
IMG_SIZES = (96, 128, 160, 192, 224, 256, 320, 384)
WIDTHS = ((192, 3), (384, 6), (768, 12))
DEPTHS = (2, 4, 6, 8, 12, 16, 24, 32)
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
MODES = ("infer", "train")


def calibration() -> Calibration:
    import torch

    from vitbench.measure.env import cpu_model
    from vitbench.timemodel.calibration.cache import cache_path, load
    from vitbench.timemodel.calibration.schema import CalibrationError

    try:
        return load(cache_path("cpu", cpu_model() or "", 1, torch.__version__), torch.__version__)
    except CalibrationError:
        rows = [[m, k, n, 4e10] for m in (1, 4096) for k in (16, 4096) for n in (16, 4096)]
        return Calibration("cpu", "synthetic", 1, torch.__version__, "calibration", {"float32": rows},
                           {"conv": [[1, 1, 1, 0.8]]}, {}, 1e-6, 5e10, {"infer": 5e-6, "train": 5e-6}, 1.1)


@pytest.mark.parametrize("model, mode", [("vit-s/16", "infer"), ("vit-s/16", "train"), ("resnet50", "infer")])
def test_predict_one_configuration(benchmark, run_timed, report, model, mode):
    import vitbench
    from vitbench.timemodel import run

    cal = calibration()

    def once():
        run._OPS_CACHE.clear()  # a first prediction: traced, not remembered
        return vitbench.predict(model, mode=mode, batch_size=8, calibration=cal)

    rows, median_s = run_timed(once, rounds=5)
    assert rows[0]["status"] == "ok"
    benchmark.extra_info.update(median_s=median_s)
    report(f"predict {model} {mode} batch 8, traced on its own", f"median {median_s * 1e3:.0f} ms")


def test_predict_a_10k_grid(benchmark, run_timed, report):
    from vitbench.models.references import resolve
    from vitbench.timemodel.fast import Predictor

    cal = calibration()
    structures = [resolve(f"vit-s/16+patch_size={p}+img_size={s}+embed_dim={w}+num_heads={h}")
                  for p, s, (w, h) in itertools.product(PATCHES, IMG_SIZES, WIDTHS)]
    configs = [(t, d, b, m) for t in structures for d in DEPTHS for b in BATCHES for m in MODES]
    assert len(configs) >= 10_000

    def grid():
        from vitbench.specs import with_overrides

        predictor = Predictor(cal)
        out = []
        for target, depth, batch, mode in configs:  # each configuration resolved, as a sweep row is
            out.append(predictor.predict(resolve(with_overrides(target.spec, depth=depth)), batch, mode).latency_s)
        return out

    times, median_s = run_timed(grid, rounds=1, warmup_rounds=0)
    assert len(times) == len(configs) and all(t > 0 for t in times)
    benchmark.extra_info.update(configurations=len(configs), median_s=median_s)
    report(f"predict a {len(configs)}-configuration ViT grid (sweep predictor)",
           f"{median_s:.1f} s, {median_s / len(configs) * 1e3:.2f} ms per configuration")
    assert median_s < 60, f"{len(configs)} configurations took {median_s:.0f} s (goal: under 60 s)"


def test_sweep_predictor_against_full_traces(report):
    """Side by side, interleaved: the sweep predictor's per-configuration cost over a small
    grid (fresh predictor each round) against tracing every configuration."""
    from vitbench.models.references import resolve
    from vitbench.timemodel.fast import Predictor
    from vitbench.timemodel.model import predict_ops
    from vitbench.timemodel.ops import trace_target_ops

    cal = calibration()
    targets = [resolve(f"vit-ti/16+depth={d}") for d in (4, 8, 12)]
    configs = [(t, b, m) for t in targets for b in (2, 8, 32) for m in MODES]
    ratios = []
    for _ in range(3):
        start = time.perf_counter()
        fast = Predictor(cal)
        for t, b, m in configs:
            fast.predict(t, b, m)
        fast_s = time.perf_counter() - start
        start = time.perf_counter()
        for t, b, m in configs:
            predict_ops(trace_target_ops(t, b, m), cal, m)
        full_s = time.perf_counter() - start
        ratios.append(full_s / fast_s)
    ratios.sort()
    report("sweep predictor vs a full trace per configuration (18 configurations, 3 rounds)",
           f"full / predictor: median {ratios[1]:.1f}x (range {ratios[0]:.1f}-{ratios[-1]:.1f})")
    assert ratios[1] > 1
