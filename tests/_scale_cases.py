"""Placeholders of the bad-input corpus for issue 33's scale and CSV cells (tests/test_bad_inputs.py):
results CSVs holding a cell beyond the reader's bounds, and a header-only CSV."""

from __future__ import annotations

import csv
import io
from pathlib import Path


def _with_cell(text: str, column: str, value: str) -> str:
    """``text`` (a results CSV of one row) with ``column``'s cell of its first row replaced."""
    header, row, *_ = list(csv.reader(io.StringIO(text)))
    row[header.index(column)] = value
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([header, row])
    return buffer.getvalue()


def prepare(root: Path, results_csv: Path) -> dict[str, str]:
    """``csv_bigint`` (macs of 5,000 digits), ``csv_inf_count`` (macs ``inf``), ``csv_huge_exp``
    (macs ``1e9999999``), ``csv_bigint_latency`` (a measurement of 5,000 digits) and
    ``csv_header_only`` (a header, no rows), each beside ``results_csv``."""
    text = results_csv.read_text()
    cases = {
        "csv_bigint": _with_cell(text, "macs", "7" * 5000),
        "csv_inf_count": _with_cell(text, "macs", "inf"),
        "csv_huge_exp": _with_cell(text, "macs", "1e9999999"),
        "csv_bigint_latency": _with_cell(text, "attn_matmul_share", "-" + "9" * 5000),
        "csv_header_only": text.splitlines()[0] + "\n",
    }
    out = {}
    for key, body in cases.items():
        (root / f"{key}.csv").write_text(body)
        out[key] = str(root / f"{key}.csv")
    return out
