"""`vitbench report`: a markdown report with tables, CSV, plots and computed conclusions."""

from __future__ import annotations

import os
import sys

from vitbench.cli.common import add_run_arguments, run_settings_from
from vitbench.report_defaults import DEFAULT_OUT, DEFAULT_STUDY_TIME


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write a markdown report (tables, CSV, plots, computed conclusions); no argument: the default study",
        description="Write DIR/report.md with tables, CSV and PNG plots, and conclusions computed from the "
        "results. SOURCE is a results store (directory with results.csv), a results CSV, or a sweep file "
        "(YAML/TOML), which is run first into DIR. With no SOURCE, run the built-in default study (the source "
        "documents' questions, with measured CPU figures for small models) into ./vitbench-report/ in the current "
        f"folder ({DEFAULT_STUDY_TIME}). "
        "--threads/--device/--runs replace the measure settings of every measured study. Measured conclusions "
        "are drawn from stable rows only; the others are withheld, with the reason. "
        "MACs are multiply-accumulates; FLOPs = 2 x MACs.",
    )
    parser.add_argument("source", nargs="?", metavar="RESULTS|SWEEP_FILE", help="results store/CSV or sweep file (default: the built-in study)")
    parser.add_argument("--out", metavar="DIR", help="report directory (default ./vitbench-report for the default study, "
                        "reports/NAME for a sweep file or results)")
    add_run_arguments(parser, ("device", "threads", "runs"), title="measured studies (replace the sweep file's settings)")
    parser.add_argument("--resume", action="store_true", help="for a sweep: keep rows already in DIR, run only the rest")
    parser.add_argument("--force", action="store_true", help="for results: replace a different results.csv already in DIR")
    parser.add_argument("--html", action="store_true",
                        help="also write DIR/report.html: the same report in one self-contained file (plots and tables embedded)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from vitbench.studies import report
    from vitbench.sweeps.progress import Progress, sigterm_as_interrupt

    settings = run_settings_from(args)
    progress = Progress(sys.stderr, quiet=args.quiet, desc="study")
    if args.source is None and not args.quiet:  # where it goes and how long it takes, before anything runs
        out = args.out or f"{DEFAULT_OUT}{os.sep}"
        progress.on_note(f"report: the built-in default study -> {out} ({DEFAULT_STUDY_TIME})")
    try:
        with sigterm_as_interrupt():
            result = report(
                args.source, args.out, threads=settings.get("threads"), device=settings.get("device"),
                runs=settings.get("runs"), resume=args.resume, force=args.force, html=args.html,
                on_start=progress.on_start, on_row=progress.on_row, on_estimate=progress.on_estimate,
                on_note=progress.on_note,
            )
    finally:
        progress.close()
    if not args.quiet:
        print(f"wrote {result.report} ({result.rows} rows, {len(result.plots)} plots, {len(result.conclusions)} conclusions)")
        if result.html is not None:
            print(f"wrote {result.html}")
    return 0
