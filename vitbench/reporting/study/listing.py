"""Sections that list rows: those that did not complete, and every distinct configuration."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitbench.reporting.study.rows import num
from vitbench.row_status import RowStatus

if TYPE_CHECKING:
    from vitbench.reporting.study.context import Report


def failures(report: Report) -> bool:
    rows = [r for r in report.records if r.get("status") != RowStatus.OK]
    if not rows:
        return False
    report.doc.add("Failed and invalid configurations are rows like any other; the sweep went on past them.")
    report.table("failures", rows, [
        ("model", "model"), ("overrides", "overrides"), ("batch_size", "batch"), ("mode", "mode"),
        ("status", "status"), ("error", "error"),
    ])
    return True


def configurations(report: Report) -> bool:
    if not report.analytic:
        return False
    rows = sorted(report.analytic, key=lambda r: (str(r.get("study") or ""), num(r.get("index")) or 0))
    report.doc.add("Every distinct configuration's parameters and MACs (one row per model and configuration; "
                   "source: analytic where a formula covers the model, else counted: module parameters and "
                   "dispatch MACs; all rows and columns are in results.csv).")
    report.table("configurations", rows, [
        ("study", "study"), ("model", "model"), ("overrides", "overrides"), ("img_size", "resolution"),
        ("patch_size", "P"), ("tokens", "tokens"), ("params", "params"), ("macs_img", "MACs/image"),
        ("macs_source", "source"), ("attn_matmul_share", "attention matmul share"),
    ])
    return True
