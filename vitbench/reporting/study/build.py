"""The report's orchestrator: runs each section over the records, then assembles ``report.md``
(title, reproduce line, conventions, environment, conclusions, numbered sections) and writes it
with the tables (CSV, raw units) and plots (PNG) the sections made. Display only: it reads
records and computes nothing the analytic model or the measurements did not already give."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from vitbench.documents import cite
from vitbench.escape import markdown_text
from vitbench.reporting import markdown as md
from vitbench.reporting.html import slug
from vitbench.reporting.study import (
    agreement,
    attention,
    listing,
    measured,
    memory,
    patch,
    predicted,
    resolution,
    sources,
    timing,
)
from vitbench.reporting.study.context import Report, ReportResult
from vitbench.reporting.study.environment import environment_lines
from vitbench.reporting.study.measured import overview
from vitbench.results import atomic_write_text

CONVENTIONS = (
    "MACs are multiply-accumulates; FLOPs = 2 x MACs (matmul and convolution); fvcore calls a MAC "
    "a \"flop\". Parameters are exact trainable counts. MACs are per image unless a column says "
    "per batch. Memory in bytes, shown in KiB/MiB/GiB (powers of 1024). Times are medians of "
    "timed steps, wall time unless a heading says CPU time (--clock cpu); predicted times come from the time model "
    "(vitbench.timemodel); throughput in images per second. A marker such as (! unstable 12%) beside a "
    "number repeats the row's warning (full text in results.csv); measured conclusions use stable "
    "rows only."
)


def _sections() -> list[tuple[str, Callable[[Report], bool], bool]]:
    """(title, section, default study only) in report order."""
    return [
        ("Patch size: MACs and parameters", patch.section, False),
        ("Resolution: ViT against CNN", resolution.section, False),
        ("Attention share of MACs vs token count", attention.section, False),
        ("Source check: the CIFAR ViT patch-size study (" + cite("000") + ")", sources.notebook_patch, True),
        ("Ablation variants: what each change costs", sources.ablation, False),
        ("Source check: ViT-B/16 vs ResNet-50 across resolutions (" + cite("002") + ")", sources.chapter_resolution, True),
        ("Source check: ViT-S/B/L/H x /8, /16, /32 (" + cite("003") + ")", sources.variants, True),
        ("Counter agreement: analytic vs fvcore vs dispatch", agreement.section, False),
        ("Measured: throughput, latency and peak memory vs batch size", measured.section, False),
        ("Predicted vs measured peak memory", memory.section, False),
        ("Predicted step time (time model)", predicted.section, False),
        ("Predicted vs measured step time", timing.section, False),
        ("Rows that did not complete", listing.failures, False),
        ("All configurations", listing.configurations, False),
    ]


#: the most conclusions the summary at the top of the report repeats
SUMMARY_MAX = 5
CONCLUSIONS_HEADING = "Conclusions (computed from the results below)"


def summary(firsts: Sequence[str], total: int) -> list[str]:
    """The summary's bullets: the first conclusion of each section that drew one, in report
    order, at most :data:`SUMMARY_MAX`."""
    return list(firsts[:SUMMARY_MAX])


def reproduce_line(command: str, out: Path) -> str:
    """The Reproduce line, with no absolute path: paths relative to the current directory when
    the report's folder lies under it, else relative to the folder that holds the report's
    folder (and the line says so). ``out``: where the report is written, unless the command
    names its folder (``--out``: the report is built aside and swapped in)."""
    try:
        tokens = shlex.split(command)
    except ValueError:
        return f"**Reproduce:** `{command}`"
    if not any(os.path.isabs(t) for t in tokens):
        return f"**Reproduce:** `{command}`"
    if "--out" in tokens[:-1]:
        out = Path(tokens[tokens.index("--out") + 1])
    cwd, out = Path.cwd().resolve(), Path(os.path.abspath(out))
    base = cwd if out.is_relative_to(cwd) else out.parent
    shown = shlex.join(os.path.relpath(t, base) if os.path.isabs(t) else t for t in tokens)
    where = "" if base == cwd else f" (run in the folder that holds `{out.name}/`)"
    return f"**Reproduce:** `{shown}`{where}"


def build(report: Report, command: str, out: Path | None = None) -> str:
    """The markdown text of the report (sections run in order; empty ones are left out): title,
    reproduce line, a summary and a table of contents, then the detail. ``out``: the report's
    final folder (the reproduce line's paths are relative), by default where it is built."""
    meta = report.sidecar.get("sweep") or {}
    rendered, firsts = [], []
    for title, section, default_only in _sections():
        if default_only and not report.sources:
            continue
        report.doc = md.Document()
        before = len(report.conclusions)
        if section(report):
            rendered.append((title, report.doc))
        if len(report.conclusions) > before:
            firsts.append(report.conclusions[before])
    headings = ["Environment", CONCLUSIONS_HEADING] + [f"{i}. {title}" for i, (title, _) in enumerate(rendered, 1)]
    body = md.Document()
    body.heading(1, f"vitbench report: {meta.get('name') or report.out.name}")
    if meta.get("description"):
        body.add(meta["description"])
    body.add(reproduce_line(command, out or report.out))

    stability = overview(report.records)
    if stability:  # on the first screen: whether the measured rows can be concluded from, and why not
        body.add(stability)
    points = summary(firsts, len(report.conclusions))
    if points:
        body.heading(2, "Summary")
        body.add(f"One conclusion per section (each section's first, at most {SUMMARY_MAX}); all "
                 f"{len(report.conclusions)} are under {CONCLUSIONS_HEADING.split(' (')[0]} below.")
        body.bullets(points)
    body.heading(2, "Contents")
    top, body = body, md.Document()
    body.add(f"**Conventions:** {CONVENTIONS}")
    body.heading(2, "Environment")
    body.bullets(environment_lines(report.records, report.sidecar))
    body.heading(2, CONCLUSIONS_HEADING)
    body.bullets(report.conclusions or ["(no section had enough rows to conclude anything)"])
    for heading, (_, doc) in zip(headings[2:], rendered):
        body.heading(2, heading)
        body.add(*doc.blocks)
    return f"{top.render()}\n{contents(headings)}\n\n{body.render()}"


def contents(headings: Sequence[str]) -> str:
    """The table of contents: a link to each heading's anchor (:func:`slug`: letters, digits and
    dashes; added after the document is made safe, which keeps links to files and web pages only)."""
    return "\n".join(f"- {markdown_text(f'[{h}]').strip()}(#{slug(h)})" for h in headings)


def is_default_study(sidecar: dict[str, Any]) -> bool:
    """Whether the results come from the built-in default study (its sweep file)."""
    meta = sidecar.get("sweep") or {}
    return meta.get("name") == "default" and Path(str(meta.get("source") or "")).name == "default_study.yaml"


def render_report(
    records: Sequence[dict[str, Any]], out: str | os.PathLike, *, sidecar: dict[str, Any] | None = None,
    command: str, sources: bool | None = None, plots: bool = True, sweep_result: Any = None,
) -> ReportResult:
    """Write report.md, tables/*.csv and the PNG plots for ``records`` into ``out``.

    ``sources``: include the sections that set the source documents' figures beside ours (default:
    only for the built-in default study's results). ``plots=False``: markdown and tables only."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sidecar = sidecar or {}
    report = Report(records, sidecar, out, sources=is_default_study(sidecar) if sources is None else sources, plots=plots)
    path = out / "report.md"
    atomic_write_text(path, build(report, command))
    return ReportResult(
        out=out, report=path, plots=report.plots, tables=report.tables, conclusions=report.conclusions,
        rows=len(report.records), sweep=sweep_result,
    )
