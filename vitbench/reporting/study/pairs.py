"""Measured pairs: two models measured under equal settings (device, mode, precision, resolution,
batch), set side by side: MACs ratio against throughput ratio. A pair is concluded only when both
rows are stable and their throughput ranges do not overlap; otherwise it is withheld, with why."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vitbench.reporting.study.rows import instability, per_image, throughput_band

TRANSFORMER_KINDS = ("vit", "swin")
MAX_AUTO_PAIRS = 12


@dataclass(frozen=True)
class Pair:
    a: dict[str, Any]
    b: dict[str, Any]

    @property
    def settings(self) -> str:
        a = self.a
        return f"{a.get('device')}, {a.get('mode')}, {a.get('precision')}, {a.get('img_size')} px, batch {a['batch_size']}"

    def text(self) -> str:
        ta, tb = self.a["throughput_img_s"], self.b["throughput_img_s"]
        return (
            f"{label(self.a)} vs {label(self.b)} ({self.settings}): {per_image(self.a) / per_image(self.b):.3g}x the MACs "
            f"per image, {ta / tb:.3g}x the throughput ({ta:.4g} vs {tb:.4g} img/s)"
        )

    def withheld(self) -> str | None:
        """Why the pair's ordering cannot be concluded, or None."""
        for row in (self.a, self.b):
            reason = instability(row)
            if reason:
                return f"the {label(row)} row is unstable ({reason})"
        band_a, band_b = throughput_band(self.a), throughput_band(self.b)
        if band_a and band_b and band_a[0] <= band_b[1] and band_b[0] <= band_a[1]:
            return (
                f"their throughput interquartile ranges overlap ({band_a[0]:.4g}-{band_a[1]:.4g} vs "
                f"{band_b[0]:.4g}-{band_b[1]:.4g} img/s): the order is not resolved"
            )
        return None


def label(row: dict[str, Any]) -> str:
    overrides = str(row.get("overrides") or "")
    return f"{row['model']}{' ' + overrides if overrides else ''}"


def _settings(row: dict[str, Any]) -> tuple:
    return (row.get("device"), row.get("mode"), row.get("precision"), row.get("img_size"))


def _largest_common_batch(rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]]) -> list[Pair]:
    """For each setting both were measured in, the pair at their largest common batch."""
    index_b = {(_settings(r), r["batch_size"]): r for r in rows_b}
    best: dict[tuple, Pair] = {}
    for r in rows_a:
        other = index_b.get((_settings(r), r["batch_size"]))
        if other is not None and (_settings(r) not in best or r["batch_size"] > best[_settings(r)].a["batch_size"]):
            best[_settings(r)] = Pair(r, other)
    return [best[k] for k in sorted(best, key=lambda k: tuple(str(x) for x in k))]


def named_pairs(rows: Sequence[dict[str, Any]], names: Sequence[tuple[str, str]]) -> list[Pair]:
    """Pairs of presets (measured without overrides), e.g. those the source documents compare."""
    plain: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if not r.get("overrides"):
            plain.setdefault(str(r["model"]), []).append(r)
    out = []
    for a, b in names:
        out += _largest_common_batch(plain.get(a, []), plain.get(b, []))
    return out


def transformer_cnn_pairs(rows: Sequence[dict[str, Any]]) -> tuple[list[Pair], int]:
    """Every measured transformer against every measured CNN under equal settings (at most
    MAX_AUTO_PAIRS), and how many more there were."""
    by_label: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_label.setdefault(label(r), []).append(r)
    vits = [k for k, v in by_label.items() if v[0].get("kind") in TRANSFORMER_KINDS]
    cnns = [k for k, v in by_label.items() if v[0].get("kind") not in TRANSFORMER_KINDS]
    found = [p for v in sorted(vits) for c in sorted(cnns) for p in _largest_common_batch(by_label[v], by_label[c])]
    return found[:MAX_AUTO_PAIRS], max(0, len(found) - MAX_AUTO_PAIRS)
