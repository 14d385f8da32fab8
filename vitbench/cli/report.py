"""`vitbench report`: a markdown report with tables, CSV, plots and computed conclusions."""

from __future__ import annotations

import signal
import sys
from typing import Any


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write a markdown report (tables, CSV, plots, computed conclusions); no argument: the default study",
        description="Write DIR/report.md with tables, CSV and PNG plots, and conclusions computed from the "
        "results. SOURCE is a results store (directory with results.csv), a results CSV, or a sweep file "
        "(YAML/TOML), which is run first into DIR. With no SOURCE, run the built-in default study (the source "
        "documents' questions, with measured CPU figures for small models) into reports/default/. "
        "MACs are multiply-accumulates; FLOPs = 2 x MACs.",
    )
    parser.add_argument("source", nargs="?", metavar="RESULTS|SWEEP_FILE", help="results store/CSV or sweep file (default: the built-in study)")
    parser.add_argument("--out", metavar="DIR", help="report directory (default reports/default, or reports/NAME)")
    parser.add_argument("--resume", action="store_true", help="for a sweep: keep rows already in DIR, run only the rest")
    parser.add_argument("--force", action="store_true", help="for results: replace a different results.csv already in DIR")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from vitbench.cli.sweep import _describe, _show_bar
    from vitbench.reporting.study import report

    show_bar = _show_bar(args.quiet)
    state: dict[str, Any] = {"bar": None}

    def on_start(todo: int, skipped: int) -> None:
        if show_bar and todo:
            from tqdm import tqdm

            state["bar"] = tqdm(total=todo, unit="cfg", file=sys.stderr, dynamic_ncols=True, desc="study")
        elif not args.quiet and todo:
            print(f"vitbench: running {todo} configurations{f' ({skipped} already done)' if skipped else ''}", file=sys.stderr, flush=True)

    def on_row(row: dict[str, Any]) -> None:
        if state["bar"] is not None:
            state["bar"].set_postfix_str(_describe(row)[:60], refresh=False)
            state["bar"].update(1)

    command = None
    if args.source is None:
        command = "vitbench report" + (f" --out {args.out}" if args.out else "")
    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    try:
        result = report(args.source, args.out, resume=args.resume, force=args.force, command=command, on_start=on_start, on_row=on_row)
    finally:
        signal.signal(signal.SIGTERM, previous)
        if state["bar"] is not None:
            state["bar"].close()
    if not args.quiet:
        print(f"wrote {result.report} ({result.rows} rows, {len(result.plots)} plots, {len(result.conclusions)} conclusions)")
    return 0
