"""Section: analytic MACs against two traced counts of the built module (fvcore, dispatch)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vitbench.counters.peers import peer_sentences
from vitbench.reporting.study.rows import num
from vitbench.row_status import RowStatus

if TYPE_CHECKING:
    from vitbench.reporting.study.context import Report


def section(report: Report) -> bool:
    counted = [
        r for r in report.records
        if r.get("status") == RowStatus.OK and (num(r.get("fvcore_macs")) is not None or num(r.get("dispatch_macs")) is not None)
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
            "agree": "n/a" if len(traced) + analytic < 2 else "yes" if all(c == reference for c in traced) else "NO",
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
    report.conclude(agreement_sentence(rows))
    return True


def counted_by(rows: list[dict[str, Any]]) -> list[str]:
    """The counts the rows hold: 'analytic' (a formula's MACs) and the counters that ran."""
    names = [("analytic", "macs"), ("fvcore", "fvcore_macs"), ("dispatch", "dispatch_macs")]
    return [name for name, key in names if any(num(r.get(key)) is not None for r in rows)]


def agreement_sentence(rows: list[dict[str, Any]]) -> str:
    """'Counter agreement: analytic and dispatch MACs agree exactly for 2 of 2 configurations
    counted (vit-ti/16, resnet18); fvcore did not run.' Only the counts present are named."""
    present = counted_by(rows)
    rows = [r for r in rows if r["agree"] != "n/a"]
    if len(present) < 2 or not rows:
        return f"Counter agreement: only {' and '.join(present) or 'no'} MACs were counted: nothing to compare."
    agree = [r for r in rows if r["agree"] == "yes"]
    differ = [r for r in rows if r["agree"] == "NO"]
    text = (
        f"Counter agreement: {' and '.join(present) if len(present) < 3 else 'analytic, fvcore and dispatch'} MACs "
        f"agree exactly for {len(agree)} of {len(rows)} configurations counted ({cite(agree)})"
    )
    if differ:
        text += f"; they differ for {cite(differ)}"
    missing = [c for c in ("fvcore", "dispatch") if c not in present]
    if missing:
        text += f"; {' and '.join(missing)} did not run"
    return text + "."


def cite(rows: list[dict[str, Any]], most: int = 6) -> str:
    """The rows' model names (with overrides), at most ``most`` then 'and N more'."""
    names = [f"{r['model']}{' ' + r['overrides'] if r.get('overrides') else ''}" for r in rows]
    if not names:
        return "none"
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")
