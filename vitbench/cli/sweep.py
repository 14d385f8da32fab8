"""`vitbench sweep`: run a grid of configurations (command line or sweep file) into a results store."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from vitbench.cli.common import (
    RUN_FLAG_OF,
    add_override_arguments,
    add_run_arguments,
    field_flag,
    non_negative_int,
    parse_size,
    positive_int,
    run_settings_from,
    values_from,
)
from vitbench.row_status import FAILED
from vitbench.settings import LAUNCHERS

#: the measured stage's settings: every RunSettings field but the batch size (a grid axis of
#: its own, --batch-size) and those that make no sense across a grid (per-configuration traces)
MEASURE_FIELDS = (
    "device", "mode", "precision", "channels_last", "compile", "threads", "optimizer", "runs", "clock", "allocator",
    "min_run_time_s", "warmup", "min_samples", "memory", "isolate", "timeout_s", "peak_flops",
    "peak_bandwidth", "memory_limit_bytes", "memory_check", "max_batch_size",
)

#: --dry-run lists every configuration of a grid up to this size, else the first DRY_RUN_HEAD
DRY_RUN_ROWS = 1000
DRY_RUN_HEAD = 20


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sweep",
        help="run a grid of configurations through analytic, counters, predict and measured stages",
        description="Run every configuration of a grid (models x spec-field values x batch sizes x "
        "modes x precisions) and append one checksummed row per configuration to DIR/rows.jsonl as it "
        "completes; DIR/results.csv is exported at the end (and on interruption). Grid values are "
        "comma-separated (list-valued fields such as --layers take ';' between alternatives). "
        "MACs are multiply-accumulates; FLOPs = 2 x MACs.",
    )
    parser.add_argument("sweep_file", nargs="?", metavar="SWEEP_FILE", help="a YAML or TOML sweep file (see docs/sweeps.md)")
    parser.add_argument("--model", "--models", dest="models", metavar="M1,M2", help="comma-separated presets or references (see `vitbench models`)")
    add_override_arguments(parser, "grid axes", "grid_")
    parser.add_argument("--batch-size", dest="batch_sizes", metavar="B1,B2", help="comma-separated batch sizes (default 1)")
    parser.add_argument("--stages", metavar="S1,S2", help="comma-separated: analytic, counters, predict (the time model), measured (default analytic)")
    parser.add_argument("--counters", metavar="C1,C2", help="counters stage: fvcore, dispatch (default both)")
    add_run_arguments(parser, MEASURE_FIELDS, title="measured stage (the same flags as `vitbench profile`)")
    run_group = parser.add_argument_group("running")
    run_group.add_argument("--name", help="sweep name (default: the file's name, or 'sweep')")
    run_group.add_argument("--out", metavar="DIR", help="results store directory (default results/NAME)")
    run_group.add_argument("--resume", action="store_true", help="keep the rows already in DIR and run only the rest")
    run_group.add_argument("--force", action="store_true", help="discard rows already in DIR and start over")
    run_group.add_argument("--allow-foreign", action="store_true", help="with --resume: add to a store written by a different sweep definition")
    run_group.add_argument("--retry-failed", action="store_true", help="with --resume: rerun rows whose status is error or oom")
    run_group.add_argument("--shard", metavar="I/N", help="run only configurations I, I+N, ... of the ordered grid (1-based)")
    run_group.add_argument("--dry-run", action="store_true", help="count the grid, list its first configurations (with ids) and the time estimate, and exit")
    run_group.add_argument("--yes", action="store_true", help="run a grid above 100,000 configurations or 24 h of estimated time")
    run_group.add_argument("--export", default="csv", metavar="F1,F2", help="formats exported at the end: csv, parquet (default csv)")
    run_group.add_argument("--sync", choices=("interval", "always"), default="interval", help="fsync policy of the store: interval (default; group commit: no row lost when the process is killed, at most the last --sync-interval on a power failure) or always (one fsync per row)")
    run_group.add_argument("--sync-interval", type=float, default=1.0, metavar="SECONDS", help="with --sync interval: seconds between fsyncs (default 1)")
    run_group.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary (automatic bar off when not a TTY or CI=true)")
    launch = parser.add_argument_group("launchers")
    launch.add_argument("--launcher", choices=LAUNCHERS, default="local", help="local (default), gpus (one worker per GPU), submitit (Slurm job array)")
    launch.add_argument("--gpus", metavar="I1,I2", help="gpus: the devices (default CUDA_VISIBLE_DEVICES or every CUDA device)")
    launch.add_argument("--jobs", type=positive_int, metavar="N", help="submitit: array size (shards; default 8)")
    launch.add_argument("--parallelism", type=positive_int, metavar="N", help="submitit: array jobs running at once")
    launch.add_argument("--time-limit", dest="time_limit_min", type=positive_int, metavar="MINUTES", help="submitit: per-job time limit (default 60; requeued from the store when it runs out)")
    launch.add_argument("--partition", help="submitit: Slurm partition")
    launch.add_argument("--gpus-per-job", type=positive_int, metavar="N", help="submitit: GPUs per job")
    launch.add_argument("--cpus-per-job", type=positive_int, metavar="N", help="submitit: CPUs per job")
    launch.add_argument("--mem-per-job", type=parse_size, metavar="SIZE", help="submitit: memory per job (512MiB, 4GB; Slurm gets whole MiB)")
    launch.add_argument("--cluster", choices=("slurm", "local", "debug"), help="submitit: executor (default: slurm when available, else local)")
    launch.add_argument("--max-retries", type=non_negative_int, default=2, metavar="N", help="submitit: resubmissions of a failed job (default 2)")
    launch.add_argument("--no-wait", action="store_true", help="submitit: submit and exit (merge later with vitbench merge)")
    parser.set_defaults(handler=run)


def _split(text: str | None) -> list[str] | None:
    return None if text is None else [part.strip() for part in text.split(",") if part.strip()]


def _flag(key: str) -> str:
    """A plan key -> the command-line flag that sets it (for error messages)."""
    if key.startswith("grid."):
        return field_flag(key[len("grid."):])
    last = key.rsplit(".", 1)[-1]
    if last in RUN_FLAG_OF:
        return RUN_FLAG_OF[last]
    last = {"models": "model", "batch_sizes": "batch_size"}.get(last, last)
    return "--" + last.replace("_", "-")


def build_plan(args: argparse.Namespace):
    from vitbench.sweeps.plan import build_plan as build

    measure = run_settings_from(args)
    return build(
        args.sweep_file, models=_split(args.models), grid=values_from(args, "grid_"),
        batch_sizes=_split(args.batch_sizes), stages=_split(args.stages), counters=_split(args.counters),
        measure=measure, name=args.name, rename=_flag,
    )


def _launcher_options(args: argparse.Namespace) -> dict[str, Any]:
    if args.launcher == "gpus":
        return {"gpus": args.gpus}
    if args.launcher == "submitit":
        return {
            "jobs": args.jobs, "parallelism": args.parallelism, "time_limit_min": args.time_limit_min or 60,
            "partition": args.partition, "gpus_per_job": args.gpus_per_job, "cpus_per_job": args.cpus_per_job,
            "mem_per_job": args.mem_per_job,
            "cluster": args.cluster, "max_retries": args.max_retries, "wait": not args.no_wait,
        }
    return {}


def _dry_run(plan, shard) -> int:
    from vitbench.reporting.format import render
    from vitbench.sweeps.run import preview

    shown = preview(plan, shard, DRY_RUN_ROWS, DRY_RUN_HEAD)
    sys.stdout.write(render(shown.rows, "table") + "\n")
    if shown.tally.selected > len(shown.rows):
        sys.stdout.write(f"... and {shown.tally.selected - len(shown.rows)} more\n")
    sys.stdout.write(f"estimated time: {shown.seconds / 3600:.2f} h ({shown.seconds / max(shown.tally.selected, 1):.3g} s per row)\n")
    sys.stdout.write(f"{shown.tally.selected} configurations\n")
    if shown.unchecked:
        print(f"vitbench: note: model references are built when the sweep runs (a dry run calls no py: factory), "
              f"so their configurations are not checked here: {', '.join(shown.unchecked)}", file=sys.stderr)
    return 0


def sweep_settings(args: argparse.Namespace):
    """The command line's flags as the :class:`~vitbench.sweeps.settings.SweepSettings` the API
    takes (validated there)."""
    from vitbench.sweeps.settings import SweepSettings

    return SweepSettings(
        out=args.out, resume=args.resume, force=args.force, allow_foreign=args.allow_foreign,
        retry_failed=args.retry_failed, shard=args.shard, yes=args.yes, export=_split(args.export) or ["csv"],
        launcher=args.launcher, launcher_options=_launcher_options(args), sync=args.sync,
        sync_interval_s=args.sync_interval,
    )


def run(args: argparse.Namespace) -> int:
    from vitbench.sweeps.launch import sweep
    from vitbench.sweeps.progress import Progress, sigterm_as_interrupt

    plan = build_plan(args)
    settings = sweep_settings(args)
    if args.dry_run:
        from vitbench.sweeps.run import check_runnable

        check_runnable(plan, settings.store_options())  # what the run would refuse
        return _dry_run(plan, settings.shard)
    progress = Progress(sys.stderr, quiet=args.quiet, desc=plan.name)
    try:
        with sigterm_as_interrupt():
            result = sweep(
                plan, settings, on_start=progress.on_start, on_row=progress.on_row,
                on_calibrate=lambda message: print(f"vitbench: {message}", file=sys.stderr, flush=True),
            )
    finally:
        progress.close()
    for problem in result.problems:
        print(f"vitbench: warning: {problem}", file=sys.stderr)
    if not args.quiet:
        print(result.summary())
    failed = sum(result.statuses.get(status, 0) for status in FAILED)
    return 3 if failed and failed == result.ran and result.ran else 0
