"""What the report's sections share: :class:`Report` (the records they read, the document,
tables and plots they write) and :class:`ReportResult` (what a finished report holds). The
sections and the orchestrator (:mod:`~vitbench.reporting.study.build`) both import this module;
it imports neither."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vitbench.errors import VitbenchError
from vitbench.presets import resolve
from vitbench.reporting import markdown as md
from vitbench.reporting.format import Column, render
from vitbench.reporting.plots import quiet
from vitbench.reporting.study.rows import analytic_rows
from vitbench.results import atomic_write_text
from vitbench.specs import spec_key


@dataclass
class ReportResult:
    out: Path
    report: Path
    plots: list[Path] = field(default_factory=list)
    tables: list[Path] = field(default_factory=list)
    conclusions: list[str] = field(default_factory=list)
    rows: int = 0
    sweep: Any = None
    html: Path | None = None  # report.html, when asked for (vitbench.reporting.html.write)


class Report:
    """What a section reads (records, their analytic rows) and writes (markdown blocks,
    conclusions, tables, plots)."""

    def __init__(self, records: Sequence[dict[str, Any]], sidecar: dict[str, Any], out: Path, *, sources: bool, plots: bool = True):
        self.records = list(records)
        self.draw = plots
        self.sidecar = sidecar
        self.out = out
        self.sources = sources
        self.doc = md.Document()
        self.conclusions: list[str] = []
        self.plots: list[Path] = []
        self.tables: list[Path] = []
        self.analytic = analytic_rows(self.records)
        self.by_key = {r["spec_key"]: r for r in self.analytic if r.get("spec_key")}

    def plot(self, name: str, make: Callable[[Path], Path], alt: str, caption: str) -> None:
        """Draw a PNG with ``make(path)`` and show it with its caption (unless plots are off)."""
        if self.draw:
            with quiet():  # matplotlib's warnings while the figure is built (a log axis of no positive value)
                self.plots.append(make(self.out / name))
            self.doc.add(md.image(name, alt, caption))

    def table(self, name: str, rows: Sequence[dict[str, Any]], columns: Sequence[Column]) -> None:
        """A markdown table in the report and the same rows as ``tables/NAME.csv`` (raw units)."""
        self.doc.add(render(rows, "markdown", columns))
        path = self.out / "tables" / f"{name}.csv"
        atomic_write_text(path, render(rows, "csv", [c if isinstance(c, str) else c[0] for c in columns]))
        self.tables.append(path)
        self.doc.add(f"<sub>Table as CSV (raw units): [tables/{name}.csv](tables/{name}.csv)</sub>")

    def conclude(self, text: str) -> str:
        self.conclusions.append(text)
        return text

    def row_for(self, preset: str, **overrides: Any) -> dict[str, Any] | None:
        """The analytic row of ``preset`` with ``overrides``, when the results have it."""
        try:
            return self.by_key.get(spec_key(resolve(preset, **overrides)))
        except VitbenchError:
            return None


__all__ = ["Report", "ReportResult"]
