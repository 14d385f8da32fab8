"""The audit of the source documents' claims, for people: the report ``reports/claims.md`` and
the rows of `vitbench audit`'s terminal table. Display only: the records come from
:func:`vitbench.claims.audit`; tables go through :func:`vitbench.reporting.format.render`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from vitbench.claims import summary
from vitbench.claims.verdicts import ClaimVerdict
from vitbench.documents import DOCUMENTS, number_of, where
from vitbench.escape import markdown_text
from vitbench.reporting.format import render

REPORT_COMMAND = "vitbench audit --write reports/claims.md"
_SHOWN = (ClaimVerdict.WRONG_CONVENTION, ClaimVerdict.OFF)
_UNCHECKED = (ClaimVerdict.NEEDS_GPU, ClaimVerdict.NOT_CHECKABLE, ClaimVerdict.ERROR)

_CONVENTIONS = [
    "- **MAC**: one multiply-accumulate. **FLOPs = 2 x MACs** (matmuls and convolutions).",
    "- **fvcore flops**: fvcore counts one MAC as one \"flop\", plus 5 per LayerNorm element.",
    "- **MB** = 10^6 bytes, **GB** = 10^9 bytes; **MiB** = 2^20 bytes, **GiB** = 2^30 bytes. Weights and "
    "activations are fp32 (4 bytes) unless a claim says otherwise.",
    "- **n** = tokens (patches + CLS), **N** = patches, **d** = width, **h** = heads, **m** = MLP width, "
    "**L** = depth. An attention layer costs 4nd^2 + 2n^2 d MACs: the q/k/v and output "
    "projections (4nd^2) plus QK^T and AV (2n^2 d).",
    "- **Tolerance**: a figure holds when it equals the recomputed value rounded to the figure's "
    "own precision (within half a unit of its last digit: \"86M\" +-0.5 M). The precision comes from "
    "the digits shown, whatever the unit's spelling or a hedge: \"86M\", \"86 million\" and "
    "\"approximately 86M\" get the same verdict.",
    "- **Memory**: figures about GPU memory or GPU throughput are judged only by a measurement on a "
    "CUDA device (`vitbench audit --measure`), never against the analytic model's CPU figures "
    "(given in the explanation for reference). Settings a document leaves unsaid (a batch size, "
    "the precision, the optimizer) are stated in the verdict as assumptions.",
]
_VERDICTS = (
    "Verdicts: **holds**; **off by X%** (stated minus recomputed, in % of recomputed); **wrong "
    "convention** (the figure matches another reading, within 2%: MACs labelled FLOPs, the "
    "attention matmuls without the projections, the patches without the CLS token, ...; the "
    "right figure is given); **inconclusive** (the only network vitbench can count is a stand-in "
    "that may differ from the document's, and its figure differs); **needs a GPU** (GPU "
    "throughput or memory: `vitbench audit --measure` on a CUDA machine); **not checkable** (vitbench has no model for it)."
)


def short_source(record: dict[str, Any]) -> str:
    """'chapter § Parameter Efficiency': the document by its short name (the report's
    introduction gives each one's title and file) and the heading its quote is under."""
    return where(record["file"], record.get("section"), record.get("quote"))


def _flat(text: Any) -> str:
    return str(text if text is not None else "").replace("\n", " ")


def counted_cell(record: dict[str, Any]) -> str:
    """'agrees', '**disagrees**' (the counted value differs from the analytic one), 'n/a' (the
    counter failed), 'only counted' (no formula: the count is the figure) or '' (not counted)."""
    if record.get("basis") == "counted":
        return "only counted"
    if record.get("counted_by"):
        return "**disagrees**" if record.get("warnings") else "agrees"
    return "n/a" if record.get("warnings") else ""


def display_rows(records: Iterable[dict[str, Any]], explain: bool = False) -> list[dict[str, Any]]:
    """Short rows for a terminal table (and the report's table of every claim)."""
    rows = []
    for r in records:
        row = {"id": r["id"], "source": short_source(r), "stated": r["stated_text"],
               "recomputed": r["recomputed_text"] or "", "verdict": r["verdict_text"]}
        if explain:
            row["explanation"] = r["explanation"]
        rows.append(row)
    return rows


def summary_rows(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Claims per verdict (those with any), and the total."""
    rows = [{"verdict": verdict, "claims": n} for verdict, n in summary(records).items() if n]
    return rows + [{"verdict": "**total**", "claims": f"**{len(records)}**"}]


def _introduction(records: Sequence[dict[str, Any]], catalogue: str) -> list[str]:
    docs: dict[str, int] = {}
    for r in records:
        docs[number_of(r["file"])] = docs.get(number_of(r["file"]), 0) + 1
    files = {number_of(r["file"]): r["file"] for r in records}
    named = [
        f"**{DOCUMENTS[n][0]}**: “{DOCUMENTS[n][1]}”, {DOCUMENTS[n][2]} (`{files[n]}`, {count} claims)"
        for n, count in sorted(docs.items()) if n in DOCUMENTS
    ]
    return [
        "# The source documents' numbers, audited",
        "",
        f"Generated by `{REPORT_COMMAND}` from `{catalogue}` ({len(records)} claims); "
        "do not edit by hand. `tests/test_audit.py` fails when this file is out of date.",
        "",
        "Each claim is a number stated in one of the source documents; a source such as "
        "`chapter § Parameter Efficiency` is the document's short name and the heading the claim "
        "sits under, as the document spells it (search for it, then for the stated figure or the "
        "quote given under each wrong claim):",
        "",
        *[f"- {line}" for line in named],
        "",
        "vitbench recomputes each claim with its exact analytic model (parameters, MACs, memory "
        "formulas); claims marked `counted` are also counted on the built `nn.Module` or traced "
        "(their own model, or a timm model built on the meta device), and a model vitbench has no "
        "formula for is only counted.",
        "",
    ]


def _bullets(records: Sequence[dict[str, Any]], with_quote: bool) -> list[str]:
    out = []
    for r in records:
        quote = f", \"{_flat(r['quote'])}\"" if with_quote else ""
        out.append(f"- **`{r['id']}`** ({short_source(r)}{quote}): {_flat(r['explanation'])}")
    return out


def render_markdown(records: Sequence[dict[str, Any]], catalogue: str = "vitbench/data/claims.yaml") -> str:
    """The claims report: conventions, verdict counts, every claim, and why each wrong one is
    wrong. Deterministic: the same records give the same text."""
    every = [{**row, "id": f"`{row['id']}`", "counted": counted_cell(r)}
             for row, r in zip(display_rows(records), records)]
    lines = _introduction(records, catalogue)
    lines += ["## Conventions", "", *_CONVENTIONS, "", _VERDICTS, "", "## Summary", ""]
    lines += [render(summary_rows(records), "markdown"), "", "## Every claim", ""]
    lines += [render(every, "markdown", ["id", "source", "stated", "recomputed", "verdict", "counted"])]
    wrong = [r for r in records if r["verdict"] in _SHOWN]
    lines += ["", f"## Wrong claims ({len(wrong)})", "", *_bullets(wrong, with_quote=True)]
    other = [r for r in records if r["verdict"] in _UNCHECKED]
    if other:
        lines += ["", "## Not checked here", "", *_bullets(other, with_quote=False)]

    return markdown_text("\n".join(lines) + "\n")  # a --catalogue file's quotes: no live HTML or link
