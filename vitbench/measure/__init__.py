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

from vitbench.lazy import lazy_exports

_EXPORTS = {
    "RunSettings": "vitbench.settings",
    "measure": "vitbench.measure.profile",
    "profile": "vitbench.measure.profile",
    "peak_memory": "vitbench.measure.memory",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
