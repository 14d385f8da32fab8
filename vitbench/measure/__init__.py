"""Measured cost on a real device: timing, peak memory, OOM handling, environment, roofline.

Modules (each with one job; ``RunSettings`` lives in ``vitbench.settings``):
``profile`` (measure / profile: the public entry points), ``runs`` (repeated runs pooled into one
row), ``isolate`` (parent side of a worker run), ``worker`` (entry module of the worker
process), ``single`` (one run in this process: passes, memory cap, auto batch size),
``target`` (what is measured and its size), ``record`` (row columns), ``budget`` (memory
predictions, refusals, the auto batch's budget), ``machine`` (load, affinity, governor, GPU
processes), ``env`` (device, threads, ``env_*`` columns), ``stats`` (summaries and significance
tests), ``stability`` (warnings about unstable timings), ``timer`` (adaptive timing, wall and CPU
time), ``workload`` (model + inputs + step), ``memory`` (peak memory and its breakdown), ``oom``
(recognise, release, cap), ``autobatch`` (doubling then bisection), ``roofline`` and
``intensity`` (MFU, arithmetic intensity), ``attention_kernel`` (which SDPA kernel ran),
``trace`` (TensorBoard / Perfetto traces), ``quiet`` (silence the profiler), ``selftest``.

Importing this package does not import torch.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RunSettings", "measure", "profile", "peak_memory"]


def __getattr__(name: str) -> Any:
    if name == "RunSettings":
        from vitbench.settings import RunSettings

        return RunSettings
    if name in ("measure", "profile"):
        from vitbench.measure import profile as module

        return getattr(module, name)
    if name == "peak_memory":
        from vitbench.measure.memory import peak_memory

        return peak_memory
    raise AttributeError(f"module 'vitbench.measure' has no attribute {name!r}")
