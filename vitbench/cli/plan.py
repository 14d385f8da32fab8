"""`vitbench plan`: the largest batch that fits a memory budget, and the predicted breakdown.

Predictions come from the analytic memory model (vitbench.analytic.memory, whose
``plan_records`` builds the rows); this module parses the flags and prints. Nothing is run.
"""

from __future__ import annotations

import sys

from vitbench.cli.common import add_format_argument, add_model_arguments, batch_size_int, emit, overrides_from
from vitbench.cli.common import parse_size as parse_memory
from vitbench.cli.progress import Steps, add_quiet_argument
from vitbench.settings import MODES, OPTIMIZERS, PRECISIONS

TABLE_COLUMNS = [
    "model", "img_size", "batch_size", "params", "macs", "mode", "precision",
    "pred_weights_bytes", "pred_gradients_bytes", "pred_optimizer_bytes",
    "pred_activations_bytes", "pred_attention_matrix_bytes", "pred_peak_memory_bytes",
]
PLAN_COLUMNS = ["memory_bytes", "max_batch_size"]


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="largest batch that fits a memory budget; predicted memory breakdown",
        description="Predicted memory from the analytic model (nothing is run): with --memory, "
        "the largest batch whose predicted peak fits and that peak; with --batch-size, the "
        "breakdown into weights, gradients, optimizer state, activations, one layer's attention "
        "matrix and the peak. Both may be given. A model without a memory formula (e.g. "
        "torchvision:swin_t) is traced on fake tensors (its peak only; the row says so). The "
        "ViT attention kernel is the spec field --attention sdpa (fused: no n x n matrix kept) "
        "or math (keeps it). Bytes in CSV/JSON, KiB/MiB/GiB in tables. "
        "The model replays PyTorch's CPU kernels (see docs/memory.md); on CUDA expect the CUDA "
        "context, cuDNN/cuBLAS workspaces and allocator rounding on top.",
    )
    add_model_arguments(parser)
    parser.add_argument(
        "--memory", type=parse_memory, metavar="SIZE",
        help="memory budget: 24GiB, 24GB, 25769803776 (bytes); KiB..TiB = 1024^k, KB..TB = 1000^k",
    )
    parser.add_argument("--batch-size", type=batch_size_int, help="predict the breakdown at this batch size")
    parser.add_argument("--mode", choices=MODES, default="train", help="default train")
    parser.add_argument(
        "--precision", choices=PRECISIONS, default="fp32",
        help="fp32, or bf16/fp16 autocast (fp32 weights, 16-bit activations); default fp32",
    )
    parser.add_argument(
        "--optimizer", choices=OPTIMIZERS, default="adamw",
        help="training: state of 8, 0 or 4 bytes per parameter (default adamw)",
    )
    add_format_argument(parser)
    add_quiet_argument(parser)
    parser.set_defaults(handler=run)


def plan_settings(args):
    """The command line's flags as the :class:`~vitbench.analytic.memory.plan_settings.PlanSettings`
    the API takes (validated there)."""
    from vitbench.analytic.memory.plan_settings import PlanSettings

    return PlanSettings(memory_bytes=args.memory, batch_size=args.batch_size, mode=args.mode, precision=args.precision,
                        optimizer=args.optimizer)


def run(args) -> int:
    from vitbench.api import plan_records, resolve_models
    from vitbench.errors import VitbenchError

    if args.memory is None and args.batch_size is None:
        raise VitbenchError(
            "plan: give --memory SIZE (largest batch that fits), --batch-size N (predicted "
            "breakdown), or both"
        )
    targets = resolve_models(args.models, overrides_from(args))
    steps = Steps("plan", quiet=args.quiet, delay_s=2.0)
    try:
        records = plan_records(targets, plan_settings(args), on_progress=steps)
    finally:
        steps.close()
    columns = None
    if args.format in ("table", "markdown"):
        columns = list(TABLE_COLUMNS)
        if any(r.get("overrides") for r in records):
            columns.insert(1, "overrides")
        if args.memory is not None:
            columns += PLAN_COLUMNS + (["fits"] if args.batch_size is not None else [])
        if any(r["warnings"] for r in records):
            columns.append("warnings")
    emit(args, records, columns)
    from vitbench.row_warnings import normalize

    refused = [(r, w) for r in records for w in normalize(r.get("warnings")) if w["code"] == "too-large"]
    for row, found in refused:
        print(f"vitbench: refused: {row['model']}: {found['message']}", file=sys.stderr)
    return 2 if refused else 0
