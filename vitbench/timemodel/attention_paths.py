"""Which path PyTorch's scaled_dot_product_attention takes for a traced call, where the path
changes what the GPU does: a fused kernel keeps the attention maps on chip; the math path (two
batched products around a softmax) writes them to memory."""

from __future__ import annotations

from math import prod


def math_attention(name: str, args: tuple) -> bool:
    """SDPA on other than 4-D tensors (NesT's (B, heads, blocks, N, C)): no fused kernel takes
    them, so PyTorch runs its math path (two batched products around a softmax, the maps in memory)."""
    if not name.startswith(("scaled_dot_product", "_scaled_dot_product")) or "backward" in name or not args:
        return False
    return hasattr(args[0], "dim") and args[0].dim() != 4


def math_attention_bytes(args: tuple) -> int:
    """The math path's extra traffic: 4 passes over the q[:-1] x S maps (scores, probabilities)."""
    return 4 * prod(args[0].shape[:-1]) * args[1].shape[-2] * args[0].element_size()


__all__ = ["math_attention", "math_attention_bytes"]
