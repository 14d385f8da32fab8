"""vitbench.analytic.scaling: the report's scaling analyses, checked against hand arithmetic and
direct analytic counts at the points in question."""

from __future__ import annotations

import ast
from pathlib import Path

import vitbench.analytic.scaling as scaling
from vitbench.analytic import complexity
from vitbench.presets import resolve


def test_scaling_is_pure_python():
    tree = ast.parse(Path(scaling.__file__).read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not imported & {"torch", "numpy", "pandas", "matplotlib"}


def test_resolution_grid_is_multiples_of_the_lcm():
    assert scaling.resolution_grid([16, 32], 100) == [32, 64, 96]
    assert scaling.resolution_grid([16], 48) == [16, 32, 48]


def test_crossing_between_vit_ti_and_resnet50():
    vit, cnn = resolve("vit-ti/16"), resolve("resnet50")
    cmp = scaling.compare_over_resolution(vit, cnn, scaling.resolution_grid([16], 1024))
    # the sign of MACs(ViT-Ti) - MACs(ResNet-50) changes between 912 and 928 px (direct counts)
    diff = {r: complexity(resolve("vit-ti/16", img_size=r)).macs - complexity(resolve("resnet50", img_size=r)).macs for r in (912, 928)}
    assert diff[912] < 0 < diff[928]
    assert [(c.before, c.at, c.a_more) for c in cmp.crossings] == [(912, 928, True)]
    assert cmp.ratio(224) == complexity(vit).macs / complexity(cnn).macs


def test_no_crossing_for_vit_b_and_resnet50():
    cmp = scaling.compare_over_resolution(resolve("vit-b/16"), resolve("resnet50"), [224, 384, 512])
    assert cmp.crossings == () and cmp.a_always_more
    assert cmp.a_macs[0] == complexity(resolve("vit-b/16")).macs


def test_resolution_for_tokens():
    # ViT-B/16 needs n >= 4609 tokens: (1088 / 16)^2 + 1 = 68^2 + 1 = 4625, while 1072 px gives
    # 67^2 + 1 = 4490.
    assert scaling.resolution_for_tokens(resolve("vit-b/16"), 4609) == 1088


def test_attention_share_curve_rises_past_the_limit():
    curve = scaling.attention_share_curve(resolve("vit-b/16"), 400)
    tokens = [n for n, _ in curve]
    shares = [s for _, s in curve]
    assert tokens == sorted(tokens) and tokens[-1] > 400 and tokens[-2] <= 400
    assert shares == sorted(shares)
    # the sides 1, 2, ..., 14 patches come first (k -> max(k + 1, int(1.15 k))); at 14 x 16 = 224 px,
    # n = 197 and the attention matmuls are 2 n^2 d L = 2 * 197^2 * 768 * 12 of all MACs
    assert tokens[:14] == [k * k + 1 for k in range(1, 15)]
    assert dict(curve)[197] == 2 * 197**2 * 768 * 12 / complexity(resolve("vit-b/16")).macs
