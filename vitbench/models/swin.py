"""Swin Transformers (v1, v2) from a :class:`SwinSpec`, assembled from torchvision's own blocks.

The module has torchvision's ``SwinTransformer`` layout and forward (``features``, ``norm``,
``permute``, ``avgpool``, ``flatten``, ``head``), so a spec of a torchvision size builds a module
whose state dict loads torchvision's weights. What torchvision's constructor cannot say, the
spec can: a window per stage, windows clamped to small feature maps (timm), any number of input
channels, no head, and Swin v2 attention without a key bias (timm's q_bias/v_bias).
"""

from __future__ import annotations

from functools import partial

import torch
from torch import nn

from vitbench.specs.swin import SwinSpec


def _qv_bias_attention_v2():
    from torchvision.models.swin_transformer import ShiftedWindowAttentionV2, shifted_window_attention

    class QVBiasWindowAttentionV2(ShiftedWindowAttentionV2):
        """Swin v2 window attention whose keys have no bias parameter (timm's q_bias / v_bias)."""

        def __init__(self, dim, window_size, shift_size, num_heads, qkv_bias=True, **kwargs):
            super().__init__(dim, window_size, shift_size, num_heads, qkv_bias=False, **kwargs)
            self.q_bias = nn.Parameter(torch.zeros(dim))
            self.v_bias = nn.Parameter(torch.zeros(dim))
            self.register_buffer("k_bias", torch.zeros(dim), persistent=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return shifted_window_attention(
                x,
                self.qkv.weight,
                self.proj.weight,
                self.get_relative_position_bias(),
                self.window_size,
                self.num_heads,
                shift_size=self.shift_size,
                attention_dropout=self.attention_dropout,
                dropout=self.dropout,
                qkv_bias=torch.cat((self.q_bias, self.k_bias, self.v_bias)),
                proj_bias=self.proj.bias,
                logit_scale=self.logit_scale,
                training=self.training,
            )

    return QVBiasWindowAttentionV2


class SwinTransformer(nn.Module):
    """torchvision's SwinTransformer, built from a spec (same module names and forward)."""

    def __init__(self, spec: SwinSpec):
        super().__init__()
        from torchvision.models import swin_transformer as tv
        from torchvision.ops.misc import Permute

        self.spec = spec
        norm_layer = partial(nn.LayerNorm, eps=1e-5)
        if spec.version == 1:
            block_cls, merge_cls, attn_cls = tv.SwinTransformerBlock, tv.PatchMerging, tv.ShiftedWindowAttention
        else:
            block_cls, merge_cls = tv.SwinTransformerBlockV2, tv.PatchMergingV2
            attn_cls = tv.ShiftedWindowAttentionV2 if spec.k_bias else _qv_bias_attention_v2()
        attn_layer = partial(attn_cls, qkv_bias=spec.qkv_bias)
        patch = spec.patch_size
        layers: list[nn.Module] = [
            nn.Sequential(
                nn.Conv2d(spec.in_chans, spec.embed_dim, kernel_size=(patch, patch), stride=(patch, patch)),
                Permute([0, 2, 3, 1]),
                norm_layer(spec.embed_dim),
            )
        ]
        for stage, depth in enumerate(spec.depths):
            dim = spec.stage_dim(stage)
            window = list(spec.stage_window(stage))
            blocks = [
                block_cls(
                    dim,
                    spec.num_heads[stage],
                    window_size=window,
                    shift_size=[0 if index % 2 == 0 else w // 2 for w in window],
                    mlp_ratio=spec.mlp_ratio,
                    norm_layer=norm_layer,
                    attn_layer=attn_layer,
                )
                for index in range(depth)
            ]
            layers.append(nn.Sequential(*blocks))
            if stage < spec.num_stages - 1:
                layers.append(merge_cls(dim, norm_layer))
        self.features = nn.Sequential(*layers)
        self.norm = norm_layer(spec.num_features)
        self.permute = Permute([0, 3, 1, 2])
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten(1)
        self.head = nn.Linear(spec.num_features, spec.num_classes) if spec.num_classes else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm(self.features(x))
        return self.head(self.flatten(self.avgpool(self.permute(x))))


def build_swin(spec: SwinSpec) -> nn.Module:
    return SwinTransformer(spec)
