"""Section: measured throughput, latency and peak memory against batch size, with error bars,
and the measured conclusions: drawn from stable rows only, withheld (with the reason) otherwise."""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any

from vitbench.reporting import markdown as md
from vitbench.reporting import plots
from vitbench.reporting.format import humanize, si
from vitbench.reporting.study import pairs as P
from vitbench.reporting.study.figures import measured_pairs
from vitbench.reporting.study.rows import (
    achieved,
    clock_note,
    instability,
    instability_details,
    measured,
    num,
    per_image,
    throughput_band,
)

if TYPE_CHECKING:
    from vitbench.reporting.study.context import Report


def _series(rows: list[dict[str, Any]]) -> dict[tuple, list[dict[str, Any]]]:
    """Rows by (model and overrides, mode, precision, device), each sorted by batch size."""
    out: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault((P.label(r), str(r.get("mode")), str(r.get("precision")), str(r.get("device"))), []).append(r)
    ordered = sorted(out.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    return {k: sorted(g, key=lambda r: r["batch_size"]) for k, g in ordered}


def _scaling_line(label: str, g: list[dict[str, Any]]) -> tuple[str, str | None]:
    """'label: X img/s at batch a -> Y img/s at batch b (ratio)[; memory fit]', and why it
    cannot be concluded (an unstable end point), or None."""
    first, last = g[0], g[-1]
    text = (
        f"{label}: {first['throughput_img_s']:.4g} img/s at batch {first['batch_size']} -> "
        f"{last['throughput_img_s']:.4g} img/s at batch {last['batch_size']} "
        f"({md.ratio(last['throughput_img_s'], first['throughput_img_s'])})"
    )
    memory = [(r["batch_size"], num(r.get("peak_memory_bytes"))) for r in g if num(r.get("peak_memory_bytes"))]
    if len({m[0] for m in memory}) >= 2:  # a line needs two batch sizes (one x: no slope)
        fit = statistics.linear_regression([m[0] for m in memory], [m[1] for m in memory])
        text += (
            f"; peak memory ~ {humanize('x_bytes', fit.intercept)} + {humanize('x_bytes', fit.slope)} per image "
            "(least squares)"
        )
    unstable = [str(r["batch_size"]) for r in (first, last) if instability(r)]
    return text, f"batch {' and '.join(unstable)}" if unstable else None


def _plots(report: Report, groups: dict[tuple, list[dict[str, Any]]]) -> None:
    throughput, memory = [], []
    for (label, mode, precision, _device), g in groups.items():
        name, style = f"{label} {mode} {precision}", "-" if mode == "infer" else "--"
        bands = [throughput_band(r) or (r["throughput_img_s"],) * 2 for r in g]
        throughput.append(plots.Series(
            name, [r["batch_size"] for r in g], [r["throughput_img_s"] for r in g], style,
            lo=[b[0] for b in bands], hi=[b[1] for b in bands], extra={"withheld": [bool(instability(r)) for r in g]},
        ))
        mem = [r for r in g if num(r.get("peak_memory_bytes"))]
        if mem:
            memory.append(plots.Series(name, [r["batch_size"] for r in mem], [r["peak_memory_bytes"] for r in mem], style))
    clock = clock_note([r for g in groups.values() for r in g])
    report.plot(
        "throughput_vs_batch.png",
        lambda p: plots.by_batch(
            throughput, p, f"throughput (images/s){clock}", f"Measured throughput{clock} vs batch size (solid: infer, dashed: train)",
        ),
        "Measured throughput vs batch size",
        f"Median throughput{clock} (images per second; train = forward + backward + optimizer step) against batch size, "
        "log-log; error bars span the interquartile range (between runs when a row pooled several, else between "
        "timed steps). Hollow markers: rows withheld from the conclusions (unstable timing, a busy machine or a "
        "shared GPU; reasons in the withheld-rows table). Series are nudged sideways so equal values stay visible. "
        "Environment above.",
    )
    if memory:
        report.plot(
            "peak_memory_vs_batch.png",
            lambda p: plots.by_batch(memory, p, "peak memory (MiB)", "Measured peak memory vs batch size", scale=2**20),
            "Measured peak memory vs batch size",
            "Peak memory of one step in MiB (2^20 bytes), as measured by vitbench.measure (separate memory pass), "
            "against batch size; series are nudged sideways so equal values (e.g. the same model in two precisions) "
            "stay visible.",
        )


def _table(report: Report, rows: list[dict[str, Any]]) -> None:
    shown = [dict(r, macs_img=per_image(r), achieved_macs_per_s=achieved(r)) for r in rows]
    shown.sort(key=lambda r: (str(r.get("mode")), str(r["model"]), str(r.get("overrides") or ""), r["batch_size"]))
    columns = [("model", "model")]
    if any(r.get("overrides") for r in rows):
        columns.append(("overrides", "overrides"))
    columns += [("img_size", "resolution (px)"), ("mode", "mode"), ("precision", "precision"), ("batch_size", "batch")]
    if any(num(r.get("runs")) for r in rows):
        columns.append(("runs", "runs"))
    clock = clock_note(rows)
    if clock and clock != " (CPU time)":  # mixed clocks: say per row
        columns.append(("clock", "clock"))
        clock = ""
    columns += [
        ("macs_img", "MACs/image (fwd)"), ("throughput_img_s", f"img/s{clock}"), ("latency_p50_s", f"latency p50{clock}"),
        ("latency_iqr_s", "IQR"), ("n_samples", "samples"), ("peak_memory_bytes", "peak memory"),
        ("achieved_macs_per_s", "achieved MAC/s (fwd, infer)"), ("warnings", "other warnings"),
    ]
    report.table("measured", shown, columns)


def _conclude_speed(report: Report, rows: list[dict[str, Any]], stable: list[dict[str, Any]]) -> None:
    infer = [r for r in stable if achieved(r)]
    clock = clock_note(rows)
    if len(infer) >= 2:
        best, worst = max(infer, key=achieved), min(infer, key=achieved)
        report.conclude(
            f"Measured ({clock.strip()[1:-1] + '; ' if clock else ''}inference, stable rows): the {rows[0].get('device') or 'device'} sustains from "
            f"{si(achieved(worst))}MAC/s ({P.label(worst)}, batch {worst['batch_size']}) to {si(achieved(best))}MAC/s "
            f"({P.label(best)}, batch {best['batch_size']}): MACs alone do not predict speed across architectures and batch sizes."
        )
    elif any(achieved(r) for r in rows):
        report.conclude(
            f"Measured ({clock.strip()[1:-1] + '; ' if clock else ''}inference): sustained MAC/s range withheld: fewer than two "
            "stable inference rows."
        )


def _withheld_table(report: Report, rows: list[dict[str, Any]]) -> None:
    """Every measured row withheld from the conclusions, with its reason short and in full."""
    withheld = [dict(r, label=P.label(r), reason=instability(r), details=instability_details(r)) for r in rows if instability(r)]
    if not withheld:
        return
    report.doc.add("Measured rows withheld from the conclusions (hollow markers in the plot), with the full reason:")
    report.table("withheld", withheld, [
        ("id", "row id"), ("label", "model"), ("mode", "mode"), ("precision", "precision"), ("batch_size", "batch"),
        ("reason", "why withheld"), ("details", "full warning"),
    ])


def _pairs(report: Report, rows: list[dict[str, Any]]) -> bool:
    """The measured pairs (those the source documents compare, or every transformer-CNN pair),
    concluded or withheld; False when there are none."""
    if report.sources:
        found, more = P.named_pairs(rows, measured_pairs()), 0
        intro = "Measured pairs the source documents compare (same device, mode, precision, resolution and batch):"
    else:
        found, more = P.transformer_cnn_pairs(rows)
        intro = "Measured transformer-vs-CNN pairs (same device, mode, precision, resolution and batch):"
    if not found:
        return False
    clock = clock_note(rows)
    report.doc.add(intro + f" MACs ratio against measured throughput{clock} ratio.")
    report.doc.bullets([p.text() for p in found] + ([f"... and {more} more pairs"] if more else []))
    for p in found:
        why = p.withheld()
        report.conclude(
            f"Measured{clock}: {p.text()}." if not why else f"Measured, withheld: {P.label(p.a)} vs {P.label(p.b)} ({p.settings}): {why}."
        )
    return True


def _withheld_reasons(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How many measured rows each reason withholds: busy machine, shared GPU, unstable timing."""
    reasons: dict[str, int] = {}
    for r in rows:
        for part in (instability(r) or "").split("; "):
            if part:
                head = next((k for k in ("busy machine", "shared GPU") if k in part), "unstable timing")
                reasons[head] = reasons.get(head, 0) + 1
    return reasons


def _load_note(rows: list[dict[str, Any]]) -> str:
    """' Other processes kept a median 3.1 of 2 cores busy while they ran.' (or '')."""
    busy = [num(r.get("machine_busy_cores")) for r in rows if num(r.get("machine_busy_cores")) is not None]
    cpus = next((num(r.get("machine_cpus")) for r in rows if num(r.get("machine_cpus"))), None)
    if not busy or not cpus:
        return ""
    return f" Other processes kept a median {statistics.median(busy):.1f} of {cpus:g} cores busy while they ran."


def overview(records: list[dict[str, Any]]) -> str | None:
    """The report's first-screen line about its measured rows: how many are stable enough to
    conclude from and, when some or all are not, why (the reasons counted, and how busy the
    machine was); None without measured rows."""
    rows = measured(records)
    if not rows:
        return None
    unfit = sum(1 for r in rows if instability(r))
    again = sum(1 for r in rows if (num(r.get("attempts")) or 1) > 1)
    clock = clock_note(rows).strip()
    how = f" (timed by {clock[1:-1]})" if clock else ""
    told = ", ".join(f"{what}: {count}" for what, count in sorted(_withheld_reasons(rows).items(), key=lambda kv: -kv[1]))
    remeasured = f"; {again} measured twice, the steadier attempt kept" if again else ""
    if not unfit:
        return f"**Measured rows:** all {len(rows)} are stable enough to conclude from{how}{remeasured}."
    if unfit == len(rows):
        return (f"**Measured rows:** none of the {len(rows)} is stable enough to conclude from{how}, so this report "
                f"draws no measured conclusion ({told}{remeasured}).{_load_note(rows)} Rerun `vitbench report` on a "
                "quieter machine for measured conclusions; every other section stands as it is.")
    return (f"**Measured rows:** {len(rows) - unfit} of {len(rows)} are stable enough to conclude from{how}; {unfit} "
            f"withheld ({told}{remeasured}), each with its reason in the measured section.{_load_note(rows)}")


def section(report: Report) -> bool:
    rows = measured(report.records)
    if not rows:
        return False
    stable = [r for r in rows if not instability(r)]
    groups = _series(rows)
    _plots(report, groups)
    clock = clock_note(rows)
    if clock == " (CPU time)":
        report.doc.add(
            "Times are CPU time: the rows were timed with `--clock cpu` (the process's CPU seconds per step and "
            "thread, which other processes inflate far less than wall time; the wall-time columns are in results.csv)."
        )
    lines, scaling = [], []
    for (label, mode, precision, _device), g in groups.items():
        if len(g) >= 2:
            name = f"{label} {mode} {precision}"
            text, why = _scaling_line(name, g)
            lines.append(text + (f" (not concluded: the row at {why} is unstable, see its marker)" if why else ""))
            scaling.append((name, text, why))
    report.doc.bullets(lines)
    _table(report, rows)
    _withheld_table(report, rows)
    if len(stable) < len(rows):
        use = (
            f"the measured conclusions below use only the {len(stable)} stable rows and withhold the others"
            if stable else "no measured conclusion is drawn"
        )
        report.conclude(
            f"Measured timings{clock}: {len(rows) - len(stable)} of {len(rows)} measured rows are unstable (timing spread above "
            f"10%, a busy machine or a shared GPU; marked (! unstable N%) or (! busy machine) beside their numbers, hollow "
            f"in the plots): {use}; each row's full reason is in the withheld-rows table."
        )
    _conclude_speed(report, rows, stable)
    if not _pairs(report, rows):
        for name, text, why in scaling[:3]:
            report.conclude(f"Measured{clock}: {text}." if not why else f"Measured, withheld: {name}: the row at {why} is unstable.")
    return True
