"""Human-readable rendering of raw records. The only place numbers get units and rounding."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

FORMATS = ("table", "csv", "json", "markdown")

_BYTES_SUFFIX = ("_bytes",)
_SECONDS_SUFFIX = ("_s",)


def si(value: float, digits: int = 4) -> str:
    """1234567 -> '1.23 M' (powers of 1000; counts such as MACs and parameters)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    magnitude = abs(value)
    for factor, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if magnitude >= factor:
            return f"{value / factor:.{digits}g} {suffix}"
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def binary_bytes(value: float) -> str:
    """Bytes in powers of 1024: 1.50 GiB."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    magnitude = abs(value)
    for factor, suffix in ((1024**4, "TiB"), (1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB")):
        if magnitude >= factor:
            return f"{value / factor:.2f} {suffix}"
    return f"{int(value)} B"


def seconds(value: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if value >= 1:
        return f"{value:.3g} s"
    if value >= 1e-3:
        return f"{value * 1e3:.3g} ms"
    return f"{value * 1e6:.3g} us"


def humanize(column: str, value: Any) -> Any:
    """Render one cell for people, choosing the unit from the column's name."""
    if value is None or isinstance(value, (bool, str)):
        return "" if value is None else value
    if isinstance(value, float) and math.isnan(value):
        return ""
    if column.endswith(("_img_s", "_per_s")):  # rates, not durations
        return si(value) if abs(value) >= 1000 else f"{value:.4g}"
    if column.endswith(_BYTES_SUFFIX):
        return binary_bytes(value)
    if column.endswith(_SECONDS_SUFFIX):
        return seconds(value)
    if column.endswith(("_share", "_ratio", "_fraction", "mfu", "_cv")):
        return f"{100 * value:.1f}%"
    if column in (
        "img_size", "patch_size", "tokens", "batch_size", "depth", "threads", "max_batch_size",
        "embed_dim", "num_heads", "heads", "mlp", "mlp_hidden_dim", "num_classes", "in_chans",
    ):
        return value
    if isinstance(value, (int, float)) and abs(value) >= 1000:
        return si(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    return value


def _columns(records: Sequence[dict[str, Any]], columns: Sequence[str] | None) -> list[str]:
    if columns:
        return list(columns)
    seen: dict[str, None] = {}
    for record in records:
        for key in record:
            seen.setdefault(key, None)
    return list(seen)


def render(
    records: Sequence[dict[str, Any]], fmt: str = "table", columns: Sequence[str] | None = None
) -> str:
    """Records as a table (humanised), CSV or JSON (raw values), or markdown (humanised)."""
    cols = _columns(records, columns)
    if fmt == "json":
        from vitbench.results import to_json

        return to_json([{c: r.get(c) for c in cols} for r in records])
    if fmt == "csv":
        import pandas as pd

        return pd.DataFrame([{c: r.get(c) for c in cols} for r in records], columns=cols).to_csv(
            index=False
        )
    from tabulate import tabulate

    rows = [[humanize(c, r.get(c)) for c in cols] for r in records]
    tablefmt = "github" if fmt == "markdown" else "simple"
    return tabulate(rows, headers=cols, tablefmt=tablefmt, disable_numparse=True)


def dumps_json(data: Any) -> str:
    return json.dumps(data, indent=2, default=str)
