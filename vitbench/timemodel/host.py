"""The host's side of an eager GPU step: the time to dispatch one operator (Python, PyTorch's
dispatcher, autograd's bookkeeping in training, the CUDA launch call). A property of the CPU and
the PyTorch build, not of the GPU (:class:`~vitbench.timemodel.gpu_model.HostParams`).

Three sources, by ``predict --host-dispatch``:

- ``default``: the documented default host (``hosts.default`` in ``vitbench/data/gpu_params.json``:
  the H100 cloud machine's dispatch, fitted on its host-bound steps);
- a stated time per operator of inference (``12us``, ``1.2e-5``); training's is that times the
  default host's training / inference ratio (autograd records every forward operator and
  dispatches the backward's);
- ``measured``: this machine's CPU, measured now: the time per operator of an eager forward of a
  small MLP block on tiny CPU tensors (Python and the dispatcher, kernels negligible),
  plus a CUDA launch call, which a CPU cannot time: :data:`CUDA_LAUNCH_S`.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import replace
from typing import Any

from vitbench.errors import SpecError
from vitbench.timemodel.gpu_model import GpuProfile, HostParams, default_host
from vitbench.timemodel.ops import _Recorder

#: a cudaLaunchKernel call's host time, median over a BabelStream run on an A100 node (nsys
#: cuda_api_sum: median 2.8 us, mean 3.4 us; argonne-lcf/ALCFBeginnersGuide polaris/02_profiling.md)
CUDA_LAUNCH_S = 2.8e-6
_TIME = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?(?:e-?[0-9]+)?)\s*(s|ms|us|µs|ns)?\s*$", re.IGNORECASE)
_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, None: 1.0}


def parse_host_dispatch(value: Any) -> Any:
    """``None`` / ``'default'`` (None), ``'measured'``, or seconds per operator (a number or a
    time such as ``'12us'``); SpecError naming ``host_dispatch`` otherwise."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "default"):
        return None
    if isinstance(value, str) and value.strip().lower() == "measured":
        return "measured"
    if isinstance(value, bool):
        raise SpecError("host_dispatch", value, "must be default, measured or a time per operator such as 12us")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        found = _TIME.match(str(value))
        if not found:
            raise SpecError("host_dispatch", value, "must be default, measured or a time per operator such as 12us")
        seconds = float(found.group(1)) * _UNITS[found.group(2).lower() if found.group(2) else None]
    if not (math.isfinite(seconds) and 1e-8 <= seconds <= 0.1):
        raise SpecError("host_dispatch", value, "must be a time per operator between 10 ns and 100 ms")
    return seconds


def stated_host(seconds: float, source: str) -> Any:
    """A host dispatching inference operators at ``seconds`` each; training at the default host's ratio."""
    base = default_host()
    return HostParams(seconds, seconds * base.train_s / base.infer_s, source)


def measure_cpu_dispatch_s(repeats: int = 7, min_time_s: float = 0.05) -> float:
    """Seconds per operator of an eager forward of a small MLP block on tiny CPU tensors, on one
    thread (the fastest of ``repeats`` timings, each at least ``min_time_s``: what the host takes
    when it has a core to itself, as a training job's host thread does): Python and the dispatcher."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _time_dispatch(torch, repeats, min_time_s)
    finally:
        torch.set_num_threads(threads)


def _time_dispatch(torch: Any, repeats: int, min_time_s: float) -> float:
    # an MLP block's operators one by one (TransformerEncoderLayer would take its fused fast path)
    block = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.LayerNorm(16), torch.nn.Linear(16, 32), torch.nn.GELU(),
                                                      torch.nn.Linear(32, 16)) for _ in range(4)])
    block.eval()
    x = torch.randn(1, 4, 16)

    with torch.no_grad():
        recorder = _Recorder()
        recorder.recording = True
        with recorder.mode():
            block(x)
        operators = max(1, len(recorder.ops))
        block(x)  # warm
        timings = []
        for _ in range(repeats):
            calls, started = 0, time.perf_counter()
            while True:
                block(x)
                calls += 1
                elapsed = time.perf_counter() - started
                if elapsed >= min_time_s:
                    break
            timings.append(elapsed / calls / operators)
    return min(timings)


def with_host(cal: Any, host: Any) -> Any:
    """A GPU profile ``cal`` with ``host``'s dispatch time (a CPU calibration as it is)."""
    if not isinstance(cal, GpuProfile):
        return cal
    return replace(cal, params=replace(cal.params, host_infer_s=host.infer_s, host_train_s=host.train_s),
                   host_from=host.source)


def resolve_host(value: Any) -> Any:
    """The :class:`~vitbench.timemodel.gpu_model.HostParams` that ``value`` (:func:`parse_host_dispatch`)
    asks for, or None for the default."""
    parsed = parse_host_dispatch(value)
    if parsed is None:
        return None
    if parsed == "measured":
        cpu = measure_cpu_dispatch_s()
        return stated_host(cpu + CUDA_LAUNCH_S, f"measured on this machine: {cpu * 1e6:.1f} us per operator on the "
                                                 f"CPU + {CUDA_LAUNCH_S * 1e6:.1f} us a CUDA launch")
    return stated_host(parsed, f"stated: {parsed * 1e6:.3g} us per inference operator")


__all__ = ["CUDA_LAUNCH_S", "measure_cpu_dispatch_s", "parse_host_dispatch", "resolve_host", "stated_host", "with_host"]
