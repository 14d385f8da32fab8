"""`vitbench calibrate`: time this machine's micro-benchmarks for the time model."""

from __future__ import annotations

import sys

from vitbench.cli.common import add_format_argument, choice_list, emit, thread_count


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        help="calibrate the time model on this machine (about 30 s; predict does it on first use)",
        description="Time the time model's micro-benchmarks on this CPU in a fresh worker "
        "process: matrix products on a grid of shapes, attention and convolution kernels, and "
        "two small synthetic networks operator by operator (never a model you predict). The "
        "result is saved as versioned JSON in the cache directory ($VITBENCH_CACHE_DIR, else "
        "$XDG_CACHE_HOME/vitbench, else ~/.cache/vitbench), one per CPU, thread count and torch "
        "version, and, with --save FILE, also to FILE to share (predict --calibration FILE).",
    )
    parser.add_argument("--device", default="cpu", metavar="DEVICE", help="cpu (a GPU is priced by the GPU cost model: `vitbench predict --device h100`)")
    parser.add_argument("--threads", type=thread_count, metavar="N", help="CPU threads (default: all this process may use)")
    parser.add_argument("--precision", type=choice_list("precision", ("fp32", "bf16")), default=["fp32"], metavar="PRECISION", help="fp32 and/or bf16 (comma-separated; default fp32)")
    parser.add_argument("--save", metavar="FILE", help="also write the calibration to FILE")
    add_format_argument(parser)
    parser.set_defaults(handler=run)


def run(args) -> int:
    from pathlib import Path

    from vitbench.timemodel.calibration import calibrate, save, summary
    from vitbench.timemodel.run import check_device

    device = check_device(args.device)
    if device != "cpu":
        from vitbench.errors import SpecError

        raise SpecError("device", args.device, "only the CPU is calibrated in this version; predict prices GPUs with the GPU cost model (docs/time.md)")
    if args.save:  # checked before the half-minute run, not after it
        from vitbench.results import check_output_path

        check_output_path(args.save, "--save")
    print("vitbench: calibrating the CPU (about 30 s)", file=sys.stderr, flush=True)
    calibration = calibrate("cpu", args.threads, tuple(args.precision))
    paths = [save(calibration)]
    if args.save:
        paths.append(save(calibration, args.save))
    row = summary(calibration)
    row["path"] = str(paths[0])
    row["file_bytes"] = Path(paths[0]).stat().st_size
    if args.save:
        row["saved_to"] = str(paths[1])
    emit(args, [row])
    return 0
