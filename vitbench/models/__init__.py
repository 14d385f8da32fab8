"""build_model(spec) -> nn.Module, plus construction that skips weight initialisation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitbench.specs import ModelSpec, PlainCNNSpec, ResNetSpec, ViTSpec

if TYPE_CHECKING:
    from torch import nn


def build_model(spec: ModelSpec) -> "nn.Module":
    """The ``nn.Module`` for ``spec``, initialised, on the CPU, in training mode."""
    if isinstance(spec, ViTSpec):
        from vitbench.models.vit import VisionTransformer

        return VisionTransformer(spec)
    if isinstance(spec, ResNetSpec):
        from vitbench.models.cnn import build_resnet

        return build_resnet(spec)
    if isinstance(spec, PlainCNNSpec):
        from vitbench.models.cnn import build_plain_cnn

        return build_plain_cnn(spec)
    raise TypeError(f"not a model spec: {spec!r}")


def build_meta(spec: ModelSpec) -> "nn.Module":
    """The module with every parameter on the meta device (shapes only, no memory)."""
    import torch

    with torch.device("meta"):  # no storage: initialisers cost nothing
        return build_model(spec)


def build_uninitialized(spec: ModelSpec, device: str = "cpu") -> "nn.Module":
    """The module on ``device`` with allocated but uninitialised storage: for tracers that need
    real tensors (fvcore) without paying for weight initialisation."""
    module = build_meta(spec)
    return module.to_empty(device=device)
