"""`vitbench profile`: measured throughput, latency, peak memory and MFU on this device."""

from __future__ import annotations

import os
import sys

from vitbench.cli.common import (
    add_format_argument,
    add_model_arguments,
    add_run_arguments,
    emit,
    overrides_from,
    run_settings_from,
)
from vitbench.cli.progress import Steps, add_quiet_argument
from vitbench.row_status import RowStatus


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "profile",
        help="measure throughput, latency, peak memory and MFU on this device",
        description="Measure what each configuration really costs on this device: images/s, "
        "median and p90 step latency with their spread, peak memory (bytes; with a breakdown "
        "by category), which attention kernel ran, achieved FLOP/s (2 x MACs per image, x3 "
        "for a training step) and MFU. MODEL: a preset, or a reference (timm:NAME, "
        "torchvision:NAME, hf:NAME, py:module:function). Each configuration runs --runs times, "
        "each in a fresh worker process, pooled into one row (run_medians_s: the between-run "
        "spread the gate tests). Threads default to the machine's CPUs, at most 4 (never the "
        "load at the start; the row's threads column); the machine's load, "
        "governor and (CUDA) other GPU processes are recorded as machine_* columns, with "
        "warnings. A configuration the memory model predicts over --memory-limit or the "
        "device's memory is refused without running (status=refused); out-of-memory runs "
        "become rows with status=oom. Table output shows the main columns; CSV/JSON carry "
        "every column, raw timing samples included. Progress goes to stderr (a bar on a "
        "terminal, else a line per run; -q for none).",
    )
    add_model_arguments(parser)
    add_run_arguments(parser)
    add_format_argument(parser)
    add_quiet_argument(parser)
    parser.set_defaults(handler=run)


def _report(row) -> None:
    """A row's error and warnings on stderr, as it is measured."""
    label = f"{row['model']} (batch {row['batch_size']}, {row['mode']}, {row['precision']})"
    if row.get("error"):
        if row.get("error_detail") and os.environ.get("VITBENCH_DEBUG"):  # a worker's traceback
            sys.stderr.write(row["error_detail"])
        print(f"vitbench: {row['status']}: {label}: {row['error']}", file=sys.stderr)
    from vitbench.row_warnings import texts

    for warning in texts(row.get("warnings")):
        print(f"vitbench: warning: {label}: {warning}", file=sys.stderr)


def run(args) -> int:
    os.environ.setdefault("KINETO_LOG_LEVEL", "5")  # the profiler's C++ start/stop chatter
    from vitbench.measure.profile import TABLE_COLUMNS, profile, settings_and_alternatives

    settings, alternatives = settings_and_alternatives(None, run_settings_from(args))
    steps = Steps("profile", quiet=args.quiet)
    try:
        records = profile(args.models, settings, overrides=overrides_from(args), on_row=_report, on_progress=steps,
                          **alternatives)
    finally:
        steps.close()
    columns = None
    if args.format in ("table", "markdown"):
        # rows that differ only in resolution or in a reference's keyword arguments stay apart
        columns = list(TABLE_COLUMNS)
        if len({r.get("img_size") for r in records}) > 1:
            columns.insert(1, "img_size")
        if any(r.get("overrides") for r in records):
            columns.insert(1, "overrides")
    emit(args, records, columns)
    if records and all(r.get("status") == RowStatus.ERROR for r in records):
        return 3
    return 0
