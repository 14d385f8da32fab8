"""What a claim is: the model and quantity it is about (:class:`Config`), how it is counted
(:class:`Counted`), and the claim itself (:class:`Claim`), as :mod:`vitbench.claims.catalogue`
reads them from the catalogue. Frozen dataclasses; no torch import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vitbench.claims.stated import Stated
from vitbench.presets import resolve
from vitbench.specs import spec_from_dict, with_overrides


def frozen(value: Any) -> Any:
    """YAML lists as (nested) tuples, so that a config is hashable."""
    return tuple(frozen(v) for v in value) if isinstance(value, list) else value


@dataclass(frozen=True)
class Config:
    """The model (a preset name, or spec fields with a ``kind``), its overrides and batch size,
    and the quantity computed."""

    quantity: str
    model: str | None = None
    overrides: tuple[tuple[str, Any], ...] = ()
    batch_size: int = 1
    fields: tuple[tuple[str, Any], ...] | None = None  # a spec given field by field
    reference: str | None = None  # a model vitbench can only count (timm:NAME, ...), no spec

    @property
    def analytic(self) -> bool:
        """Whether vitbench has a spec (and formulas) for the model, or can only count it."""
        return self.reference is None

    def spec(self) -> Any:
        if self.reference is not None:
            raise ValueError(f"{self.reference} has no analytic spec: it can only be counted")
        if self.fields is not None:
            return with_overrides(spec_from_dict(dict(self.fields)), **dict(self.overrides))

        return resolve(self.model, **dict(self.overrides))

    def same_model(self, other: Config) -> bool:
        return (self.model, self.overrides, self.batch_size, self.fields) == (
            other.model, other.overrides, other.batch_size, other.fields)

    def describe(self) -> str:
        text = self.reference or self.model or _spec_label(self.spec())
        if self.overrides:
            text += " (" + ", ".join(f"{k}={v}" for k, v in self.overrides) + ")"
        if self.batch_size != 1:
            text += f", batch {self.batch_size}"
        return text


def _spec_label(spec: Any) -> str:
    """A spec given field by field, named with what a reader needs: a Swin's stage-1 geometry."""
    if spec.kind != "swin":
        return spec.name
    (height, width), (window, _) = spec.stage_resolution(0), spec.stage_window(0)
    return (f"{spec.name} at {spec.img_size[0]} px (stage 1: {height}x{width} tokens, "
            f"C={spec.embed_dim}, M={window})")


@dataclass(frozen=True)
class Counted:
    """How a claim is counted on a built module: ``model`` a reference (``timm:NAME``,
    ``torchvision:NAME``, built on the meta device) or None for the claim's own model;
    ``module`` a submodule path to count alone (its MACs), or None for the whole model."""

    model: str | None = None
    module: str | None = None


@dataclass(frozen=True)
class AlternativeReading:
    """A catalogue-given reading of a ratio claim: another numerator over another denominator."""

    describe: str
    target: Config
    versus: Config


@dataclass(frozen=True)
class Claim:
    id: str
    file: str
    line: int
    quote: str
    quantity: str
    target: Config | None
    versus: Config | None
    convention: str | None
    stated: Stated
    tolerance: float | None = None
    tolerance_note: str | None = None
    formula: str | None = None
    omits: tuple[str, ...] = ()
    alternatives: tuple[AlternativeReading, ...] = ()
    counted: Counted | None = None
    reason: str | None = None
    stand_in: str | None = None  # why the counted network may not be the document's
    device: str | None = None
    assumed: tuple[tuple[str, str], ...] = ()
    section: str | None = None  # the heading the claim sits under, as the document spells it

    @property
    def source(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def measured(self) -> bool:
        """Judged against a measurement on a device, never against the analytic model."""
        return self.device is not None
