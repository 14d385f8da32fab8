"""The regression gate behind ``vitbench compare``: rules (:mod:`~vitbench.gate.rules`), row
matching (:mod:`~vitbench.gate.matching`), verdicts (:mod:`~vitbench.gate.verdicts`) and the
result they produce (:mod:`~vitbench.gate.result`).

Data only; :mod:`vitbench.reporting.gate` renders a :class:`CompareResult`, the CLI prints it.
"""

from __future__ import annotations

from vitbench.gate.comparing import compare
from vitbench.gate.result import DEFAULT_ALPHA, FAILING, CompareResult, EnvDifference, MetricComparison, Verdict
from vitbench.gate.rules import ALIASES, DEFAULT_RULES, Rule, RuleError, direction, parse_rules
from vitbench.gate.verdicts import load_results

__all__ = [
    "ALIASES",
    "DEFAULT_ALPHA",
    "DEFAULT_RULES",
    "FAILING",
    "CompareResult",
    "EnvDifference",
    "MetricComparison",
    "Rule",
    "RuleError",
    "Verdict",
    "compare",
    "direction",
    "load_results",
    "parse_rules",
]
