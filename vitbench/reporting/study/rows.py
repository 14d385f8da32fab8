"""Reading result records for the report: typed cells, the spec behind a row, one analytic row per
configuration, and which measured rows are stable enough to conclude from. No formatting here."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from vitbench import row_warnings
from vitbench.errors import VitbenchError
from vitbench.measure.stats import UNSTABLE_SPREAD, quantile
from vitbench.reporting import marks
from vitbench.row_status import RowStatus
from vitbench.specs import spec_from_dict


def num(value: Any) -> float | None:
    """A number from a cell (int, float or numeric text); None for empty, NaN, bool or text."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return None if isinstance(value, float) and math.isnan(value) else value
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def spec_dict(record: dict[str, Any]) -> dict[str, Any] | None:
    """The row's spec as a dict (from its ``spec_key`` JSON), or None."""
    key = record.get("spec_key")
    if not isinstance(key, str) or not key.startswith("{"):
        return None
    try:
        return json.loads(key)
    except (ValueError, RecursionError):
        return None


def spec_of(record: dict[str, Any]):
    """The row's spec object, or None when it cannot be rebuilt."""
    data = spec_dict(record)
    if data is None:
        return None
    try:
        return spec_from_dict(data)
    except (VitbenchError, TypeError, ValueError):
        return None


def family(record: dict[str, Any]) -> str:
    """Preset name without its patch suffix: 'vit-b/16' -> 'vit-b', 'cifar-vit/4' -> 'cifar-vit'."""
    name = str(record.get("model") or "?")
    return name.rsplit("/", 1)[0] if "/" in name else name


def overrides_without(record: dict[str, Any], *names: str) -> str:
    """The row's ``overrides`` text ('img_size=224,depth=6') with the named fields left out."""
    text = str(record.get("overrides") or "")
    for name in names:
        text = re.sub(rf"(^|,){re.escape(name)}=[^=]*?(?=,\w+=|$)", "", text).strip(",")
    return text


def label_without(record: dict[str, Any], *names: str) -> str:
    """'vit-ti/16 depth=6': the model and its overrides but the named fields."""
    rest = overrides_without(record, *names)
    return f"{record.get('model')}{' ' + rest if rest else ''}"


def per_image(record: dict[str, Any], key: str = "macs") -> float | None:
    """A per-batch count divided by the batch size."""
    value, batch = num(record.get(key)), num(record.get("batch_size")) or 1
    return None if value is None else value / batch


def analytic_rows(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One ok row per distinct model (its spec, or for a model without a formula its name and
    overrides; the smallest batch), with per-image MACs in ``macs_img``."""
    best: dict[str, dict[str, Any]] = {}
    for r in records:
        if r.get("status") != RowStatus.OK or num(r.get("macs")) is None:
            continue
        key = r.get("spec_key") or f"{r.get('model')}|{r.get('overrides') or ''}|{r.get('img_size')}"
        current = best.get(key)
        if current is None or (num(r.get("batch_size")) or 1) < (num(current.get("batch_size")) or 1):
            best[key] = r
    return [{**r, "macs_img": per_image(r)} for r in best.values()]


def key_without(data: dict[str, Any], *names: str) -> str:
    """A spec dict's identity with some fields left out (rows that differ only in those)."""
    return json.dumps({k: v for k, v in data.items() if k not in names}, sort_keys=True)


def measured(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ok rows with a measured throughput."""
    return [r for r in records if r.get("status") == RowStatus.OK and num(r.get("throughput_img_s")) is not None]


def instability(record: dict[str, Any]) -> str | None:
    """Why a measured row is not stable enough to conclude from, as a short complete phrase
    ('unstable timing, spread 30%', 'busy machine'), or None; :func:`instability_details` gives
    the warnings in full.

    Unstable: a warning about unstable timing, a busy machine or a shared GPU (by its code), or a
    spread (between runs, CV or IQR / median of the steps) above measure.stats.UNSTABLE_SPREAD."""
    value = marks.spread(record)
    labels: list[str] = []
    for codes in row_warnings.code_sets(record.get("warnings")):
        for rule in marks.RULES:
            if rule.label in marks.UNFIT and codes & rule.codes and rule.label not in labels:
                labels.append(rule.label)
    if labels:
        said = {"unstable": "unstable timing" + (f", spread {value:.0%}" if value is not None else "")}
        return "; ".join(said.get(label, label) for label in labels)
    if value is not None and value > UNSTABLE_SPREAD:
        return f"timing spread {value:.0%} > {UNSTABLE_SPREAD:.0%}"
    return None


def instability_details(record: dict[str, Any]) -> str:
    """The full text of what makes a row unfit to conclude from (its warnings, whole), or the
    spread rule it breaks; empty for a stable row."""
    found = marks.timing_warnings(record)
    return " | ".join(found) if found else (instability(record) or "")


def clock_note(records: Sequence[dict[str, Any]]) -> str:
    """'' when the rows' timings are wall time (the default), ' (CPU time)' when every row was
    timed with ``--clock cpu`` (the ``clock`` column), ' (CPU or wall time, see the clock column)'
    when both occur."""
    clocks = {str(r.get("clock") or "wall") for r in records}
    if clocks == {"cpu"}:
        return " (CPU time)"
    return " (CPU or wall time, see the clock column)" if "cpu" in clocks else ""


def throughput_band(record: dict[str, Any]) -> tuple[float, float] | None:
    """(low, high) throughput of a measured row: batch / p75 and batch / p25 of its per-run
    medians (``run_medians_s``, several runs) or else of its per-step samples (``samples_s``)."""
    batch = num(record.get("batch_size")) or 1
    for key in ("run_medians_s", "samples_s"):
        values = record.get(key)
        if isinstance(values, str):
            try:
                values = json.loads(values)
            except (ValueError, RecursionError):
                values = None
        values = [v for v in (values or []) if num(v)]
        if len(values) >= 2:
            return batch / quantile(values, 0.75), batch / quantile(values, 0.25)
    return None


def achieved(record: dict[str, Any]) -> float | None:
    """Forward MACs per second in inference: MACs per image x images per second."""
    if record.get("mode") != "infer":
        return None
    macs, rate = per_image(record), num(record.get("throughput_img_s"))
    return macs * rate if macs and rate else None
