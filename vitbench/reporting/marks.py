"""Warnings shown beside the number they qualify: a record's ``warnings`` (a list of strings, as
data) become short markers such as ``(! unstable 12%)`` on the cell they are about, in the way
torch.utils.benchmark.Compare flags a noisy measurement. Used by the table renderer only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vitbench import row_warnings
from vitbench.measure.stability import timing_spread

#: timing columns, in the order a marker prefers them (the first one shown carries it)
TIMING = (
    "throughput_img_s", "latency_p50_s", "latency_mean_s", "latency_p90_s", "latency_min_s",
    "achieved_macs_per_s", "flops_per_s", "mfu",
)
MEMORY = ("peak_memory_bytes", "pred_peak_memory_bytes", "mem_activations_bytes", "pred_activations_bytes")


@dataclass(frozen=True)
class Rule:
    """Warnings with one of ``codes`` qualify the first shown column of ``columns``."""

    codes: frozenset[str]
    columns: tuple[str, ...]
    label: str


RULES = (
    Rule(frozenset({"unstable-steps", "unstable-runs"}), TIMING, "unstable"),
    Rule(frozenset({"busy-machine"}), TIMING, "busy machine"),
    Rule(frozenset({"gpu-shared"}), TIMING, "shared GPU"),
    Rule(frozenset({"cpu-governor"}), TIMING, "governor"),
    Rule(frozenset({"memory-breakdown", "memory-equivalent-module", "memory-traced"}), MEMORY, "memory"),
    Rule(frozenset({"auto-batch-limit", "auto-batch-stepped-down"}), ("batch_size",), "auto batch"),
    Rule(frozenset({"intensity-failed"}), ("arith_intensity", "bound", "mfu"), "intensity"),
)


def warnings_of(record: dict[str, Any]) -> list[str]:
    """The record's warnings, one line each (message; advice), whatever form the cell has."""
    return row_warnings.texts(record.get("warnings"))


#: warnings that make a timing unfit to conclude from (a CPU governor only adds a marker)
UNFIT = ("unstable", "busy machine", "shared GPU")


def timing_warnings(record: dict[str, Any]) -> list[str]:
    """The record's warnings that make its timing unfit to conclude from: unstable timing, a
    busy machine, other processes on the GPU (matched by code)."""
    unfit = set().union(*(r.codes for r in RULES if r.label in UNFIT))
    value = record.get("warnings")
    return [text for text, found in zip(row_warnings.texts(value), row_warnings.code_sets(value)) if found & unfit]


def spread(record: dict[str, Any]) -> float | None:
    """Relative spread of the timing (:func:`vitbench.measure.stability.timing_spread`: the
    between-run CV and the steps' CV and IQR / median; with the CPU-time clock over several runs,
    the between-run CV alone)."""
    return timing_spread(record)


def _marker(rule: Rule, record: dict[str, Any]) -> str:
    if rule.label == "unstable":
        value = spread(record)
        return f"(! unstable {value:.0%})" if value is not None else "(! unstable)"
    return f"(! {rule.label})"


def short(warning: str, limit: int = 60) -> str:
    """The head of a warning (before its advice, after ';'), at most ``limit`` characters."""
    head = warning.split(";", 1)[0].strip()
    return head if len(head) <= limit else head[: limit - 3].rstrip() + "..."


def marks(record: dict[str, Any], shown: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """({column: marker text} for the shown columns the warnings qualify, [warnings that qualify
    no shown column]). A warning's code decides its column, never its wording."""
    out: dict[str, list[str]] = {}
    loose = []
    value = record.get("warnings")
    for text, found in zip(row_warnings.texts(value), row_warnings.code_sets(value)):
        placed = False
        for rule in RULES:
            column = next((c for c in rule.columns if c in shown), None)
            if column is None or not found & rule.codes:
                continue
            placed = True
            marker = _marker(rule, record)
            if marker not in out.setdefault(column, []):
                out[column].append(marker)
        if not placed:
            loose.append(text)
    return {column: " ".join(texts) for column, texts in out.items()}, loose


__all__ = ["RULES", "TIMING", "marks", "short", "spread", "timing_warnings", "warnings_of"]
