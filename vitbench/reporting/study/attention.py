"""Section: the share of MACs in the attention matmuls against the token count, and the token
count at which they outgrow the linear layers (n = 2d + m + 1, from vitbench.analytic.scaling)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vitbench import analytic
from vitbench.analytic import scaling
from vitbench.reporting import markdown as md
from vitbench.reporting import plots
from vitbench.reporting.study.rows import family, spec_of

if TYPE_CHECKING:
    from vitbench.reporting.study.context import Report

MAX_CURVES = 4  # keep the plot readable: the families with the most rows, widest first


def _families(vit_rows: list[dict[str, Any]]) -> dict[tuple[int, int, int], dict[str, Any]]:
    """(d, m, h) -> the spec and row of its largest-MACs member, for the chosen families."""
    found: dict[tuple[int, int, int], dict[str, Any]] = {}
    counts: dict[tuple[int, int, int], int] = {}
    for r in sorted(vit_rows, key=lambda x: -x["macs_img"]):
        spec = spec_of(r)
        if spec is None:
            continue
        k = (spec.embed_dim, spec.mlp_hidden, spec.num_heads)
        found.setdefault(k, {"spec": spec, "row": r})
        counts[k] = counts.get(k, 0) + 1
    chosen = sorted(found, key=lambda k: (-counts[k], -k[0]))[:MAX_CURVES]
    return {k: found[k] for k in sorted(chosen)}


def _points(vit_rows: list[dict[str, Any]], keys: list[tuple[int, int, int]]):
    """The sweep's rows as dots: one series per drawn family (same order as its line), then the
    rows of families with no line, if any (drawn grey)."""
    found: dict[Any, list[dict[str, Any]]] = {}
    for r in vit_rows:
        spec = spec_of(r)
        k = (spec.embed_dim, spec.mlp_hidden, spec.num_heads) if spec is not None else None
        found.setdefault(k if k in keys else None, []).append(r)
    out = []
    for k in [*keys, None]:
        rows = found.get(k, [])
        if rows or k is not None:
            label = f"sweep rows, d={k[0]}, m={k[1]}" if k else "sweep rows of other families (no line)"
            out.append(plots.Series(label, [r["tokens"] for r in rows], [r["attn_matmul_share"] for r in rows]))
    return out


def section(report: Report) -> bool:
    vit_rows = [r for r in report.analytic if r.get("kind") == "vit" and r.get("tokens")]
    if not vit_rows:
        return False

    curves, thresholds, lines = [], [], []
    chosen_families = _families(vit_rows)
    for (d, m, h), chosen in chosen_families.items():
        spec, row = chosen["spec"], chosen["row"]
        n_star, closed = scaling.attention_linear_crossover(d, h, m)
        curve = scaling.attention_share_curve(spec, 4 * n_star)
        p = spec.patch_size
        curves.append(plots.Series(f"{family(row)} (d={d}, m={m}), P={p}", [n for n, _ in curve], [s for _, s in curve]))
        thresholds.append({"tokens": n_star, "label": f"d={d}, m={m}"})
        res = scaling.resolution_for_tokens(spec, n_star)
        at224 = analytic.complexity(spec).attention_matmul_share if spec.img_size == (224, 224) else None
        line = (
            f"{family(row)} (d={d}, m={m}): the attention matmuls (2 n^2 d MACs per layer) exceed the linear layers "
            f"(n d (4d + 2m) per layer) from n = {n_star:,} tokens on (search of the analytic per-layer formulas; "
            f"closed form: equal at n = 2d + m = {closed:,})"
            + (f"; with {p} px patches that is a {res} x {res} px image" if res else "")
            + (f"; at 224 px (n = {spec.tokens}) they are {md.pct(at224)} of all MACs" if at224 is not None else "")
            + "."
        )
        lines.append(line)
        report.conclude("Attention vs linear layers: " + line)
    points = _points(vit_rows, list(chosen_families))
    report.plot(
        "attention_share.png", lambda p: plots.attention_share(curves, points, thresholds, p),
        "Attention share of MACs vs token count",
        "Share of all MACs spent in the attention matmuls Q K^T and A V (2 n^2 d per layer) against the token count n, "
        "from the analytic model (lines: each family at growing resolution) and the sweep's rows (dots in their "
        "family's colour; grey: rows of a family with no line drawn). Dotted lines: "
        "the n at which the attention matmuls equal the linear layers n d (4d + 2m), i.e. n = 2d + m.",
    )
    report.doc.bullets(lines)
    return True
