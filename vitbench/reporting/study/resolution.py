"""Section: MACs per image against resolution, ViT against CNN, with the crossovers that
:func:`vitbench.analytic.scaling.compare_over_resolution` finds on a fine analytic scan."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vitbench.reporting import markdown as md
from vitbench.reporting.study.rows import key_without, spec_dict, spec_of

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


def _line(vl: str, cl: str, cmp: ResolutionComparison, step: int) -> str:
    at = ", ".join(f"{cmp.ratio(res):.3g}x at {res}" for res in SHOWN if res in cmp.resolutions)
    if cmp.crossings:
        first = cmp.crossings[0]
        return (
            f"{vl} vs {cl}: the curves cross between {first.before} and {first.at} px; from {first.at} px "
            f"(first multiple of {step} scanned) {vl} needs {'more' if first.a_more else 'fewer'} MACs "
            f"({md.count(first.a_macs)} vs {md.count(first.b_macs)}). Ratio {at}."
        )
    lo_ratio, lo_at = min(cmp.ratios())
    return (
        f"{vl} vs {cl}: no crossover between {cmp.resolutions[0]} and {cmp.resolutions[-1]} px: {vl} needs "
        f"{'more' if cmp.a_always_more else 'fewer'} MACs at every resolution scanned "
        f"(ratio at least {lo_ratio:.3g}x, at {lo_at} px; {at})."
    )


def section(report: Report) -> bool:
    from vitbench.analytic import scaling

    found = groups(report.analytic)
    vits = [g for g in found if g[0]["kind"] == "vit"]
    cnns = [g for g in found if g[0]["kind"] != "vit"]
    if not vits or not cnns:
        return False
    from vitbench.reporting import plots

    top = max(1024, max(g[-1]["img_size"] for g in found))
    grid = scaling.resolution_grid([g[0]["patch_size"] for g in vits], top)
    step = grid[0]
    specs = {str(g[0]["model"]): spec_of(g[0]) for g in vits + cnns}
    curves, points, crossovers, lines, notes = [], [], [], [], []
    for g in vits + cnns:
        label = str(g[0]["model"])
        scan = scaling.macs_over_resolution(specs[label], grid)
        curves.append(plots.Series(label, list(scan), list(scan.values()), "-" if g in vits else "--"))
        points.append(plots.Series(label, [r["img_size"] for r in g], [r["macs_img"] for r in g]))
    for v in vits:
        for c in cnns:
            vl, cl = str(v[0]["model"]), str(c[0]["model"])
            cmp = scaling.compare_over_resolution(specs[vl], specs[cl], grid)
            if not cmp.resolutions:
                continue
            lines.append(_line(vl, cl, cmp, step))
            for x in cmp.crossings:
                crossovers.append({"resolution": x.at, "macs": x.a_macs, "label": f"{vl} {'>' if x.a_more else '<'} {cl}"})
            if not cmp.crossings:
                ratios = [q for q, _ in cmp.ratios()]
                relation = f">= {min(ratios):.3g}x" if min(ratios) > 1 else f"<= {max(ratios):.3g}x"
                notes.append(f"no crossover: {vl} / {cl} {relation} everywhere")
    for line in lines:
        if line.startswith("vit-b/16 vs") or len(lines) <= 4:
            report.conclude("Resolution: " + line)
    note = "\n".join([f"scan: multiples of {step} px from {grid[0]} to {grid[-1]}", *notes])
    report.plot(
        "resolution.png", lambda p: plots.resolution(curves, points, crossovers, p, note),
        "MACs vs resolution, ViT against CNN",
        "MACs per image (log scale; FLOPs = 2 x MACs) against square input resolution, from the analytic model "
        f"({note.splitlines()[0]}); dots are the sweep's rows. Dotted vertical lines mark where a ViT curve crosses a CNN curve. "
        "A ViT's MACs grow with n = (H/P)^2 tokens linearly (projections, MLP) and quadratically (attention); "
        "a CNN's grow with H x W.",
    )
    report.doc.bullets(lines)
    rows = [
        {"model": r["model"], "img_size": r["img_size"], "tokens": r.get("tokens"), "params": r["params"], "macs": r["macs_img"]}
        for g in vits + cnns for r in g
    ]
    report.table("resolution", rows, [
        ("model", "model"), ("img_size", "resolution (px)"), ("tokens", "tokens"), ("params", "params"), ("macs", "MACs/image"),
    ])
    return True
