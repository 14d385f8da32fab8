"""Pieces shared by the hierarchical families (Swin, ConvNeXt): a network of stages, each entered
through a transition (patch merging, downsampling) except the first, ending in LayerNorm +
global average pool + an optional linear classifier. Pure Python."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def norm_and_classifier_params(width: int, classes: int) -> int:
    """Final LayerNorm 2C and, with K > 0 classes, the classifier C K + K."""
    return 2 * width + (width * classes + classes if classes else 0)


def staged_params(
    spec: Any,
    entry: int,
    transition: Callable[[Any, int], int],
    block: Callable[[Any, int], dict[str, int]],
) -> int:
    """entry + sum_i [transition_i (i >= 1) + depth_i * block_i] + LayerNorm + classifier."""
    total = entry + norm_and_classifier_params(spec.num_features, spec.num_classes)
    for stage, depth in enumerate(spec.depths):
        if stage:
            total += transition(spec, stage)
        total += depth * sum(block(spec, stage).values())
    return total


def staged_macs(
    spec: Any,
    entry: tuple[str, int],
    block: Callable[[Any, int], dict[str, int]],
    transition: tuple[str, Callable[[Any, int], int]],
    head: int,
) -> dict[str, int]:
    """Per image, by component: the entry, each block component summed as sum_i depth_i * block_i,
    the transitions into stages 2.., and the head."""
    out = {entry[0]: entry[1]}
    for stage, depth in enumerate(spec.depths):
        for name, value in block(spec, stage).items():
            out[name] = out.get(name, 0) + depth * value
    name, macs = transition
    out[name] = sum(macs(spec, stage) for stage in range(1, len(spec.depths)))
    out["head"] = head
    return out
