"""`vitbench choose`: which GPU, at what batch, how many, for how much: one row per card, the
answer first, and the verdict in one sentence (the logic: vitbench/timemodel/choose.py)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from vitbench.cli.common import (
    add_format_argument,
    add_model_arguments,
    batch_size_int,
    choice_list,
    emit,
    overrides_from,
    positive_float,
    positive_int,
)
from vitbench.cli.progress import Steps, add_quiet_argument

if TYPE_CHECKING:
    from vitbench.timemodel.predict_settings import ChooseSettings


def register(subparsers) -> None:
    from vitbench.settings import CHOOSE_SORTS as SORTS
    from vitbench.settings import MODES, OPTIMIZERS, PREDICT_PRECISIONS

    parser = subparsers.add_parser(
        "choose",
        help="which GPU, at what batch, how many and for how much: one row per card, the answer first",
        description="For each card of --device: the largest batch that fits its memory (the memory model; "
        "--batch-size is checked instead), the predicted step (the GPU cost model) over --gpus cards per node "
        "and --nodes nodes (the gradients' all-reduce over NVLink or PCIe, overlapped with backward as DDP "
        "does), throughput, hours and cost of the run, and the error band; sorted by --sort, with the card "
        "that wins and by how much in one sentence (a tie when the first two lie within each other's error "
        "band). A card the batch does not fit gets a row that says so and why. See docs/choosing.md.",
    )
    add_model_arguments(parser, nargs=None)
    parser.add_argument("--device", required=True, metavar="GPU[,GPU...]",
                        help="the cards to compare, from `vitbench devices`, comma-separated")
    parser.add_argument("--mode", choices=MODES, default="train", help="default train")
    parser.add_argument("--batch-size", type=batch_size_int, metavar="B",
                        help="images per card and step (default: the largest power of two that fits each card)")
    parser.add_argument("--precision", type=choice_list("precision", PREDICT_PRECISIONS), metavar="PRECISION",
                        help="fp32 (default), tf32, bf16 or fp16")
    parser.add_argument("--optimizer", choices=OPTIMIZERS, default="adamw", help="default adamw")
    parser.add_argument("--epochs", type=positive_float, metavar="N", help="epochs of the run")
    parser.add_argument("--dataset-size", type=positive_int, metavar="N", help="images per epoch")
    parser.add_argument("--price", "--price-per-hour", dest="price", metavar="PRICE",
                        help="an hour of one card: one price (2.5) or per card (h100=2.5,a100=1.3)")
    parser.add_argument("--prices", metavar="FILE", help="a TOML price file ([prices] h100 = 2.5; docs/prices.example.toml)")
    parser.add_argument("--gpus", type=positive_int, default=1, metavar="N", help="cards per node (data parallel; default 1)")
    parser.add_argument("--nodes", type=positive_int, default=1, metavar="N", help="nodes (default 1)")
    parser.add_argument("--network-gbps", type=positive_float, metavar="GBPS",
                        help="the network per node in Gb/s (default: the card's DGX's)")
    parser.add_argument("--sort", choices=SORTS, default="time", help="rank by the run's time (default) or its cost")
    parser.add_argument("--no-trace-cache", action="store_true", help="trace again instead of using the trace cache, and resolve the model and trace its memory again "
                        "(the question cache)")
    add_format_argument(parser)
    add_quiet_argument(parser)
    parser.set_defaults(handler=run)


def choose_settings(args) -> ChooseSettings:
    """The command line's flags as the :class:`ChooseSettings` the API takes (validated there)."""
    from vitbench.timemodel.predict_settings import ChooseSettings

    return ChooseSettings(
        device=args.device, mode=args.mode, batch_size=args.batch_size, precision=(args.precision or ["fp32"])[0],
        optimizer=args.optimizer, epochs=args.epochs, dataset_size=args.dataset_size, price=args.price,
        prices_file=args.prices, gpus=args.gpus, nodes=args.nodes, network_gbit_s=args.network_gbps, sort=args.sort,
        trace_cache=not args.no_trace_cache,
    )


def run(args) -> int:
    from vitbench.errors import SpecError
    from vitbench.timemodel.choose import TABLE_COLUMNS, choose

    if args.precision is not None and len(args.precision) != 1:
        raise SpecError("precision", ",".join(args.precision), "choose prices one precision at a time")
    steps = Steps("choose", quiet=args.quiet, delay_s=2.0)
    try:
        rows = choose(args.models, choose_settings(args), overrides=overrides_from(args), on_progress=steps)
    finally:
        steps.close()
    from vitbench.row_warnings import texts

    for warning in dict.fromkeys(w for r in rows for w in texts(r.get("warnings"))):  # each once, as predict says them
        print(f"vitbench: warning: {warning}", file=sys.stderr)
    columns = None
    if args.format in ("table", "markdown"):
        columns = [c for c in TABLE_COLUMNS if c == "note" or any(r.get(c) is not None for r in rows)]
    emit(args, rows, columns)
    # the verdict beside the table; after CSV or JSON on standard error, so that the data stay data
    table = args.format in ("table", "markdown") and not getattr(args, "output", None)
    print(rows.verdict, file=sys.stdout if table else sys.stderr)
    return 0
