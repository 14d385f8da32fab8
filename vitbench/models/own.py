"""vitbench's own ``nn.Module`` for each kind of model spec (ViT, ResNet, plain CNN, Swin, ConvNeXt)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitbench.specs import ConvNeXtSpec, ModelSpec, PlainCNNSpec, ResNetSpec, SwinSpec, ViTSpec

if TYPE_CHECKING:
    from torch import nn


def build_spec(spec: ModelSpec) -> nn.Module:
    """vitbench's own module for ``spec``, initialised, on the current default device."""
    if isinstance(spec, ViTSpec):
        from vitbench.models.vit import VisionTransformer

        return VisionTransformer(spec)
    if isinstance(spec, ResNetSpec):
        from vitbench.models.cnn import build_resnet

        return build_resnet(spec)
    if isinstance(spec, PlainCNNSpec):
        from vitbench.models.cnn import build_plain_cnn

        return build_plain_cnn(spec)
    if isinstance(spec, SwinSpec):
        from vitbench.models.swin import build_swin

        return build_swin(spec)
    if isinstance(spec, ConvNeXtSpec):
        from vitbench.models.convnext import build_convnext

        return build_convnext(spec)
    raise TypeError(f"not a model spec: {spec!r}")
