"""Section: MACs and parameters against patch size (ViT rows that differ only in patch size)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vitbench.reporting import markdown as md
from vitbench.reporting import plots
from vitbench.reporting.study.rows import family, key_without, num, spec_dict

if TYPE_CHECKING:
    from vitbench.reporting.study.context import Report

ATTENTION_MODULE = ("qkv", "attn_scores", "attn_values", "attn_proj")


def attention_module_per_layer(r: dict[str, Any]) -> float:
    """The attention module's MACs (qkv, scores, values, projection) per layer and image."""
    depth = (spec_dict(r) or {}).get("depth") or 1
    total = sum(num(r.get(f"macs_{c}")) or 0 for c in ATTENTION_MODULE)
    return total / depth / (r.get("batch_size") or 1)


def groups(analytic: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """ViT rows grouped by everything but the patch size; groups with at least two patch sizes."""
    by_rest: dict[str, list[dict[str, Any]]] = {}
    for r in analytic:
        data = spec_dict(r)
        if data and data.get("kind") == "vit":
            by_rest.setdefault(key_without(data, "patch_size", "pos_embed_len"), []).append(r)
    out = []
    for members in by_rest.values():
        by_patch: dict[int, dict[str, Any]] = {}
        for r in sorted(members, key=lambda x: x["patch_size"]):
            by_patch.setdefault(r["patch_size"], r)
        if len(by_patch) >= 2:
            out.append(list(by_patch.values()))
    return sorted(out, key=lambda g: (g[0]["img_size"] if isinstance(g[0]["img_size"], int) else 0, family(g[0])))


def _line(g: list[dict[str, Any]]) -> str:
    small, large = g[0], g[-1]
    return (
        f"{family(small)} at {small['img_size']} px: going from P={large['patch_size']} to "
        f"P={small['patch_size']} (tokens {large['tokens']} -> {small['tokens']}) multiplies MACs per image by "
        f"{md.ratio(small['macs_img'], large['macs_img'])} ({md.count(large['macs_img'])} -> {md.count(small['macs_img'])}) "
        f"while parameters change by {100 * (small['params'] - large['params']) / large['params']:+.2f}% "
        "(the patch embedding, d C P^2, shrinks as P falls; learned positions, n d, grow with n)"
    )


def section(report: Report) -> bool:
    found = groups(report.analytic)
    if not found:
        return False

    data = [
        {
            "label": f"{family(g[0])} @ {g[0]['img_size']} px",
            "patch_size": [r["patch_size"] for r in g],
            "macs": [r["macs_img"] for r in g],
            "params": [r["params"] for r in g],
        }
        for g in found
    ]
    report.plot(
        "patch_size.png", lambda p: plots.patch_size(data, p), "MACs and parameters vs patch size",
        "MACs per image (left) and exact parameters (right) against patch size P, one line per model family at a "
        "fixed resolution; both axes logarithmic over whole decades (FLOPs = 2 x MACs). Tokens n = (H/P)(W/P) (+1 CLS).",
    )
    rows, lines = [], []
    most = max(len(g) for g in found)
    concluded = 0
    for g in found:
        for r in g:
            rows.append({
                "family": f"{family(r)} @ {r['img_size']} px", "patch_size": r["patch_size"], "tokens": r["tokens"],
                "params": r["params"], "macs": r["macs_img"], "attn_module_macs_per_layer": attention_module_per_layer(r),
                "attn_matmul_share": r.get("attn_matmul_share"),
                "macs_vs_largest_patch": f"{r['macs_img'] / g[-1]['macs_img']:.3g}x",
            })
        lines.append(_line(g))
        if len(g) == most and concluded < 2:
            report.conclude(f"Patch size, {lines[-1]}.")
            concluded += 1
    report.doc.bullets(lines)
    report.table("patch_size", rows, [
        ("family", "model @ resolution"), ("patch_size", "P"), ("tokens", "tokens n"), ("params", "params"),
        ("macs", "MACs/image"), ("attn_module_macs_per_layer", "attention-module MACs/layer"),
        ("attn_matmul_share", "attention matmul share"), ("macs_vs_largest_patch", "MACs vs largest P"),
    ])
    return True
