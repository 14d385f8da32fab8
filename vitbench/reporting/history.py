"""The trend report of a history (``vitbench history report``): report.md and the same as one
self-contained report.html (images embedded), one PNG per metric and configuration over commits
(the median, the runs' spread as a band where they differ, each change's first commit marked, the
values in vitbench's units), changes.csv,
commits.csv. Formatting lives here; the numbers come from
:mod:`vitbench.history`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vitbench.errors import OutputFileError
from vitbench.escape import markdown_text as safe_markdown
from vitbench.history.changes import bisect_command, series
from vitbench.history.changes import changes as find_changes
from vitbench.history.store import commits
from vitbench.reporting.format import humanize
from vitbench.reporting.html import document
from vitbench.reporting.html import text as markdown_escape
from vitbench.reporting.plots import _pyplot, plain_texts, quiet
from vitbench.results import atomic_write_text, check_output_dir, write_csv
from vitbench.units import binary_bytes, seconds

#: plots drawn at most (series with a change first); the rest are listed
MAX_PLOTS = 60


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:80] or "series"


def _value(metric: str, value: float) -> str:
    if metric.endswith("_s"):
        return seconds(value)
    if metric.endswith("_bytes"):
        return binary_bytes(value)
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:.4g}"


def tick(metric: str, value: float) -> str:
    """An axis tick of ``metric`` in vitbench's units (the report layer's
    :func:`~vitbench.reporting.format.humanize`: K/M/G for counts, ms/us for seconds, KiB/MiB/GiB
    for bytes), never a ``1e8`` offset."""
    return str(humanize(metric, value))


def trend_figure(one: Any, changes: Sequence[Any]):
    """The figure of one series: the median per commit, the runs' min-max band where the runs
    differ (none for exact counts and predicted values), each change a dashed line at its first
    commit; the value axis in vitbench's units (:func:`tick`)."""
    plt = _pyplot()
    xs = list(range(len(one.points)))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.35 * len(xs) + 2), 3.6))
    try:
        _draw(ax, one, changes)
    except BaseException:
        plt.close(fig)
        raise
    return fig


def _draw(ax, one: Any, changes: Sequence[Any]) -> None:
    from matplotlib.ticker import FuncFormatter

    xs = list(range(len(one.points)))
    if one.spread:
        lows = [min(p.runs) for p in one.points]
        highs = [max(p.runs) for p in one.points]
        ax.fill_between(xs, lows, highs, alpha=0.25, label="spread (min-max of runs)")
    ax.plot(xs, [p.value for p in one.points], marker="o", markersize=3, label="median" if one.spread else "value")
    index = {p.commit.commit: i for i, p in enumerate(one.points)}
    for change in changes:
        at = index.get(change.first.commit)
        if at is not None:
            label = f"change at {change.first.short}"
            if change.rel_change is not None:
                label += f" ({change.rel_change:+.1%})"
            ax.axvline(at, linestyle="--", color="tab:red", label=label)  # at the commit that changed it
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: tick(one.metric, value)))
    ax.set_xticks(xs, [p.commit.short[:8] for p in one.points], rotation=90, fontsize=7)
    ax.set_xlabel("commit (oldest first)")
    ax.set_ylabel(one.metric)
    ax.set_title(f"{one.metric}: {one.configuration}", fontsize=9)
    ax.legend(fontsize=7, loc="best")


def plot_series(one: Any, changes: Sequence[Any], path: Path) -> None:
    """:func:`trend_figure` of one series, saved as a PNG at ``path``."""
    plt = _pyplot()
    fig = trend_figure(one, changes)
    try:
        plain_texts(fig)  # a metric or model name is plain text, never mathtext
        with quiet():  # a glyph the font lacks is not a line on the user's terminal
            fig.tight_layout()
            fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)


def write_report(out: str | Path, rows: Sequence[dict[str, Any]], metrics: Sequence[str] | None = None,
                 alpha: float = 0.001, min_change: float = 0.02, title: str = "vitbench history") -> dict[str, Any]:
    """Write the trend report of history ``rows`` into ``out``; returns paths and the changes. A
    folder that cannot be made or written (a file there, a read-only store, a full disk) is one
    :class:`~vitbench.errors.OutputFileError` naming ``out`` (exit 2), checked before any work."""
    out = check_output_dir(out, "out")
    all_series = series(rows, metrics)  # an unknown --metric is refused before anything is written
    try:
        out.mkdir(parents=True, exist_ok=True)
        return _write(out, rows, all_series, metrics, alpha, min_change, title)
    except OSError as exc:  # what no check can tell beforehand: a full disk, a read-only mount
        raise OutputFileError(f"out={str(out)!r}: cannot be written ({exc.strerror or type(exc).__name__})") from None


def _code(text: str) -> str:
    """``text`` as a markdown code span in a table cell: fenced by more backticks than it holds
    in a row, a ``|`` escaped (a cell's end otherwise). A commit id of a history written before
    ids were checked may hold either."""
    text = text.replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _write(out: Path, rows: Sequence[dict[str, Any]], all_series: Sequence[Any], metrics: Sequence[str] | None,
           alpha: float, min_change: float, title: str) -> dict[str, Any]:
    ordered = commits(rows)
    found = find_changes(rows, metrics, alpha, min_change)
    by_series: dict[tuple[str, str], list[Any]] = {}
    for change in found:
        by_series.setdefault((change.configuration, change.metric), []).append(change)
    ranked = sorted(all_series, key=lambda s: ((s.configuration, s.metric) not in by_series, s.metric, s.configuration))
    plots = []
    for one in ranked[:MAX_PLOTS]:
        path = out / f"trend-{_slug(one.metric)}-{_slug(one.configuration)}.png"
        plot_series(one, by_series.get((one.configuration, one.metric), []), path)
        plots.append((one, path.name))
    write_csv([c.as_record() for c in found], out / "changes.csv")
    write_csv([c.as_record() for c in ordered], out / "commits.csv")
    lines = [f"# {title}", "",
             f"{len(ordered)} commits, {len(rows)} rows, {len(all_series)} series (metric x configuration). "
             f"Oldest {ordered[0].short} ({ordered[0].date}), newest {ordered[-1].short} ({ordered[-1].date})."
             if ordered else "An empty history.", ""]
    lines += ["## Changes", ""]
    if found:
        lines += ["| first commit | date | message | metric | configuration | before | after | change | p | bisect |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for c in found:
            change = f"{c.rel_change:+.2%}" if c.rel_change is not None else "from 0"
            p = "exact" if c.p_value is None else f"{c.p_value:.2g}"
            lines.append(f"| {_code(c.first.short)} | {c.first.date[:19]} | {markdown_escape(c.first.message)} | {c.metric} | "
                         f"{markdown_escape(c.configuration)} | {_value(c.metric, c.before)} | {_value(c.metric, c.after)} | "
                         f"{change} | {p} | {_code(bisect_command(c.first.short, c.last_good.short))} |")
    else:
        lines.append("No change found.")
    lines += ["", "<sub>Exact counts (MACs, parameters) and deterministic metrics (rows without runs, as predicted times "
              "under a pinned calibration, whose values agree within each commit) change at any commit whose value "
              "differs. Measured metrics: "
              f"PELT change points of the log median over commits, kept when the level moved by at least "
              f"{min_change:.0%} and beyond the noise between commits (Bonferroni-adjusted p < {alpha:g}); a level "
              "must last two commits (docs/gate.md).</sub>", "", "## Trends", ""]
    for one, name in plots:
        lines += [f"### {one.metric}: {markdown_escape(one.configuration)}", "", f"![{one.metric} over commits]({name})", ""]
    if len(ranked) > MAX_PLOTS:
        lines += [f"{len(ranked) - MAX_PLOTS} more series without a change are not drawn (changes.csv and the history "
                  "hold their numbers).", ""]

    markdown_text = safe_markdown("\n".join(lines) + "\n")  # no live HTML or link from a commit message
    atomic_write_text(out / "report.md", markdown_text)
    atomic_write_text(out / "report.html", document(markdown_text, out, title))
    return {"report": str(out / "report.md"), "html": str(out / "report.html"), "plots": len(plots), "changes": found,
            "commits": len(ordered)}


__all__ = ["MAX_PLOTS", "plot_series", "tick", "trend_figure", "write_report"]
