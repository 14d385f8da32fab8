"""One number per quantity: a row's ``params`` and ``macs`` from the formula where one exists,
else from the counters, with where each came from."""

from __future__ import annotations

from typing import Any


def fill_counted(record: dict[str, Any]) -> dict[str, Any]:
    """One number per quantity: ``params`` and ``macs`` (per batch) with ``params_source`` and
    ``macs_source``; the analytic figure where a formula exists, else the module's parameter
    count and the dispatch counter's MACs (fvcore's when dispatch did not run); ``flops`` = 2 x
    ``macs``. Without a formula, ``agree`` says whether fvcore and dispatch counted the same."""
    if record.get("params") is not None:
        record["params_source"] = "analytic"
    elif record.get("module_params") is not None:
        record["params"], record["params_source"] = record["module_params"], "module"
    if record.get("macs") is not None:
        record["macs_source"] = "analytic"
        return record
    for counter in ("dispatch", "fvcore"):
        if record.get(f"{counter}_macs") is not None:
            record["macs"], record["macs_source"] = record[f"{counter}_macs"], counter
            record["flops"] = 2 * record["macs"]
            break
    if record.get("fvcore_macs") is not None and record.get("dispatch_macs") is not None:
        record["agree"] = record["fvcore_macs"] == record["dispatch_macs"]
    return record


__all__ = ["fill_counted"]
