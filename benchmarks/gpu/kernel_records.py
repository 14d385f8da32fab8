"""Kernel-level records of real steps (issue 48): per configuration, a ``torch.profiler`` pass over
a few steps, reduced where it ran to compact CSV rows the GPU cost model can be fitted on.

For each configuration (model, mode, batch, precision) of :func:`configurations` (the calibration
suite, ``vitbench.timemodel.gpu_calibration.SUITE``, and timm models across families at batches
that fill a data-centre card, in an order that puts the most informative first), the step is built
as ``vitbench profile`` builds it (:func:`vitbench.measure.workload.build_workload`: the model,
random inputs, autocast, the optimizer; ``tf32`` as ``gpu_calibration.measure_step`` runs it),
then:

1. timed as vitbench times it (:func:`vitbench.measure.timer.time_steps`: warm-up, samples of
   back-to-back steps, median): ``step_wall_s``; and three single steps from an empty queue:
   ``step_single_s`` (synchronised) and ``step_issue_s`` (until the host has dispatched the step);
2. run ``--profile-steps`` steps (3) under ``torch.profiler.profile`` (CPU activities, and CUDA
   ones on a GPU; input shapes recorded), each step synchronised;
3. reduced to one row per (operator, its parent operator, input shapes, input dtypes, the
   kernels it launched): ``calls``, ``launches``, ``device_us`` (the kernels' time),
   ``host_self_us`` (the operator's own CPU time: nested operators and waits in a
   synchronising runtime call excluded; its launch calls included), ``runtime_us`` (CUDA
   runtime / driver calls it made directly), ``sync_us`` (the part of them that waited:
   ``*Synchronize``), ``cpu_total_us`` (its whole span). Totals over the profiled steps
   (``profile_steps``). A kernel the profiler could not link to an operator is kept under
   ``op = (unattributed)``. Runtime calls outside any operator (the step's synchronisation)
   are rows of their own.

Rows are appended to ``--out`` as each configuration finishes (a time limit loses only the
configuration under way); one row per configuration goes to the summary (``--summary``: the
per-step sums of host dispatch, runtime, sync and device time, the step's wall time, operator
calls and kernel launches, or the error). ``--max-seconds`` stops between configurations.
``--device cpu`` records CPU activities only (the kernel columns stay empty).

    python benchmarks/gpu/kernel_records.py --out kernels.csv --max-seconds 120
    python benchmarks/gpu/kernel_records.py --device cpu --config resnet18,infer,2,fp32 --out k.csv
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

KEY_COLUMNS = ("model", "mode", "batch_size", "precision")
RECORD_COLUMNS = (*KEY_COLUMNS, "op", "parent", "input_shapes", "input_dtypes", "kernels", "calls", "launches",
                  "device_us", "host_self_us", "runtime_us", "sync_us", "cpu_total_us", "profile_steps", "step_wall_s")
SUMMARY_COLUMNS = (*KEY_COLUMNS, "status", "error", "device", "device_name", "torch", "timm", "optimizer",
                   "profile_steps", "step_wall_s", "step_single_s", "step_issue_s", "profiled_step_s",
                   "profiled_issue_s", "host_self_s", "runtime_s", "sync_s", "device_s", "unattributed_device_s",
                   "aten_calls", "op_calls", "kernel_launches", "rows", "seconds")
UNATTRIBUTED = "(unattributed)"

#: timm models across families at batches that fill a data-centre card. Inference in fp16 (timm's
#: published harness: AMP fp16, NCHW) unless said; EfficientFormerV2, NesT and CaiT first: they
#: run far slower than their operators suggest (the GPU-time issue), and their kernels say why
TIMM_INFER: tuple[tuple[str, str, int, str], ...] = tuple(
    (f"timm:{name}", "infer", batch, "fp16") for name, batch in (
        ("efficientformerv2_s0", 256), ("nest_tiny_jx", 256), ("cait_xxs24_224", 256),
        ("vit_base_patch16_224", 256), ("resnet50", 256), ("efficientnet_b0", 256), ("mobilenetv3_large_100", 256),
        ("regnety_032", 256), ("vgg16", 128), ("convnext_small", 256), ("swin_base_patch4_window7_224", 128),
        ("deit_small_patch16_224", 256), ("mobilenetv2_100", 256), ("efficientnet_b3", 128),
        ("efficientformerv2_l", 128), ("vit_large_patch16_224", 64), ("regnetx_016", 256),
        ("cait_s24_224", 64), ("nest_small_jx", 128), ("vit_small_patch16_224", 256),
        ("deit_base_distilled_patch16_224", 256),
    )
)
TIMM_TRAIN: tuple[tuple[str, str, int, str], ...] = tuple(
    (f"timm:{name}", "train", 128, "fp16") for name in (
        "resnet50", "vit_base_patch16_224", "convnext_tiny", "efficientnet_b0", "efficientformerv2_s0",
        "mobilenetv3_large_100",
    )
)
TIMM_BF16: tuple[tuple[str, str, int, str], ...] = (
    ("timm:efficientnet_b0", "infer", 256, "bf16"), ("timm:mobilenetv3_large_100", "infer", 256, "bf16"),
    ("timm:vgg16", "infer", 128, "bf16"),
)


def configurations() -> list[tuple[str, str, int, str]]:
    """The calibration suite and the timm models, most informative first: the suite's
    device-bound inference, the timm inference models, the suite's device-bound training, timm
    training, the suite's fp32 / TF32 ones, its host-bound batch-1 ones, then bf16 extras (any
    configuration the suite gains later comes last)."""
    from vitbench.timemodel.gpu_calibration import SUITE

    def suite(test) -> list[tuple[str, str, int, str]]:
        return [c for c in SUITE if test(*c)]

    ordered = [
        *suite(lambda m, mode, b, p: mode == "infer" and b > 1 and p in ("bf16", "fp16")),
        *TIMM_INFER,
        *suite(lambda m, mode, b, p: mode == "train" and b > 1 and p in ("bf16", "fp16")),
        *TIMM_TRAIN,
        *suite(lambda m, mode, b, p: b > 1 and p in ("fp32", "tf32")),
        *suite(lambda m, mode, b, p: b == 1),
        *TIMM_BF16,
        *SUITE,
    ]
    return list(dict.fromkeys(ordered))


def parse_config(text: str) -> tuple[str, str, int, str]:
    """``MODEL,MODE,BATCH,PRECISION`` (``timm:resnet50,infer,256,fp16``)."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 4 or parts[1] not in ("infer", "train") or not parts[2].isdigit() \
            or parts[3] not in ("fp32", "tf32", "bf16", "fp16"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected MODEL,infer|train,BATCH,fp32|tf32|bf16|fp16")
    return parts[0], parts[1], int(parts[2]), parts[3]


# --- reducing a profile ---------------------------------------------------------------------

#: CUDA runtime and driver API calls (cudaLaunchKernel, cuLaunchKernelEx, cudaMemcpyAsync, ...)
_RUNTIME_NAME = re.compile(r"^cu(da)?[A-Z]")
#: profiler bookkeeping, not work
_SKIPPED = ("ProfilerStep#", "[memory]", "[OutOfMemory]", "Activity Buffer Request")


def is_runtime(event: Any) -> bool:
    kind = str(getattr(event, "activity_type", "") or "")
    return "runtime" in kind or "driver" in kind or bool(_RUNTIME_NAME.match(event.name))


def is_sync(name: str) -> bool:
    return "Synchronize" in name


def _skipped(event: Any) -> bool:
    return event.name.startswith(_SKIPPED) or "overhead" in str(getattr(event, "activity_type", "") or "").lower()


def _parent(event: Any) -> Any:
    parent = event.cpu_parent
    while parent is not None and _skipped(parent):
        parent = parent.cpu_parent
    return parent


def _dumps(value: Any) -> str:
    return json.dumps(value if value is not None else [], separators=(",", ":"), default=str)


def _input_dtypes(event: Any, fallback: dict[int, list[str]] | None) -> Any:
    found = getattr(event, "input_dtypes", None)
    if found is None and fallback:
        found = fallback.get(getattr(event, "id", None))
    return found


def _elapsed_us(event: Any) -> float:
    return float(event.time_range.elapsed_us())


def kineto_dtypes(prof: Any) -> dict[int, list[str]]:
    """Input dtypes by event id from the profiler's raw events, for a torch whose function
    events do not carry ``input_dtypes``; {} when they cannot be read."""
    try:
        from torch.autograd import DeviceType

        return {e.correlation_id(): list(e.dtypes()) for e in prof.profiler.kineto_results.events()
                if e.device_type() == DeviceType.CPU}
    except Exception:  # noqa: BLE001 - the rows then say [] for dtypes
        return {}


def reduce_events(events: Any, steps: int, dtypes: dict[int, list[str]] | None = None,
                  ) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """``torch.profiler`` function events (``prof.events()``) -> (rows, per-step totals).

    Each CPU-side operator (every event but runtime calls, device activity and the profiler's
    own) is one call of its row, keyed by (name, parent operator, input shapes, input dtypes,
    the names of the kernels it launched, in order). Runtime calls are charged to the operator
    that made them (``runtime_us``, ``sync_us``), or are rows of their own outside any
    operator. Device activity the profiler linked to no operator is kept per kernel name under
    ``op = (unattributed)``. ``dtypes``: input dtypes by event id (:func:`kineto_dtypes`),
    for events without ``input_dtypes``."""
    from torch.autograd import DeviceType

    groups: dict[tuple, dict[str, Any]] = {}
    device_by_name: Counter[str] = Counter()
    device_count: Counter[str] = Counter()
    attributed: Counter[str] = Counter()
    attributed_count: Counter[str] = Counter()
    totals = Counter()
    for event in events:
        if event.device_type != DeviceType.CPU:
            device_by_name[event.name] += _elapsed_us(event)
            device_count[event.name] += 1
            continue
        if event.is_async or _skipped(event):
            continue
        parent = _parent(event)
        runtime = is_runtime(event)
        if runtime and parent is not None:
            continue  # charged to its operator below
        total = _elapsed_us(event)
        if runtime:
            runtime_us = total
            sync_us = total if is_sync(event.name) else 0.0
            host_us = total - sync_us
        else:
            children = [c for c in event.cpu_children if not c.is_async and not _skipped(c)]
            calls = [c for c in children if is_runtime(c)]
            runtime_us = sum(_elapsed_us(c) for c in calls)
            sync_us = sum(_elapsed_us(c) for c in calls if is_sync(c.name))
            nested = sum(_elapsed_us(c) for c in children if not is_runtime(c))
            host_us = max(0.0, total - nested - sync_us)
            totals["op_calls"] += 1
            totals["aten_calls"] += event.name.startswith("aten::")
        kernels = list(getattr(event, "kernels", None) or [])
        kernel_us = sum(float(k.duration) for k in kernels)
        for kernel in kernels:
            attributed[kernel.name] += float(kernel.duration)
            attributed_count[kernel.name] += 1
        key = (event.name, parent.name if parent is not None else "", _dumps(getattr(event, "input_shapes", None)),
               _dumps(_input_dtypes(event, dtypes)), " | ".join(k.name for k in kernels))
        row = groups.get(key)
        if row is None:
            row = groups[key] = dict(op=key[0], parent=key[1], input_shapes=key[2], input_dtypes=key[3], kernels=key[4],
                                     calls=0, launches=0, device_us=0.0, host_self_us=0.0, runtime_us=0.0, sync_us=0.0,
                                     cpu_total_us=0.0)
        row["calls"] += 1
        row["launches"] += len(kernels)
        row["device_us"] += kernel_us
        row["host_self_us"] += host_us
        row["runtime_us"] += runtime_us
        row["sync_us"] += sync_us
        row["cpu_total_us"] += total
        totals["host_self_us"] += host_us
        totals["runtime_us"] += runtime_us
        totals["sync_us"] += sync_us
        totals["device_us"] += kernel_us
        totals["launches"] += len(kernels)
    for name, device_us in device_by_name.items():
        rest = device_us - attributed[name]
        if rest > 0.5:  # microseconds the profiler did not link to an operator
            count = max(0, device_count[name] - attributed_count[name])
            groups[(UNATTRIBUTED, name)] = dict(op=UNATTRIBUTED, parent="", input_shapes="[]", input_dtypes="[]",
                                                kernels=name, calls=0, launches=count, device_us=rest, host_self_us=0.0,
                                                runtime_us=0.0, sync_us=0.0, cpu_total_us=0.0)
            totals["unattributed_device_us"] += rest
            totals["device_us"] += rest
            totals["launches"] += count
    rows = []
    for row in groups.values():
        for name in ("device_us", "host_self_us", "runtime_us", "sync_us", "cpu_total_us"):
            row[name] = round(row[name], 3)
        rows.append(row)
    per_step = {name: value / steps for name, value in totals.items()}
    return rows, per_step


# --- one configuration ----------------------------------------------------------------------

def _versions() -> dict[str, str]:
    import torch

    out = {"torch": torch.__version__}
    try:
        import timm

        out["timm"] = timm.__version__
    except ImportError:
        out["timm"] = ""
    return out


def record(config: tuple[str, str, int, str], device: str, *, profile_steps: int = 3, warmup: int = 3,
           min_run_time_s: float = 0.1, optimizer: str = "adamw") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Build, time and profile one configuration: (record rows, summary row). A failure (out of
    memory, a model that does not build) is the summary's ``status``/``error``, with no rows."""
    import torch

    from vitbench.measure.oom import error_text, release_memory
    from vitbench.measure.timer import synchronize, time_steps
    from vitbench.measure.workload import build_workload
    from vitbench.settings import RunSettings

    model, mode, batch, precision = config
    started = time.perf_counter()
    cuda = device.startswith("cuda")
    summary: dict[str, Any] = dict(model=model, mode=mode, batch_size=batch, precision=precision, device=device,
                                   device_name=torch.cuda.get_device_name() if cuda else "cpu", optimizer=optimizer,
                                   profile_steps=profile_steps, **_versions())
    if precision == "fp16" and not cuda:
        summary.update(status="skipped", error="fp16 autocast needs CUDA", seconds=0.0)
        return [], summary
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"  # as gpu_calibration.measure_step
    torch.backends.cudnn.allow_tf32 = True
    workload = None
    rows: list[dict[str, Any]] = []
    try:
        settings = RunSettings(device=device, mode=mode, batch_size=batch, optimizer=optimizer, runs=1, warmup=warmup,
                               precision="fp32" if precision == "tf32" else precision, min_run_time_s=min_run_time_s)
        workload = build_workload(model, settings, batch, device)
        timing = time_steps(workload.run, device, min_run_time_s=min_run_time_s, warmup=warmup, min_samples=3)
        issue, single = [], []
        for _ in range(3):
            synchronize(device)
            t0 = time.perf_counter()
            workload.run(1)
            issue.append(time.perf_counter() - t0)
            synchronize(device)
            single.append(time.perf_counter() - t0)
        activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
        profiled_issue, profiled_step = [], []
        with torch.profiler.profile(activities=activities, record_shapes=True) as prof:
            for _ in range(profile_steps):
                t0 = time.perf_counter()
                workload.run(1)
                profiled_issue.append(time.perf_counter() - t0)
                synchronize(device)
                profiled_step.append(time.perf_counter() - t0)
        step_wall = statistics.median(timing.samples_s)
        events = prof.events()
        has_dtypes = any(getattr(e, "input_dtypes", None) is not None for e in events)
        rows, per_step = reduce_events(events, profile_steps, None if has_dtypes else kineto_dtypes(prof))
        for row in rows:
            row.update(model=model, mode=mode, batch_size=batch, precision=precision, profile_steps=profile_steps,
                       step_wall_s=step_wall)
        summary.update(
            status="ok", error="", step_wall_s=step_wall, step_single_s=statistics.median(single),
            step_issue_s=statistics.median(issue), profiled_step_s=statistics.median(profiled_step),
            profiled_issue_s=statistics.median(profiled_issue),
            host_self_s=per_step.get("host_self_us", 0.0) / 1e6, runtime_s=per_step.get("runtime_us", 0.0) / 1e6,
            sync_s=per_step.get("sync_us", 0.0) / 1e6, device_s=per_step.get("device_us", 0.0) / 1e6,
            unattributed_device_s=per_step.get("unattributed_device_us", 0.0) / 1e6,
            aten_calls=per_step.get("aten_calls", 0.0), op_calls=per_step.get("op_calls", 0.0),
            kernel_launches=per_step.get("launches", 0.0), rows=len(rows))
    except Exception as exc:  # noqa: BLE001 - one configuration's failure is its summary row
        oom = "out of memory" in str(exc).lower()
        summary.update(status="oom" if oom else "error", error=error_text(exc))
        rows = []
    finally:
        if workload is not None:
            workload.close()
        workload = None
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn
        try:
            release_memory(device)
            if cuda:
                torch.cuda.empty_cache()
        except Exception:  # noqa: BLE001 - a broken device shows in the next configuration's row
            pass
    summary["seconds"] = round(time.perf_counter() - started, 3)
    return rows, summary


# --- output ---------------------------------------------------------------------------------

def append_csv(path: Path, columns: tuple[str, ...], rows: list[dict[str, Any]]) -> None:
    """Append ``rows`` (a header first when the file is new or empty) in one write, flushed."""
    new = not path.exists() or path.stat().st_size == 0
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, columns, extrasaction="ignore", lineterminator="\n")
    if new:
        writer.writeheader()
    writer.writerows(rows)
    with open(path, "a", newline="") as fh:
        fh.write(buffer.getvalue())
        fh.flush()
        os.fsync(fh.fileno())


def done_keys(summary_path: Path) -> set[tuple[str, str, int, str]]:
    """The configurations a summary already holds with ``status=ok`` (``--resume``)."""
    if not summary_path.exists():
        return set()
    with open(summary_path, newline="") as fh:
        return {(r["model"], r["mode"], int(r["batch_size"]), r["precision"]) for r in csv.DictReader(fh)
                if r.get("status") == "ok"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="the records CSV (appended to; required but with --list)")
    parser.add_argument("--summary", help="the per-configuration CSV (default: OUT with _summary before .csv)")
    parser.add_argument("--device", default=None, help="cuda (default when available) or cpu")
    parser.add_argument("--config", action="append", type=parse_config, metavar="MODEL,MODE,BATCH,PRECISION",
                        help="run these configurations instead of the list (repeatable)")
    parser.add_argument("--only", action="append", metavar="TEXT", help="keep configurations whose model contains TEXT")
    parser.add_argument("--start", type=int, default=0, help="skip the list's first N configurations")
    parser.add_argument("--limit", type=int, help="at most N configurations")
    parser.add_argument("--batch-size", type=int, help="every configuration at this batch (a quick CPU check)")
    parser.add_argument("--max-seconds", type=float, help="start no configuration after this many seconds")
    parser.add_argument("--profile-steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--min-run-time", type=float, default=0.1, help="seconds of timed steps for step_wall_s")
    parser.add_argument("--optimizer", default="adamw")
    parser.add_argument("--resume", action="store_true", help="skip configurations the summary holds as ok")
    parser.add_argument("--list", action="store_true", help="print the configurations and exit")
    args = parser.parse_args(argv)
    started = time.perf_counter()

    configs = list(args.config) if args.config else configurations()
    if args.only:
        configs = [c for c in configs if any(text in c[0] for text in args.only)]
    configs = configs[args.start:]
    if args.limit is not None:
        configs = configs[: args.limit]
    if args.batch_size:
        configs = list(dict.fromkeys((m, mode, args.batch_size, p) for m, mode, _, p in configs))
    if args.list:
        for index, config in enumerate(configs):
            print(index + args.start, *config)
        return 0

    if not args.out:
        parser.error("--out is required")
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    out = Path(args.out)
    summary_path = Path(args.summary) if args.summary else out.with_name(out.stem + "_summary" + (out.suffix or ".csv"))
    out.parent.mkdir(parents=True, exist_ok=True)
    summary_path.parent.mkdir(parents=True, exist_ok=True)
    skip = done_keys(summary_path) if args.resume else set()
    meta = dict(argv=sys.argv if argv is None else ["kernel_records.py", *argv], device=device,
                device_name=torch.cuda.get_device_name() if device.startswith("cuda") else "cpu", started=time.time(),
                configurations=[list(c) for c in configs], **_versions())
    (out.with_name(out.stem + "_meta.json")).write_text(json.dumps(meta, indent=1) + "\n")
    done = 0
    for index, config in enumerate(configs):
        if config in skip:
            continue
        elapsed = time.perf_counter() - started
        if args.max_seconds is not None and elapsed >= args.max_seconds:
            print(f"time limit ({args.max_seconds:g} s): stopping after {done} configurations, "
                  f"before [{index + args.start}] {' '.join(map(str, config))}", flush=True)
            break
        rows, summary = record(config, device, profile_steps=args.profile_steps, warmup=args.warmup,
                               min_run_time_s=args.min_run_time, optimizer=args.optimizer)
        append_csv(out, RECORD_COLUMNS, rows)
        append_csv(summary_path, SUMMARY_COLUMNS, [summary])
        done += 1
        if summary["status"] == "ok":
            print(f"[{index + args.start}] {' '.join(map(str, config))}: step {summary['step_wall_s'] * 1e3:.3f} ms, "
                  f"host {summary['host_self_s'] * 1e3:.3f} ms, device {summary['device_s'] * 1e3:.3f} ms, "
                  f"{summary['aten_calls']:.0f} aten calls, {summary['kernel_launches']:.0f} launches, {len(rows)} rows "
                  f"({summary['seconds']:.1f} s)", flush=True)
        else:
            print(f"[{index + args.start}] {' '.join(map(str, config))}: {summary['status']}: {summary['error']}", flush=True)
    print(f"{done} configurations in {time.perf_counter() - started:.1f} s -> {out}, {summary_path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
