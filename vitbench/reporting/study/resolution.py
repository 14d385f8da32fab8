"""Section: MACs per image against resolution, ViT against CNN, with every change of order that
:func:`vitbench.analytic.scaling.compare_over_resolution` finds on a fine analytic scan, and the
order at the sweep's own rows (a CNN's MACs step with its feature-map sizes, so the curves can
cross several times: each change is reported, never one threshold)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vitbench.analytic import scaling
from vitbench.reporting import plots
from vitbench.reporting.study import crossings
from vitbench.reporting.study.rows import key_without, label_without, spec_dict, spec_of

if TYPE_CHECKING:
    from vitbench.analytic.scaling import ResolutionComparison
    from vitbench.reporting.study.context import Report

SHOWN = (224, 384, 512)  # resolutions quoted in each line when scanned


def groups(analytic: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Rows grouped by everything but the resolution; groups with at least two resolutions,
    ViTs first, then by MACs."""
    by_rest: dict[str, list[dict[str, Any]]] = {}
    for r in analytic:
        data = spec_dict(r)
        if data and isinstance(r.get("img_size"), int):
            by_rest.setdefault(key_without(data, "img_size", "pos_embed_len"), []).append(r)
    out = [sorted(g, key=lambda x: x["img_size"]) for g in by_rest.values() if len({x["img_size"] for x in g}) >= 2]
    return sorted(out, key=lambda g: (g[0]["kind"] != "vit", g[0]["macs_img"]))


def _line(vl: str, cl: str, cmp: ResolutionComparison, step: int, rows: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> str:
    """The pair's sentence: every change of order on the analytic scan, the ratio at the quoted
    resolutions, and the order at the sweep's own rows (the resolutions both were run at)."""
    at = ", ".join(f"{cmp.ratio(res):.3g}x at {res}" for res in SHOWN if res in cmp.resolutions)
    scan = crossings.sentence(vl, cl, cmp.resolutions, cmp.a_macs, cmp.b_macs)
    text = f"{vl} vs {cl}, analytic scan (multiples of {step} px, {cmp.resolutions[0]}-{cmp.resolutions[-1]} px): {scan}."
    if scan.startswith("no change of order"):
        text = text.replace(": no change of order:", ": no crossover:", 1)
    if at:
        text += f" Ratio {at}."
    by_res = {r["img_size"]: r["macs_img"] for r in rows[1]}
    common = [r for r in rows[0] if r["img_size"] in by_res]
    if len(common) >= 2:
        xs = [r["img_size"] for r in common]
        text += " Sweep rows: " + crossings.sentence(vl, cl, xs, [r["macs_img"] for r in common], [by_res[x] for x in xs], points=True) + "."
    return text


def _regions(vl: str, cl: str, cmp: ResolutionComparison) -> list[dict[str, Any]]:
    """Plot marks for the pair's changes of order: one per crossing when there is one, else one
    shaded region spanning all of them (labels would pile up otherwise)."""
    found = crossings.changes(cmp.resolutions, cmp.a_macs, cmp.b_macs)
    if not found:
        return []
    last = found[-1]
    macs = cmp.a_macs[cmp.resolutions.index(last.at)]
    if len(found) == 1:
        relation = {1: ">", 0: "=", -1: "<"}[last.order]
        return [{"start": last.before, "end": last.at, "macs": macs, "label": f"{vl} {relation} {cl} from {last.at} px"}]
    return [{
        "start": found[0].before, "end": last.at, "macs": macs,
        "label": f"{vl} vs {cl}: order changes {len(found)}x, {found[0].before}-{last.at} px",
    }]


def _no_crossover_note(vl: str, cl: str, cmp: ResolutionComparison) -> list[str]:
    """The plot's note for a pair whose order never changes on the scan (none otherwise)."""
    if crossings.changes(cmp.resolutions, cmp.a_macs, cmp.b_macs):
        return []
    ratios = [q for q, _ in cmp.ratios()]
    relation = f">= {min(ratios):.3g}x" if min(ratios) > 1 else f"<= {max(ratios):.3g}x"
    return [f"no crossover: {vl} / {cl} {relation} everywhere"]


def section(report: Report) -> bool:
    found = groups(report.analytic)
    vits = [g for g in found if g[0]["kind"] == "vit"]
    cnns = [g for g in found if g[0]["kind"] != "vit"]
    if not vits or not cnns:
        return False

    top = max(1024, max(g[-1]["img_size"] for g in found))
    grid = scaling.resolution_grid([g[0]["patch_size"] for g in vits], top)
    step = grid[0]
    specs = {label_without(g[0], "img_size"): spec_of(g[0]) for g in vits + cnns}
    curves, points = _curves(vits, cnns, specs, grid)
    crossovers, lines, notes = [], [], []
    for v in vits:
        for c in cnns:
            vl, cl = label_without(v[0], "img_size"), label_without(c[0], "img_size")
            cmp = scaling.compare_over_resolution(specs[vl], specs[cl], grid)
            if cmp.resolutions:
                lines.append(_line(vl, cl, cmp, step, (v, c)))
                crossovers += _regions(vl, cl, cmp)
                notes += _no_crossover_note(vl, cl, cmp)
    for line in lines:
        if line.startswith("vit-b/16 vs") or len(lines) <= 4:
            report.conclude("Resolution: " + line)
    note = "\n".join([f"scan: multiples of {step} px from {grid[0]} to {grid[-1]}", *notes])
    report.plot(
        "resolution.png", lambda p: plots.resolution(curves, points, crossovers, p, note),
        "MACs vs resolution, ViT against CNN",
        "MACs per image (log scale; FLOPs = 2 x MACs) against square input resolution, from the analytic model "
        f"({note.splitlines()[0]}); dots are the sweep's rows. A shaded band marks where a ViT curve and a CNN curve change "
        "order (between two scanned resolutions; one band per pair spans all its changes when there are several). "
        "A ViT's MACs grow with n = (H/P)^2 tokens linearly (projections, MLP) and quadratically (attention); "
        "a CNN's grow with H x W.",
    )
    report.doc.bullets(lines)
    rows = [
        {"model": label_without(r, "img_size"), "img_size": r["img_size"], "tokens": r.get("tokens"), "params": r["params"], "macs": r["macs_img"]}
        for g in vits + cnns for r in g
    ]
    report.table("resolution", rows, [
        ("model", "model"), ("img_size", "resolution (px)"), ("tokens", "tokens"), ("params", "params"), ("macs", "MACs/image"),
    ])
    return True


def _curves(vits: list[list[dict[str, Any]]], cnns: list[list[dict[str, Any]]], specs: dict[str, Any], grid: list[int]):
    """(analytic scan lines, sweep-row dots) per model: ViTs solid, CNNs dashed."""
    curves, points = [], []
    for g in vits + cnns:
        label = label_without(g[0], "img_size")
        scan = scaling.macs_over_resolution(specs[label], grid)
        curves.append(plots.Series(label, list(scan), list(scan.values()), "-" if g in vits else "--"))
        points.append(plots.Series(label, [r["img_size"] for r in g], [r["macs_img"] for r in g]))
    return curves, points
