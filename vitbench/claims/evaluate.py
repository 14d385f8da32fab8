"""Judging a claim: recompute its quantity, compare it with the stated figure, give a verdict
(:mod:`vitbench.claims.verdicts`), and :func:`audit` a catalogue.

The tolerance is the stated figure's own precision (:mod:`vitbench.claims.explain`). A figure
matches another reading within max(that tolerance, 2% of the reading) for computed quantities
(counts must match at the stated precision).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from vitbench.claims.catalogue import load_catalogue, select
from vitbench.claims.claim import Claim
from vitbench.claims.explain import (
    assumptions,
    basis,
    distance,
    extras,
    format_pct,
    off_pct,
    tolerance,
    truncated,
    what,
    within,
)
from vitbench.claims.measured import Measurer, judge_measured, measure_on_cuda
from vitbench.claims.quantities import QUANTITIES
from vitbench.claims.recompute import Cache, Candidate, NotRecomputed, candidates, compute_candidates, counted_value, value_of
from vitbench.claims.stated import evaluate_formula, format_like
from vitbench.claims.verdicts import VERDICTS, ClaimVerdict
from vitbench.documents import where
from vitbench.errors import VitbenchError
from vitbench.results import Records

#: The share of an alternative reading's value a stated figure may differ by and still match it.
ALTERNATIVE_SLACK = 0.02


# --- the verdict ------------------------------------------------------------------------------------
def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def base_record(claim: Claim) -> dict[str, Any]:
    """A claim's record before judging: what it says, where, about what."""
    target = claim.target
    return {
        "id": claim.id,
        "source": claim.source,
        "document": where(claim.file, claim.section, claim.quote),
        "file": claim.file,
        "line": claim.line,
        "section": claim.section,
        "quote": claim.quote,
        "model": target.describe() if target else None,
        "versus": claim.versus.describe() if claim.versus else None,
        "quantity": (f"ratio of {target.quantity}" if claim.quantity == "ratio" else claim.quantity),
        "convention": claim.convention,
        "device": claim.device,
        "stated_text": claim.stated.text,
        "stated_value": [_number(v) for v in claim.stated.value] if claim.stated.is_range else _number(claim.stated.value),
        "tolerance": None,
        "recomputed": None,
        "recomputed_text": None,
        "counted": None,
        "counted_by": None,
        "basis": None,  # analytic | counted | measured: where the recomputed figure comes from
        "verdict": None,
        "verdict_text": None,
        "off_pct": None,
        "matched": None,
        "explanation": None,
        "warnings": [],
    }


def _counted_warnings(claim: Claim, record: dict[str, Any], cache: Cache) -> list[str]:
    """Count the quantity on a built module where the claim asks; a disagreement is a warning."""
    value, by, warning = counted_value(claim, cache)
    if warning:
        return [warning]
    record["counted"], record["counted_by"] = value, by
    canonical, _ = value_of(claim.target, cache)
    return [f"{by} counts {value:,} but the analytic model gives {canonical:,}"] if value != canonical else []


def _matching_candidate(claim: Claim, right: float, tol: float, cands: list[Candidate]) -> Candidate | None:
    """The first other reading that explains the figure: it matches it (within the figure's
    precision, or 2% for computed quantities) and sits closer to it than the right value does.
    A figure that is the right value truncated is a rounding slip, whatever else it matches,
    unless the document's own formula gives that other reading."""
    stated = claim.stated
    if truncated(stated, right):
        if not claim.formula:
            return None
        own = float(evaluate_formula(claim.formula))
        cands = [cand for cand in cands if abs(own - cand.value) <= tol]
    slack = 0.0 if QUANTITIES[claim.target.quantity].family == "count" else ALTERNATIVE_SLACK
    for cand in cands:
        closer = distance(stated, cand.value) < distance(stated, right)
        if closer and within(stated, cand.value, max(tol, slack * abs(cand.value))):
            return cand
    return None


def _recomputed(claim: Claim, record: dict[str, Any], counted: bool, cache: Cache) -> tuple[float, str, list[Candidate]]:
    """(right value, unit, other readings): analytic, checked by counting where the claim asks;
    or, for a model vitbench can only count, the count itself (then it has no other readings)."""
    if claim.target is not None and not claim.target.analytic:
        value, by, warning = counted_value(claim, cache)
        if warning:
            raise NotRecomputed(warning)
        record.update(counted=value, counted_by=by, basis="counted")
        if QUANTITIES[claim.quantity].family == "compute":
            return compute_candidates(claim, value, [("", "", value)])
        return value, claim.stated.unit, []
    right, unit, cands = candidates(claim, cache)
    record["basis"] = "analytic"
    if counted and claim.counted and claim.quantity != "ratio":
        record["warnings"] = _counted_warnings(claim, record, cache)
    return right, unit, cands


def _judge(claim: Claim, record: dict[str, Any], counted: bool, cache: Cache, tol: float) -> None:
    stated = claim.stated
    right, unit, cands = _recomputed(claim, record, counted, cache)
    right_text = format_like(stated, right, unit)
    record["recomputed"], record["recomputed_text"] = right, right_text
    value = f"{what(claim)} = {right_text}{basis(claim)}"
    assumed = assumptions(claim)
    if within(stated, right, tol):
        record.update(verdict=ClaimVerdict.HOLDS, verdict_text="holds", off_pct=off_pct(stated, right) if stated.is_point else None,
                      explanation=f"{stated.text} holds: {value}{assumed}.")
        return
    pct = off_pct(stated, right)
    record["off_pct"] = pct
    cand = _matching_candidate(claim, right, tol, cands)
    if cand is not None:
        shown = format_like(stated, cand.value, cand.unit)
        residual = "" if within(stated, cand.value, tol) else f", {format_pct(off_pct(stated, cand.value))} off even so"
        record.update(
            verdict=ClaimVerdict.WRONG_CONVENTION, verdict_text="wrong convention", matched=cand.describe,
            explanation=(f"{stated.text} matches {cand.describe} ({shown}{residual}); "
                         f"{value}{extras(claim, right, tol, truncation=False)}{assumed}."),
        )
        return
    if claim.stand_in:
        record.update(
            verdict=ClaimVerdict.INCONCLUSIVE, verdict_text=f"inconclusive ({format_pct(pct)} on a stand-in)",
            explanation=(f"{stated.text} differs by {format_pct(pct)} from {value}; that network is a stand-in "
                         f"({claim.stand_in}), so the difference does not show the document wrong{assumed}."),
        )
        return
    record.update(
        verdict=ClaimVerdict.OFF, verdict_text=f"off by {format_pct(pct)}",
        explanation=f"{stated.text} is off by {format_pct(pct)}: {value}{extras(claim, right, tol)}{assumed}.",
    )


def _unjudged(claim: Claim, counted: bool) -> str | None:
    """Why a claim gets no verdict here ('not checkable'), or None."""
    if QUANTITIES[claim.quantity].family == "none":
        return f"{claim.stated.text}: not checkable here: {claim.reason}."
    if not counted and claim.target is not None and not claim.target.analytic:
        return (f"{claim.stated.text}: not checkable without counting: vitbench has no formula for "
                f"{claim.target.reference}, and counting was not asked for.")
    return None


def evaluate(
    claim: Claim,
    *,
    counted: bool = True,
    measure: bool = False,
    measurer: Measurer | None = None,
    cache: Cache | None = None,
) -> dict[str, Any]:
    """One claim's record: the recomputed value, the verdict and a one-sentence explanation.
    Never raises for a failed recomputation: the verdict is then 'error' with the reason.
    ``measure``: judge claims about a GPU by measuring on it (``measurer``, default
    :func:`~vitbench.claims.measured.measure_on_cuda`); otherwise they 'need a GPU'."""
    cache = cache or Cache()
    record = base_record(claim)
    try:
        why = _unjudged(claim, counted)
        if why:
            record.update(verdict=ClaimVerdict.NOT_CHECKABLE, verdict_text="not checkable", explanation=why)
            return record
        record["tolerance"] = tol = tolerance(claim)
        if claim.measured:
            judge_measured(claim, record, tol, measure, measurer or measure_on_cuda, cache)
        else:
            _judge(claim, record, counted, cache, tol)
    except VitbenchError as exc:  # one claim the user's setup cannot recompute keeps the others' results
        record.update(verdict=ClaimVerdict.ERROR, verdict_text="error",
                      explanation=f"recomputing failed: {exc.__class__.__name__}: {exc}")
    return record


def audit(
    claims: Iterable[str] | str | None = None,
    *,
    source: str | None = None,
    catalogue: str | Path | None = None,
    counted: bool = True,
    measure: bool = False,
    measurer: Measurer | None = None,
) -> Records:
    """Recompute the catalogue's claims (the figures source documents state) and give each a verdict.

    Args:
        claims: claim ids (one, or several); None: every claim (of ``source``).
        source: only the claims of one source document: its short name (``assignment``) or
            its file's prefix.
        catalogue: a claims catalogue file (None: the packaged catalogue).
        counted: also count parameters on the built module and trace MACs where a claim asks.
        measure: judge claims about a GPU (throughput, GPU memory) by measuring on a CUDA device.
        measurer: ``measurer(spec, batch_size, mode)`` returning a :func:`vitbench.profile` row,
            or None without a device (default: :func:`~vitbench.claims.measured.measure_on_cuda`).

    Returns:
        :class:`~vitbench.results.Records`, one per claim: the stated and recomputed values and
        the ``verdict``.

    Raises:
        UnknownClaimError: a claim id not in the catalogue (the closest ones named).
        CatalogueError: a catalogue file that is not one.

    >>> audit(["ch-vitb-flops-224"])[0]["verdict"]  # doctest: +SKIP
    'off'
    """
    if isinstance(claims, str):
        claims = [claims]
    chosen = select(load_catalogue(catalogue), claims, source)
    cache = Cache()
    return Records(evaluate(c, counted=counted, measure=measure, measurer=measurer, cache=cache) for c in chosen)


def summary(records: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Claims per verdict, in VERDICTS order (zeros kept)."""
    counts = {v: 0 for v in VERDICTS}
    for record in records:
        counts[record["verdict"]] += 1
    return counts
