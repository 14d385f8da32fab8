"""`vitbench analyze`: exact parameters and MACs, optionally beside traced counts."""

from __future__ import annotations

import sys

from vitbench.cli.common import (
    add_format_argument,
    add_model_arguments,
    emit,
    non_negative_int,
    overrides_from,
    positive_int,
)
from vitbench.cli.progress import Steps, add_quiet_argument
from vitbench.row_status import RowStatus

TABLE_COLUMNS = ["model", "img_size", "patch_size", "tokens", "batch_size", "params", "macs", "flops", "attn_matmul_share"]
COUNTER_COLUMNS = ["fvcore_macs", "dispatch_macs", "agree"]


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "analyze",
        help="parameters and MACs (analytic; optionally fvcore and dispatch counts)",
        description="Exact parameters and multiply-accumulates (MACs; FLOPs = 2 x MACs) per model "
        "and component. Table output shows the main columns; CSV/JSON carry every column.",
    )
    add_model_arguments(parser)
    parser.add_argument("--batch-size", type=positive_int, default=1, help="images per batch (default 1)")
    parser.add_argument(
        "--counters",
        default="analytic",
        help="comma-separated: analytic, fvcore, dispatch (default analytic)",
    )
    parser.add_argument("--components", action="store_true", help="table: show per-component MACs")
    parser.add_argument(
        "--module-table",
        type=non_negative_int,
        metavar="DEPTH",
        help="also print fvcore's per-module table (parameters, MACs, activations) to this depth",
    )
    add_format_argument(parser)
    add_quiet_argument(parser)
    parser.set_defaults(handler=run)


def run(args) -> int:
    from vitbench.api import analyze, check_counters, resolve_models

    counters = check_counters([c.strip() for c in args.counters.split(",") if c.strip()])  # before a py: module is imported
    steps = Steps("analyze", quiet=args.quiet, delay_s=2.0)
    try:
        targets = resolve_models(args.models, overrides_from(args))  # once: the rows and the module tables
        records = analyze(targets, batch_size=args.batch_size, counters=counters, on_progress=steps,
                          module_table=args.module_table)
        tables = [(t.label, r.pop("fvcore_table", None)) for t, r in zip(targets, records)]  # printed after the rows
    finally:
        steps.close()
    emit(args, records, _columns(args, records) if args.format in ("table", "markdown") else None)
    failed = [r for r in records if r.get("status") == RowStatus.ERROR]
    refused = [r for r in records if r.get("status") == RowStatus.REFUSED]
    for row in failed + refused:
        print(f"vitbench: error: {row['model']}: {row['error']}", file=sys.stderr)
    if args.module_table is not None:
        _module_tables(tables)
    disagree = [r for r in records if r.get("agree") is False]
    for row in disagree:
        counted = ", ".join(f"{name} {row[name]:,}" for name in ("macs", "fvcore_macs", "dispatch_macs") if isinstance(row.get(name), int))
        print(f"vitbench: counters disagree: {row['model']}: {counted} MACs (vitbench validate {row['model']} shows where)", file=sys.stderr)
    return 3 if failed else 2 if refused else 1 if disagree else 0


def _columns(args, records) -> list[str]:
    """The table's columns: the main ones, per-component MACs on request, and those the rows fill."""
    columns = list(TABLE_COLUMNS)
    if args.components:
        columns += list(dict.fromkeys(k for r in records for k in r if k.startswith("macs_")))
    counted = ["macs_source", "module_params", *COUNTER_COLUMNS, "fvcore_flops", "fvcore_activations", "analytic_note",
               "overrides", "error"]
    columns += [c for c in counted if any(r.get(c) is not None for r in records)
                and (c != "macs_source" or any(r.get(c) != "analytic" for r in records))]
    return columns


def _module_tables(tables: list[tuple[str, str | None]]) -> None:
    """fvcore's per-module table of every model (counted with its row), on stdout after the rows."""
    for label, table in tables:
        if table is None:  # the row says why it was not counted
            continue
        # fvcore's "#flops" column counts multiply-accumulates (fvcore calls a MAC a flop)
        # plus LayerNorm/BatchNorm at 4-5 per element.
        table = table.replace("#flops", "#fvcore flops (MACs + norms)")
        sys.stdout.write(f"\n{label}: fvcore per-module table (fvcore counts one MAC as one 'flop')\n{table}\n")
