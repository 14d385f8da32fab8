"""Warnings as data. A row's ``warnings`` column is a list of ``{"code", "message", "advice"}``
objects: ``code`` says what kind of doubt it is (the report's markers and conclusions match
codes, never the wording), ``message`` what was seen, ``advice`` what to do about it. Rewording
a message changes nothing downstream; a new code must be listed in :data:`CODES`.

Results written before codes existed hold plain strings; :func:`normalize` reads them as code
``legacy`` and :func:`legacy_codes` recognises the old wordings, for those rows only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: code -> what it casts doubt on: ``timing`` (latency, throughput and the rates made from
#: them), ``memory``, ``batch`` (the chosen batch size), ``intensity`` (arithmetic intensity,
#: bound, MFU), ``size`` (parameters and MACs), ``loss``, ``isolation``, ``prediction``,
#: ``counting`` (the counters' notes), ``cost`` (predicted training cost), ``legacy``
CODES: dict[str, str] = {
    "unstable-steps": "timing",         # the steps of a run vary (CV or IQR/median above the threshold)
    "unstable-runs": "timing",          # the runs' medians disagree
    "time-shared": "timing",            # the threads got less CPU time than they could use
    "busy-machine": "timing",           # other processes used the cores
    "threads-compete": "timing",        # --threads above the free cores
    "cpu-governor": "timing",           # the clock speed varies
    "gpu-shared": "timing",             # other processes on the GPU
    "run-failed": "timing",             # one of several runs failed; the others pooled
    "remeasured": "timing",             # measured twice (the first attempt unstable); the steadier kept
    "not-isolated": "isolation",        # a live module measured in this process
    "pass-failed": "memory",            # an optional pass (peak memory, trace) failed
    "memory-breakdown": "memory",       # the breakdown of the peak is missing
    "memory-cap-unverified": "memory",  # the peak was not measured against --memory-limit
    "auto-batch-limit": "batch",        # --batch-size auto stopped at max_batch_size
    "auto-batch-stepped-down": "batch",  # the planned batch did not fit when measured
    "intensity-failed": "intensity",    # arithmetic intensity could not be traced
    "not-counted": "size",              # parameters and MACs could not be counted
    "output-width-unknown": "loss",     # the training loss is the mean square, not cross-entropy
    "does-not-fit": "memory",           # batch 1 exceeds the memory budget
    "memory-equivalent-module": "memory",  # replayed on vitbench's equivalent module
    "memory-traced": "memory",          # traced on fake tensors (no closed form)
    "memory-unavailable": "memory",     # no prediction for this model
    "too-large": "memory",              # refused from the spec: too many blocks to step through
    "counter-note": "counting",         # a counter skipped, fell back or could not count
    "calibration-refused": "prediction",  # a cached calibration could not be used
    "calibration-not-saved": "prediction",
    "calibration-busy": "prediction",   # the CPU calibration was measured while other processes held the cores
    "trace-misses-work": "prediction",  # the traced step has fewer MACs than the count (a fused fast path)
    "trace-cache-refused": "prediction",  # a damaged trace-cache entry was refused and the step traced again
    "question-cache-refused": "prediction",  # a damaged question-cache entry (a model's resolution, counts, memory) was refused and recomputed
    "gpu-unpriced-kernels": "prediction",  # kernels the GPU cost model prices far from what cuBLAS / cuDNN run
    "cost-from-inference": "cost",      # a training cost from an inference step
    "legacy": "legacy",                 # a plain-text warning of results written before codes
}


@dataclass(frozen=True)
class RowWarning:
    code: str
    message: str
    advice: str = ""

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"unknown warning code {self.code!r}: add it to vitbench.row_warnings.CODES")

    @property
    def text(self) -> str:
        """One line for people: the message, then the advice."""
        return f"{self.message}; {self.advice}" if self.advice else self.message

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "advice": self.advice}


def warning(code: str, message: str, advice: str = "") -> dict[str, str]:
    """A warning for a row's ``warnings`` list (the code checked against :data:`CODES`)."""
    return RowWarning(code, message, advice).as_dict()


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


def normalize(value: Any) -> list[dict[str, str]]:
    """A ``warnings`` cell as a list of warnings: None/NaN/empty -> []; a dict -> [it]; a plain
    string (results written before codes) -> one ``legacy`` warning; a list of either."""
    if _missing(value):
        return []
    items = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for item in items:
        if isinstance(item, dict) and "message" in item:
            code = str(item.get("code") or "legacy")
            out.append({"code": code if code in CODES else "legacy", "message": str(item["message"]),
                        "advice": str(item.get("advice") or "")})
        elif not _missing(item):
            out.append({"code": "legacy", "message": str(item), "advice": ""})
    return out


def texts(value: Any) -> list[str]:
    """The warnings of a cell (or of a record's ``warnings``) as one line each."""
    if isinstance(value, dict) and "warnings" in value:
        value = value["warnings"]
    return [RowWarning(w["code"], w["message"], w["advice"]).text for w in normalize(value)]


def code_sets(value: Any) -> list[frozenset[str]]:
    """Per warning, the codes it carries: its own; for a legacy text every code its wording
    matches (old CSV cells joined several warnings with '; '), or ``legacy``."""
    if isinstance(value, dict) and "warnings" in value:
        value = value["warnings"]
    return [frozenset({w["code"]}) if w["code"] != "legacy" else legacy_codes(w["message"]) for w in normalize(value)]


def merge(*lists: Iterable[Any] | None) -> list[dict[str, str]]:
    """Several warning lists as one, each warning once, in order of first appearance."""
    out: list[dict[str, str]] = []
    for value in lists:
        for w in normalize(value):
            if w not in out:
                out.append(w)
    return out


#: the wordings of results written before codes (read only; new rows carry their code)
_LEGACY = (
    (re.compile(r"unstable between runs", re.I), "unstable-runs"),
    (re.compile(r"unstable", re.I), "unstable-steps"),
    (re.compile(r"time-shared", re.I), "time-shared"),
    (re.compile(r"\bload\b|oversubscri|busy machine", re.I), "busy-machine"),
    (re.compile(r"on the GPU", re.I), "gpu-shared"),
    (re.compile(r"governor", re.I), "cpu-governor"),
    (re.compile(r"memory (prediction|breakdown)", re.I), "memory-breakdown"),
    (re.compile(r"max_batch_size|batch-size auto", re.I), "auto-batch-limit"),
    (re.compile(r"arithmetic intensity", re.I), "intensity-failed"),
)


def legacy_codes(message: str) -> frozenset[str]:
    """Every code the wording of an older results' warning text matches (``legacy`` if none)."""
    found = {code for pattern, code in _LEGACY if pattern.search(message)}
    if "unstable-runs" in found and not re.search(r"unstable timing", message, re.I):
        found.discard("unstable-steps")  # 'unstable between runs' alone
    return frozenset(found or {"legacy"})


__all__ = ["CODES", "RowWarning", "code_sets", "legacy_codes", "merge", "normalize", "texts", "warning"]
