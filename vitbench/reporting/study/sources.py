"""Sections that set the source documents' figures (vitbench/data/source_figures.yaml) beside
vitbench's numbers: the notebook's patch-size study, its ablation variants, the chapter's ViT-B
vs ResNet-50 table and the tutorial's ViT variants (titles in :mod:`vitbench.documents`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitbench.reporting import markdown as md
from vitbench.reporting import plots
from vitbench.reporting.format import si
from vitbench.reporting.study.figures import source_figures
from vitbench.reporting.study.patch import attention_module_per_layer
from vitbench.reporting.study.rows import per_image, spec_of

if TYPE_CHECKING:
    from vitbench.reporting.study.context import Report


def notebook_patch(report: Report) -> bool:
    figures = source_figures()["notebook_patch"]
    rows = []
    for ref in figures["rows"]:
        r = report.row_for(figures["model"], patch_size=ref["patch_size"])
        if r is None:
            continue
        attn, fv = attention_module_per_layer(r), per_image(r, "fvcore_flops")
        rows.append({
            "patch_size": ref["patch_size"], "tokens": r["tokens"], "params": r["params"], "params_ref": ref["params"],
            "attn_layer": attn, "attn_layer_ref": ref["attention_per_layer"], "fvcore_flops": fv,
            "fvcore_ref": ref["fvcore_flops"], "macs": r["macs_img"],
            "fvcore_diff": f"{100 * (fv - ref['fvcore_flops']) / ref['fvcore_flops']:+.2f}%" if fv is not None else "",
            "attn_diff": f"{100 * (attn - ref['attention_per_layer']) / ref['attention_per_layer']:+.1f}%",
        })
    if not rows:
        return False
    report.doc.add(
        f"The notebook's \"Complexity Report\" and its printed fvcore summaries ({figures['source']}), beside ours. Its "
        "\"Attention FLOPs/Layer\" is the attention module's fvcore count: qkv (3 n d^2) + scores (n^2 d) + values "
        "(n^2 d) + projection (n d^2), in MACs (fvcore's \"flop\" is a MAC). Its fvcore totals count MACs plus "
        "LayerNorm at 5 per element; vitbench's fvcore path (`fvcore_flops`) reproduces them to the unit."
    )
    report.table("notebook_patch_size", rows, [
        ("patch_size", "P"), ("tokens", "tokens"), ("params", "params (ours)"), ("params_ref", "params (notebook)"),
        ("attn_layer", "attention MACs/layer (ours)"), ("attn_layer_ref", "attention/layer (notebook)"), ("attn_diff", "diff"),
        ("macs", "analytic MACs"), ("fvcore_flops", "fvcore #flops (ours)"), ("fvcore_ref", "fvcore #flops (notebook)"), ("fvcore_diff", "diff"),
    ])
    same = sum(1 for r in rows if r["params"] == r["params_ref"])
    exact_fvcore = sum(1 for r in rows if r["fvcore_flops"] == r["fvcore_ref"])
    report.conclude(
        f"Notebook patch study: our exact parameter counts equal the notebook's printed ones for {same} of {len(rows)} "
        f"patch sizes, and our fvcore totals (MACs + LayerNorm at 5 per element) equal its printed #flops to the unit "
        f"for {exact_fvcore} of {len(rows)}; attention-module MACs per layer differ from its table by "
        f"{', '.join(r['attn_diff'] for r in rows)} (the table rounds to 0.1 M)."
    )
    return True


def ablation(report: Report) -> bool:
    """The ablation presets beside their baseline (any study that has them: no quoted figures)."""
    figures = source_figures()["ablation"]
    base = report.row_for(figures["baseline"])
    variants = [(name, report.row_for(name)) for name in figures["variants"]]
    variants = [(n, r) for n, r in variants if r is not None]
    if base is None or len(variants) < 2:
        return False
    rows = [
        {
            "model": name, "change": figures["variants"][name], "tokens": r["tokens"], "params": r["params"],
            "params_delta": r["params"] - base["params"], "macs": r["macs_img"], "macs_delta": r["macs_img"] - base["macs_img"],
        }
        for name, r in variants
    ]
    report.table("ablation", rows, [
        ("model", "variant"), ("change", "change"), ("tokens", "tokens"), ("params", "params"),
        ("params_delta", "params vs baseline"), ("macs", "MACs/image"), ("macs_delta", "MACs vs baseline"),
    ])
    diffs = "; ".join(
        f"{r['model']}: {r['params_delta']:+,} params, {int(r['macs_delta']):+,} MACs" for r in rows if r["model"] != figures["baseline"]
    )
    report.conclude(
        f"Ablation variants (baseline {md.count(base['params'])} params, {md.count(base['macs_img'])} MACs/image): {diffs}. "
        "Position embeddings cost parameters (n d for learned 1-D, (H/P + W/P) d/2 for 2-D) but no MACs; "
        "mean pooling removes the CLS token, so every layer processes one token fewer."
    )
    return True


def chapter_resolution(report: Report) -> bool:
    figures = source_figures()["chapter_resolution"]
    rows = []
    for ref in figures["rows"]:
        v, c = report.row_for(figures["vit"], img_size=ref["img_size"]), report.row_for(figures["cnn"], img_size=ref["img_size"])
        if v is None or c is None:
            continue
        rows.append({
            "img_size": ref["img_size"], "vit_macs": v["macs_img"], "vit_ref": ref["vit"], "resnet_macs": c["macs_img"],
            "resnet_ref": ref["cnn"], "ratio": md.ratio(v["macs_img"], c["macs_img"]), "ratio_ref": md.ratio(ref["vit"], ref["cnn"]),
        })
    if not rows:
        return False
    report.doc.add(
        f"The chapter's table ({figures['source']}) is labelled \"GFLOPs\". Beside it, our exact MACs (FLOPs = 2 x MACs): "
        "compare the chapter's numbers with ours to see which convention they follow."
    )
    report.table("chapter_resolution", rows, [
        ("img_size", "resolution (px)"), ("vit_macs", "ViT-B/16 MACs (ours)"), ("vit_ref", "ViT-Base (chapter)"),
        ("resnet_macs", "ResNet-50 MACs (ours)"), ("resnet_ref", "ResNet-50 (chapter)"),
        ("ratio", "ViT/ResNet (ours)"), ("ratio_ref", "ViT/ResNet (chapter)"),
    ])
    resnet = ", ".join(f"{r['resnet_macs'] / r['resnet_ref']:.3f}" for r in rows)
    vit = ", ".join(f"{r['vit_macs'] / r['vit_ref']:.2f}" for r in rows)
    report.conclude(
        f"Chapter's ViT-B vs ResNet-50 table ({', '.join(str(r['img_size']) for r in rows)} px): our ResNet-50 MACs / "
        f"its figures = {resnet}; our ViT-B/16 MACs / its figures = {vit}; ViT-B/16 / ResNet-50 MACs = "
        f"{', '.join(r['ratio'] for r in rows)} (the chapter's: {', '.join(r['ratio_ref'] for r in rows)})."
    )
    return True


def variants(report: Report) -> bool:
    figures = source_figures()["tutorial_params"]
    sizes, patches = figures["sizes"], figures["patch_sizes"]
    rows = []
    for size, ref in sizes.items():
        for p in patches:
            r = report.row_for(f"vit-{size}/{p}")
            if r is None:
                continue
            spec = spec_of(r)
            rows.append({
                "model": f"vit-{size}/{p}", "size": size, "embed_dim": spec.embed_dim, "depth": spec.depth,
                "heads": spec.num_heads, "mlp": spec.mlp_hidden, "tokens": r["tokens"], "params": r["params"],
                "params_ref": ref, "params_diff": f"{100 * (r['params'] - ref) / ref:+.1f}%", "macs": r["macs_img"],
            })
    if len(rows) < 3:
        return False

    report.table("variants", rows, [
        ("model", "model"), ("embed_dim", "d"), ("depth", "layers"), ("heads", "heads"), ("mlp", "MLP m"),
        ("tokens", "tokens @224"), ("params", "params (ours)"), ("params_ref", "params (tutorial)"),
        ("params_diff", "diff"), ("macs", "MACs/image @224"),
    ])
    group = {s: i for i, s in enumerate(sizes)}
    points = [{"label": r["model"], "params": r["params"], "macs": r["macs"], "group": group[r["size"]]} for r in rows]
    report.plot(
        "variants.png", lambda p: plots.variants(points, p), "ViT variants: parameters vs MACs",
        "Exact parameters against MACs per image at 224 px (log-log; FLOPs = 2 x MACs) for the tutorial's ViT sizes; "
        "within a size, smaller patches multiply MACs (more tokens) at nearly constant parameters.",
    )
    worst = max(rows, key=lambda r: abs(r["params"] - r["params_ref"]) / r["params_ref"])
    spread, macs_span = [], []
    for size in sizes:
        members = {r["model"]: r for r in rows if r["size"] == size}
        if len(members) >= 2:
            params = [r["params"] for r in members.values()]
            spread.append(f"ViT-{size.upper()} {si(max(params) - min(params))}")
        smallest, largest = members.get(f"vit-{size}/{min(patches)}"), members.get(f"vit-{size}/{max(patches)}")
        if smallest and largest:
            macs_span.append(f"ViT-{size.upper()} {md.ratio(smallest['macs'], largest['macs'])}")
    report.conclude(
        f"ViT variants at 224 px: our exact parameters differ from the tutorial's rounded figures by at most "
        f"{worst['params_diff']} ({worst['model']}: {md.count(worst['params'])} vs {si(worst['params_ref'])}). "
        f"The tutorial gives one figure per size, but parameters vary with the patch (patch embedding 3 P^2 d, "
        f"positions n d): spread across /{min(patches)}../{max(patches)} {', '.join(spread)}. "
        + (f"MACs from /{max(patches)} to /{min(patches)}: {', '.join(macs_span)}." if macs_span else "")
    )
    return True
