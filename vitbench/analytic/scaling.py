"""How MACs scale with resolution and token count: pure functions over the analytic model.

No torch. Every quantity is an exact integer from :func:`vitbench.analytic.complexity`; MACs are
multiply-accumulates (FLOPs = 2 x MACs).

* ViT against CNN over resolution: a ViT's MACs grow with the token count n = (H/P)(W/P) (+1 CLS)
  linearly (projections and MLP, n d (4d + 2m) per layer) and quadratically (attention matmuls,
  2 n^2 d per layer); a CNN's grow with H x W. :func:`compare_over_resolution` scans a grid of
  square resolutions and reports where the two curves cross.
* Attention against linear layers: per layer 2 n^2 d > n d (4d + 2m)  <=>  n > 2d + m, so the
  first token count at which the attention matmuls cost more is n = 2d + m + 1
  (:func:`attention_linear_crossover`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from vitbench.analytic import complexity, vit
from vitbench.errors import SpecError
from vitbench.specs import ModelSpec, ViTSpec, with_overrides


def resize(spec: ModelSpec, resolution: int) -> ModelSpec:
    """``spec`` at a square ``resolution`` (an explicit learned-position length is dropped, as it
    is tied to the original token count)."""
    extra = {"pos_embed_len": None} if getattr(spec, "pos_embed_len", None) is not None else {}
    return with_overrides(spec, img_size=resolution, **extra)


def macs_at(spec: ModelSpec, resolution: int) -> int | None:
    """MACs per image at a square ``resolution``; ``None`` where the spec does not allow it (a
    patch size that does not divide the image, a CNN whose feature map vanishes)."""
    try:
        return complexity(resize(spec, resolution)).macs
    except SpecError:
        return None


def resolution_grid(patch_sizes: Iterable[int], top: int) -> list[int]:
    """Square resolutions every ViT of the scan accepts: the multiples of lcm(P_1, ..., P_k) from
    that lcm up to ``top`` (inclusive)."""
    sizes = list(patch_sizes)
    step = math.lcm(*sizes) if sizes else 1
    return list(range(step, top + 1, step))


def macs_over_resolution(spec: ModelSpec, grid: Iterable[int]) -> dict[int, int]:
    """{resolution: MACs per image} over ``grid``, leaving out resolutions the spec refuses."""
    values = ((res, macs_at(spec, res)) for res in grid)
    return {res: m for res, m in values if m is not None}


@dataclass(frozen=True)
class Crossing:
    """Between ``before`` and ``at`` (consecutive grid points) the sign of MACs(a) - MACs(b)
    changes; ``a_more`` says which side is larger at ``at``."""

    before: int
    at: int
    a_macs: int
    b_macs: int

    @property
    def a_more(self) -> bool:
        return self.a_macs > self.b_macs


@dataclass(frozen=True)
class ResolutionComparison:
    """MACs per image of two models over the resolutions both accept, and where they cross."""

    resolutions: tuple[int, ...]
    a_macs: tuple[int, ...]
    b_macs: tuple[int, ...]
    crossings: tuple[Crossing, ...]

    def ratio(self, resolution: int) -> float:
        """MACs(a) / MACs(b) at ``resolution`` (one of ``resolutions``)."""
        i = self.resolutions.index(resolution)
        return self.a_macs[i] / self.b_macs[i]

    def ratios(self) -> list[tuple[float, int]]:
        """(MACs(a) / MACs(b), resolution) at every resolution of the scan."""
        return [(a / b, res) for res, a, b in zip(self.resolutions, self.a_macs, self.b_macs)]

    @property
    def a_always_more(self) -> bool:
        return all(a > b for a, b in zip(self.a_macs, self.b_macs))


def compare_over_resolution(a: ModelSpec, b: ModelSpec, grid: Sequence[int]) -> ResolutionComparison:
    """Scan MACs(a) and MACs(b) over ``grid``; a crossing is recorded at each grid point where
    sign(MACs(a) - MACs(b)) differs from the previous point's."""
    scan_a, scan_b = macs_over_resolution(a, grid), macs_over_resolution(b, grid)
    common = [res for res in grid if res in scan_a and res in scan_b]
    crossings = []
    for before, at in zip(common, common[1:]):
        if (scan_a[before] > scan_b[before]) != (scan_a[at] > scan_b[at]):
            crossings.append(Crossing(before, at, scan_a[at], scan_b[at]))
    return ResolutionComparison(
        resolutions=tuple(common),
        a_macs=tuple(scan_a[r] for r in common),
        b_macs=tuple(scan_b[r] for r in common),
        crossings=tuple(crossings),
    )


def _one_layer_with_tokens(n: int, embed_dim: int, num_heads: int, mlp_hidden: int) -> ViTSpec:
    """A one-layer ViT with exactly n tokens: a 1 x (n - 1) image of 1 x 1 patches plus CLS."""
    return ViTSpec(img_size=(1, n - 1), patch_size=1, in_chans=1, embed_dim=embed_dim, depth=1,
                   num_heads=num_heads, mlp_hidden_dim=mlp_hidden, num_classes=1)


def _attention_and_linear(n: int, embed_dim: int, num_heads: int, mlp_hidden: int) -> tuple[int, int]:
    """(attention matmuls, linear layers) MACs of one layer with n tokens, from analytic.vit."""
    spec = _one_layer_with_tokens(n, embed_dim, num_heads, mlp_hidden)
    linear = vit.qkv_macs(spec) + vit.attn_proj_macs(spec) + vit.mlp_fc1_macs(spec) + vit.mlp_fc2_macs(spec)
    return vit.attention_matmul_macs_per_layer(spec), linear


def attention_linear_crossover(embed_dim: int, num_heads: int, mlp_hidden: int) -> tuple[int, int]:
    """(first n, equality n): the smallest token count n at which one layer's attention matmuls
    (Q K^T and A V: 2 n^2 d MACs) exceed its linear layers (qkv 3 n d^2, proj n d^2, fc1 and fc2
    2 n d m: n d (4d + 2m) MACs), and the closed-form equality point n = 2d + m.

    The first n is found by a search over the per-layer formulas of :mod:`vitbench.analytic.vit`
    (not from the closed form), so the two are an independent cross-check: first n = 2d + m + 1."""
    lo, hi = 2, 2
    while True:  # grow until attention > linear
        attention, linear = _attention_and_linear(hi, embed_dim, num_heads, mlp_hidden)
        if attention > linear:
            break
        lo, hi = hi, hi * 2
    while lo < hi:  # smallest n with attention > linear
        mid = (lo + hi) // 2
        attention, linear = _attention_and_linear(mid, embed_dim, num_heads, mlp_hidden)
        if attention > linear:
            hi = mid
        else:
            lo = mid + 1
    return lo, 2 * embed_dim + mlp_hidden


def resolution_for_tokens(spec: ViTSpec, tokens: int) -> int | None:
    """Smallest square resolution, a multiple of the patch size P, with at least ``tokens`` tokens
    (n = (H/P)^2 + 1 with a CLS token, so H/P is about sqrt(n - 1))."""
    p = spec.patch_size
    side = max(1, math.isqrt(max(tokens - 1, 1)) - 1)
    for k in range(side, side + 10):
        if resize(spec, k * p).tokens >= tokens:
            return k * p
    return None


def attention_share_curve(spec: ViTSpec, until_tokens: int, growth: float = 1.15) -> list[tuple[int, float]]:
    """(tokens n, share of all MACs in the attention matmuls) for ``spec`` at square resolutions
    k P, k growing by about ``growth`` per point, until n exceeds ``until_tokens``. The share is
    L 2 n^2 d / MACs(n), rising towards 1 as n grows."""
    points, side = [], 1
    while True:
        c = complexity(resize(spec, side * spec.patch_size))
        points.append((c.tokens, c.attention_matmul_share))
        if c.tokens > until_tokens:
            return points
        side = max(side + 1, int(side * growth))


__all__ = [
    "Crossing",
    "ResolutionComparison",
    "attention_linear_crossover",
    "attention_share_curve",
    "compare_over_resolution",
    "macs_at",
    "macs_over_resolution",
    "resize",
    "resolution_for_tokens",
    "resolution_grid",
]
