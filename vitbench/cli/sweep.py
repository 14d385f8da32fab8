"""`vitbench sweep`: run a grid of configurations (command line or sweep file) into a results store."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

from vitbench.cli.common import _override_fields

#: spec fields whose one value is itself a comma list: alternatives are separated by ';'
LIST_FIELDS = ("layers", "widths", "fc_dims", "stages")
MEASURE_FLAGS = ("device", "mode", "precision", "min_time", "warmup", "threads", "optimizer")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sweep",
        help="run a grid of configurations through analytic, counters and measured stages",
        description="Run every configuration of a grid (preset models x spec-field values x batch "
        "sizes x modes x precisions) and store one row per configuration as it completes: "
        "DIR/results.csv plus DIR/results.json (environment, raw timing samples). Grid values are "
        "comma-separated (list-valued fields such as --layers take ';' between alternatives). "
        "MACs are multiply-accumulates; FLOPs = 2 x MACs.",
    )
    parser.add_argument("sweep_file", nargs="?", metavar="SWEEP_FILE", help="a YAML or TOML sweep file (see README: sweep files)")
    parser.add_argument("--model", "--models", dest="models", metavar="M1,M2", help="comma-separated preset names (see `vitbench models`)")
    grid = parser.add_argument_group("grid axes", "comma-separated values of any spec field, e.g. --img-size 224,384 --patch-size 8,16,32")
    for name, kinds in _override_fields().items():
        grid.add_argument(f"--{_field_flag(name)}", dest=f"grid_{name}", metavar="V1,V2", default=None, help=f"({kinds})")
    parser.add_argument("--batch-size", dest="batch_sizes", metavar="B1,B2", help="comma-separated batch sizes (default 1)")
    parser.add_argument("--stages", metavar="S1,S2", help="comma-separated: analytic, counters, measured (default analytic)")
    parser.add_argument("--counters", metavar="C1,C2", help="counters stage: fvcore, dispatch (default both)")
    measured = parser.add_argument_group("measured stage")
    measured.add_argument("--device", help="auto, cpu or cuda (default auto)")
    measured.add_argument("--mode", metavar="M1,M2", help="infer and/or train (default infer)")
    measured.add_argument("--precision", metavar="P1,P2", help="fp32, bf16, fp16 (default fp32)")
    measured.add_argument("--min-time", dest="min_time", metavar="SECONDS", help="timed seconds per configuration")
    measured.add_argument("--warmup", metavar="N", help="warm-up steps")
    measured.add_argument("--threads", metavar="N", help="CPU threads")
    measured.add_argument("--optimizer", metavar="NAME", help="adamw, sgd or sgd-momentum (train mode)")
    run_group = parser.add_argument_group("running")
    run_group.add_argument("--name", help="sweep name (default: the file's name, or 'sweep')")
    run_group.add_argument("--out", metavar="DIR", help="results store directory (default results/NAME)")
    run_group.add_argument("--resume", action="store_true", help="keep the rows already in DIR and run only the rest")
    run_group.add_argument("--force", action="store_true", help="discard rows already in DIR and start over")
    run_group.add_argument("--retry-failed", action="store_true", help="with --resume: rerun rows whose status is error or oom")
    run_group.add_argument("--shard", metavar="I/N", help="run only configurations I, I+N, ... of the ordered grid (1-based)")
    run_group.add_argument("--dry-run", action="store_true", help="list the configurations (with ids) and exit")
    run_group.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary (automatic bar off when not a TTY or CI=true)")
    parser.set_defaults(handler=run)


def _field_flag(name: str) -> str:
    """The flag of a spec field; plaincnn's ``stages`` would clash with --stages (sweep stages)."""
    return "conv-stages" if name == "stages" else name.replace("_", "-")


def _split(text: str, sep: str = ",") -> list[str]:
    return [part.strip() for part in text.split(sep) if part.strip()]


def _flag(key: str) -> str:
    """Sweep-file key -> the command-line flag that sets it (for error messages)."""
    if key.startswith("grid."):
        return "--" + _field_flag(key[len("grid."):])
    last = key.rsplit(".", 1)[-1]
    last = {"models": "model", "batch_sizes": "batch_size"}.get(last, last)
    return "--" + last.replace("_", "-")


def _grid_from(args: argparse.Namespace) -> dict[str, list[Any]]:
    grid: dict[str, list[Any]] = {}
    for key, value in vars(args).items():
        if key.startswith("grid_") and value is not None:
            name = key[len("grid_"):]
            grid[name] = _split(value, ";" if name in LIST_FIELDS else ",")
            if not grid[name]:
                from vitbench.sweepfile import SweepFileError

                raise SweepFileError(f"--{_field_flag(name)}={value!r}: give at least one value")
    return grid


def _measure_from(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in MEASURE_FLAGS:
        value = getattr(args, name)
        if value is not None:
            out[name] = _split(value) if name in ("mode", "precision") else value
    return out


def _build_plan(args: argparse.Namespace):
    from dataclasses import replace

    from vitbench.sweepfile import SweepFileError, load_sweep_file, validate

    grid = _grid_from(args)
    measure = _measure_from(args)
    if args.sweep_file:
        if args.models or grid:
            flag = "--model" if args.models else "--" + _field_flag(next(iter(grid)))
            raise SweepFileError(f"{flag}: give the grid in the sweep file or on the command line, not both")
        plan = load_sweep_file(args.sweep_file)
        # Command-line stage and measurement settings apply to every study of the file.
        data: dict[str, Any] = {"models": ["vit-b/16"]}
        if args.stages is not None:
            data["stages"] = _split(args.stages)
        if args.counters is not None:
            data["counters"] = _split(args.counters)
        if args.batch_sizes is not None:
            data["batch_sizes"] = _split(args.batch_sizes)
        if measure:
            data["measure"] = measure
        checked = validate(data, label="", rename=_flag).studies[0]
        studies = []
        for study in plan.studies:
            changes: dict[str, Any] = {}
            for key in ("stages", "counters", "batch_sizes"):
                if key in data:
                    changes[key] = getattr(checked, key)
            if measure:
                given = {"modes" if k == "mode" else "precisions" if k == "precision" else k for k in measure}
                changes["measure"] = replace(study.measure, **{k: getattr(checked.measure, k) for k in given})
            studies.append(replace(study, **changes))
        return replace(plan, studies=tuple(studies))
    if not args.models:
        raise SweepFileError("--model: give models (e.g. --model vit-b/16,resnet50) or a sweep file")
    data = {"name": args.name or "sweep", "models": _split(args.models), "grid": grid}
    for key in ("stages", "counters", "batch_sizes"):
        if getattr(args, key) is not None:
            data[key] = _split(getattr(args, key))
    if measure:
        data["measure"] = measure
    return validate(data, label="", rename=_flag)


def _show_bar(quiet: bool) -> bool:
    if quiet or os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        return False
    return sys.stderr.isatty()


def _describe(row: dict[str, Any]) -> str:
    parts = [str(row.get("model"))]
    if row.get("overrides"):
        parts.append(str(row["overrides"]))
    parts.append(f"batch {row.get('batch_size')}")
    if row.get("mode"):
        parts.append(f"{row['mode']} {row.get('precision')}")
    return " ".join(parts)


def run(args: argparse.Namespace) -> int:
    from vitbench.sweeps import expand, parse_shard, select_shard, sweep

    plan = _build_plan(args)
    shard = parse_shard(args.shard)
    if args.retry_failed and not args.resume:
        from vitbench.sweepfile import SweepFileError

        raise SweepFileError("--retry-failed: only makes sense with --resume")
    if args.dry_run:
        from vitbench.reporting.format import render

        configs = select_shard(expand(plan), shard)
        rows = [
            {
                "index": c.index, "id": c.id, "study": c.study, "model": c.model,
                "overrides": c.overrides_text, "batch_size": c.batch_size, "mode": c.mode or "",
                "precision": c.precision or "", "stages": "+".join(c.stages),
                "invalid": c.invalid or "",
            }
            for c in configs
        ]
        sys.stdout.write(render(rows, "table") + "\n")
        sys.stdout.write(f"{len(rows)} configurations\n")
        return 0

    show_bar = _show_bar(args.quiet)
    log_rows = not args.quiet and not show_bar and os.environ.get("CI", "").lower() not in ("1", "true", "yes")
    state: dict[str, Any] = {"bar": None, "done": 0, "todo": 0}

    def on_start(todo: int, skipped: int) -> None:
        state["todo"] = todo
        if skipped and not args.quiet:
            print(f"vitbench: resuming: {skipped} configurations already done, {todo} to run", file=sys.stderr)
        if show_bar:
            from tqdm import tqdm

            state["bar"] = tqdm(total=todo, unit="cfg", file=sys.stderr, dynamic_ncols=True, desc=plan.name)

    def on_row(row: dict[str, Any]) -> None:
        state["done"] += 1
        bar = state["bar"]
        if bar is not None:
            bar.set_postfix_str(_describe(row)[:60], refresh=False)
            bar.update(1)
        elif log_rows:
            status = row.get("status")
            extra = f": {row.get('error')}" if status != "ok" and row.get("error") else ""
            print(f"[{state['done']}/{state['todo']}] {_describe(row)}: {status}{extra}", file=sys.stderr, flush=True)

    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum, frame):  # a scheduler's SIGTERM ends the sweep like Ctrl-C
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    try:
        result = sweep(
            plan, name=args.name, out=args.out, resume=args.resume, force=args.force,
            retry_failed=args.retry_failed, shard=shard, on_start=on_start, on_row=on_row,
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
        if state["bar"] is not None:
            state["bar"].close()
    if not args.quiet:
        print(result.summary())
    failed = result.statuses.get("error", 0) + result.statuses.get("oom", 0)
    return 3 if failed and failed == result.ran and result.ran else 0
