"""The columns of one prediction row beside the priced step: the model's identity and counted
figures (of the form that is priced), the measured latency and training cost columns, the
warning when the trace misses work, and the index of measured rows (``--measured``)."""

from __future__ import annotations

from typing import Any

from vitbench.row_warnings import warning


def measured_and_cost(latency_s: float, seen: float | None, batch: int, mode: str, epochs: float | None,
                       dataset_size: int | None, price_per_hour: float | None) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """A row's measured columns (``measured_latency_s``, ``pred_ratio = latency_s / seen``, when
    ``seen``: the measured step) and training cost (from the measured step when there is one,
    else the predicted one; with ``epochs``), and the warning that a cost rests on an inference step."""
    columns: dict[str, Any] = {}
    warnings: list[dict[str, str]] = []
    if seen is not None:
        columns["measured_latency_s"] = seen
        columns["pred_ratio"] = latency_s / seen
    if epochs is not None:
        from vitbench.timemodel.cost import training_cost

        step_s = seen if seen is not None else latency_s
        columns.update(training_cost(step_s, batch, epochs, dataset_size, price_per_hour))
        columns["cost_basis"] = "measured" if seen is not None else "predicted"
        if mode != "train":
            warnings.append(warning("cost-from-inference", "training cost from an inference step", "use --mode train for training"))
    return columns, warnings


def deployed_target(target: Any, counts: dict | None) -> Any:
    """``target`` built in its deployed (reparameterised) form, made once per command."""
    import dataclasses
    import functools

    from vitbench.timemodel.trace_setup import deployed

    if getattr(target, "build", None) is None or getattr(target, "spec", None) is not None:
        return target
    cache = counts if counts is not None else {}
    key = ("deployed", id(target))
    if key not in cache:
        cache[key] = dataclasses.replace(target, build=functools.partial(deployed, target.build))
    return cache[key]


def row_head(target: Any, batch: int, device: str, mode: str, precision: str, optimizer: str, cal: Any,
              reparam: bool, counts: dict | None = None) -> dict[str, Any]:
    from vitbench.analytic.identity import identity_record
    from vitbench.counters.fill import counted_identity

    row: dict[str, Any] = identity_record(target, batch)
    # no formula: params and MACs as analyze counts them, of the form that is priced
    row.update(counted_identity(deployed_target(target, counts) if reparam else target, batch, counts))
    row.update(device=device, mode=mode, precision=precision, optimizer=optimizer if mode == "train" else None,
               threads=cal.threads if cal.basis == "calibration" else None)
    if device != "cpu":
        row["device_name"] = cal.device_name
    if reparam:
        row["reparam"] = True
    if target.overrides:
        row["overrides"] = target.overrides_text
    return row


def trace_warnings(row: dict[str, Any], prediction: Any, mode: str) -> list[dict[str, str]]:
    """A warning when the traced forward's MACs differ from the analytic count: operators the
    trace could not price by their work (a fused fast path) make the prediction too fast."""
    counted = row.get("macs")
    if mode != "infer" or not isinstance(counted, int) or counted <= 0:
        return []
    traced = prediction.macs
    if abs(traced - counted) <= 0.01 * counted:
        return []
    return [warning("trace-misses-work", f"the traced step has {traced:,} MACs, the count {counted:,}",
                    "part of the work runs in operators the time model cannot see into; treat the time as a lower estimate")]


def measured_index(measured: Any) -> dict[tuple[str, str, str, int, str], float]:
    """(model, overrides, mode, batch_size, precision) -> latency_p50_s of measured rows (ok ones only)."""
    from vitbench.reading import read_results

    rows, _ = read_results(measured, "measured")
    out = {}
    for row in rows:
        latency = row.get("latency_p50_s")
        if row.get("status", "ok") == "ok" and isinstance(latency, (int, float)) and latency > 0:
            key = (str(row.get("model")), str(row.get("overrides") or ""), str(row.get("mode", "infer")),
                   int(row.get("batch_size") or 1), str(row.get("precision") or "fp32"))
            out[key] = float(latency)
    return out
