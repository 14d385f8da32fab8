"""Comparing a stated figure with a recomputed value, and saying what was compared.

Tolerance: a figure holds when it is within half a unit of its last stated digit of the
recomputed value ("86M" +-0.5 M, whatever the spelling: "86 million" alike; a hedge such as
"approximately" adds nothing, see :mod:`vitbench.claims.stated`). A catalogue ``tolerance``
(relative, with a note) overrides this. The clauses of an explanation (what was recomputed, how,
what the catalogue assumed, where a wrong figure comes from) are each built here.
"""

from __future__ import annotations

import math

from vitbench.analytic.conventions import OMITTABLE, omittable_params
from vitbench.claims.claim import Claim
from vitbench.claims.quantities import QUANTITIES
from vitbench.claims.stated import Stated, evaluate_formula, format_like, formula_text


# --- tolerance and distance ------------------------------------------------------------------------
def tolerance(claim: Claim) -> float:
    """Absolute tolerance in base units: half a unit of the last stated digit, or the catalogue's
    relative tolerance times the figure."""
    stated = claim.stated
    if claim.tolerance is not None:
        return claim.tolerance * max(abs(stated.low), abs(stated.high))
    return stated.resolution / 2


def within(stated: Stated, value: float, tol: float) -> bool:
    eps = 1e-9 * max(abs(value), 1.0)
    if stated.bound == ">":
        return value > stated.low
    if stated.bound == "<":
        return value < stated.low
    return stated.low - tol - eps <= value <= stated.high + tol + eps


def distance(stated: Stated, value: float) -> float:
    return 0.0 if within(stated, value, 0.0) else min(abs(value - stated.low), abs(value - stated.high))


def off_pct(stated: Stated, value: float) -> float:
    """How far the stated figure (its nearest end, for a range) is from the recomputed value, in
    percent of the recomputed value."""
    nearest = min(max(value, stated.low), stated.high)
    if nearest == value:
        nearest = stated.low
    return 100.0 * (nearest - value) / value if value else math.inf


def format_pct(pct: float) -> str:
    """+112%, -0.66% -> '-0.7%', -0.0035% -> '-0.004%'."""
    if math.isinf(pct):
        return "inf%"
    magnitude = abs(pct)
    if magnitude >= 10:
        text = f"{magnitude:.0f}"
    elif magnitude >= 1:
        text = f"{magnitude:.1f}"
    else:
        text = f"{magnitude:.1g}"
    return ("+" if pct > 0 else "-") + text + "%"


def truncated(stated: Stated, value: float) -> bool:
    """The figure is ``value`` cut off at its last digit rather than rounded."""
    return stated.is_point and 0 < value - stated.low < stated.resolution


# --- what was compared, and why a figure is wrong ---------------------------------------------------
def what(claim: Claim) -> str:
    """What vitbench recomputed, e.g. 'one attention layer (...) of vit-b/16 (img_size=384)'."""
    target, versus = claim.target, claim.versus
    if claim.quantity == "expression":
        return f"the document's own formula {formula_text(claim.formula)}"
    describe = QUANTITIES[target.quantity].describe
    if claim.quantity != "ratio":
        return f"{describe} of {target.describe()}"
    if target.quantity == versus.quantity:
        return f"{describe}: {target.describe()} / {versus.describe()}"
    over = QUANTITIES[versus.quantity].describe
    if target.same_model(versus):
        return f"{describe} / {over} of {target.describe()}"
    return f"{describe} of {target.describe()} / {over} of {versus.describe()}"


def basis(claim: Claim) -> str:
    """' (how the value was obtained)' where that needs saying: a replayed memory model, or a
    model vitbench can only count."""
    target = claim.target
    if target is None:
        return ""
    if not target.analytic:
        return " (counted on the module, built on the meta device: vitbench has no formula for this model)"
    text = QUANTITIES[target.quantity].basis
    return f" ({text})" if text else ""


def assumptions(claim: Claim) -> str:
    """'; assumed where the document is silent: batch 32 (why), ...' or ''."""
    if not claim.assumed:
        return ""
    target = claim.target
    shown = {
        "batch_size": lambda: f"batch {target.batch_size}",
        "precision": lambda: "fp32",
        "optimizer": lambda: "AdamW",
        "attention": lambda: f"{dict(target.overrides)['attention']} attention",
    }
    parts = [f"{shown[name]()} ({why})" for name, why in claim.assumed]
    return "; assumed where the document is silent: " + ", ".join(parts)


def _omission(claim: Claim, right: float, tol: float) -> str | None:
    q = QUANTITIES[claim.target.quantity]
    parts = omittable_params(claim.target.spec(), 1 if q.one_block else None)
    amount = sum(parts[name] for name in claim.omits)
    if not amount or not within(claim.stated, right - amount, tol):
        return None
    names = [OMITTABLE[name] for name in claim.omits]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"the figure leaves out the {listed} ({amount:,})"


def _formula_clause(claim: Claim, tol: float) -> str:
    stated = claim.stated
    value = float(evaluate_formula(claim.formula))
    shown = format_like(stated, value)
    text = formula_text(claim.formula)
    if within(stated, value, tol):
        return (f"the document's own formula {text} = {shown} reproduces the figure, so the formula "
                "or its inputs are at fault, not the arithmetic")
    return f"the document's own formula {text} gives {shown}"


def extras(claim: Claim, right: float, tol: float, truncation: bool = True) -> str:
    """Clauses that say where a wrong figure comes from, each verified numerically."""
    out = []
    if truncation and truncated(claim.stated, right):
        out.append(f"{claim.stated.text} is that value truncated, not rounded")
    if claim.omits and claim.target is not None:
        out.append(_omission(claim, right, tol))
    if claim.formula and claim.quantity != "expression":
        out.append(_formula_clause(claim, tol))
    return "".join("; " + clause for clause in out if clause)
