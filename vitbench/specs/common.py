"""Validators shared by every spec type: each raises :class:`SpecError` naming the field and the
bad value. No torch import."""

from __future__ import annotations

import math
from typing import Any

from vitbench.errors import SpecError

#: no size, count or ratio of a spec is above this (10^15): the formulas take any size, but
#: larger ones give numbers no float, no JSON reader and no table holds (MACs of thousands of
#: digits), and no machine builds them
MAX_FIELD = 10**15


def _at_most(name: str, value: Any) -> None:
    if value > MAX_FIELD:
        raise SpecError(name, value, f"is more than {MAX_FIELD:.0e}: no model is that large")


def positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(name, value, "must be an integer")
    if value <= 0:
        raise SpecError(name, value, "must be a positive integer")
    _at_most(name, value)


def non_negative(name: str, value: Any) -> None:
    """A count that may be zero (classes: 0 = no head; register tokens)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SpecError(name, value, "must be a non-negative integer")
    _at_most(name, value)


def choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise SpecError(name, value, f"must be one of {', '.join(choices)}")


def finite_number(name: str, value: Any) -> None:
    """A real number that is neither NaN nor infinite (booleans are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SpecError(name, value, "must be a finite number")


def positive_number(name: str, value: Any) -> None:
    finite_number(name, value)
    if value <= 0:
        raise SpecError(name, value, "must be a positive number")
    _at_most(name, value)


def probability(name: str, value: Any) -> None:
    finite_number(name, value)
    if not 0.0 <= value < 1.0:
        raise SpecError(name, value, "must be a number in [0, 1)")


def boolean(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise SpecError(name, value, "must be true or false")


def image_size(value: Any) -> tuple[int, int]:
    """An integer (square) or a (height, width) pair of positive integers -> (height, width)."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value, value)
    if isinstance(value, list):
        value = tuple(value)
    if not (isinstance(value, tuple) and len(value) == 2):
        raise SpecError("img_size", value, "must be an integer or a (height, width) pair")
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise SpecError("img_size", value, "must be positive integers")
        _at_most("img_size", v)
    return value  # type: ignore[return-value]


def int_tuple(name: str, value: Any) -> tuple[int, ...]:
    """A non-empty sequence of positive integers, as a tuple."""
    if isinstance(value, list):
        value = tuple(value)
    if not isinstance(value, tuple) or not value:
        raise SpecError(name, value, "must be a non-empty sequence of positive integers")
    for v in value:
        positive(name, v)
    return value
