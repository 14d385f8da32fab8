"""Statistics of timing samples and significance tests, the timer's sampling logic (with a fake
clock), the batch-size search and run-settings validation: all device-independent and pure."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vitbench.errors import SpecError
from vitbench.measure.autobatch import find_max_batch
from vitbench.measure.stats import mann_whitney_u, quantile, run_shift, stability_warning, summarize
from vitbench.measure.timer import sample_size, time_steps
from vitbench.settings import RunSettings


# --------------------------------------------------------------------------- stats
def test_quantile_linear_interpolation_by_hand():
    samples = [4.0, 1.0, 3.0, 2.0]  # sorted: 1 2 3 4; position q * 3
    assert quantile(samples, 0.5) == 2.5  # halfway between 2 and 3
    assert quantile(samples, 0.25) == pytest.approx(1.75)  # position 0.75
    assert quantile(samples, 0.9) == pytest.approx(3.7)  # position 2.7
    assert quantile(samples, 0.0) == 1.0 and quantile(samples, 1.0) == 4.0
    assert quantile([7.0], 0.9) == 7.0


def test_quantile_rejects_bad_input():
    with pytest.raises(ValueError):
        quantile([], 0.5)
    with pytest.raises(ValueError):
        quantile([1.0], 1.5)


def test_summarize_by_hand():
    s = summarize([0.010, 0.011, 0.012, 0.013, 0.020])
    assert s.n == 5
    assert s.median == 0.012
    assert s.p25 == 0.011 and s.p75 == 0.013  # positions 1 and 3 exactly
    assert s.iqr == pytest.approx(0.002)
    assert s.p90 == pytest.approx(0.013 + 0.6 * 0.007)  # position 3.6
    mean = (0.010 + 0.011 + 0.012 + 0.013 + 0.020) / 5
    assert s.mean == pytest.approx(mean)
    assert s.cv == pytest.approx(statistics.stdev([0.010, 0.011, 0.012, 0.013, 0.020]) / mean)
    assert s.relative_iqr == pytest.approx(0.002 / 0.012)


def test_stability_warning_only_when_spread_is_large():
    steady = summarize([1.00, 1.01, 0.99, 1.00, 1.02, 0.98])
    assert stability_warning(steady) is None
    noisy = summarize([1.0, 1.5, 0.7, 2.0, 1.1, 0.9])
    found = stability_warning(noisy)
    assert found is not None and found["code"] == "unstable-steps" and "unstable" in found["message"]
    assert "--threads" in found["advice"] and "--min-time" in found["advice"]  # says what to do


# --------------------------------------------------------------------------- significance
def test_mann_whitney_by_hand():
    # a = 1,2,3 below b = 4,5,6: rank sum of a = 6, U_a = 6 - 3*4/2 = 0; mu = 4.5;
    # sigma^2 = 3*3/12 * 7 = 5.25; z = (4.5 - 0.5) / sqrt(5.25) = 1.7457; p = erfc(z / sqrt 2).
    u, p = mann_whitney_u([1, 2, 3], [4, 5, 6])
    assert u == 0
    assert p == pytest.approx(math.erfc(4 / math.sqrt(5.25) / math.sqrt(2)))
    assert p == pytest.approx(0.0809, abs=1e-4)
    # Identical samples: no evidence of a shift.
    assert mann_whitney_u([1, 1, 1], [1, 1, 1])[1] == 1.0


def _mann_whitney_reference(a, b):
    """Independent reference: rank sums with average ranks for ties, the tie-corrected variance
    n_a n_b / 12 * ((n + 1) - sum(t^3 - t) / (n (n - 1))), continuity correction 1/2."""
    n_a, n_b = len(a), len(b)
    pooled = sorted([(x, 0) for x in a] + [(x, 1) for x in b])
    n = n_a + n_b
    rank_sum_a = tie_term = 0.0
    i = 0
    while i < n:
        j = i
        while j + 1 < n and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        size = j - i + 1
        tie_term += size**3 - size
        rank_sum_a += ((i + j) / 2 + 1) * sum(1 for k in range(i, j + 1) if pooled[k][1] == 0)
        i = j + 1
    u_a = rank_sum_a - n_a * (n_a + 1) / 2
    variance = n_a * n_b / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    z = max(abs(u_a - n_a * n_b / 2) - 0.5, 0.0) / math.sqrt(variance)
    return u_a, min(1.0, math.erfc(z / math.sqrt(2)))


@given(
    a=st.lists(st.integers(0, 6), min_size=3, max_size=25),
    b=st.lists(st.integers(0, 6), min_size=3, max_size=25),
)
def test_mann_whitney_matches_a_reference_with_ties(a, b):
    if len(set(a + b)) == 1:
        return  # zero variance: p = 1 (tested above)
    expected_u, expected_p = _mann_whitney_reference(a, b)
    u, p = mann_whitney_u(a, b)
    assert u == pytest.approx(expected_u)
    assert p == pytest.approx(expected_p, rel=1e-9, abs=1e-12)


def test_run_shift_welch_by_hand():
    # log a = 0, 0.2 and log b = 0.1, 0.3: means 0.1 and 0.2, both variances 0.02;
    # se = sqrt(0.02/2 + 0.02/2) = 0.1414, t = 0.1 / se = 0.7071;
    # Welch df = 0.02^2 / (2 * 0.01^2 / 1) = 2, and for 2 df the two-sided p = 1 - t / sqrt(2 + t^2).
    shift = run_shift([1.0, math.exp(0.2)], [math.exp(0.1), math.exp(0.3)])
    t = 0.1 / math.sqrt(0.02)
    assert shift.p == pytest.approx(1 - t / math.sqrt(2 + t * t))  # 0.5528
    assert shift.ratio == pytest.approx(math.exp(0.1))
    assert (shift.n_a, shift.n_b) == (2, 2)


def test_run_shift_one_sided_against_a_margin_by_hand():
    a, b = [1.0, math.exp(0.2)], [math.exp(0.1), math.exp(0.3)]  # as above: t = 0.7071, 2 df
    two_sided = 1 - (0.1 / math.sqrt(0.02)) / math.sqrt(2 + 0.5)
    assert run_shift(a, b, alternative="greater").p == pytest.approx(two_sided / 2)
    assert run_shift(a, b, alternative="less").p == pytest.approx(1 - two_sided / 2)
    # b is exactly exp(0.1) times a on the log scale: at the margin, t = 0 and p = 1/2.
    assert run_shift(a, b, margin=math.exp(0.1), alternative="greater").p == pytest.approx(0.5)
    with pytest.raises(ValueError, match="alternative"):
        run_shift(a, b, alternative="larger")


def test_run_shift_is_the_same_for_times_and_rates():
    times_a, times_b = [0.010, 0.011, 0.0105], [0.0125, 0.0131, 0.0128]
    on_times = run_shift(times_a, times_b)
    on_rates = run_shift([8 / t for t in times_a], [8 / t for t in times_b])
    assert on_times.p == pytest.approx(on_rates.p)
    assert on_times.ratio == pytest.approx(1 / on_rates.ratio)


def test_run_shift_without_spread_and_with_too_few_runs():
    assert run_shift([0.01, 0.01], [0.01, 0.01]).p == 1.0
    assert run_shift([0.01, 0.01], [0.02, 0.02]).p == 0.0
    assert run_shift([0.01, 0.01], [0.02, 0.02], margin=2.5, alternative="greater").p == 1.0
    assert run_shift([0.01, 0.01], [0.02, 0.02], margin=1.5, alternative="greater").p == 0.0
    with pytest.raises(ValueError, match="at least 2 runs"):
        run_shift([0.01], [0.01, 0.02])
    with pytest.raises(ValueError, match="positive"):
        run_shift([0.01, 0.0], [0.01, 0.02])


# --------------------------------------------------------------------------- timer
class FakeClock:
    """Every step takes ``step_s``: a block of n steps 'lasts' n * step_s."""

    def __init__(self, step_s: float):
        self.step_s = step_s
        self.blocks: list[int] = []

    def block(self, run, steps):
        run(steps)
        self.blocks.append(steps)
        return steps * self.step_s


def test_sample_size():
    assert sample_size(0.1, 0.01) == 1  # a slow step is its own sample
    assert sample_size(0.001, 0.01) == 10
    assert sample_size(0.0003, 0.01) == 34  # ceil(33.3)
    assert sample_size(0.0, 0.01, max_steps=500) == 500


def test_time_steps_calibrates_and_fills_min_run_time():
    calls: list[int] = []
    clock = FakeClock(0.001)
    timing = time_steps(calls.append, min_run_time_s=0.5, warmup=3, min_samples=5, min_sample_s=0.01, clock=clock)
    assert calls[0] == 3  # warm-up steps in one call
    assert clock.blocks[0] == 1  # the calibration step
    assert timing.steps_per_sample == 10  # 0.01 s / 0.001 s
    assert all(b == 10 for b in clock.blocks[1:])
    assert len(timing.samples_s) == 50  # 0.5 s / (10 * 0.001 s)
    assert all(math.isclose(s, 0.001) for s in timing.samples_s)
    assert timing.total_time_s == pytest.approx(0.5)
    assert timing.total_steps == 500


def test_time_steps_min_samples_for_slow_steps():
    clock = FakeClock(2.0)  # one step is longer than the whole minimum run time
    timing = time_steps(lambda n: None, min_run_time_s=1.0, warmup=1, min_samples=5, clock=clock)
    assert timing.steps_per_sample == 1
    assert len(timing.samples_s) == 5


# --------------------------------------------------------------------------- batch search
@pytest.mark.parametrize("largest", [1, 2, 3, 7, 8, 9, 100, 255, 256, 257, 1000])
def test_find_max_batch_doubling_then_bisection(largest):
    search = find_max_batch(lambda b: b <= largest, max_batch=4096)
    assert search.batch_size == largest
    assert not search.hit_limit
    tried = [b for b, _ in search.probes]
    doubling = [b for b in tried if b & (b - 1) == 0][: len(bin(largest)) - 1]
    assert doubling == [2**i for i in range(len(doubling))]  # 1, 2, 4, ... first
    # doubling to the first failure, then bisection: about 2 log2(largest) probes, no repeats
    assert len(tried) == len(set(tried)) <= 2 * math.ceil(math.log2(largest + 1)) + 1


def test_find_max_batch_limits():
    assert find_max_batch(lambda b: False).batch_size == 0
    capped = find_max_batch(lambda b: True, max_batch=48)
    assert capped.batch_size == 48 and capped.hit_limit
    assert [b for b, _ in capped.probes] == [1, 2, 4, 8, 16, 32, 48]


# --------------------------------------------------------------------------- settings
@pytest.mark.parametrize(
    "changes, field",
    [
        ({"mode": "eval"}, "mode"),
        ({"precision": "fp8"}, "precision"),
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": "max"}, "batch_size"),
        ({"device": "tpu"}, "device"),
        ({"attention": "flash"}, "attention"),
        ({"threads": 0}, "threads"),
        ({"min_run_time_s": 0}, "min_run_time_s"),
        ({"device": "cpu", "precision": "fp16"}, "precision"),
        ({"optimizer": "adam"}, "optimizer"),
    ],
)
def test_run_settings_reject_bad_values_naming_the_field(changes, field):
    with pytest.raises(SpecError) as info:
        RunSettings(**changes)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}=")


def test_run_settings_round_trip():
    settings = RunSettings(mode="train", batch_size="auto", precision="bf16", threads=2, trace_dir="t")
    assert RunSettings.from_dict(settings.to_dict()) == settings
    with pytest.raises(SpecError):
        RunSettings.from_dict({"bogus": 1})
