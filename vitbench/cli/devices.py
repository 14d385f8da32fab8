"""`vitbench devices`: the GPU catalogue `predict --device` prices steps with."""

from __future__ import annotations

from vitbench.cli.common import add_format_argument, emit


def register(subparsers) -> None:
    from vitbench.timemodel.gpus import GENERATIONS

    parser = subparsers.add_parser(
        "devices", help="list the GPUs predict can price a step for, with their published numbers",
        description="The GPU catalogue: each card's vendor numbers (dense peak FLOP/s per precision, "
        "memory bandwidth, L2, SMs, boost clock) with their source, and the architecture generation "
        "whose fitted parameters price it (docs/time.md). `vitbench predict --device NAME` takes "
        "the device column or an alias; several at once: --device a100,h100,l4.")
    parser.add_argument("--generation", choices=GENERATIONS, help="only this architecture generation")
    add_format_argument(parser)
    parser.set_defaults(handler=run)


TABLE_COLUMNS = ("device", "name", "generation", "market", "memory_bytes", "fp32_flops_per_s", "tf32_flops_per_s",
                 "fp16_flops_per_s", "sustained_tensor_flops_per_s", "bandwidth_bytes_per_s",
                 "sustained_bandwidth_bytes_per_s", "nvlink", "nvlink_bytes_per_s", "pcie", "params_from", "validated")


def run(args) -> int:
    from vitbench.timemodel.catalogue import devices

    records = devices(args.generation)
    emit(args, records, list(TABLE_COLUMNS) if args.format in ("table", "markdown") else None)
    return 0
