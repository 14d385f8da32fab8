"""ConvNeXt from a :class:`ConvNeXtSpec`, with torchvision's layout and pieces.

torchvision's block is fixed (7 x 7 kernel, MLP ratio 4, layer scale); ``ConvNeXtBlock`` below
is the same block with those as parameters and ConvNeXt v2's global response normalisation, with
torchvision's module names (``block.0`` depthwise convolution ... ``layer_scale``), so a spec of
a torchvision size builds a module whose state dict loads torchvision's weights.
"""

from __future__ import annotations

from functools import partial

import torch
from torch import nn

from vitbench.specs.convnext import ConvNeXtSpec


class GlobalResponseNorm(nn.Module):
    """ConvNeXt v2's GRN on channels-last input (B, H, W, C):
    x + bias + weight * x * ||x||_spatial / mean_channels(||x||_spatial)."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        spatial = x.norm(p=2, dim=(1, 2), keepdim=True)
        scale = spatial / (spatial.mean(dim=-1, keepdim=True) + self.eps)
        return x + self.bias + self.weight * (x * scale)


class ConvNeXtBlock(nn.Module):
    """depthwise k x k -> LayerNorm -> Linear(C, m) -> GELU -> [GRN] -> Linear(m, C) -> [scale] + x."""

    def __init__(self, dim: int, layer_scale: float, stochastic_depth_prob: float, *, spec: ConvNeXtSpec):
        super().__init__()
        from torchvision.ops.misc import Permute
        from torchvision.ops.stochastic_depth import StochasticDepth

        hidden = int(dim * spec.mlp_ratio)
        k = spec.kernel_size
        layers: list[nn.Module] = [
            nn.Conv2d(dim, dim, kernel_size=k, padding=k // 2, groups=dim, bias=True),
            Permute([0, 2, 3, 1]),
            nn.LayerNorm(dim, eps=1e-6),
            nn.Linear(dim, hidden),
            nn.GELU(),
        ]
        if spec.grn:
            layers.append(GlobalResponseNorm(hidden))
        layers += [nn.Linear(hidden, dim), Permute([0, 3, 1, 2])]
        self.block = nn.Sequential(*layers)
        self.layer_scale = nn.Parameter(torch.ones(dim, 1, 1) * layer_scale) if spec.layer_scale else None
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        result = self.block(x)
        if self.layer_scale is not None:
            result = self.layer_scale * result
        return self.stochastic_depth(result) + x


class ConvNeXt(nn.Module):
    """torchvision's ConvNeXt layout and forward (``features``, ``avgpool``, ``classifier``)
    from torchvision's own pieces; assembled here because torchvision's constructor divides by
    (blocks - 1) and so cannot build a one-block network."""

    def __init__(self, spec: ConvNeXtSpec):
        super().__init__()
        from torchvision.models.convnext import LayerNorm2d
        from torchvision.ops.misc import Conv2dNormActivation

        norm = partial(LayerNorm2d, eps=1e-6)
        patch = spec.patch_size
        layers: list[nn.Module] = [
            Conv2dNormActivation(
                spec.in_chans, spec.dims[0], kernel_size=patch, stride=patch, padding=0,
                norm_layer=norm, activation_layer=None, bias=True,
            )
        ]
        for index, (dim, depth) in enumerate(zip(spec.dims, spec.depths)):
            layers.append(nn.Sequential(*(ConvNeXtBlock(dim, 1e-6, 0.0, spec=spec) for _ in range(depth))))
            if index + 1 < spec.num_stages:
                layers.append(nn.Sequential(norm(dim), nn.Conv2d(dim, spec.dims[index + 1], kernel_size=2, stride=2)))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        head = nn.Linear(spec.num_features, spec.num_classes) if spec.num_classes else nn.Identity()
        self.classifier = nn.Sequential(norm(spec.num_features), nn.Flatten(1), head)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.avgpool(self.features(x)))


def build_convnext(spec: ConvNeXtSpec) -> nn.Module:
    return ConvNeXt(spec)
