"""`vitbench audit`: which of the source documents' numbers hold.

Exit 0 whatever the verdicts (an audit that finds wrong claims has succeeded); 2 for an unknown
claim id, a --source that matches no document or a malformed catalogue.
"""

from __future__ import annotations

import sys

from vitbench.claims.verdicts import VERDICTS
from vitbench.cli.common import add_format_argument, emit


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "audit",
        help="check the source documents' numerical claims against vitbench's numbers",
        description="Recompute every numerical claim of the source documents (catalogue: "
        "vitbench/data/claims.yaml) with vitbench's analytic model, and counted on the built "
        "module where a claim asks, and give a verdict: holds, off by X%, wrong convention (with "
        "the right figure), inconclusive (a stand-in network differs), needs a GPU, not checkable. Conventions: MAC = multiply-accumulate, "
        "FLOPs = 2 x MACs; MB = 10^6 bytes, MiB = 2^20 bytes.",
    )
    parser.add_argument("--claim", nargs="+", action="extend", metavar="ID", dest="claims",
                        help="audit only these claim ids")
    parser.add_argument("--source", metavar="DOCUMENT",
                        help="audit only claims of one document: notebook, slides, chapter, tutorial, assignment (or its file number, e.g. 002)")
    parser.add_argument("--verdict", choices=VERDICTS,
                        help="show only claims with this verdict")
    parser.add_argument("--catalogue", metavar="FILE", help="audit another claims file (same schema)")
    parser.add_argument("--no-counted", dest="counted", action="store_false",
                        help="skip counting on the built module and tracing (analytic only; faster)")
    parser.add_argument("--measure", action="store_true",
                        help="measure claims about a GPU (throughput, GPU memory) on the CUDA device (otherwise 'needs a GPU')")
    parser.add_argument("--write", metavar="FILE",
                        help="write the markdown report (e.g. reports/claims.md) instead of printing a table; --format markdown prints the same report")
    parser.add_argument("--explain", action="store_true", help="table: add each claim's one-sentence explanation")
    parser.add_argument("--quantities", action="store_true",
                        help="list the quantities a claim can be about, and exit")
    add_format_argument(parser)
    parser.set_defaults(handler=run)


def _write(path: str, text: str) -> None:
    from vitbench.results import atomic_write_text

    atomic_write_text(path, text)


def run(args) -> int:
    from vitbench.claims import audit, quantity_rows, summary
    from vitbench.reporting.claims import display_rows, render_markdown

    if args.quantities:
        emit(args, quantity_rows())
        return 0
    records = audit(args.claims, source=args.source, catalogue=args.catalogue,
                    counted=args.counted, measure=args.measure)
    if args.verdict:
        records = type(records)(r for r in records if r["verdict"] == args.verdict)
    catalogue = args.catalogue or "vitbench/data/claims.yaml"
    if args.write:
        _write(args.write, render_markdown(records, catalogue=catalogue))
        counts = ", ".join(f"{n} {verdict}" for verdict, n in summary(records).items() if n)
        print(f"wrote {args.write}: {len(records)} claims ({counts})", file=sys.stderr)
    elif args.format == "markdown":  # the full report, as --write would write it
        text = render_markdown(records, catalogue=catalogue)
        _write(args.output, text) if args.output else sys.stdout.write(text)
    elif args.format == "table":
        emit(args, display_rows(records, explain=args.explain))
    else:
        emit(args, records)
    return 0
