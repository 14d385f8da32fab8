"""A second attempt at the measured rows whose timing came out unfit to conclude from (unstable,
or a busy machine), after the sweep's other rows and within a time budget: a sweep file's
``remeasure: SHARE`` lets the re-measuring take at most SHARE of the time the measured rows took
in the first pass (0, the default: never).

A disturbance is often short (another process's burst of work): measured again a few minutes
later, a row's runs may agree. Each unfit row is measured once more, in sweep order, while its
first attempt's duration still fits in what is left of the budget; the attempt kept is the one
fit to conclude from, else the one with the smaller spread (the first on a tie). The kept row says so:
``attempts`` (2), ``attempt_spreads`` (each attempt's spread, :func:`timing_spread`),
``kept_attempt`` (1 or 2) and a ``remeasured`` warning; it replaces the first in the store (the
store keeps the last record of each id).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from vitbench.measure.stability import timing_spread, unfit_timing
from vitbench.row_status import RowStatus
from vitbench.row_warnings import merge, warning


@dataclass
class Remeasure:
    """What the first pass leaves for the second: the unfit rows (with their configurations) and
    the seconds the measured rows took. ``share``: the budget, as a share of those seconds."""

    share: float
    measured_s: float = 0.0
    unfit: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)

    def note(self, config: Any, row: dict[str, Any]) -> None:
        """Record a first-pass row (``config`` None for a row not measured)."""
        if config is None or "measured" not in getattr(config, "stages", ()):
            return
        self.measured_s += float(row.get("elapsed_s") or 0.0)
        if self.share > 0 and unfit_timing(row):
            self.unfit.append((config, row))

    @property
    def budget_s(self) -> float:
        return self.share * self.measured_s

    def configs(self, spent: Callable[[], float]) -> Iterator[Any]:
        """The configurations to measure again, one at a time, while each still fits the budget
        (``spent()``: seconds spent re-measuring so far)."""
        for config, first in self.unfit:
            if spent() + float(first.get("elapsed_s") or 0.0) > self.budget_s:
                return
            yield config

    def first_row(self, row_id: str) -> dict[str, Any] | None:
        return next((first for _, first in self.unfit if first.get("id") == row_id), None)


def better(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """The attempt to keep, with ``attempts``, ``attempt_spreads``, ``kept_attempt`` and a
    ``remeasured`` warning: the one fit to conclude from, else the smaller spread, the first on a tie."""
    spreads = [timing_spread(first), timing_spread(second)]
    fit = [not unfit_timing(first) if first.get("status") == RowStatus.OK else False,
           not unfit_timing(second) if second.get("status") == RowStatus.OK else False]
    if second.get("status") != RowStatus.OK:
        keep = 1
    elif fit[1] and not fit[0]:
        keep = 2
    elif fit[0] and not fit[1]:
        keep = 1
    else:
        keep = 2 if _smaller(spreads[1], spreads[0]) else 1
    kept = dict(second if keep == 2 else first)
    shown = ", ".join("unknown" if s is None else f"{s:.0%}" for s in spreads)
    kept.update(attempts=2, attempt_spreads=spreads, kept_attempt=keep)
    kept["warnings"] = merge(kept.get("warnings"), [warning(
        "remeasured",
        f"measured twice: the first attempt was unfit to conclude from, so the row was measured again "
        f"after the sweep's other rows (timing spread of each attempt: {shown}); kept attempt {keep}",
    )])
    return kept


def _smaller(a: float | None, b: float | None) -> bool:
    return a is not None and (b is None or a < b)


__all__ = ["Remeasure", "better"]
