"""How large a spec the tools that build or step through it will take, decided from the spec
alone before anything runs (formulas take any size: they are closed forms).

Measured on this 2-core machine: tracing ViT-B/16 on the meta device costs about 14 ms and
0.9 MB per block (depth 1000: 13.9 s, 900 MB), and predicting ViT-S/16 at depth 2000 took 17.6 s;
the memory replay costs about 0.3 ms and 15 KB per block (depth 10,000: 2.7 s, 170 MB; depth
100,000: 34 s, 1.5 GB). A depth of 10^12 hung both `plan` and `predict`.
"""

from __future__ import annotations

from typing import Any

#: blocks (ViT depth, ResNet blocks, CNN stages) that tracing (the counters, the time model)
#: builds at most: a trace stays under about half a minute
MAX_TRACED_BLOCKS = 2000
#: blocks a whole step's trace (``predict``, a sweep's predict stage: the forward and, training,
#: the backward and the optimizer, on fake tensors) builds at most (issue 45: `predict vit-b/16
#: --depth 2000`, inside MAX_TRACED_BLOCKS, ran 37-63 s and reached 7.2 GB on one machine). Time
#: grows with the traced operators, not the weights (they are never allocated for real, see
#: :func:`vitbench.counters.limits.trace_refusal`). Measured on a busy 2-core machine (CPU
#: seconds of the whole command, about 4 s of them starting Python and torch): ViT-B/16 at 250
#: blocks 15.5 s training; at 500 blocks 11.5 s inference, 29.7 s training; at 2,000 blocks,
#: 54-63 s inference, 0.93 GB. 256 keeps a step of the deepest real networks (ResNet-152 is
#: 50 blocks, ViT-22B 48) five times over, and its trace to about 10 s on an idle machine
MAX_STEP_TRACED_BLOCKS = 256
#: blocks the memory replay (``plan``) steps through at most: a few seconds
MAX_REPLAYED_BLOCKS = 10_000
#: blocks of a ResNet at most: its formulas walk every block (100,000 take about 5 s; 10^8 hung
#: `analyze`), where a ViT's, a Swin's and a ConvNeXt's are closed forms of the depth
MAX_WALKED_BLOCKS = 100_000


def blocks(spec: Any) -> int | None:
    """The repeated blocks a spec builds: a ViT's depth, a ResNet's blocks, a CNN's stages."""
    if spec is None:
        return None
    depth = getattr(spec, "depth", None)
    if isinstance(depth, int):
        return depth
    layers = getattr(spec, "layers", None) or getattr(spec, "stages", None) or getattr(spec, "depths", None)
    if isinstance(layers, (list, tuple)):
        return sum(v if isinstance(v, int) else 1 for v in layers)
    return None


def too_many_blocks(spec: Any, limit: int, what: str) -> str | None:
    """Why ``what`` refuses ``spec`` (more than ``limit`` blocks), or None."""
    count = blocks(spec)
    if count is None or count <= limit:
        return None
    return f"{what} would step through all {count:,} blocks; it takes at most {limit:,} (the analytic figures stand)"


__all__ = ["MAX_REPLAYED_BLOCKS", "MAX_STEP_TRACED_BLOCKS", "MAX_TRACED_BLOCKS", "MAX_WALKED_BLOCKS", "blocks", "too_many_blocks"]
