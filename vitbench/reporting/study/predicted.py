"""Section: the time model's predicted step time (the sweep's predict stage, ``pred_*`` columns),
shown whenever rows carry predictions, with or without measured rows: the fastest configurations,
predicted time per image against resolution, depth and batch size (where those vary), and the
breakdown by component. Predicted against measured is the next section's job (``timing``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vitbench.reporting import plots
from vitbench.reporting.format import humanize
from vitbench.reporting.study import pairs as P
from vitbench.reporting.study.rows import key_without, label_without, num, overrides_without, spec_dict
from vitbench.row_status import RowStatus

if TYPE_CHECKING:
    from vitbench.reporting.study.context import Report

#: the breakdown columns, which sum to ``pred_latency_s`` (docs/time.md), and their names
COMPONENTS = (
    ("pred_attention_s", "attention"), ("pred_linear_s", "linear layers"), ("pred_conv_s", "convolutions"),
    ("pred_elementwise_s", "elementwise"), ("pred_optimizer_s", "optimizer"), ("pred_overhead_s", "per-operator overhead"),
)
#: what predicted time is drawn against: (column or spec field, axis label)
AXES = (("img_size", "resolution H = W (px)"), ("depth", "depth (blocks)"), ("batch_size", "batch size (images)"))
FASTEST = 10  # rows in the fastest-configurations table
MAX_BARS = 40  # bars in the breakdown plot (the fastest rows)


def rows_with_predictions(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ok rows with a predicted step time, each with ``pred_s_per_image``."""
    out = []
    for r in records:
        step = num(r.get("pred_latency_s"))
        if r.get("status") == RowStatus.OK and step:
            out.append(dict(r, pred_s_per_image=step / (num(r.get("batch_size")) or 1)))
    return out


def describe(r: dict[str, Any]) -> str:
    """'vit-s/16 img_size=224 infer fp32 batch 8' (the row's configuration, in full)."""
    return f"{P.label(r)} {r.get('mode')} {r.get('precision')} batch {r.get('batch_size')}"


def axis_value(r: dict[str, Any], axis: str) -> float | None:
    if axis == "depth":
        return num((spec_dict(r) or {}).get("depth"))
    return num(r.get(axis))


def _rest(r: dict[str, Any], axis: str) -> str:
    """The row's configuration without ``axis`` (rows that differ only in it share this key)."""
    data = spec_dict(r)
    if data is not None and axis != "batch_size":
        spec = key_without(data, axis, "pos_embed_len")
    else:
        spec = str(r.get("spec_key") or "")
    overrides = overrides_without(r, axis)
    batch = "" if axis == "batch_size" else str(r.get("batch_size"))
    return "|".join([str(r.get("model")), overrides, spec, str(r.get("mode")), str(r.get("precision")), str(r.get("device")), batch])


def curves(rows: list[dict[str, Any]], axis: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """(label, rows sorted by ``axis``) for each configuration measured at two or more values of it."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if axis_value(r, axis) is not None:
            groups.setdefault(_rest(r, axis), []).append(r)
    out = []
    for members in groups.values():
        members = sorted(members, key=lambda r: axis_value(r, axis))
        if len({axis_value(r, axis) for r in members}) >= 2:
            first = members[0]
            batch = "" if axis == "batch_size" else f" batch {first.get('batch_size')}"
            out.append((f"{label_without(first, axis)} {first.get('mode')} {first.get('precision')}{batch}", members))
    return sorted(out)


def components(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The breakdown columns some row has a non-zero value in."""
    return [(key, name) for key, name in COMPONENTS if any(num(r.get(key)) for r in rows)]


def largest_component(r: dict[str, Any], present: list[tuple[str, str]]) -> str:
    return max(present, key=lambda c: num(r.get(c[0])) or 0)[1]


def _fastest(report: Report, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ranked = sorted(rows, key=lambda r: r["pred_s_per_image"])
    report.doc.add(
        f"The {min(FASTEST, len(ranked))} configurations with the highest predicted throughput (of {len(ranked)} "
        "with a prediction; all are in the breakdown table below and in results.csv):"
    )
    report.table("predicted_fastest", [dict(r, config=describe(r)) for r in ranked[:FASTEST]], [
        ("model", "model"), ("overrides", "overrides"), ("img_size", "resolution (px)"), ("mode", "mode"),
        ("precision", "precision"), ("batch_size", "batch"), ("pred_latency_s", "predicted step"),
        ("pred_throughput_img_s", "predicted img/s"), ("pred_basis", "basis"),
    ])
    return ranked


def _at(axis: str, value: float | None) -> str:
    return {"img_size": f"{value:g} px", "depth": f"depth {value:g}", "batch_size": f"batch {value:g}"}[axis]


def curve_line(name: str, axis: str, members: list[dict[str, Any]]) -> str:
    """'label: predicted time per image 8.48 ms at 64 px -> 95.6 ms at 288 px (11.3x; rows at
    64, ..., 288 px); not monotone: it falls from 112 to 128 px, ...' (every fall named)."""
    first, last = members[0], members[-1]
    values = [axis_value(r, axis) for r in members]
    text = (
        f"{name}: predicted time per image {humanize('x_s', first['pred_s_per_image'])} at {_at(axis, values[0])} -> "
        f"{humanize('x_s', last['pred_s_per_image'])} at {_at(axis, values[-1])} "
        f"({last['pred_s_per_image'] / first['pred_s_per_image']:.3g}x; rows at " + ", ".join(f"{v:g}" for v in values) + ")"
    )
    steps = list(zip(values, values[1:], [r["pred_s_per_image"] for r in members], [r["pred_s_per_image"] for r in members[1:]]))
    falls = [f"from {a:g} to {b:g}" for a, b, ya, yb in steps if yb < ya]
    if falls and any(yb > ya for _, _, ya, yb in steps):  # both rises and falls
        text += f"; not monotone: it falls {'once' if len(falls) == 1 else f'{len(falls)} times'}: " + ", ".join(falls)
    return text


def _breakdown(report: Report, ranked: list[dict[str, Any]]) -> None:
    present = components(ranked)
    if not present:
        return

    shown = ranked[:MAX_BARS]
    shares = {name: [(num(r.get(key)) or 0) / r["pred_latency_s"] for r in shown] for key, name in present}
    report.plot(
        "predicted_breakdown.png", lambda p: plots.breakdown([describe(r) for r in shown], shares, p),
        "Predicted step time by component",
        "Share of each configuration's predicted step time (vitbench.timemodel) by component; the components sum to "
        f"the predicted step. Fastest first{f', the {MAX_BARS} fastest of {len(ranked)}' if len(ranked) > MAX_BARS else ''}.",
    )
    table = [dict(r, largest=largest_component(r, present)) for r in ranked]
    report.table("predicted_breakdown", table, [
        ("model", "model"), ("overrides", "overrides"), ("mode", "mode"), ("precision", "precision"),
        ("batch_size", "batch"), ("pred_latency_s", "predicted step"),
        *[(key, name) for key, name in present], ("largest", "largest component"),
    ])
    counts: dict[str, list[dict[str, Any]]] = {}
    for r in table:
        counts.setdefault(r["largest"], []).append(r)
    parts = [f"{name} in {len(rs)} (e.g. {describe(rs[0])})" for name, rs in sorted(counts.items(), key=lambda kv: -len(kv[1]))]
    report.conclude(f"Predicted time, largest component of the step, of {len(table)} configurations: " + "; ".join(parts) + ".")


def section(report: Report) -> bool:
    rows = rows_with_predictions(report.records)
    if not rows:
        return False

    basis = sorted({str(r.get("pred_basis")) for r in rows if r.get("pred_basis")})
    report.doc.add(
        "Predicted step time from the time model (vitbench.timemodel; wall-clock seconds of one step at the row's "
        f"batch; basis: {'; '.join(basis) or 'not recorded'}). A prediction, not a measurement"
        + ("; rows that were also measured are compared in the next section." if any(num(r.get("latency_p50_s")) for r in rows) else ".")
    )
    ranked = _fastest(report, rows)
    best, worst = ranked[0], ranked[-1]
    report.conclude(
        f"Predicted time (time model, {len(rows)} configurations): the highest predicted throughput is "
        f"{1 / best['pred_s_per_image']:.4g} img/s ({describe(best)}), the lowest {1 / worst['pred_s_per_image']:.4g} img/s "
        f"({describe(worst)})."
    )
    found = {axis: curves(rows, axis) for axis, _ in AXES}
    panels = [
        (label, [plots.Series(name, [axis_value(r, axis) for r in m], [r["pred_s_per_image"] for r in m]) for name, m in found[axis]],
         axis == "batch_size")
        for axis, label in AXES if found[axis]
    ]
    if panels:
        report.plot(
            "predicted_time.png", lambda p: plots.predicted_time(panels, p), "Predicted time per image",
            "Predicted time per image (predicted step / batch, ms; vitbench.timemodel) against each setting the sweep "
            "varies (resolution, depth, batch size), one line per configuration that differs only in it; log time axis "
            "(and log-2 batch axis).",
        )
        report.doc.bullets([curve_line(name, axis, m) for axis, _ in AXES for name, m in found[axis]])
        for axis, _ in AXES:  # one conclusion per setting varied: its first configuration
            if found[axis]:
                name, members = found[axis][0]
                report.conclude(f"Predicted time, {curve_line(name, axis, members)}.")
    _breakdown(report, ranked)
    return True
