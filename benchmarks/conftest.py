"""Shared helpers for vitbench's own speed benchmarks (pytest-benchmark).

Run: ``pytest benchmarks/ --benchmark-storage=benchmarks/baselines --benchmark-compare
--benchmark-compare-fail=median:10%`` (see benchmarks/README.md).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import pytest

_MEASUREMENTS: list[tuple[str, str]] = []


def _run_timed(benchmark, fn: Callable[[], Any], rounds: int, warmup_rounds: int = 1) -> tuple[Any, float]:
    """``benchmark.pedantic`` with our own clock as well, so a time budget can be asserted even
    under ``--benchmark-disable``. Returns (last result, median seconds of the timed rounds)."""
    durations: list[float] = []
    results: list[Any] = []

    def timed():
        start = time.perf_counter()
        result = fn()
        durations.append(time.perf_counter() - start)
        results.append(result)
        return result

    if getattr(benchmark, "disabled", False):
        # --benchmark-disable runs the function once, with no warm-up: warm up here so the
        # budgets still apply to a warm call.
        for _ in range(warmup_rounds):
            fn()
    benchmark.pedantic(timed, rounds=rounds, iterations=1, warmup_rounds=warmup_rounds)
    measured = durations[-rounds:] if len(durations) >= rounds else durations
    return results[-1], statistics.median(measured)


@pytest.fixture
def run_timed(benchmark):
    """``run_timed(fn, rounds, warmup_rounds=1) -> (result, median seconds)``."""

    def run(fn: Callable[[], Any], rounds: int, warmup_rounds: int = 1) -> tuple[Any, float]:
        return _run_timed(benchmark, fn, rounds, warmup_rounds)

    return run


@pytest.fixture
def report():
    """``report(label, text)``: a measurement printed in the terminal summary."""

    def add(label: str, text: str) -> None:
        _MEASUREMENTS.append((label, text))

    return add


def pytest_terminal_summary(terminalreporter):
    if _MEASUREMENTS:
        terminalreporter.section("vitbench measurements")
        for label, text in _MEASUREMENTS:
            terminalreporter.write_line(f"{label}: {text}")
