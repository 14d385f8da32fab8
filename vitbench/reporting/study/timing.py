"""Section: measured step time against the time model's prediction (vitbench.timemodel): rows
that have both ``pred_latency_s`` (the sweep's predict stage) and a measured ``latency_p50_s``."""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from vitbench.reporting import plots
from vitbench.reporting.study.rows import clock_note, measured, num

if TYPE_CHECKING:
    from vitbench.reporting.study.context import Report


def error_summary(ratios: list[float]) -> tuple[float, float]:
    """(median, 90th percentile) of |predicted / measured - 1| (nearest rank)."""
    errors = sorted(abs(r - 1) for r in ratios)
    rank = max(0, min(len(errors) - 1, round(0.9 * len(errors) + 0.5) - 1))
    return statistics.median(errors), errors[rank]


def section(report: Report) -> bool:
    rows = [r for r in measured(report.records) if num(r.get("pred_latency_s")) and num(r.get("latency_p50_s"))]
    if not rows:
        return False

    clock = clock_note(rows)
    modes = sorted({str(r.get("mode")) for r in rows})
    by_mode = {mode: [r for r in rows if str(r.get("mode")) == mode] for mode in modes}
    series = [plots.Series(mode, [r["pred_latency_s"] for r in sub], [r["latency_p50_s"] for r in sub])
              for mode, sub in by_mode.items()]
    report.plot(
        "time_predicted_vs_measured.png", lambda p: plots.predicted_vs_measured(series, p, unit="s"),
        "Predicted vs measured step time",
        f"Measured median step time{clock} against the time model's prediction (vitbench.timemodel, wall time), seconds, "
        "log-log; the dashed line is measured = predicted."
        + (" The measured times are CPU time (--clock cpu): a wall-time prediction is compared with CPU seconds "
           "per thread." if clock else ""),
    )
    lines = []
    for mode, sub in by_mode.items():
        median, p90 = error_summary([r["pred_latency_s"] / r["latency_p50_s"] for r in sub])
        basis = sorted({str(r.get("pred_basis")) for r in sub})
        lines.append(f"{mode}: |predicted / measured{clock} - 1| median {100 * median:.1f}%, 90th percentile {100 * p90:.1f}% "
                     f"over {len(sub)} configurations ({'; '.join(basis)})")
    table = [
        {"model": r["model"], "mode": r.get("mode"), "img_size": r.get("img_size"), "batch_size": r["batch_size"],
         "pred_latency_s": r["pred_latency_s"], "latency_p50_s": r["latency_p50_s"],
         "ratio": f"{r['pred_latency_s'] / r['latency_p50_s']:.3g}"}
        for r in sorted(rows, key=lambda r: (str(r.get("mode")), str(r["model"]), r["batch_size"]))
    ]
    report.doc.bullets(lines)
    report.table("time_predicted_vs_measured", table, [
        ("model", "model"), ("mode", "mode"), ("img_size", "resolution (px)"), ("batch_size", "batch"),
        ("pred_latency_s", "predicted step"), ("latency_p50_s", f"measured step (median){clock}"), ("ratio", "predicted/measured"),
    ])
    for line in lines:
        report.conclude("Time model: " + line + ".")
    return True
