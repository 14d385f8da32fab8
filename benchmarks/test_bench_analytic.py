"""Analytic evaluation of 10,000 ViT configurations takes well under a second."""

from __future__ import annotations

import itertools

from vitbench.analytic import complexity
from vitbench.specs import ViTSpec

PATCHES = (8, 14, 16, 32)
GRIDS = (4, 7, 8, 14, 16)  # patches per side: img_size = patch * grid
DEPTHS = (4, 6, 8, 12, 24)
WIDTHS = (192, 384, 512, 768, 1024)
HEADS = (1, 2, 4, 8)
MLP_RATIOS = (1.0, 2.0, 3.0, 4.0, 4.5)


def grid_specs() -> list[ViTSpec]:
    return [
        ViTSpec(img_size=p * g, patch_size=p, depth=d, embed_dim=w, num_heads=h, mlp_ratio=r)
        for p, g, w, h, r, d in itertools.product(PATCHES, GRIDS, WIDTHS, HEADS, MLP_RATIOS, DEPTHS)
    ]


def test_analytic_10k_configurations(benchmark, run_timed, report):
    specs = grid_specs()
    assert len(specs) == 10_000

    results, median_s = run_timed(lambda: [complexity(s, 1) for s in specs], rounds=7)
    benchmark.extra_info.update(configurations=len(specs), median_s=median_s)
    report("analytic complexity, 10,000 ViT configurations", f"median {median_s * 1e3:.0f} ms")

    assert len(results) == len(specs)
    # Every encoder block costs the same: MACs and params are affine in depth, so within each
    # group of five depths (4, 6, 8, 12, 24) the per-block increments agree.
    for start in range(0, len(results), len(DEPTHS)):
        group = results[start : start + len(DEPTHS)]
        for attr in ("macs", "params"):
            values = [getattr(r, attr) for r in group]
            per_block = (values[1] - values[0]) // 2
            assert per_block > 0
            assert values == [values[0] + per_block * (d - DEPTHS[0]) for d in DEPTHS]
    assert median_s < 1.0, f"10,000 analytic evaluations took {median_s:.3f} s (budget 1 s)"
