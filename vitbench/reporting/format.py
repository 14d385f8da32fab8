"""THE renderer of records: a terminal table, markdown, CSV or JSON. The only place numbers get
units and rounding.

Tables and markdown are for people: cells are humanised by column name (``*_bytes`` in KiB/MiB/GiB,
``*_s`` in s/ms/us, rates and counts with SI prefixes), and a record's ``warnings`` (a list) are
shown beside the number they qualify, e.g. ``(! unstable 12%)`` next to a throughput
(:mod:`vitbench.reporting.marks`). CSV and JSON are for programs: raw values (seconds, bytes,
integer counts), lists as JSON text in CSV cells.

A column is a record key, or a ``(key, header)`` pair; the header is shown in tables and
markdown, the key in CSV and JSON.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Union

from vitbench.errors import SpecError
from vitbench.escape import markdown_cell, table_cell
from vitbench.reporting import marks
from vitbench.results import csv_text, to_json
from vitbench.units import binary_bytes, seconds, si

FORMATS = ("table", "csv", "json", "markdown")

Column = Union[str, tuple[str, str]]  # noqa: UP007 (a runtime alias)

_BYTES_SUFFIX = ("_bytes",)
_SECONDS_SUFFIX = ("_s",)
#: integer columns shown as they are (sizes and counts people read digit by digit)
PLAIN_COLUMNS = (
    "img_size", "patch_size", "tokens", "batch_size", "depth", "threads", "max_batch_size",
    "embed_dim", "num_heads", "heads", "mlp", "mlp_hidden_dim", "num_classes", "in_chans", "runs",
    "n_samples", "index",
)


def humanize(column: str, value: Any) -> Any:
    """Render one cell for people, choosing the unit from the column's name. Booleans are
    ``true``/``false`` (as the CLI and sweep files spell them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None or isinstance(value, str):
        return "" if value is None else value
    if isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, (list, tuple)):
        return f"[{len(value)} values]"
    if column.endswith(("_img_s", "_per_s")):  # rates, not durations
        return si(value) if abs(value) >= 1000 else f"{value:.4g}"
    if column.endswith(_BYTES_SUFFIX):
        return binary_bytes(value)
    if column.endswith(_SECONDS_SUFFIX):
        return seconds(value)
    if column.endswith("_hours"):
        return f"{value:.3g} h"
    if column.endswith("_cost"):
        return f"{value:,.2f}"
    if column.endswith(("_share", "_ratio", "_fraction", "mfu", "_cv", "_spread")):
        return f"{100 * value:.1f}%"
    if column in PLAIN_COLUMNS:
        return value
    if isinstance(value, (int, float)) and abs(value) >= 1000:
        return si(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    return value


def columns_of(
    records: Sequence[dict[str, Any]], columns: Sequence[Column] | None = None
) -> list[tuple[str, str]]:
    """(key, header) pairs: the given columns, or every key in first-seen order."""
    if columns:
        return [(c, c) if isinstance(c, str) else (c[0], c[1]) for c in columns]
    seen: dict[str, None] = {}
    for record in records:
        for key in record:
            seen.setdefault(key, None)
    return [(k, k) for k in seen]


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, tuple):
        return list(value)
    return value


def cells(record: dict[str, Any], cols: Sequence[tuple[str, str]]) -> list[str]:
    """One record's humanised cells, with warning markers beside the numbers they qualify."""
    keys = [k for k, _ in cols]
    markers, loose = marks.marks(record, keys)
    out = []
    for key in keys:
        if key == "warnings":
            out.append(" / ".join(marks.short(w) for w in loose))
            continue
        text = str(humanize(key, record.get(key)))
        if key in markers:
            text = f"{text} {markers[key]}".strip()
        out.append(text)
    return out


def markdown_escape(text: object) -> str:
    """A markdown table cell: the one markdown escaper, :func:`vitbench.escape.markdown_cell`
    (pipes, backslashes, backticks and brackets escaped, ``& < >`` as entities, a line break a
    space, control characters gone): no live HTML or link from a model name."""
    return markdown_cell(text)


#: the narrowest a wrapped text column becomes (a word longer than this may be broken)
MIN_WRAPPED_WIDTH = 12
_GAP = 2  # spaces between the columns of a "simple" table


def fit_widths(rows: Sequence[Sequence[str]], headers: Sequence[str], width: int) -> list[int | None] | None:
    """Column widths (``None``: as wide as its cells) that make a terminal table's lines at most
    ``width`` characters: the widest columns of text are wrapped first, never below their header,
    their longest word (up to 24 characters) or :data:`MIN_WRAPPED_WIDTH`. ``None`` when the
    table fits as it is; columns of numbers are never wrapped, so a table may stay wider."""
    from tabulate import tabulate

    ruler = tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True).splitlines()[1]
    natural = [len(dashes) for dashes in ruler.split()]  # what tabulate makes of each column
    floors = []
    for i, header in enumerate(headers):
        words = [len(w) for row in rows for w in str(row[i]).split()]
        floors.append(max(len(header) + 2, MIN_WRAPPED_WIDTH, min(max(words, default=0), 24)))
    widths = list(natural)
    excess = sum(widths) + _GAP * (len(widths) - 1) - width
    if excess <= 0:
        return None
    while excess > 0:
        room = [i for i, (w, f) in enumerate(zip(widths, floors)) if w > f]
        if not room:
            break
        widest = max(room, key=lambda i: (widths[i], i))
        widths[widest] -= 1
        excess -= 1
    return [w if w < n else None for w, n in zip(widths, natural)]


def render(
    records: Sequence[dict[str, Any]], fmt: str = "table", columns: Sequence[Column] | None = None,
    width: int | None = None,
) -> str:
    """Records as a terminal table or markdown (humanised, warnings beside their numbers), CSV or
    JSON (raw values). ``columns``: keys or (key, header) pairs; default every key. ``width``: a
    terminal table's text columns are wrapped so that its lines fit (:func:`fit_widths`)."""
    if fmt not in FORMATS:
        raise SpecError("format", fmt, f"must be one of {', '.join(FORMATS)}")
    cols = columns_of(records, columns)
    keys = [k for k, _ in cols]
    if fmt == "json":
        return to_json([{k: _jsonable(r.get(k)) for k in keys} for r in records])
    if fmt == "csv":  # the one cell encoder: the same text as the store's export and Records.to_csv

        return csv_text(records, keys)
    from tabulate import tabulate

    rows = [cells(r, cols) for r in records]
    headers = [h for _, h in cols]
    if fmt == "markdown":
        rows = [[markdown_escape(c) for c in row] for row in rows]
        headers = [markdown_escape(h) for h in headers]
        return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)

    # one line per cell: a line break in a value (a device name) would read as a row of its own
    rows = [[table_cell(c) for c in row] for row in rows]
    headers = [table_cell(h) for h in headers]
    wrap = fit_widths(rows, headers, width) if width is not None and rows else None
    return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True, maxcolwidths=wrap)
