"""vitbench's Vision Transformer: fused qkv, F.scaled_dot_product_attention, pre-norm blocks.

Also a model we time, so it follows the fastest public implementations (timm's
``VisionTransformer``): one qkv matmul, SDPA (flash / memory-efficient kernels where available),
no Python loops over heads. ``attention='math'`` switches to the explicit softmax(QK^T)V path,
which materialises the h x n x n probabilities (for teaching and for the memory model).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from vitbench.specs import ViTSpec


class PatchEmbed(nn.Module):
    """Image (B, C, H, W) -> patch tokens (B, N, d), by a P x P / P convolution or a linear layer
    on flattened patches (same parameters and MACs; different kernels)."""

    def __init__(self, spec: ViTSpec):
        super().__init__()
        self.patch_size = spec.patch_size
        self.mode = spec.patch_embed
        if self.mode == "conv":
            self.proj: nn.Module = nn.Conv2d(
                spec.in_chans, spec.embed_dim, kernel_size=spec.patch_size, stride=spec.patch_size
            )
        else:
            self.proj = nn.Linear(spec.patch_dim, spec.embed_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.mode == "conv":
            return self.proj(x).flatten(2).transpose(1, 2)
        b, c, h, w = x.shape
        p = self.patch_size
        patches = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5)
        return self.proj(patches.reshape(b, (h // p) * (w // p), c * p * p))


class Attention(nn.Module):
    def __init__(self, spec: ViTSpec):
        super().__init__()
        self.num_heads = spec.num_heads
        self.head_dim = spec.head_dim
        self.scale = self.head_dim**-0.5
        self.use_sdpa = spec.attention == "sdpa"
        self.qkv = nn.Linear(spec.embed_dim, 3 * spec.embed_dim, bias=spec.qkv_bias)
        self.attn_drop = spec.attn_dropout
        self.attn_dropout = nn.Dropout(spec.attn_dropout)
        self.proj = nn.Linear(spec.embed_dim, spec.embed_dim)
        self.proj_drop = nn.Dropout(spec.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        if self.use_sdpa:
            x = F.scaled_dot_product_attention(
                q, k, v, dropout_p=self.attn_drop if self.training else 0.0
            )
        else:
            attn = (q * self.scale) @ k.transpose(-2, -1)
            attn = self.attn_dropout(attn.softmax(dim=-1))
            x = attn @ v
        x = x.transpose(1, 2).reshape(b, n, d)
        return self.proj_drop(self.proj(x))


class Mlp(nn.Module):
    def __init__(self, spec: ViTSpec):
        super().__init__()
        self.fc1 = nn.Linear(spec.embed_dim, spec.mlp_hidden)
        self.act = nn.GELU()
        self.drop1 = nn.Dropout(spec.dropout)
        self.fc2 = nn.Linear(spec.mlp_hidden, spec.embed_dim)
        self.drop2 = nn.Dropout(spec.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop2(self.fc2(self.drop1(self.act(self.fc1(x)))))


class Block(nn.Module):
    """x + Attn(LN(x)), then x + MLP(LN(x)); ``norms_per_block=1`` shares one LayerNorm."""

    def __init__(self, spec: ViTSpec):
        super().__init__()
        self.norm1 = nn.LayerNorm(spec.embed_dim, eps=1e-6)
        self.attn = Attention(spec)
        self.norm2 = nn.LayerNorm(spec.embed_dim, eps=1e-6) if spec.norms_per_block == 2 else self.norm1
        self.mlp = Mlp(spec)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


def sincos_2d(rows: int, cols: int, dim: int, temperature: float = 10000.0) -> torch.Tensor:
    """Fixed 2-D sine-cosine positions (MoCo v3 / "simple ViT"): (rows * cols, dim)."""
    y, x = torch.meshgrid(torch.arange(rows), torch.arange(cols), indexing="ij")
    omega = 1.0 / temperature ** (torch.arange(dim // 4) / (dim // 4 - 1 if dim > 4 else 1))
    y = y.flatten()[:, None] * omega[None, :]
    x = x.flatten()[:, None] * omega[None, :]
    return torch.cat((x.sin(), x.cos(), y.sin(), y.cos()), dim=1)


class VisionTransformer(nn.Module):
    def __init__(self, spec: ViTSpec):
        super().__init__()
        self.spec = spec
        d = spec.embed_dim
        self.patch_embed = PatchEmbed(spec)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d)) if spec.pool == "cls" else None
        self.pos_embed = None
        self.pos_embed_row = self.pos_embed_col = None
        rows, cols = spec.grid
        if spec.pos_embed == "learned-1d":
            self.pos_embed = nn.Parameter(torch.zeros(1, spec.pos_embed_len or spec.tokens, d))
        elif spec.pos_embed == "learned-2d":
            self.pos_embed_row = nn.Parameter(torch.zeros(rows, d // 2))
            self.pos_embed_col = nn.Parameter(torch.zeros(cols, d // 2))
        elif spec.pos_embed == "sincos-2d":
            self.register_buffer("pos_embed_fixed", sincos_2d(rows, cols, d)[None], persistent=False)
        self.pos_drop = nn.Dropout(spec.dropout)
        self.blocks = nn.Sequential(*(Block(spec) for _ in range(spec.depth)))
        self.norm = nn.LayerNorm(d, eps=1e-6) if spec.final_norm else nn.Identity()
        self.head = nn.Linear(d, spec.num_classes)
        self._init_weights()

    def _init_weights(self) -> None:
        for p in (self.cls_token, self.pos_embed, self.pos_embed_row, self.pos_embed_col):
            if p is not None:
                nn.init.trunc_normal_(p, std=0.02)

    def _patch_positions(self) -> torch.Tensor | None:
        """Positions added to patch tokens (2-D variants); 1-D positions also cover the CLS token."""
        if self.pos_embed_row is not None:
            rows, cols = self.spec.grid
            half = self.pos_embed_row.shape[1]
            grid = torch.cat(
                (
                    self.pos_embed_row[:, None, :].expand(rows, cols, half),
                    self.pos_embed_col[None, :, :].expand(rows, cols, half),
                ),
                dim=-1,
            )
            return grid.reshape(1, rows * cols, 2 * half)
        if self.spec.pos_embed == "sincos-2d":
            return self.pos_embed_fixed
        return None

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(x)
        patch_positions = self._patch_positions()
        if patch_positions is not None:
            x = x + patch_positions
        if self.cls_token is not None:
            x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        if self.pos_embed is not None:
            pos = self.pos_embed
            if pos.shape[1] != x.shape[1]:
                pos = pos[:, : x.shape[1]]
            x = x + pos
        return self.blocks(self.pos_drop(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.forward_features(x)
        x = x[:, 0] if self.cls_token is not None else x.mean(dim=1)
        return self.head(self.norm(x))
