"""Units for people: counts with SI prefixes, bytes in powers of 1024, durations. Records keep raw
units (seconds, bytes, integer counts); these turn one value into text, for the report layer
and for the few messages that name a size. Pure Python, no imports beyond the standard library.
"""

from __future__ import annotations

import math
from typing import Any


def is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def si(value: float, digits: int = 4) -> str:
    """1234567 -> '1.235 M' (powers of 1000; counts such as MACs and parameters)."""
    if is_missing(value):
        return ""
    magnitude = abs(value)
    for factor, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if magnitude >= factor:
            return f"{value / factor:.{digits}g} {suffix}"
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def binary_bytes(value: float) -> str:
    """Bytes in powers of 1024: 1.50 GiB."""
    if is_missing(value):
        return ""
    magnitude = abs(value)
    for factor, suffix in ((1024**4, "TiB"), (1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB")):
        if magnitude >= factor:
            return f"{value / factor:.2f} {suffix}"
    return f"{int(value)} B"


def seconds(value: float) -> str:
    if is_missing(value):
        return ""
    if value >= 3600:
        return f"{value / 3600:.3g} h"
    if value >= 1:
        return f"{value:.3g} s"
    if value >= 1e-3:
        return f"{value * 1e3:.3g} ms"
    return f"{value * 1e6:.3g} us"


__all__ = ["binary_bytes", "is_missing", "seconds", "si"]
