"""`vitbench profile`: measured throughput, latency, peak memory and MFU on this device."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys

from vitbench.cli.common import add_format_argument, add_model_arguments, emit, overrides_from, positive_int
from vitbench.settings import DEVICES, MODES, OPTIMIZERS, PRECISIONS

_UNITS = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12}


def quantity(text: str) -> float:
    """'312e12', '312T', '1.5GiB', '512MiB' -> a positive number."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _UNITS:
        raise argparse.ArgumentTypeError(f"invalid quantity: {text!r} (e.g. 312e12, 312T, 512MiB)")
    value = float(match.group(1)) * _UNITS[unit]
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return value


def _list(kind: str, choices: tuple[str, ...]):
    def parse(text: str) -> list[str]:
        values = [v.strip() for v in text.split(",") if v.strip()]
        bad = [v for v in values if v not in choices]
        if not values or bad:
            raise argparse.ArgumentTypeError(f"invalid {kind} {text!r}: choose from {', '.join(choices)} (comma-separated)")
        return values

    return parse


def batch_sizes(text: str) -> list:
    values = []
    for part in (p.strip() for p in text.split(",")):
        if part == "auto":
            values.append("auto")
            continue
        try:
            number = int(part)
        except ValueError:
            number = 0
        if number <= 0:
            raise argparse.ArgumentTypeError(f"invalid batch size {part!r}: a positive integer or 'auto'")
        values.append(number)
    return values


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    run = parser.add_argument_group("measurement")
    run.add_argument("--device", choices=DEVICES, default="auto", help="default: cuda if available, else cpu")
    run.add_argument("--mode", type=_list("mode", MODES), default=["infer"], help="infer and/or train (comma-separated; default infer)")
    run.add_argument("--batch-size", type=batch_sizes, default=[1], metavar="N|auto", help="images per step, comma-separated; 'auto' = the largest that fits (default 1)")
    run.add_argument("--precision", type=_list("precision", PRECISIONS), default=["fp32"], help="fp32, bf16 or fp16 (autocast; fp16 needs CUDA), comma-separated")
    run.add_argument("--channels-last", action="store_true", help="channels-last memory format for model and input")
    run.add_argument("--compile", action="store_true", help="torch.compile the model (compilation happens in the warm-up)")
    run.add_argument("--threads", type=positive_int, metavar="N", help="CPU threads (torch.set_num_threads) for the measurement")
    run.add_argument("--optimizer", choices=OPTIMIZERS, default="adamw", help="training optimizer (default adamw; sgd is plain SGD, sgd-momentum uses momentum 0.9)")
    run.add_argument("--min-time", type=positive_float, default=1.0, metavar="SECONDS", help="minimum timed seconds per configuration (default 1)")
    run.add_argument("--warmup", type=positive_int, default=3, metavar="N", help="warm-up steps before timing (default 3)")
    run.add_argument("--no-memory", action="store_true", help="skip the separate peak-memory pass")
    run.add_argument("--trace-dir", metavar="DIR", help="write a torch.profiler trace per configuration (TensorBoard / Perfetto)")
    run.add_argument("--isolate", action="store_true", help="run each configuration in a fresh subprocess")
    run.add_argument("--timeout", type=positive_float, metavar="SECONDS", help="with --isolate: give up on a configuration after this long")
    run.add_argument("--peak-flops", type=quantity, metavar="FLOP/S", help="device peak FLOP/s for MFU (e.g. 989e12 or 989T; overrides the GPU table; needed on a CPU)")
    run.add_argument("--peak-bandwidth", type=quantity, metavar="BYTES/S", help="device memory bandwidth for the roofline label (e.g. 3.35e12)")
    run.add_argument("--memory-limit", type=quantity, metavar="BYTES", help="artificial memory cap (e.g. 512MiB): GPU memory fraction, or a data-size limit on the CPU")
    run.add_argument("--max-batch-size", type=positive_int, default=4096, metavar="N", help="upper end of --batch-size auto (default 4096)")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "profile",
        help="measure throughput, latency, peak memory and MFU on this device",
        description="Measure what each configuration really costs on this device: images/s, "
        "median and p90 step latency with their spread, peak memory (bytes; with a breakdown "
        "by category), which attention kernel ran, achieved FLOP/s (2 x MACs per image, x3 "
        "for a training step) and MFU. Out-of-memory configurations become rows with "
        "status=oom. Table output shows the main columns; CSV/JSON carry every column, raw "
        "timing samples included.",
    )
    add_model_arguments(parser)
    add_run_arguments(parser)
    add_format_argument(parser)
    parser.set_defaults(handler=run)


def settings_list(args, attention: str | None):
    """One RunSettings per (mode, precision, batch size), all validated before anything runs."""
    from vitbench.measure.profile import validate_settings
    from vitbench.settings import RunSettings

    out = []
    for mode, precision, batch in itertools.product(args.mode, args.precision, args.batch_size):
        settings = RunSettings(
            device=args.device, mode=mode, batch_size=batch, precision=precision,
            channels_last=args.channels_last, compile=args.compile, attention=attention,
            threads=args.threads, optimizer=args.optimizer, min_run_time_s=args.min_time,
            warmup=args.warmup, memory=not args.no_memory, trace_dir=args.trace_dir,
            isolate=args.isolate, peak_flops=args.peak_flops, peak_bandwidth=args.peak_bandwidth,
            memory_limit_bytes=int(args.memory_limit) if args.memory_limit else None,
            max_batch_size=args.max_batch_size, timeout_s=args.timeout,
        )
        validate_settings(settings)
        out.append(settings)
    return out


def _cell(value):
    """CSV cells: lists and dicts as JSON, so the raw samples survive a round trip."""
    return json.dumps(value) if isinstance(value, (list, dict, tuple)) else value


def run(args) -> int:
    os.environ.setdefault("KINETO_LOG_LEVEL", "5")  # the profiler's C++ start/stop chatter
    from vitbench.api import resolve_models
    from vitbench.measure.profile import TABLE_COLUMNS, measure
    from vitbench.results import Records

    specs = resolve_models(args.models, overrides_from(args))
    all_settings = settings_list(args, None)
    records = Records()
    for settings in all_settings:
        for spec in specs:
            records.append(measure(spec, settings))
    if args.format == "csv":
        records = Records({k: _cell(v) for k, v in r.items()} for r in records)
    emit(args, records, TABLE_COLUMNS if args.format in ("table", "markdown") else None)
    for r in records:
        label = f"{r['model']} (batch {r['batch_size']}, {r['mode']}, {r['precision']})"
        if r.get("error"):
            print(f"vitbench: {r['status']}: {label}: {r['error']}", file=sys.stderr)
        if r.get("warnings"):
            print(f"vitbench: warning: {label}: {r['warnings']}", file=sys.stderr)
    if records and all(r.get("status") == "error" for r in records):
        return 3
    return 0
