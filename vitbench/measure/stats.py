"""Summary statistics of timing samples: median, quantiles, IQR, coefficient of variation, and
the stability warning. Pure Python (no numpy, no torch)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from vitbench.row_warnings import warning

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
) -> dict[str, str] | None:
    """A warning with advice when the spread exceeds ``threshold`` (CV or IQR / median)."""
    spread = max(stats.cv, stats.relative_iqr)
    if spread <= threshold:
        return None

    hint = "rerun with --threads N (fewer than the cores)" if threads is None else "rerun"
    return warning(
        "unstable-steps",
        f"unstable timing: CV {stats.cv:.1%}, IQR/median {stats.relative_iqr:.1%} over "
        f"{stats.n} samples (> {threshold:.0%})",
        f"{hint}, a longer --min-time, and close other programs using the device",
    )


# --------------------------------------------------------------------------- significance
# scipy is imported inside the functions: it is needed only when a comparison is assessed.


def median(values: Sequence[float]) -> float:
    """The middle value (the mean of the two middle values for an even count)."""
    return statistics.median(values)


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test by the normal approximation with tie and continuity
    corrections: ``scipy.stats.mannwhitneyu(a, b, method="asymptotic")``. Returns (U_a, p).

    U_a = R_a - n_a (n_a + 1) / 2 (R_a: rank sum of ``a`` in the pooled sample, ties averaged);
    z = (|U_a - n_a n_b / 2| - 1/2) / sigma. All values equal: no evidence of a shift, p = 1
    (scipy gives nan there).
    """
    if not a or not b:
        raise ValueError("both samples must be non-empty")
    from scipy import stats

    if len(set(a) | set(b)) == 1:
        return len(a) * len(b) / 2, 1.0
    result = stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True)
    return float(result.statistic), float(result.pvalue)


@dataclass(frozen=True)
class RunShift:
    """Welch's t-test on the logarithms of per-run values (e.g. per-run median step times).

    ``ratio`` = exp(mean log b - mean log a): how many times larger ``b``'s typical run is;
    ``p``: see :func:`run_shift`. The logarithm turns a slowdown into a shift and makes a rate
    (1 / time) the same test with the sign flipped."""

    ratio: float
    p: float
    n_a: int
    n_b: int


#: Fewest runs per side for which :func:`run_shift` gives a p-value.
MIN_RUNS = 2

ALTERNATIVES = ("two-sided", "greater", "less")


def run_shift(
    a: Sequence[float], b: Sequence[float], margin: float = 1.0, alternative: str = "two-sided"
) -> RunShift:
    """Welch's t-test (``scipy.stats.ttest_ind(equal_var=False)``) of log(b) - log(a) against
    log(``margin``).

    d = mean log b - mean log a - log margin; t = d / sqrt(s_a^2 / n_a + s_b^2 / n_b) with
    Welch-Satterthwaite degrees of freedom. ``alternative="greater"``: p of H0 "b is at most
    ``margin`` times a" (small p: b exceeds the margin); ``"less"``: H0 "b is at least
    ``margin`` times a"; ``"two-sided"``: H0 "b is exactly ``margin`` times a". When no run
    differs from the others of its side (zero spread), the test is undefined: p = 0 when d is
    on the alternative's side, else 1."""
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative={alternative!r}: must be one of {', '.join(ALTERNATIVES)}")
    if len(a) < MIN_RUNS or len(b) < MIN_RUNS:
        raise ValueError(f"need at least {MIN_RUNS} runs per side, got {len(a)} and {len(b)}")
    if any(not (x > 0 and math.isfinite(x)) for x in (*a, *b, margin)):
        raise ValueError("run values and the margin must be positive and finite")
    log_a, log_b = [math.log(x) for x in a], [math.log(x) for x in b]
    shift = statistics.fmean(log_b) - statistics.fmean(log_a)
    d = shift - math.log(margin)
    if len(set(log_a)) == 1 and len(set(log_b)) == 1:  # no run differs from its side's others
        beyond = {"two-sided": d != 0, "greater": d > 0, "less": d < 0}[alternative]
        p = 0.0 if beyond else 1.0
    else:
        p = _welch_p(log_a, log_b, d, alternative)
    return RunShift(ratio=math.exp(shift), p=p, n_a=len(a), n_b=len(b))


def _welch_p(log_a: Sequence[float], log_b: Sequence[float], d: float, alternative: str) -> float:
    """p of Welch's t-test for a mean difference ``d`` (of ``log_b`` less the margin, minus
    ``log_a``): t = d / sqrt(v_a / n_a + v_b / n_b), Welch-Satterthwaite degrees of freedom,
    Student's t distribution (``scipy.special.stdtr``). The value of
    ``scipy.stats.ttest_ind(equal_var=False)``, without its per-call overhead (2 ms a call made
    a 10^4-configuration compare take a minute)."""
    from scipy.special import stdtr

    se_a = _variance(log_a) / len(log_a)
    se_b = _variance(log_b) / len(log_b)
    if se_a + se_b == 0:  # a spread too small for a float: as no spread
        return 0.0 if {"two-sided": d != 0, "greater": d > 0, "less": d < 0}[alternative] else 1.0
    t = d / math.sqrt(se_a + se_b)
    spread = se_a**2 / (len(log_a) - 1) + se_b**2 / (len(log_b) - 1)
    df = (se_a + se_b) ** 2 / spread if spread > 0 else float(min(len(log_a), len(log_b)) - 1)
    if alternative == "greater":
        return float(stdtr(df, -t))
    if alternative == "less":
        return float(stdtr(df, t))
    return float(min(1.0, 2 * stdtr(df, -abs(t))))


def _variance(values: Sequence[float]) -> float:
    """Sample variance in floats (``statistics.variance`` is exact, through fractions: 0.5 ms a
    call, a third of a large compare's time)."""
    mean = math.fsum(values) / len(values)
    return math.fsum((x - mean) ** 2 for x in values) / (len(values) - 1)
