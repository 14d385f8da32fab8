"""Recomputing a claim's quantity: the analytic value, the other readings a document may have
meant (in the stated convention: MACs or FLOPs, MB or MiB), and the count on the built module.

Values are canonical (counts, MACs, bytes) until :func:`candidates` puts them in the document's
convention: FLOPs = 2 x MACs; a figure in MB may be a MiB figure mislabelled, and so on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vitbench.analytic.conventions import Reading
from vitbench.claims.claim import Claim, Config
from vitbench.claims.quantities import QUANTITIES
from vitbench.claims.stated import BYTE_UNITS, OTHER_BASE, evaluate_formula
from vitbench.counters import count_detailed
from vitbench.errors import VitbenchError
from vitbench.models import build_meta


class NotRecomputed(VitbenchError):
    """A claim that cannot be recomputed here (its counter failed, its measurement did not run):
    its verdict is 'error' with the reason, and the other claims stand."""

_COMPUTE_UNITS = {"macs": "MACs", "flops": "FLOPs", "fvcore-flops": " fvcore flops"}


@dataclass
class Cache:
    """Specs, analytic values, counts and measurements computed once per audit."""

    values: dict[tuple, Any] = field(default_factory=dict)

    def get(self, key: tuple, compute: Callable[[], Any]) -> Any:
        if key not in self.values:
            self.values[key] = compute()
        return self.values[key]


def value_of(config: Config, cache: Cache) -> tuple[int, dict[str, Reading]]:
    """The canonical value of a config's quantity and its other readings by key."""

    def compute():
        q = QUANTITIES[config.quantity]
        spec = config.spec()
        readings = q.alternatives(spec, config.batch_size)
        return q.value(spec, config.batch_size), {r.key: r for r in readings}

    return cache.get(("value", config), compute)


def counted_value(claim: Claim, cache: Cache) -> tuple[float | None, str | None, str | None]:
    """(value, what counted it, warning): the claim's quantity counted on a built module (on the
    meta device): the claim's own model or the reference it names, whole or one submodule."""
    how, config = claim.counted, claim.target
    q = QUANTITIES[config.quantity]
    model = how.model or config.spec()
    try:
        if how.module is not None:
            by_module = _traced(model, config.batch_size, "dispatch", cache).dispatch_by_module
            return by_module[how.module], f"{how.model or 'nn.Module'} {how.module} (dispatch)", None
        if q.counted == "params":
            value = cache.get(("numel", model), lambda: _numel(model))
            return value, f"{how.model} parameters" if how.model else "nn.Module parameters", None
        counter = "dispatch" if q.counted.startswith("dispatch") else "fvcore"
        value = getattr(_traced(model, config.batch_size, counter, cache), q.counted)
        return value, f"{how.model} ({counter})" if how.model else counter, None
    except VitbenchError as exc:  # a missing library or a model that fails leaves the analytic verdict standing
        return None, None, f"counted value unavailable ({exc.__class__.__name__}: {exc})"


def _numel(model: Any) -> int:
    return sum(p.numel() for p in build_meta(model).parameters())


def _traced(model: Any, batch_size: int, counter: str, cache: Cache) -> Any:
    """:func:`vitbench.counters.count_detailed` of a spec or a reference, once per audit."""

    def count():
        return count_detailed(model, batch_size=batch_size, counters=(counter,))

    return cache.get(("count", counter, model, batch_size), count)


@dataclass(frozen=True)
class Candidate:
    """Another reading, in the document's convention and base units."""

    key: str
    describe: str
    value: float
    unit: str  # display unit


def _ratio_candidates(claim: Claim, cache: Cache) -> tuple[float, str, list[Candidate]]:
    unit = claim.stated.unit
    num, num_alts = value_of(claim.target, cache)
    den, den_alts = value_of(claim.versus, cache)
    out = [
        Candidate(key, f"the ratio of {num_alts[key].describe}", num_alts[key].value / den_alts[key].value, unit)
        for key in num_alts if key in den_alts and den_alts[key].value
    ]
    for alt in claim.alternatives:
        a_num, _ = value_of(alt.target, cache)
        a_den, _ = value_of(alt.versus, cache)
        out.append(Candidate("explicit", alt.describe, _divided(a_num, a_den), unit))
    return _divided(num, den), unit, out


def _divided(numerator: float, denominator: float) -> float:
    """A claimed ratio; a denominator of 0 (a catalogue entry that divides by nothing) is the
    claim's error, not vitbench's."""
    if denominator == 0:
        raise NotRecomputed(f"the ratio's denominator is 0 (division by zero, numerator {numerator})")
    return numerator / denominator


def compute_candidates(claim: Claim, canonical: int, readings: list[tuple[str, str, int]]) -> tuple[float, str, list[Candidate]]:
    """MACs in the stated convention; each reading in MACs and in FLOPs."""
    conv = "macs" if claim.convention == "fvcore-flops" else claim.convention
    other = "flops" if conv == "macs" else "macs"
    out = []
    for key, describe, value in readings:
        for c in (conv, other):
            if key == "" and c == conv:
                continue
            label = f"{describe} in {_COMPUTE_UNITS[c]}" if key else f"the same count in {_COMPUTE_UNITS[c]}"
            out.append(Candidate(f"{key or 'same'}/{c}", label, value * (2 if c == "flops" else 1), _COMPUTE_UNITS[c]))
    # Most plausible first: the other convention, then other scopes, the no-CLS readings last.
    out.sort(key=lambda cand: (cand.key.count("/no-cls"), not cand.key.startswith("same/"), not cand.key.endswith("/" + conv)))
    factor = 2 if claim.convention == "flops" else 1
    return canonical * factor, _COMPUTE_UNITS[claim.convention], out


def _bytes_candidates(claim: Claim, canonical: int, readings: list[tuple[str, str, int]]) -> tuple[float, str, list[Candidate]]:
    """Each reading, and each in the other base (MB written for MiB computed, and so on)."""
    stated = claim.stated
    unit = stated.unit.strip()
    other = OTHER_BASE.get(unit)
    space = " " if stated.unit.startswith(" ") else ""
    out = []
    for key, describe, value in readings:
        if key:
            out.append(Candidate(key, describe, value, stated.unit))
        if other:
            # A document that computed in `other` but wrote `unit`: its number, read as `unit`.
            as_written = value / BYTE_UNITS[other] * BYTE_UNITS[unit]
            label = f"{describe} in {other}" if key else f"the same size in {other} ({'2^10' if 'i' in other else '10^3'} steps)"
            out.append(Candidate(f"{key or 'same'}/{other}", label, as_written, space + other))
    return canonical, stated.unit, out


def candidates(claim: Claim, cache: Cache) -> tuple[float, str, list[Candidate]]:
    """(the right value in the stated convention, its display unit, the other readings)."""
    if claim.quantity == "expression":
        return float(evaluate_formula(claim.formula)), claim.stated.unit, []
    if claim.quantity == "ratio":
        return _ratio_candidates(claim, cache)
    canonical, alts = value_of(claim.target, cache)
    readings = [("", "", canonical)] + [(r.key, r.describe, r.value) for r in alts.values()]
    family = QUANTITIES[claim.target.quantity].family
    if family == "compute":
        return compute_candidates(claim, canonical, readings)
    if family == "bytes":
        return _bytes_candidates(claim, canonical, readings)
    return canonical, claim.stated.unit, [Candidate(r.key, r.describe, r.value, claim.stated.unit) for r in alts.values()]


