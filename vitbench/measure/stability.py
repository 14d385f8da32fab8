"""Warnings, with advice, about timings that should not be trusted as they are (in the manner of
pyperf's checks): steps that vary within a run, runs that disagree with each other, too few
runs to see the between-run spread. Pure Python.

With the CPU-time clock (``clock='cpu'``) and several runs, a row's stability is judged by the
spread between runs (their medians) alone: CPU time per thread is what the step costs with the
cores to itself, the steps of a run on a shared machine scatter around it (preemption, cache
refills) while the runs' medians agree, and those medians are what the gate compares. With the
wall clock (or a single run) the steps' spread counts too, and the machine's load
(:func:`vitbench.measure.machine.state_warnings`) as well."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from vitbench.measure.stats import UNSTABLE_SPREAD, stability_warning, summarize
from vitbench.row_status import has_result
from vitbench.row_warnings import code_sets, warning


def run_cv(run_medians: Sequence[float]) -> float | None:
    """Coefficient of variation of the per-run medians (stdev / mean); None for one run."""
    if len(run_medians) < 2:
        return None
    mean = statistics.fmean(run_medians)
    return statistics.stdev(run_medians) / mean if mean > 0 else 0.0


def timing_warnings(
    samples: Sequence[float], run_medians: Sequence[float], threads: int | None,
    threshold: float = UNSTABLE_SPREAD, clock: str = "wall",
) -> list[dict[str, str]]:
    """Warnings for pooled ``samples`` and the ``run_medians`` they came from: the spread of the
    steps (CV or IQR / median above ``threshold``; not with ``clock='cpu'`` and two runs or more)
    and the spread between runs (CV of the run medians above ``threshold``; the runs' slowest
    median more than 2 x threshold above their fastest)."""
    out = []
    by_runs = clock == "cpu" and len(run_medians) >= 2
    within = None if by_runs else stability_warning(summarize(samples), threshold, threads=threads)
    if within:
        out.append(within)
    cv = run_cv(run_medians)
    if cv is not None:
        fastest, slowest = min(run_medians), max(run_medians)
        if cv > threshold or slowest > fastest * (1 + 2 * threshold):
            out.append(warning(
                "unstable-runs",
                f"unstable between runs: the {len(run_medians)} run medians vary by CV {cv:.1%} "
                f"(slowest {slowest / fastest - 1:+.0%} over the fastest); something else used the "
                "machine during some runs",
                "rerun with more --runs on an idle machine, and compare only against results measured the same way",
            ))
    return out


#: below this share of its threads' CPU time a run was time-shared with other processes
TIME_SHARED = 0.85


def time_sharing_warnings(cpu_share: float | None, threads: int) -> list[dict[str, str]]:
    """A warning when the measured threads got less than ``TIME_SHARED`` of the CPU time they
    could have used (``cpu_share`` = CPU seconds / (wall seconds x threads))."""
    if cpu_share is None or cpu_share >= TIME_SHARED:
        return []
    return [warning(
        "time-shared",
        f"time-shared: the {threads} thread(s) got {cpu_share:.0%} of the CPU time they could use "
        "(other processes took the rest): wall-clock latency and throughput are inflated",
        "cpu_latency_p50_s (CPU seconds per step) changes much less with the load; measure on "
        "an idle machine for wall-clock figures",
    )]


#: warning codes that make a row's timing unfit to conclude from (the report withholds it, a
#: sweep with ``remeasure`` measures it again): unstable timing, a busy machine, a shared GPU
UNFIT_CODES = frozenset({"unstable-steps", "unstable-runs", "busy-machine", "gpu-shared"})


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return None if math.isnan(value) else float(value)


def timing_spread(record: dict[str, Any]) -> float | None:
    """Relative spread of a measured row's timing: the largest of the between-run CV (``run_cv``,
    when the row pooled several runs), the coefficient of variation and IQR / median of the
    steps. A row timed with CPU time per thread (``clock='cpu'``) over several runs: the
    between-run CV alone (as :func:`timing_warnings` judges it; its steps scatter on a shared
    machine while the runs' medians agree)."""
    run_spread = _number(record.get("run_cv"))
    if record.get("clock") == "cpu" and run_spread is not None:
        return run_spread
    candidates = [run_spread, _number(record.get("latency_cv"))]
    iqr, median = _number(record.get("latency_iqr_s")), _number(record.get("latency_p50_s"))
    if iqr is not None and median:
        candidates.append(iqr / median)
    known = [c for c in candidates if c is not None]
    return max(known) if known else None


def unfit_timing(record: dict[str, Any]) -> bool:
    """Whether a measured row (status ok, with a throughput) is unfit to conclude from: a warning
    with one of :data:`UNFIT_CODES`, or a :func:`timing_spread` above ``UNSTABLE_SPREAD``."""
    if not has_result(record) or _number(record.get("throughput_img_s")) is None:
        return False
    if any(codes & UNFIT_CODES for codes in code_sets(record.get("warnings"))):
        return True
    spread = timing_spread(record)
    return spread is not None and spread > UNSTABLE_SPREAD
