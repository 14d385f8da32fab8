"""`vitbench merge`: combine sweep shards (or any sweep stores) into one store."""

from __future__ import annotations

import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "merge",
        help="combine the stores of sweep shards into one",
        description="Union of results stores (directories holding results.csv/results.json, or "
        "results CSV files), de-duplicated by configuration id, in grid order. Rows of the same id "
        "that differ: the one with status ok (else the first given) is kept, with a warning. A "
        "missing shard is reported.",
    )
    parser.add_argument("sources", nargs="+", metavar="STORE", help="shard directories or results CSV files")
    parser.add_argument("--out", required=True, metavar="DIR", help="directory of the merged store")
    parser.add_argument("--force", action="store_true", help="replace rows already in DIR")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but warnings and errors")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from vitbench.store import merge

    result = merge(args.sources, args.out, force=args.force)
    for warning in result.warnings:
        print(f"vitbench: warning: {warning}", file=sys.stderr)
    if not args.quiet:
        print(f"merged {len(result.sources)} stores: {result.rows} rows in {result.out}")
    return 0
