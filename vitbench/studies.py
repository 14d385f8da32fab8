"""Run a study and write its report: the library face of `vitbench report`.

``report()`` with no source runs the built-in default study (``vitbench/data/default_study.yaml``)
through :mod:`vitbench.sweeps` into ``./vitbench-report/`` (:data:`DEFAULT_OUT`, in the current
folder: never a file of vitbench's own checkout) and renders it; a sweep file is run the same way
(into ``reports/NAME``); a results store or CSV is rendered as it is. The committed
``reports/default`` of vitbench's repository is written by ``vitbench report --out reports/default``. Rendering itself (display only) is
:func:`vitbench.reporting.study.render_report`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from vitbench.errors import InputFileError, VitbenchError, shown
from vitbench.reading import read_results
from vitbench.record_schema import require_columns, require_finite
from vitbench.report_defaults import DEFAULT_OUT, DEFAULT_STUDY_TIME
from vitbench.reporting.format import render
from vitbench.reporting.html import write
from vitbench.reporting.study import ReportResult, render_report
from vitbench.results import atomic_write_text, check_output_dir
from vitbench.row_status import has_result
from vitbench.store.reader import is_store
from vitbench.sweeps import apply_overrides, default_study_path, load_sweep_file, merge, sweep
from vitbench.sweeps.run import SweepInterrupted

SWEEP_SUFFIXES = (".yaml", ".yml", ".toml")


def _command(source: str | os.PathLike | None, out: Path, default_out: Path, changes: dict[str, Any]) -> str:
    """The command line that reproduces the report."""
    parts = ["vitbench report"]
    if source is not None:
        parts.append(str(source))
    if source is not None or out != default_out:
        parts.append(f"--out {out}")
    parts += [f"--{name} {value}" for name, value in changes.items() if value is not None]
    return " ".join(parts)


def report(
    source: str | os.PathLike | None = None,
    out: str | os.PathLike | None = None,
    *,
    threads: int | None = None,
    device: str | None = None,
    runs: int | None = None,
    resume: bool = False,
    force: bool = False,
    plots: bool = True,
    html: bool = False,
    command: str | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    on_estimate: Callable[[Any], None] | None = None,
    on_note: Callable[[str], None] | None = None,
) -> ReportResult:
    """Write ``report.md`` (+ results CSV/JSON, tables as CSV, PNG plots) into ``out``.

    ``source``: a results store directory or results CSV (rendered as is), or a sweep file (run
    into ``out`` first; rerun from scratch unless ``resume``). ``None``: the default study.
    ``threads``/``device``/``runs`` replace the measure settings of every measured study.
    ``plots=False`` writes the markdown and tables without drawing the PNGs. ``html=True`` also
    writes ``report.html`` beside ``report.md``: the same content in one self-contained file
    (tables as HTML, plots and table CSVs embedded as data URIs), ``ReportResult.html``.
    ``on_start``/``on_estimate``/``on_row``/``on_note``: the sweep's progress callbacks
    (:class:`vitbench.sweeps.progress.Progress`).

    >>> report("study.yaml", "reports/study", threads=1, runs=3)  # doctest: +SKIP
    """
    changes = {"threads": threads, "device": device, "runs": runs}
    path = Path(source) if source is not None else default_study_path()
    if source is None or path.suffix.lower() in SWEEP_SUFFIXES:
        plan = apply_overrides(load_sweep_file(path), measure=changes, rename=lambda key: "--" + key.rsplit(".", 1)[-1])
        default_out = DEFAULT_OUT if source is None else Path("reports") / plan.name
        out_dir = Path(out) if out is not None else default_out
        check_output_dir(out_dir, "out")
        check_output_dir(out_dir.parent, "out")  # where the report is built aside and swapped in
        _recover_swap(out_dir)
        _check_rerun(out_dir, plan.name, resume=resume, force=force)
        # Built aside and swapped in when complete: an interrupted or failed rerun leaves the
        # previous report whole (its rows, results.json and report.md), never half of each.
        staging = _staging(out_dir)
        if resume and not staging.exists() and out_dir.exists():
            shutil.copytree(out_dir, staging, symlinks=True)
        try:
            result = sweep(plan, out=staging, resume=resume and staging.exists(), force=not resume, on_start=on_start,
                           on_row=on_row,
                           on_progress={"on_estimate": on_estimate, "on_note": on_note})
        except SweepInterrupted as stopped:
            # The rows are kept in the staging folder; the user reruns the report, not the sweep.
            raise _report_interrupted(stopped, out_dir) from None
        records, info = _read(staging)
        _write_json(records, staging)
        command = command or _command(source, out_dir, default_out, changes)
        built = _with_html(render_report(records, staging, sidecar=info, command=command, plots=plots,
                                         sweep_result=result), html)
        _swap_in(staging, out_dir)
        return _moved(built, staging, out_dir)
    if not (path.is_dir() or path.suffix.lower() in (".csv", ".json")):
        raise InputFileError(
            f"source={str(source)!r}: not a results store, results CSV/JSON or sweep file (.yaml/.toml)"
        )
    given = [f"--{k}" for k, v in changes.items() if v is not None]
    if given:
        raise VitbenchError(f"{given[0]}: applies when the report runs a study (a sweep file or the default study), not to existing results")
    records, info = _read(path)
    default_out = Path("reports") / (path.name if path.is_dir() else path.stem)
    out_dir = Path(out) if out is not None else default_out
    check_output_dir(out_dir, "out")
    _copy_results(path, records, out_dir, force=force)
    command = command or _command(source, out_dir, default_out, {})
    return _with_html(render_report(records, out_dir, sidecar=info, command=command, plots=plots), html)


def _with_html(result: ReportResult, html: bool) -> ReportResult:
    """``result`` with ``report.html`` written beside its report.md (when ``html``)."""
    if not html:
        return result

    return replace(result, html=write(result.report))


def _report_interrupted(stopped: Any, out: Path) -> Any:
    """The sweep's interruption, told in terms of the report: which folder, and how to finish."""
    again = SweepInterrupted(stopped.saved, stopped.total, out)
    again.args = (
        f"interrupted: {stopped.saved} of {stopped.total} rows saved (kept aside until the report of {out} is "
        "complete); rerun the same report command with --resume to finish",
    )
    return again


def _staging(out: Path) -> Path:
    """Where a report of ``out`` is built before it replaces ``out``."""
    return out.parent / f".{out.name}.building"


def _swap_in(staging: Path, out: Path) -> None:
    """Replace ``out`` with the complete ``staging`` folder: out -> .NAME.old, staging -> out,
    then .NAME.old removed (a crash between the renames is repaired by :func:`_recover_swap`)."""
    old = out.parent / f".{out.name}.old"
    if old.exists():
        shutil.rmtree(old)
    if out.exists():
        os.replace(out, old)
    os.replace(staging, out)
    shutil.rmtree(old, ignore_errors=True)


def _recover_swap(out: Path) -> None:
    """A swap cut between its two renames left ``out`` missing and .NAME.old whole: put it back."""
    old = out.parent / f".{out.name}.old"
    if not out.exists() and old.is_dir():
        os.replace(old, out)


def _moved(result: ReportResult, staging: Path, out: Path) -> ReportResult:
    """The result's paths, from the staging folder to ``out``."""
    def move(path: Path) -> Path:
        try:
            return out / Path(path).relative_to(staging)
        except ValueError:
            return Path(path)

    sweep = result.sweep
    if sweep is not None and getattr(sweep, "out", None) is not None:
        sweep = replace(sweep, out=move(sweep.out))
    return replace(result, out=out, report=move(result.report), plots=[move(p) for p in result.plots],
                   tables=[move(p) for p in result.tables], sweep=sweep,
                   html=move(result.html) if result.html is not None else None)


def _read(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Records and metadata of a store directory or results file (the one results reader)."""
    records, info = read_results(path)
    if not records:  # a header-only CSV, an empty records list, a store without rows: nothing to report
        raise InputFileError(f"source={str(path)!r}: no rows ({'the store' if path.is_dir() else 'the file'} holds no records)")
    if records:
        _check_rows(records, f"source={str(path)!r}")
    return records, info


#: what makes two measured rows one configuration (a point of one series in the report's plots)
_CONFIGURATION = ("model", "overrides", "spec_key", "img_size", "device", "mode", "precision", "batch_size")


def _check_rows(records: list[dict[str, Any]], where: str) -> None:
    """The report's own requirement: every row that ran names its model and batch size, holds no
    infinite value, and no configuration was measured twice (two measurements shown as one, or fitted as two points at
    one batch size, would misreport both): one line naming the rows, model and batch size."""
    require_columns(records, where, ("model", "batch_size"), "a report needs every row's model and batch size")
    require_finite(records, where, "a report shows and draws finite values only")
    seen: dict[tuple, int] = {}
    for number, row in enumerate(records, 1):
        if not has_result(row) or row.get("throughput_img_s") is None:
            continue
        key = tuple(str(row.get(c) or "") for c in _CONFIGURATION)
        first = seen.setdefault(key, number)
        if first != number:
            settings = " ".join(str(row.get(c)) for c in ("mode", "precision", "device") if row.get(c) is not None)
            raise InputFileError(
                f"{where}: rows {first} and {number} both measure model={shown(row['model'], 60)} at "
                f"batch_size={row['batch_size']}{f' ({settings})' if settings else ''}; a report shows one "
                "measurement per configuration: keep one of them (or set them side by side with `vitbench compare`)"
            )


def _write_json(records: list[dict[str, Any]], out: Path) -> None:
    """``results.json`` beside the report: every record with its raw samples (raw units)."""
    atomic_write_text(out / "results.json", render(records, "json") + "\n")


def _check_rerun(out: Path, name: str, *, resume: bool, force: bool) -> None:
    """Rerunning a study replaces its own earlier rows; rows of another sweep need --force."""
    if resume or force or not is_store(out):
        return
    records, info = _read(out)
    previous = (info.get("sweep") or {}).get("name")
    if records and previous != name:
        raise InputFileError(
            f"out={str(out)!r}: holds results of another sweep ({previous or 'unknown'}); "
            "choose another --out, or pass --force to replace them"
        )


def _copy_results(source: Path, records: list[dict[str, Any]], out: Path, *, force: bool) -> None:
    """Put the results beside the report: a store is copied into ``out`` (vitbench.sweeps.merging;
    results held there already need ``force``); a results file becomes ``out``/results.csv. Both
    get results.json (every record, raw samples included)."""
    if source.resolve() in (out.resolve(), (out / "results.csv").resolve()):
        return
    if source.is_dir():
        merge([source], out, force=force)
    elif is_store(out) and not force:
        raise InputFileError(f"out={str(out)!r}: already holds results; choose another --out or pass --force")
    elif (out / "rows.jsonl").exists():
        raise InputFileError(f"out={str(out)!r}: holds a results store; choose another --out for a report of {str(source)!r}")
    else:  # re-encoded, never copied: every cell through the one CSV escaper (a CSV's too)

        atomic_write_text(out / "results.csv", render(records, "csv"))
    _write_json(records, out)


__all__ = ["DEFAULT_OUT", "DEFAULT_STUDY_TIME", "ReportResult", "render_report", "report"]
