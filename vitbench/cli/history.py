"""`vitbench history`: results over commits (add, list, show, export, report)."""

from __future__ import annotations

import sys
from pathlib import Path

from vitbench.cli.common import add_format_argument, emit, unit_fraction

DEFAULT_STORE = "vitbench-history"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "history",
        help="keep results over commits; trends and the commits where they changed",
        description="A history of results over commits, in a crash-safe append-only store (the sweeps' "
        "store: concurrent CI jobs and kills lose nothing). `add` appends a results file (any command's "
        "CSV/JSON, or a store) under the commit checked out here (or --commit/--date/--branch); `list` the "
        "commits; `show` a commit's rows; `export` every row; `report` writes a trend report (markdown, one "
        "plot per metric and configuration, changes.csv) naming the first commit of each change.",
    )
    sub = parser.add_subparsers(dest="history_command", metavar="ACTION", required=True)

    def store_arg(p) -> None:
        p.add_argument("--store", default=DEFAULT_STORE, metavar="DIR", help=f"the history store (default {DEFAULT_STORE})")

    add = sub.add_parser("add", help="append a results file under a commit")
    add.add_argument("results", metavar="RESULTS", help="results CSV/JSON or store directory")
    store_arg(add)
    add.add_argument("--commit", help="commit id: hex, or a name git takes as a ref, with no leading '-' or shell "
                     "characters (default: git rev-parse HEAD here)")
    add.add_argument("--date", help="commit date, ISO 8601 (default: the commit's, from git)")
    add.add_argument("--branch", help="branch, by the same rules as --commit (default: git's current branch)")
    add.add_argument("--message", help="commit subject (default: git's)")
    add.add_argument("--git-dir", metavar="DIR", help="where to ask git (default: here)")
    add_format_argument(add)
    add.set_defaults(handler=run_add)

    listing = sub.add_parser("list", help="the commits, oldest first")
    store_arg(listing)
    add_format_argument(listing)
    listing.set_defaults(handler=run_list)

    show = sub.add_parser("show", help="the rows of one commit (default: the newest)")
    store_arg(show)
    show.add_argument("--commit", help="commit id or a unique prefix of one")
    add_format_argument(show)
    show.set_defaults(handler=run_show)

    export = sub.add_parser("export", help="every row (CSV, JSON...)")
    store_arg(export)
    add_format_argument(export, default="csv")
    export.set_defaults(handler=run_export)

    report = sub.add_parser("report", help="trend report: plots over commits and the changes found")
    store_arg(report)
    report.add_argument("--out", metavar="DIR", help="report directory (default: DIR/report of the store)")
    report.add_argument("--metric", metavar="M1,M2", help="metrics (default: macs, params, latency_p50_s, "
                        "throughput_img_s, peak_memory_bytes, pred_latency_s where present)")
    report.add_argument("--alpha", type=unit_fraction, default=0.001, help="significance for measured metrics (default 0.001)")
    report.add_argument("--min-change", type=unit_fraction, default=0.02, metavar="FRACTION",
                        help="smallest level shift reported for measured metrics (default 0.02 = 2%%)")
    report.add_argument("--bisect-hint", action="store_true", help="print `git bisect start FIRST LAST` for each change")
    report.add_argument("-q", "--quiet", action="store_true", help="print nothing but the hints and errors")
    report.set_defaults(handler=run_report)


def run_add(args) -> int:
    from vitbench.history import add

    done = add(args.store, args.results, commit=args.commit, date=args.date, branch=args.branch, message=args.message,
               cwd=args.git_dir)
    emit(args, [done])
    return 0


def _rows(args):
    from vitbench.history import read

    return read(args.store)


def run_list(args) -> int:
    from vitbench.history import commits

    emit(args, [c.as_record() for c in commits(_rows(args))])
    return 0


def run_show(args) -> int:
    from vitbench.errors import SpecError
    from vitbench.history import commits
    from vitbench.history.store import check_ref

    if args.commit is not None:
        check_ref("commit", args.commit, prefix=True)
    rows = _rows(args)
    known = [c.commit for c in commits(rows)]
    if args.commit is None:
        wanted = known[-1:] or [None]
    else:
        wanted = [c for c in known if c.startswith(args.commit)]
        if len(wanted) != 1:
            raise SpecError("commit", args.commit, "names no commit of the history" if not wanted else
                            f"is the prefix of {len(wanted)} commits; give more of it")
    emit(args, [r for r in rows if r.get("history_commit") == wanted[0]])
    return 0


def run_export(args) -> int:
    emit(args, _rows(args))
    return 0


def run_report(args) -> int:
    from vitbench.reporting.history import write_report

    metrics = [m.strip() for m in args.metric.split(",") if m.strip()] if args.metric else None
    out = Path(args.out) if args.out else Path(args.store) / "report"
    done = write_report(out, _rows(args), metrics, args.alpha, args.min_change)
    if not args.quiet:
        print(f"wrote {done['report']} ({done['commits']} commits, {done['plots']} plots, {len(done['changes'])} changes)",
              file=sys.stderr)
    for change in done["changes"]:
        size = f"{change.rel_change:+.2%}" if change.rel_change is not None else "from 0"
        line = f"{change.metric} of {change.configuration}: {size} from {change.first.commit[:10]} ({change.first.message})"
        if args.bisect_hint:
            line += f"\n  {change.bisect}"
        print(line)
    return 0
