"""One quick plot of result records (:meth:`vitbench.results.Records.plot`): a column against
another, one line per model, on a matplotlib Axes a notebook shows inline. Tick labels are the
report layer's units (:func:`vitbench.reporting.format.humanize`); the data stay raw."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from vitbench.errors import SpecError
from vitbench.reporting.format import humanize

#: x columns tried in order when none is given: the first whose values differ between rows
X_CHOICES = ("img_size", "batch_size", "patch_size", "depth")
#: y columns tried in order when none is given: the first the rows have
Y_CHOICES = ("macs", "throughput_img_s", "pred_latency_s", "latency_p50_s", "peak_memory_bytes", "params")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _pick(records: Sequence[dict[str, Any]], x: str | None, y: str | None) -> tuple[str, str]:
    """The columns to draw: the given ones (each must be in some row), else the defaults."""
    present = {key for r in records for key, value in r.items() if _number(value) is not None}
    if x is None:
        varying = [c for c in X_CHOICES if len({r.get(c) for r in records if _number(r.get(c)) is not None}) > 1]
        x = varying[0] if varying else next((c for c in X_CHOICES if c in present), "img_size")
    if y is None:
        y = next((c for c in Y_CHOICES if c in present), "macs")
    for name, column in (("x", x), ("y", y)):
        if column not in present:
            raise SpecError(name, column, f"no row has a number in that column (numeric columns: {', '.join(sorted(present)) or 'none'})")
    return x, y


def series(records: Sequence[dict[str, Any]], x: str, y: str, by: str | None) -> dict[str, list[tuple[float, float]]]:
    """(x, y) points per value of ``by`` (label order: first seen), sorted by x; rows without a
    number in both columns are left out."""
    out: dict[str, list[tuple[float, float]]] = {}
    for record in records:
        px, py = _number(record.get(x)), _number(record.get(y))
        if px is None or py is None:
            continue
        label = str(record.get(by)) if by is not None else y
        out.setdefault(label, []).append((px, py))
    return {label: sorted(points) for label, points in out.items()}


def plot_records(records: Sequence[dict[str, Any]], x: str | None = None, y: str | None = None,
                 by: str | None = "model", ax: Any = None) -> Any:
    """Draw ``y`` against ``x``, one line (with markers) per value of ``by``; the Axes."""
    from matplotlib.ticker import FuncFormatter

    rows = list(records)
    if not rows:
        raise SpecError("records", "[]", "nothing to plot")
    x, y = _pick(rows, x, y)
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(7, 4.5))
    drawn = series(rows, x, y, by)
    for label, points in drawn.items():
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(f"{y} vs {x}")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: str(humanize(x, _tick(value)))))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: str(humanize(y, _tick(value)))))
    if by is not None and len(drawn) > 1:
        ax.legend(title=by, fontsize="small")
    ax.grid(True, alpha=0.3)
    return ax


def _tick(value: float) -> int | float:
    """A tick's value as the column's type would hold it: whole numbers as integers."""
    return int(value) if float(value).is_integer() else value


__all__ = ["X_CHOICES", "Y_CHOICES", "plot_records", "series"]
