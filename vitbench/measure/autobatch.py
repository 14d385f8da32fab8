"""``--batch-size auto``: the largest batch that fits, by doubling and then bisection."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class BatchSearch:
    """Result of the search: ``batch_size`` (0 when not even one image fits) and every probe
    as (batch, fits) in the order tried."""

    batch_size: int
    probes: tuple[tuple[int, bool], ...] = field(default=())
    hit_limit: bool = False


def find_max_batch(fits: Callable[[int], bool], max_batch: int = 4096, start: int = 1) -> BatchSearch:
    """Largest b in [1, max_batch] with ``fits(b)``, assuming fitting is monotone in b.

    Doubling from ``start`` finds the first failure f (or reaches ``max_batch``); bisection
    between the last success s and f then needs log2(f - s) more probes."""
    if max_batch < 1 or start < 1:
        raise ValueError("max_batch and start must be >= 1")
    probes: list[tuple[int, bool]] = []

    def probe(b: int) -> bool:
        ok = bool(fits(b))
        probes.append((b, ok))
        return ok

    low, high = 0, None  # low fits (0 = nothing yet); high fails
    b = min(start, max_batch)
    while True:
        if probe(b):
            low = b
            if b == max_batch:
                return BatchSearch(b, tuple(probes), hit_limit=True)
            b = min(2 * b, max_batch)
        else:
            high = b
            break
    while high - low > 1:
        mid = (low + high) // 2
        if probe(mid):
            low = mid
        else:
            high = mid
    return BatchSearch(low, tuple(probes))
