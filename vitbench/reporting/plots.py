"""Report figures (matplotlib, Agg backend, PNG). Each function takes plain series and a path.

Units are stated on every axis: MACs are multiply-accumulates (FLOPs = 2 x MACs), parameters are
exact counts, memory is bytes shown in MiB (2^20 bytes), throughput is images per second.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vitbench.escape import terminal_text

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


def plain_texts(fig) -> None:
    """Every text of the figure (titles, labels, legends: model names) as plain text: control
    characters gone (no glyph warnings), a ``$`` a dollar sign, never the start of mathtext a
    model name such as ``a$\\foo$`` would make fail. Before the first draw: tick labels, which
    matplotlib writes as mathtext on log axes, are still empty."""
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        value = text.get_text()
        if value:
            text.set_text(terminal_text(value).replace("\\$", "$").replace("$", "\\$"))


@contextmanager
def quiet() -> Iterator[None]:
    """Drawing without matplotlib's warnings on stderr: a glyph no font has (a model name's
    character is drawn as a box), a log axis of no positive value, a layout that does not fit
    are the figure's business, never a stray line in the command's output."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _save(fig, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    plain_texts(fig)
    with quiet():
        fig.tight_layout()
        fig.savefig(path, dpi=110, metadata={"Software": None}, bbox_inches="tight")  # legends beside the axes included
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
    """MACs per image against input resolution (see :func:`resolution_figure`), saved."""
    return _save(resolution_figure(curves, points, crossovers, note), path)


def resolution_figure(curves: Sequence[Series], points: Sequence[Series], crossovers: Sequence[dict[str, Any]], note: str = ""):
    """MACs per image against input resolution; ViT curves solid, CNN curves dashed. Each of
    ``crossovers`` ({start, end, label}: where a ViT curve and a CNN curve change order, one entry
    per pair when they change several times) is a shaded band with its label on a row of its own
    (stacked from the top), so labels never overlap."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    for s, color in zip(curves, colors(len(curves))):
        ax.plot(s.x, [_giga(v) for v in s.y], s.style, label=s.label, linewidth=1.6, color=color)
        match = next((p for p in points if p.label == s.label), None)
        if match is not None:
            ax.plot(match.x, [_giga(v) for v in match.y], "o", color=color, markersize=6)
    _bands(ax, crossovers, top=0.96 - (0.04 * (note.count("\n") + 1) if note else 0))  # below the note
    ax.set_yscale("log")
    ax.set_xlabel("input resolution H = W (pixels)")
    ax.set_ylabel("GMACs per image (FLOPs = 2 x MACs)")
    ax.set_title("MACs vs resolution: ViT (solid) against CNN (dashed); dots = sweep rows")
    if note:
        ax.text(0.01, 0.99, note, transform=ax.transAxes, va="top", fontsize=7, wrap=True)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return fig


def _bands(ax, regions: Sequence[dict[str, Any]], top: float) -> None:
    """Shade each region [start, end] and label it on its own text row (axes fraction, top down),
    with an arrow to the band: one row per region, so no two labels share a line."""
    import matplotlib.transforms as mtransforms

    mixed = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
    for i, region in enumerate(regions):
        ax.axvspan(region["start"], region["end"], color="grey", alpha=0.15, linewidth=0)
        y = top - 0.055 * i
        middle = (region["start"] + region["end"]) / 2
        ax.annotate(
            region["label"], xy=(middle, y), xycoords=mixed, xytext=(0.99, y), textcoords="axes fraction",
            ha="right", va="center", fontsize=7, arrowprops={"arrowstyle": "->", "color": "grey", "linewidth": 0.8},
            bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.8},
        )


def attention_share(curves: Sequence[Series], points: Sequence[Series], thresholds: Sequence[dict[str, Any]], path: Path) -> Path:
    """Share of MACs in the attention matmuls (Q K^T and A V) against token count n."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    palette = colors(max(len(curves), len(thresholds)))  # threshold i belongs to curve i
    for s, color in zip(curves, palette):
        ax.plot(s.x, [100 * v for v in s.y], "-", color=color, label=s.label)
    for j, p in enumerate(points):  # point series j belongs to curve j; any beyond the curves are grey
        color = palette[j] if j < len(curves) else "grey"
        ax.plot(p.x, [100 * v for v in p.y], _MARKERS[j % len(_MARKERS)], color=color, markersize=5,
                markeredgecolor="black", markeredgewidth=0.5, label=p.label)
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
    """The figure of :func:`by_batch` (a matplotlib Figure, not saved). Each series is nudged
    sideways by a few percent of a doubling (``dodge``) so equal values stay visible side by side;
    a point whose ``extra["withheld"]`` is true is drawn hollow (its row is not concluded from)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    hollow = False
    for i, (s, color) in enumerate(zip(series, colors(len(series)))):
        y = [v / scale for v in s.y]
        x = [v * dodge(i, len(series)) for v in s.x]
        marker = _MARKERS[i % len(_MARKERS)]
        ax.plot(x, y, s.style.rstrip("o"), label=s.label, color=color, marker=marker)
        withheld = s.extra.get("withheld") or [False] * len(x)
        empty = [(a, b) for a, b, w in zip(x, y, withheld) if w]
        if empty:
            hollow = True
            ax.plot([a for a, _ in empty], [b for _, b in empty], marker, color=color, markerfacecolor="white", markersize=8)
        if s.lo is not None and s.hi is not None:
            below = [max(v - lo / scale, 0.0) for v, lo in zip(y, s.lo)]
            above = [max(hi / scale - v, 0.0) for v, hi in zip(y, s.hi)]
            ax.errorbar(x, y, yerr=[below, above], fmt="none", ecolor=color, elinewidth=1, capsize=3)
    if hollow:
        ax.plot([], [], "o", color="grey", markerfacecolor="white", label="hollow: row withheld from the conclusions")
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(sorted({x for s in series for x in s.x})))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_locator(NullLocator())
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("batch size (images; series nudged sideways so equal values stay visible)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    _legend(ax, len(series) + hollow)
    return fig


def dodge(i: int, n: int, width: float = 0.16) -> float:
    """The factor that nudges series ``i`` of ``n`` sideways on a log-2 axis: spread over
    ``width`` of a doubling, centred on the true value (1.0 for a single series)."""
    if n <= 1:
        return 1.0
    return 2.0 ** (width * (i / (n - 1) - 0.5))


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


def predicted_time(panels: Sequence[tuple[str, Sequence[Series], bool]], path: Path) -> Path:
    """Predicted time per image (seconds, shown in ms, log scale) against each varied setting: one
    panel per (x label, series, log-2 x axis or linear)."""
    plt = _pyplot()
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 4.2 * len(panels)), squeeze=False)  # one row each: room for legends
    for ax, (xlabel, series, logx) in zip(axes[:, 0], panels):
        for i, (s, color) in enumerate(zip(series, colors(len(series)))):
            ax.plot(s.x, [1e3 * v for v in s.y], "-", marker=_MARKERS[i % len(_MARKERS)], color=color, label=s.label)
        ax.set_yscale("log")
        if logx:
            from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_locator(FixedLocator(sorted({x for s in series for x in s.x})))
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel(xlabel)
        ax.set_ylabel("predicted time per image (ms)")
        ax.grid(True, which="both", alpha=0.3)
        _legend(ax, len(series))
    fig.suptitle("Predicted time per image (vitbench.timemodel)")
    return _save(fig, path)


def breakdown(labels: Sequence[str], shares: dict[str, Sequence[float]], path: Path) -> Path:
    """One horizontal bar per configuration, split into the shares of its predicted step by
    component (``shares``: component -> one share per label, summing to 1 per label)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.28 * len(labels)))
    left = [0.0] * len(labels)
    rows = list(range(len(labels)))
    for (name, values), color in zip(shares.items(), colors(len(shares))):
        ax.barh(rows, [100 * v for v in values], left=left, color=color, label=name)
        left = [a + 100 * v for a, v in zip(left, values)]
    ax.set_yticks(rows, labels, fontsize=7)
    ax.invert_yaxis()  # fastest at the top
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of the predicted step time (%)")
    ax.set_title("Predicted step time by component")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    return _save(fig, path)


def _legend(ax, n: int) -> None:
    """A legend that stays readable: inside for a few series, beside the axes (one or two
    columns) for many."""
    if n <= 6:
        ax.legend(fontsize=7)
    else:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), ncol=1 if n <= 18 else 2, borderaxespad=0)


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
