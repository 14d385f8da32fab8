"""`vitbench plan`: the largest batch that fits a memory budget, and the predicted breakdown.

Predictions come from the analytic memory model (vitbench.analytic.memory); nothing is run.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from vitbench.cli.common import add_format_argument, add_model_arguments, emit, overrides_from, positive_int

_UNITS = {
    "": 1, "b": 1,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
}
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-zA-Z]*)\s*$")

TABLE_COLUMNS = [
    "model", "img_size", "batch_size", "mode", "precision",
    "pred_weights_bytes", "pred_gradients_bytes", "pred_optimizer_bytes",
    "pred_activations_bytes", "pred_attention_matrix_bytes", "pred_peak_memory_bytes",
]
PLAN_COLUMNS = ["memory_bytes", "max_batch_size"]


def parse_memory(text: str) -> int:
    """'24GiB' -> 25769803776, '24GB' -> 24000000000, '1.5 MiB', '4096' (bytes).
    KiB MiB GiB TiB are powers of 1024; KB MB GB TB powers of 1000; units are case-blind."""
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match else None
    if not match or unit not in _UNITS:
        raise argparse.ArgumentTypeError(
            f"invalid memory size {text!r} (a number of bytes, or with a unit: "
            "KiB MiB GiB TiB, KB MB GB TB; e.g. 24GiB)"
        )
    value = int(float(match.group(1)) * _UNITS[unit])
    if value <= 0:
        raise argparse.ArgumentTypeError(f"invalid memory size {text!r} (must be more than 0 bytes)")
    return value


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="largest batch that fits a memory budget; predicted memory breakdown",
        description="Predicted memory from the analytic model (nothing is run): with --memory, "
        "the largest batch whose predicted peak fits and that peak; with --batch-size, the "
        "breakdown into weights, gradients, optimizer state, activations, one layer's attention "
        "matrix and the peak. Both may be given. The ViT attention kernel is the spec field "
        "--attention sdpa (fused: no n x n matrix kept) or math (keeps it). Bytes in CSV/JSON, KiB/MiB/GiB in tables. "
        "The model replays PyTorch's CPU kernels (see the README); on CUDA expect the CUDA "
        "context, cuDNN/cuBLAS workspaces and allocator rounding on top.",
    )
    add_model_arguments(parser)
    parser.add_argument(
        "--memory", type=parse_memory, metavar="SIZE",
        help="memory budget: 24GiB, 24GB, 25769803776 (bytes); KiB..TiB = 1024^k, KB..TB = 1000^k",
    )
    parser.add_argument("--batch-size", type=positive_int, help="predict the breakdown at this batch size")
    parser.add_argument("--mode", choices=("train", "infer"), default="train", help="default train")
    parser.add_argument(
        "--precision", choices=("fp32", "bf16", "fp16"), default="fp32",
        help="fp32, or bf16/fp16 autocast (fp32 weights, 16-bit activations); default fp32",
    )
    parser.add_argument(
        "--optimizer", choices=("adamw", "sgd", "sgd-momentum"), default="adamw",
        help="training: state of 8, 0 or 4 bytes per parameter (default adamw)",
    )
    add_format_argument(parser)
    parser.set_defaults(handler=run)


def _img_size(spec) -> Any:
    height, width = spec.img_size
    return height if height == width else f"{height}x{width}"


def plan_records(specs, memory_bytes: int | None, batch_size: int | None, mode: str,
                 precision: str, optimizer: str, attention: str | None):
    """One record per spec: identity, predicted breakdown, and (with a budget) the plan."""
    from vitbench.analytic.memory import memory_estimate, plan
    from vitbench.reporting.format import binary_bytes
    from vitbench.results import Records

    records = Records()
    for spec in specs:
        warnings: list[str] = []
        max_batch = None
        if memory_bytes is not None:
            max_batch = plan(spec, memory_bytes, mode, precision, optimizer, attention)
        shown = batch_size if batch_size is not None else max(max_batch or 0, 1)
        estimate = memory_estimate(spec, shown, mode, precision, optimizer, attention)
        if memory_bytes is not None and max_batch == 0:
            one = memory_estimate(spec, 1, mode, precision, optimizer, attention).peak_bytes
            warnings.append(
                f"does not fit: batch size 1 needs {binary_bytes(one)}, "
                f"more than {binary_bytes(memory_bytes)}"
            )
        record: dict[str, Any] = {
            "model": spec.name,
            "kind": spec.kind,
            "img_size": _img_size(spec),
            "batch_size": shown,
            "mode": mode,
            "precision": precision,
            "optimizer": optimizer if mode == "train" else None,
            "attention": estimate.attention,
            **estimate.as_record(),
        }
        if memory_bytes is not None:
            record["memory_bytes"] = memory_bytes
            record["max_batch_size"] = max_batch
            record["fits"] = estimate.peak_bytes <= memory_bytes
        record["warnings"] = "; ".join(warnings)
        records.append(record)
    return records


def run(args) -> int:
    from vitbench.api import resolve_models
    from vitbench.errors import VitbenchError

    if args.memory is None and args.batch_size is None:
        raise VitbenchError(
            "plan: give --memory SIZE (largest batch that fits), --batch-size N (predicted "
            "breakdown), or both"
        )
    specs = resolve_models(args.models, overrides_from(args))
    records = plan_records(
        specs, args.memory, args.batch_size, args.mode, args.precision, args.optimizer, None
    )
    columns = None
    if args.format in ("table", "markdown"):
        columns = list(TABLE_COLUMNS)
        if args.memory is not None:
            columns += PLAN_COLUMNS + (["fits"] if args.batch_size is not None else [])
        if any(r["warnings"] for r in records):
            columns.append("warnings")
    emit(args, records, columns)
    return 0
