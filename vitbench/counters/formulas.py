"""MAC formulas for fused attention operators, from tensor shapes (shared by both counters).

Tracers see a fused attention kernel as one operator; fvcore and torch's FlopCounterMode
count several of them as zero. These are the MACs of the matmuls inside:
    SDPA:       q (B, h, n, d_h), k (B, h, m, d_h), v (B, h, m, d_v)
                MACs = B h n m d_h  (Q K^T)  +  B h n m d_v  (P V)
    its backward (a fused kernel recomputes the scores):
                MACs = B h n m (3 d_h + 2 d_v)   (Q K^T again, dO V^T, P^T dO, dS K, dS^T Q)
    native MHA: query (B, n, E), key/value (B, m, E), h heads
                MACs = B n E^2 (q proj) + 2 B m E^2 (k, v proj) + 2 B n m E (Q K^T, P V)
                       + B n E^2 (output projection)
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod


def sdpa_macs(q: Sequence[int], k: Sequence[int], v: Sequence[int]) -> int:
    """B h n m d_h + B h n m d_v; leading dims of q (batch, heads, ...) are multiplied together."""
    *batch, n, d_h = q
    m, d_v = k[-2], v[-1]
    return prod(batch) * n * m * (d_h + d_v)


def sdpa_backward_macs(q: Sequence[int], k: Sequence[int], v: Sequence[int]) -> int:
    """B h n m (3 d_h + 2 d_v): the scores recomputed (Q K^T), dP = dO V^T, dV = P^T dO, dQ = dS K
    and dK = dS^T Q; leading dims of q (batch, heads, ...) multiplied together, k and v broadcast
    over q's heads (grouped-query attention runs every query head)."""
    *batch, n, d_h = q
    m, d_v = k[-2], v[-1]
    return prod(batch) * n * m * (3 * d_h + 2 * d_v)


def sdpa_activations(q: Sequence[int], k: Sequence[int], v: Sequence[int]) -> int:
    """Output elements the explicit path would produce: scores (B h n m) + output (B h n d_v),
    so that fused and explicit attention give the same fvcore activation count."""
    *batch, n, _ = q
    return prod(batch) * n * (k[-2] + v[-1])


def mha_macs(query: Sequence[int], key: Sequence[int], embed_dim: int) -> int:
    """Native multi-head attention; its fast path only runs batch-first: query (B, n, E),
    key and value (B, m, E)."""
    batch, n, _ = query
    m = key[-2]
    projections = batch * (n + 2 * m) * embed_dim**2 + batch * n * embed_dim**2
    return projections + 2 * batch * n * m * embed_dim


def mha_activations(query: Sequence[int], key: Sequence[int], embed_dim: int, num_heads: int) -> int:
    """qkv outputs + h n m scores + attention output + projection output."""
    batch, n, _ = query
    m = key[-2]
    return batch * ((n + 2 * m) * embed_dim + num_heads * n * m + 2 * n * embed_dim)
