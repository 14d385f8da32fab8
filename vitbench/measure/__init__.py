"""Measured cost on a real device: timing, peak memory, OOM handling, environment, roofline.

Modules (each with one job; ``RunSettings`` lives in ``vitbench.settings``): ``stats`` (median, IQR, CV),
``timer`` (adaptive timing), ``workload`` (model + inputs + step), ``memory`` (peak memory and
its breakdown), ``oom`` (recognise, release, cap), ``autobatch`` (largest batch that fits),
``env`` (environment columns), ``roofline`` and ``intensity`` (MFU, arithmetic intensity),
``attention_kernel`` (which SDPA kernel ran), ``trace`` (TensorBoard / Perfetto traces),
``isolate`` (one subprocess per configuration), ``profile`` (measure / profile), ``selftest``.

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
