"""Where two sampled curves change order, found on the samples as they are: no assumption that
either curve is monotone (a CNN's MACs step with its integer feature-map sizes, so a ViT and a
CNN can trade places several times). Every change of order is kept; the sentences name each
stretch of constant order by the sample points it rests on. Pure functions, no formatting of
numbers beyond the sample points themselves."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

MAX_STRETCHES = 9  # a sentence lists the stretches up to this many, else only their count and ends
MAX_POINTS = 6  # a stretch of sampled rows is named by its points up to this many, else as a range


@dataclass(frozen=True)
class Stretch:
    """Consecutive sample points ``xs`` (in order) where curve a is above b (``order`` 1), below
    (-1) or equal to it (0)."""

    xs: tuple[float, ...]
    order: int

    @property
    def a_more(self) -> bool:
        return self.order > 0

    @property
    def span(self) -> str:
        """'96 px' for one point, '16-80 px' for several."""
        first, last = _show(self.xs[0]), _show(self.xs[-1])
        return f"{first} px" if first == last else f"{first}-{last} px"

    @property
    def points(self) -> str:
        """'224, 384, 512 px': every point (a range past MAX_POINTS of them)."""
        return f"{', '.join(_show(x) for x in self.xs)} px" if len(self.xs) <= MAX_POINTS else self.span


@dataclass(frozen=True)
class Change:
    """Between sample points ``before`` and ``at`` the order changes; from ``at`` on a is above b
    (``order`` 1), below (-1) or equal to it (0)."""

    before: float
    at: float
    order: int


def _show(x: float) -> str:
    return f"{x:g}"


def stretches(xs: Sequence[float], a: Sequence[float], b: Sequence[float]) -> list[Stretch]:
    """The samples split into maximal runs of constant order (a > b, a < b, a = b). Points where
    either curve has no value (None) are left out."""
    out: list[Stretch] = []
    for x, va, vb in zip(xs, a, b):
        if va is None or vb is None:
            continue
        order = (va > vb) - (va < vb)
        if out and out[-1].order == order:
            out[-1] = Stretch((*out[-1].xs, x), order)
        else:
            out.append(Stretch((x,), order))
    return out


def changes(xs: Sequence[float], a: Sequence[float], b: Sequence[float]) -> list[Change]:
    """Every change of order between consecutive sample points."""
    runs = stretches(xs, a, b)
    return [Change(left.xs[-1], right.xs[0], right.order) for left, right in zip(runs, runs[1:])]


def _side(order: int, what: str = "", than: str = "") -> str:
    """'more MACs than b', 'fewer', 'as many MACs as b' (the noun and the other curve when given)."""
    if order == 0:
        return f"as many {what} as {than}" if than else "as many"
    return f"{'more' if order > 0 else 'fewer'}{' ' + what if what else ''}{' than ' + than if than else ''}"


def sentence(
    a_label: str, b_label: str, xs: Sequence[float], a: Sequence[float], b: Sequence[float], what: str = "MACs", *,
    points: bool = False,
) -> str:
    """What the samples say about the order of a and b, every change included, e.g.
    'the order changes 6 times between 80 and 176 px: vit-s/16 needs more MACs than convnext at
    64-80 px, fewer at 96 px, ..., more at 176-288 px'. ``points``: name each stretch by its sample
    points ('224, 384, 512 px', for sparse rows) rather than as a range (for a regular scan).
    Empty when no point has both values."""
    runs = stretches(xs, a, b)
    if not runs:
        return ""
    n = len(runs) - 1
    first, last = runs[0], runs[-1]
    def where(r: Stretch) -> str:
        return r.points if points else r.span

    lead = f"{a_label} needs {_side(first.order, what, b_label)} at {where(first)}"
    if n == 0:
        return f"no change of order: {lead}, every point compared"
    if n == 1:
        head = f"the curves cross between {_show(first.xs[-1])} and {_show(last.xs[0])} px (the only change of order)"
    else:
        head = f"the order changes {n} times between {_show(first.xs[-1])} and {_show(last.xs[0])} px"
    shown = runs if len(runs) <= MAX_STRETCHES else [first, last]
    gap = "" if shown is runs else f" (then {len(runs) - 2} shorter stretches)"
    return f"{head}: {lead}{gap}, " + ", ".join(f"{_side(r.order)} at {where(r)}" for r in shown[1:])


__all__ = ["Change", "Stretch", "changes", "sentence", "stretches"]
