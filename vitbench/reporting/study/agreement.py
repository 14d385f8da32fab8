"""Section: analytic MACs against two traced counts of the built module (fvcore, dispatch)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitbench.counters.peers import peer_sentences
from vitbench.reporting.study.rows import num

if TYPE_CHECKING:
    from vitbench.reporting.study.context import Report


def section(report: Report) -> bool:
    counted = [
        r for r in report.records
        if r.get("status") == "ok" and (num(r.get("fvcore_macs")) is not None or num(r.get("dispatch_macs")) is not None)
    ]
    if not counted:
        return False
    seen, rows = set(), []
    for r in counted:
        key = (r.get("spec_key") or (r.get("model"), r.get("overrides"), r.get("img_size")), r.get("batch_size"))
        if key in seen:
            continue
        seen.add(key)
        traced = [num(r.get(k)) for k in ("fvcore_macs", "dispatch_macs") if num(r.get(k)) is not None]
        analytic = r.get("macs_source", "analytic") == "analytic" and num(r.get("macs")) is not None
        # without a formula the counters are compared with each other (macs is one of them)
        reference = r["macs"] if analytic else traced[0]
        rows.append({
            "model": r["model"], "overrides": r.get("overrides") or "", "batch_size": r.get("batch_size"),
            "macs": r["macs"] if analytic else None, "fvcore_macs": r.get("fvcore_macs"), "dispatch_macs": r.get("dispatch_macs"),
            "agree": "yes" if all(c == reference for c in traced) else "NO",
        })
    report.doc.add(
        "Analytic MACs (closed-form formulas; empty for a model no formula covers, whose two counts are compared with "
        "each other) against two independent traced counts of the built nn.Module: fvcore "
        "(its \"flop\" is a MAC) and torch's dispatch-level FlopCounterMode (divided by 2 to give MACs), both with "
        "vitbench's formulas for the fused attention kernels. On their own, the peers count these by version: "
        + " ".join(peer_sentences())
    )
    report.table("agreement", rows, [
        ("model", "model"), ("overrides", "overrides"), ("batch_size", "batch"), ("macs", "analytic MACs"),
        ("fvcore_macs", "fvcore MACs"), ("dispatch_macs", "dispatch MACs"), ("agree", "agree"),
    ])
    agree = sum(1 for r in rows if r["agree"] == "yes")
    report.conclude(f"Counter agreement: analytic, fvcore and dispatch MACs agree exactly for {agree} of {len(rows)} configurations counted.")
    return True
