"""`vitbench merge`: combine sweep shards (or any sweep stores) into one store."""

from __future__ import annotations

import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "merge",
        help="combine the stores of sweep shards into one (and export it)",
        description="Union of results stores (directories, or results CSV files), de-duplicated by "
        "configuration id, in grid order; writes DIR/rows.jsonl and exports DIR/results.csv. Stores of "
        "different sweep definitions are refused. Rows of the same id that differ: the one with status "
        "ok (else the first given) is kept, with a warning. Configurations no store holds (a missing "
        "shard) are reported. Merging one store into a new DIR exports a snapshot of it.",
    )
    parser.add_argument("sources", nargs="+", metavar="STORE", help="shard directories or results CSV files")
    parser.add_argument("--out", required=True, metavar="DIR", help="directory of the merged store")
    parser.add_argument("--force", action="store_true", help="replace rows already in DIR")
    parser.add_argument("--allow-foreign", action="store_true", help="merge stores of different sweep definitions, or CSVs that record none, anyway")
    parser.add_argument("--export", default="csv", metavar="F1,F2", help="formats to export: csv, parquet (default csv)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but warnings and errors")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from vitbench.sweeps.merging import merge

    formats = [f.strip() for f in args.export.split(",") if f.strip()] or ["csv"]
    result = merge(args.sources, args.out, force=args.force, allow_foreign=args.allow_foreign, export=formats)
    for warning in result.warnings:
        print(f"vitbench: warning: {warning}", file=sys.stderr)
    if not args.quiet:
        print(f"merged {len(result.sources)} stores: {result.rows} rows in {result.out}")
    return 0
