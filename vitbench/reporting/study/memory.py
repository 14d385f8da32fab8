"""Section: measured peak memory against the analytic prediction (vitbench.analytic.memory)."""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from vitbench.reporting import plots
from vitbench.reporting.study.rows import measured, num

if TYPE_CHECKING:
    from vitbench.reporting.study.context import Report


def section(report: Report) -> bool:
    rows = [r for r in measured(report.records) if num(r.get("pred_peak_memory_bytes")) and num(r.get("peak_memory_bytes"))]
    if not rows:
        return False

    modes = sorted({str(r.get("mode")) for r in rows})
    by_mode = {mode: [r for r in rows if str(r.get("mode")) == mode] for mode in modes}
    series = [
        plots.Series(mode, [r["pred_peak_memory_bytes"] for r in sub], [r["peak_memory_bytes"] for r in sub])
        for mode, sub in by_mode.items()
    ]
    report.plot(
        "memory_predicted_vs_measured.png", lambda p: plots.predicted_vs_measured(series, p),
        "Predicted vs measured peak memory",
        "Measured peak memory of one step against the analytic prediction (vitbench.analytic.memory), MiB (2^20 bytes), "
        "log-log; the dashed line is measured = predicted.",
    )
    lines = []
    for mode, sub in by_mode.items():
        ratios = [r["peak_memory_bytes"] / r["pred_peak_memory_bytes"] for r in sub]
        lines.append(
            f"{mode}: measured / predicted peak memory median {statistics.median(ratios):.3f} "
            f"(range {min(ratios):.3f} to {max(ratios):.3f}) over {len(sub)} configurations"
        )
    table = [
        {
            "model": r["model"], "mode": r.get("mode"), "img_size": r.get("img_size"), "batch_size": r["batch_size"],
            "pred_peak_memory_bytes": r["pred_peak_memory_bytes"], "peak_memory_bytes": r["peak_memory_bytes"],
            "ratio": f"{r['peak_memory_bytes'] / r['pred_peak_memory_bytes']:.3g}",
            "pred_activations_bytes": r.get("pred_activations_bytes"), "mem_activations_bytes": r.get("mem_activations_bytes"),
        }
        for r in sorted(rows, key=lambda r: (str(r.get("mode")), str(r["model"]), r["batch_size"]))
    ]
    report.doc.bullets(lines)
    columns = [
        ("model", "model"), ("mode", "mode"), ("img_size", "resolution (px)"), ("batch_size", "batch"),
        ("pred_peak_memory_bytes", "predicted peak"), ("peak_memory_bytes", "measured peak"), ("ratio", "measured/predicted"),
    ]
    # the measured stage predicts the peak only (vitbench.measure.budget.prediction_columns); an activations
    # column appears where rows carry one (e.g. merged from `vitbench plan`), never as an empty column
    columns += [(k, label) for k, label in (("pred_activations_bytes", "predicted activations"),
                                            ("mem_activations_bytes", "measured activations"))
                if any(num(r.get(k)) is not None for r in table)]
    report.table("memory_predicted_vs_measured", table, columns)
    for line in lines:
        report.conclude("Memory model: " + line + ".")
    return True
