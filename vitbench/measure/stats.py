"""Summary statistics of timing samples: median, quantiles, IQR, coefficient of variation, and
the stability warning. Pure Python (no numpy, no torch)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

#: Spread (CV or IQR / median) above which a measurement is flagged as unstable.
UNSTABLE_SPREAD = 0.10


def quantile(samples: Sequence[float], q: float) -> float:
    """The q-quantile with linear interpolation between order statistics (numpy's default,
    ``method='linear'``): position ``q * (n - 1)`` in the sorted samples."""
    if not samples:
        raise ValueError("no samples")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile q={q!r} outside [0, 1]")
    ordered = sorted(samples)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class LatencyStats:
    """Summary of per-step times (seconds). ``cv`` = stdev / mean; ``iqr`` = p75 - p25."""

    n: int
    median: float
    p90: float
    p25: float
    p75: float
    mean: float
    stdev: float
    minimum: float
    maximum: float

    @property
    def iqr(self) -> float:
        return self.p75 - self.p25

    @property
    def cv(self) -> float:
        return self.stdev / self.mean if self.mean > 0 else 0.0

    @property
    def relative_iqr(self) -> float:
        return self.iqr / self.median if self.median > 0 else 0.0


def summarize(samples: Sequence[float]) -> LatencyStats:
    if not samples:
        raise ValueError("no samples")
    samples = [float(s) for s in samples]
    return LatencyStats(
        n=len(samples),
        median=quantile(samples, 0.5),
        p90=quantile(samples, 0.9),
        p25=quantile(samples, 0.25),
        p75=quantile(samples, 0.75),
        mean=statistics.fmean(samples),
        stdev=statistics.stdev(samples) if len(samples) > 1 else 0.0,
        minimum=min(samples),
        maximum=max(samples),
    )


def stability_warning(
    stats: LatencyStats, threshold: float = UNSTABLE_SPREAD, threads: int | None = None
) -> str | None:
    """A warning with advice when the spread exceeds ``threshold`` (CV or IQR / median)."""
    spread = max(stats.cv, stats.relative_iqr)
    if spread <= threshold:
        return None
    hint = "rerun with --threads N (fewer than the cores)" if threads is None else "rerun"
    return (
        f"unstable timing: CV {stats.cv:.1%}, IQR/median {stats.relative_iqr:.1%} over "
        f"{stats.n} samples (> {threshold:.0%}); {hint}, a longer --min-time, and close other "
        "programs using the device"
    )
