"""Report figures (matplotlib, Agg backend, PNG). Each function takes plain series and a path.

Units are stated on every axis: MACs are multiply-accumulates (FLOPs = 2 x MACs), parameters are
exact counts, memory is bytes shown in MiB (2^20 bytes), throughput is images per second.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MIB = 2**20
_MARKERS = "osD^v<>ph*X"


@dataclass
class Series:
    """One line: ``y`` against ``x``; ``lo``/``hi`` (optional, same length) bound an error bar
    around each point (e.g. the interquartile range of throughput)."""

    label: str
    x: list[float]
    y: list[float]
    style: str = "-o"
    lo: list[float] | None = None
    hi: list[float] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def colors(n: int) -> list[Any]:
    """``n`` distinct colours (no colour is reused within a plot): tab10 up to 10, tab20 (dark
    shades first) up to 20, else evenly spaced samples of the turbo colour map."""
    import matplotlib

    if n <= 10:
        return list(matplotlib.colormaps["tab10"].colors[:n])
    if n <= 20:
        tab20 = matplotlib.colormaps["tab20"].colors
        return list(tab20[0::2] + tab20[1::2])[:n]
    turbo = matplotlib.colormaps["turbo"]
    return [turbo(0.05 + 0.9 * i / (n - 1)) for i in range(n)]


def _decades(ax, values: Sequence[float]) -> None:
    """A log y axis spanning whole decades around ``values``: small differences stay small
    instead of being zoomed into a steep V."""
    positive = [v for v in values if v and v > 0]
    if positive:
        lo, hi = math.floor(math.log10(min(positive))), math.ceil(math.log10(max(positive)))
        ax.set_ylim(10.0**lo, 10.0 ** max(hi, lo + 1))


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    _pyplot().close(fig)
    return path


def _giga(value: float) -> float:
    return value / 1e9


def patch_size(groups: Sequence[dict[str, Any]], path: Path) -> Path:
    """MACs (left) and parameters (right) against patch size, one line per model family."""
    return _save(patch_size_figure(groups), path)


def patch_size_figure(groups: Sequence[dict[str, Any]]):
    """The figure of :func:`patch_size` (a matplotlib Figure, not saved)."""
    plt = _pyplot()
    fig, (ax_macs, ax_params) = plt.subplots(1, 2, figsize=(10, 4))
    for g, color, i in zip(groups, colors(len(groups)), range(len(groups))):
        marker = _MARKERS[i % len(_MARKERS)]
        ax_macs.plot(g["patch_size"], [_giga(v) for v in g["macs"]], f"-{marker}", label=g["label"], color=color)
        ax_params.plot(g["patch_size"], [v / 1e6 for v in g["params"]], f"-{marker}", label=g["label"], color=color)
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    ticks = sorted({p for g in groups for p in g["patch_size"]})
    for ax in (ax_macs, ax_params):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("patch size P (pixels)")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    _decades(ax_macs, [_giga(v) for g in groups for v in g["macs"]])
    _decades(ax_params, [v / 1e6 for g in groups for v in g["params"]])
    ax_macs.set_ylabel("GMACs per image (FLOPs = 2 x MACs)")
    ax_macs.set_title("MACs vs patch size")
    ax_params.set_ylabel("parameters (millions, log scale, whole decades)")
    ax_params.set_title("parameters vs patch size")
    ax_params.legend(fontsize=7)
    return fig


def resolution(curves: Sequence[Series], points: Sequence[Series], crossovers: Sequence[dict[str, Any]], path: Path, note: str = "") -> Path:
    """MACs per image against input resolution; ViT curves dashed-free, CNN curves dashed;
    crossovers (where a ViT curve passes a CNN curve) marked with a vertical line."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    for s, color in zip(curves, colors(len(curves))):
        ax.plot(s.x, [_giga(v) for v in s.y], s.style, label=s.label, linewidth=1.6, color=color)
        match = next((p for p in points if p.label == s.label), None)
        if match is not None:
            ax.plot(match.x, [_giga(v) for v in match.y], "o", color=color, markersize=6)
    for c in crossovers:
        ax.axvline(c["resolution"], color="grey", linestyle=":", linewidth=1)
        ax.annotate(
            f"{c['label']}\n{c['resolution']} px",
            xy=(c["resolution"], _giga(c["macs"])),
            xytext=(8, -28), textcoords="offset points", fontsize=7,
            arrowprops={"arrowstyle": "->", "color": "grey"},
        )
    ax.set_yscale("log")
    ax.set_xlabel("input resolution H = W (pixels)")
    ax.set_ylabel("GMACs per image (FLOPs = 2 x MACs)")
    ax.set_title("MACs vs resolution: ViT (solid) against CNN (dashed); dots = sweep rows")
    if note:
        ax.text(0.01, 0.99, note, transform=ax.transAxes, va="top", fontsize=7, wrap=True)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return _save(fig, path)


def attention_share(curves: Sequence[Series], points: Sequence[Series], thresholds: Sequence[dict[str, Any]], path: Path) -> Path:
    """Share of MACs in the attention matmuls (Q K^T and A V) against token count n."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    palette = colors(max(len(curves), len(thresholds)))  # threshold i belongs to curve i
    for s, color in zip(curves, palette):
        ax.plot(s.x, [100 * v for v in s.y], "-", color=color, label=s.label)
    for j, p in enumerate(points):
        ax.plot(p.x, [100 * v for v in p.y], _MARKERS[j % len(_MARKERS)], color="black", markersize=4, label=p.label, alpha=0.7)
    for t, color in zip(thresholds, palette):
        ax.axvline(
            t["tokens"], color=color, linestyle=":", linewidth=1.2,
            label=f"{t['label']}: attention matmuls > linear layers from n = {t['tokens']:,}",
        )
    ax.set_xscale("log")
    ax.set_ylim(0, 100)
    ax.set_xlabel("tokens n (patches + CLS)")
    ax.set_ylabel("attention matmuls (2 n^2 d per layer) as % of all MACs")
    ax.set_title("Attention share of MACs vs token count")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    return _save(fig, path)


def by_batch(series: Sequence[Series], path: Path, ylabel: str, title: str, *, scale: float = 1.0, logy: bool = True) -> Path:
    """A measured quantity against batch size, one line per (model, mode); error bars from each
    series' ``lo``/``hi`` where given."""
    return _save(by_batch_figure(series, ylabel, title, scale=scale, logy=logy), path)


def by_batch_figure(series: Sequence[Series], ylabel: str, title: str, *, scale: float = 1.0, logy: bool = True):
    """The figure of :func:`by_batch` (a matplotlib Figure, not saved)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, (s, color) in enumerate(zip(series, colors(len(series)))):
        y = [v / scale for v in s.y]
        ax.plot(s.x, y, s.style, label=s.label, color=color, marker=_MARKERS[i % len(_MARKERS)])
        if s.lo is not None and s.hi is not None:
            below = [max(v - lo / scale, 0.0) for v, lo in zip(y, s.lo)]
            above = [max(hi / scale - v, 0.0) for v, hi in zip(y, s.hi)]
            ax.errorbar(s.x, y, yerr=[below, above], fmt="none", ecolor=color, elinewidth=1, capsize=3)
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(sorted({x for s in series for x in s.x})))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_locator(NullLocator())
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("batch size (images)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    return fig


def predicted_vs_measured(series: Sequence[Series], path: Path, unit: str = "MiB") -> Path:
    """Measured against predicted (log-log), with y = x: peak memory (``unit="MiB"``, against
    the analytic memory model) or step time (``unit="s"``, against the time model)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 6))
    scale = MIB if unit == "MiB" else 1.0
    values: list[float] = []
    for i, (s, color) in enumerate(zip(series, colors(len(series)))):
        ax.plot([v / scale for v in s.x], [v / scale for v in s.y], _MARKERS[i % len(_MARKERS)], label=s.label, color=color)
        values += [v / scale for v in s.x + s.y if v and v > 0]
    if values:
        lo, hi = min(values) / 1.5, max(values) * 1.5
        ax.plot([lo, hi], [lo, hi], "k--", linewidth=1, label="measured = predicted")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
    ax.set_xscale("log")
    ax.set_yscale("log")
    if unit == "MiB":
        ax.set_xlabel("predicted peak memory (MiB, vitbench.analytic.memory)")
        ax.set_ylabel("measured peak memory (MiB)")
        ax.set_title("Peak memory: predicted vs measured")
    else:
        ax.set_xlabel("predicted step time (s, vitbench.timemodel)")
        ax.set_ylabel("measured median step time (s)")
        ax.set_title("Step time: predicted vs measured")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6)
    return _save(fig, path)


def variants(points: Sequence[dict[str, Any]], path: Path) -> Path:
    """Parameters against MACs per image for a family of ViT variants, labelled."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    palette = colors(1 + max((p.get("group", 0) for p in points), default=0))  # one colour per size
    for p in points:
        ax.plot(_giga(p["macs"]), p["params"] / 1e6, _MARKERS[p.get("group", 0) % len(_MARKERS)], color=palette[p.get("group", 0)])
        ax.annotate(p["label"], (_giga(p["macs"]), p["params"] / 1e6), xytext=(4, 3), textcoords="offset points", fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    _decades(ax, [p["params"] / 1e6 for p in points])
    ax.set_xlabel("GMACs per image (FLOPs = 2 x MACs)")
    ax.set_ylabel("parameters (millions, whole decades)")
    ax.set_title("ViT variants: parameters vs MACs")
    ax.grid(True, which="both", alpha=0.3)
    return _save(fig, path)
