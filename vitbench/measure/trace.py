"""``--trace-dir``: a ``torch.profiler`` trace per configuration, written by
``tensorboard_trace_handler`` so that TensorBoard's profiler plugin (torch-tb-profiler) shows
each configuration as a run, and Perfetto / Holistic Trace Analysis read the same JSON."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

from vitbench.measure.quiet import quiet_profile, quiet_step
from vitbench.measure.timer import synchronize

#: profiler schedule: skip one step, warm up one, record two
WAIT, WARMUP, ACTIVE = 1, 1, 2


def run_name(model: str, batch_size: int, mode: str, precision: str, device: str, extra: str = "") -> str:
    """A folder name for one configuration: ``vit-s_16-b8-train-fp32-cpu``."""
    text = f"{model}-b{batch_size}-{mode}-{precision}-{device}{('-' + extra) if extra else ''}"
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)


def worker_name() -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", f"{socket.gethostname()}_{os.getpid()}")


def write_trace(workload, trace_dir: str | os.PathLike, name: str) -> list[str]:
    """Profile ``WAIT + WARMUP + ACTIVE`` steps of ``workload`` into ``trace_dir/name`` and return
    the trace files written (``<worker>.<timestamp>.pt.trace.json``)."""
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

    run_dir = Path(trace_dir) / name
    run_dir.mkdir(parents=True, exist_ok=True)
    before = set(run_dir.glob("*.pt.trace.json*"))
    activities = [ProfilerActivity.CPU]
    if workload.device.startswith("cuda"):
        activities.append(ProfilerActivity.CUDA)
    with quiet_profile(profile(
        activities=activities,
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
        on_trace_ready=tensorboard_trace_handler(str(run_dir), worker_name=worker_name()),
        record_shapes=True,
        profile_memory=True,
        with_stack=False,
    )) as prof:
        for _ in range(WAIT + WARMUP + ACTIVE):
            workload.run(1)
            synchronize(workload.device)
            quiet_step(prof)
    return sorted(str(p) for p in set(run_dir.glob("*.pt.trace.json*")) - before)
