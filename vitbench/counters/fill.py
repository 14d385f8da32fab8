"""One number per quantity: a row's ``params`` and ``macs`` from the formula where one exists,
else from the counters, with where each came from."""

from __future__ import annotations

from typing import Any

from vitbench.counters import count
from vitbench.errors import VitbenchError


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


def counted_identity(target: Any, batch_size: int | str | None, cache: dict | None = None) -> dict[str, int]:
    """``params``, ``macs`` (per batch; only with a whole batch size) and ``flops`` = 2 x ``macs``
    of a model no formula covers, counted as ``analyze`` counts them: the built module's parameters and the dispatch
    counter's MACs on the meta device. Empty for a model with a formula (its row has the
    analytic figures) and when counting is refused or fails (the row keeps its empty columns).
    ``cache``: counts already made in this command, by (target, batch)."""
    if getattr(target, "spec", None) is not None or not hasattr(target, "spec"):
        return {}
    whole = isinstance(batch_size, int) and not isinstance(batch_size, bool)
    key = (id(target), batch_size if whole else 1)  # the targets live as long as the command
    if cache is not None and key in cache:
        return cache[key]

    try:
        counted = count(target, key[1], ["dispatch"])
    except VitbenchError:  # a model that cannot be counted (refused, its code failed) keeps empty columns
        counted = {}
    figures = {}
    if counted.get("module_params") is not None:
        figures["params"] = counted["module_params"]
    if whole and counted.get("dispatch_macs") is not None:
        figures["macs"] = counted["dispatch_macs"]
        figures["flops"] = 2 * counted["dispatch_macs"]
    if cache is not None:
        cache[key] = figures
    return figures


__all__ = ["counted_identity", "fill_counted"]
