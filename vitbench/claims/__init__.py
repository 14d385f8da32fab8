"""Audit the source documents' numerical claims against vitbench's own numbers.

The claims live in ``vitbench/data/claims.yaml`` (data, not code). :func:`audit` recomputes
each one with vitbench's analytic model (parameters, MACs, memory formulas), optionally beside
the counts of the built ``nn.Module`` and the tracing counters, and gives a verdict (holds, off,
wrong convention, needs a GPU, not checkable, error).

- :mod:`~vitbench.claims.verdicts`: the verdicts and what each means
- :mod:`~vitbench.claims.stated`: a figure as written, its unit and precision
- :mod:`~vitbench.claims.quantities`: what a claim can be about, and which function computes it
- :mod:`~vitbench.claims.claim`: what a claim is (its model, quantity, figure, counting)
- :mod:`~vitbench.claims.catalogue`: loading, validating and selecting claims
- :mod:`~vitbench.claims.recompute`: the value, its other readings, the counted value
- :mod:`~vitbench.claims.explain`: tolerance, comparison, the clauses of an explanation
- :mod:`~vitbench.claims.measured`: claims about a GPU, judged only by measuring on one
- :mod:`~vitbench.claims.evaluate`: the verdict of one claim, :func:`audit` of many

Conventions: a MAC is one multiply-accumulate; FLOPs = 2 x MACs. fvcore's "flop" is a MAC, plus
5 per LayerNorm element (its norm handle). MB = 10^6 bytes, MiB = 2^20 bytes (GB, GiB alike).
The formulas live in :mod:`vitbench.analytic`; the report in :mod:`vitbench.reporting.claims`.
"""

from __future__ import annotations

from vitbench.lazy import lazy_exports

#: public name -> the module that defines it (imported on first use)
_EXPORTS = {
    "CATALOGUE": "vitbench.claims.catalogue",
    "CatalogueError": "vitbench.claims.catalogue",
    "Claim": "vitbench.claims.claim",
    "UnknownClaimError": "vitbench.claims.catalogue",
    "load_catalogue": "vitbench.claims.catalogue",
    "select": "vitbench.claims.catalogue",
    "audit": "vitbench.claims.evaluate",
    "evaluate": "vitbench.claims.evaluate",
    "summary": "vitbench.claims.evaluate",
    "QUANTITIES": "vitbench.claims.quantities",
    "quantity_rows": "vitbench.claims.quantities",
    "Stated": "vitbench.claims.stated",
    "parse_stated": "vitbench.claims.stated",
    "VERDICTS": "vitbench.claims.verdicts",
    "ClaimVerdict": "vitbench.claims.verdicts",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
