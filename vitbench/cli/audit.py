"""`vitbench audit`: which of the source documents' numbers hold.

Exit 0 whatever the verdicts (an audit that finds wrong claims has succeeded); 2 for an unknown
claim id, a --source that matches no document or a malformed catalogue.
"""

from __future__ import annotations

import sys

from vitbench.cli.common import add_format_argument, emit


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "audit",
        help="check the source documents' numerical claims against vitbench's numbers",
        description="Recompute every numerical claim of the source documents (catalogue: "
        "vitbench/data/claims.yaml) with vitbench's analytic model, and counted on the built "
        "module where a claim asks, and give a verdict: holds, off by X%, wrong convention (with "
        "the right figure), needs a GPU, not checkable. Conventions: MAC = multiply-accumulate, "
        "FLOPs = 2 x MACs; MB = 10^6 bytes, MiB = 2^20 bytes.",
    )
    parser.add_argument("--claim", nargs="+", action="extend", metavar="ID", dest="claims",
                        help="audit only these claim ids")
    parser.add_argument("--source", metavar="FILE-PREFIX",
                        help="audit only claims from documents whose file name starts with this (e.g. 002)")
    parser.add_argument("--verdict", choices=("holds", "off", "wrong convention", "needs a GPU", "not checkable", "error"),
                        help="show only claims with this verdict")
    parser.add_argument("--catalogue", metavar="FILE", help="audit another claims file (same schema)")
    parser.add_argument("--no-counted", dest="counted", action="store_false",
                        help="skip counting on the built module and tracing (analytic only; faster)")
    parser.add_argument("--measure", action="store_true",
                        help="time throughput claims on a CUDA device (otherwise 'needs a GPU')")
    parser.add_argument("--write", metavar="FILE",
                        help="write the markdown report (e.g. reports/claims.md) instead of printing a table; --format markdown prints the same report")
    parser.add_argument("--explain", action="store_true", help="table: add each claim's one-sentence explanation")
    parser.add_argument("--quantities", action="store_true",
                        help="list the quantities a claim can be about, and exit")
    add_format_argument(parser)
    parser.set_defaults(handler=run)


def run(args) -> int:
    from vitbench.claims import audit, display_rows, quantity_rows, render_markdown, summary

    if args.quantities:
        emit(args, quantity_rows())
        return 0
    records = audit(args.claims, source=args.source, catalogue=args.catalogue,
                    counted=args.counted, measure=args.measure)
    if args.verdict:
        records = type(records)(r for r in records if r["verdict"] == args.verdict)
    catalogue = args.catalogue or "vitbench/data/claims.yaml"
    if args.write:
        from vitbench.results import atomic_write_text

        atomic_write_text(args.write, render_markdown(records, catalogue=catalogue))
        counts = ", ".join(f"{n} {verdict}" for verdict, n in summary(records).items() if n)
        print(f"wrote {args.write}: {len(records)} claims ({counts})", file=sys.stderr)
        return 0
    if args.format == "markdown":  # the full report, as --write would write it
        text = render_markdown(records, catalogue=catalogue)
        if args.output:
            from vitbench.results import atomic_write_text

            atomic_write_text(args.output, text)
        else:
            sys.stdout.write(text)
        return 0
    if args.format == "table":
        rows = display_rows(records)
        if args.explain:
            for row, record in zip(rows, records):
                row["explanation"] = record["explanation"]
        emit(args, rows)
    else:
        emit(args, records)
    return 0
