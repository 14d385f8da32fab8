"""`vitbench analyze`: exact parameters and MACs, optionally beside traced counts."""

from __future__ import annotations

from vitbench.cli.common import add_format_argument, add_model_arguments, emit, overrides_from, positive_int

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
    add_format_argument(parser)
    parser.set_defaults(handler=run)


def run(args) -> int:
    from vitbench.api import analyze

    counters = [c.strip() for c in args.counters.split(",") if c.strip()]
    records = analyze(args.models, batch_size=args.batch_size, counters=counters, **overrides_from(args))
    columns = None
    if args.format in ("table", "markdown"):
        columns = list(TABLE_COLUMNS)
        if args.components:
            columns += sorted({k for r in records for k in r if k.startswith("macs_")}, key=lambda k: next(i for r in records for i, kk in enumerate(r) if kk == k))
        if len(counters) > 1 or counters != ["analytic"]:
            columns += [c for c in COUNTER_COLUMNS + ["fvcore_flops", "fvcore_activations"] if any(c in r for r in records)]
    emit(args, records, columns)
    return 0
