"""What the counters refuse to trace, decided from the analytic size before anything is built
(as ``profile`` refuses from the memory model): a spec with more blocks than tracing can build
in reasonable time and memory, an input tensor that does not fit in memory, and (for fvcore,
which executes the model) a forward pass larger than the memory available.

Measured here: building and tracing ViT-B/16 on the meta device costs about 14 ms and 0.9 MB
per block (depth 1000: 13.9 s, 900 MB peak), so depth 100,000 would take some 25 minutes and
90 GB; :data:`MAX_TRACED_BLOCKS` keeps a trace under about half a minute.
"""

from __future__ import annotations

from typing import Any

from vitbench.errors import VitbenchError
from vitbench.procfs import proc_bytes
from vitbench.specs.limits import MAX_TRACED_BLOCKS, blocks


class CountingRefused(VitbenchError):
    """A configuration the counters will not trace (exit code 2): the reason names the size."""


def available_memory() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (None where there is none)."""
    return proc_bytes("/proc/meminfo", "MemAvailable")


def counting_refusal(target: Any, batch_size: int, counters: Any) -> str | None:
    """Why the counters must not trace ``target`` at ``batch_size`` (None when they may):

    blocks(spec) > MAX_TRACED_BLOCKS, or the input B x C x H x W x 4 bytes above half the
    memory available, or (fvcore, which runs the model for real) the analytic inference peak
    above half the memory available."""
    spec = getattr(target, "spec", None)
    count = blocks(spec)
    if count is not None and count > MAX_TRACED_BLOCKS:
        return (f"refused: tracing would build all {count:,} blocks (about 14 ms and 0.9 MB each); the counters trace at most "
                f"{MAX_TRACED_BLOCKS:,}; the analytic figures stand")
    available = available_memory()
    if available is None:
        return None
    channels, height, width = target.input_size
    image_bytes = batch_size * channels * height * width * 4
    if image_bytes > available // 2:
        return (f"refused: the input batch alone is {image_bytes / 1e9:.1f} GB, more than half of the memory available "
                f"({available / 1e9:.1f} GB)")
    if "fvcore" in counters and spec is not None:
        try:
            from vitbench.analytic.memory import memory_estimate

            peak = memory_estimate(spec, batch_size, "infer").peak_bytes
        except Exception:  # noqa: BLE001 - no memory model for this spec: nothing to refuse from
            return None
        if peak > available // 2:
            return (f"refused: fvcore runs the model for real, and its forward pass needs about {peak / 1e9:.1f} GB, more than "
                    f"half of the memory available ({available / 1e9:.1f} GB); the dispatch counter runs on meta")
    return None


__all__ = ["MAX_TRACED_BLOCKS", "CountingRefused", "available_memory", "blocks", "counting_refusal"]
