"""Analytic (closed-form) complexity: exact parameters and MACs from a spec, no torch import."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from vitbench.analytic import cnn, convnext, swin, vit
from vitbench.settings import check_batch_size
from vitbench.specs import ModelSpec, ViTSpec
from vitbench.specs.target import img_size_cell

#: The formula module of each spec kind: each has params(spec), macs_by_component(spec, batch)
#: and elementwise_by_kind(spec, batch).
FAMILIES: dict[str, ModuleType] = {
    "vit": vit,
    "resnet": cnn,
    "plaincnn": cnn,
    "swin": swin,
    "convnext": convnext,
}


@dataclass(frozen=True)
class Complexity:
    """Exact analytic counts for one spec and batch size. ``macs`` and component MACs cover the
    whole batch; ``params`` do not depend on it. Element-wise work is kept apart from MACs."""

    spec: ModelSpec
    batch_size: int
    params: int
    macs: int
    macs_by_component: dict[str, int] = field(hash=False)
    elementwise_by_kind: dict[str, int] = field(hash=False)

    @property
    def flops(self) -> int:
        """FLOPs = 2 * MACs (matmul and convolution only)."""
        return 2 * self.macs

    @property
    def elementwise_ops(self) -> int:
        return sum(self.elementwise_by_kind.values())

    @property
    def tokens(self) -> int | None:
        return self.spec.tokens if isinstance(self.spec, ViTSpec) else None

    @property
    def attention_matmul_macs(self) -> int:
        """Q K^T plus attention-weighted V over all layers (0 for CNNs)."""
        c = self.macs_by_component
        return c.get("attn_scores", 0) + c.get("attn_values", 0)

    @property
    def attention_matmul_share(self) -> float:
        return self.attention_matmul_macs / self.macs if self.macs else 0.0

    def as_record(self) -> dict[str, Any]:
        """Flat record with the stable column names used by CSV/JSON output."""
        spec = self.spec
        record: dict[str, Any] = {
            "model": spec.name,
            "kind": spec.kind,
            "img_size": img_size_cell(spec.img_size),
            "patch_size": getattr(spec, "patch_size", None),
            "tokens": self.tokens,
            "batch_size": self.batch_size,
            "params": self.params,
            "macs": self.macs,
            "flops": self.flops,
            "attn_matmul_share": self.attention_matmul_share,
            "elementwise_ops": self.elementwise_ops,
        }
        for name, value in self.macs_by_component.items():
            record[f"macs_{name}"] = value
        return record


def family(spec: ModelSpec) -> ModuleType:
    """The formula module for ``spec``'s kind."""
    try:
        return FAMILIES[spec.kind]
    except (AttributeError, KeyError):
        raise TypeError(f"not a model spec: {spec!r}") from None


def params(spec: ModelSpec) -> int:
    """Exact trainable parameter count."""
    return family(spec).params(spec)


def complexity(spec: ModelSpec, batch_size: int = 1) -> Complexity:
    """Exact params, MACs per component and element-wise work for ``batch_size`` images.

    Args:
        spec: a model spec (:class:`ViTSpec`, :class:`ResNetSpec`, ...).
        batch_size: images per forward pass.

    Returns:
        A :class:`Complexity`: ``params``, ``macs``, ``macs_by_component``, ``elementwise_ops``.

    Raises:
        SpecError: a wrong batch size.
    """
    check_batch_size(batch_size)
    return complexity_of(spec, batch_size)


def complexity_of(spec: ModelSpec, batch_size: int) -> Complexity:
    """:func:`complexity` for a batch size the caller has checked (``check_batch_size``)."""
    module = family(spec)
    components = module.macs_by_component(spec, batch_size)
    return Complexity(
        spec=spec,
        batch_size=batch_size,
        params=module.params(spec),
        macs=sum(components.values()),
        macs_by_component=components,
        elementwise_by_kind=module.elementwise_by_kind(spec, batch_size),
    )
