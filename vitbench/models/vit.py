"""vitbench's Vision Transformer: fused qkv, F.scaled_dot_product_attention, pre-norm blocks.

Also a model we time, so it follows the fastest public implementations (timm's
``VisionTransformer``): one qkv matmul, SDPA (flash / memory-efficient kernels where available),
no Python loops over heads. ``attention='math'`` switches to the explicit softmax(QK^T)V path,
which materialises the h x n x n probabilities (for teaching and for the memory model).

Every spec builds: the variant fields (distillation / register / mask tokens, q/v-only biases,
qk-norm, SwiGLU, layer scale, res-post-norm, RoPE, relative position bias, MAP pooling, no head)
add their modules (``vit_layers.py``) only when set, so a plain spec's module, and its parameter
order, are unchanged.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from vitbench.models.vit_layers import AttentionPool, LayerScale, Rope2d, build_rel_pos
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
                spec.in_chans,
                spec.embed_dim,
                kernel_size=spec.patch_size,
                stride=spec.patch_size,
                bias=spec.patch_bias,
            )
        else:
            self.proj = nn.Linear(spec.patch_dim, spec.embed_dim, bias=spec.patch_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.mode == "conv":
            return self.proj(x).flatten(2).transpose(1, 2)
        b, c, h, w = x.shape
        p = self.patch_size
        patches = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5)
        return self.proj(patches.reshape(b, (h // p) * (w // p), c * p * p))


class Attention(nn.Module):
    """Multi-head self-attention with one fused qkv projection; the variants (q/v-only biases,
    qk-norm, RoPE, relative position bias, a norm before the projection) only when asked."""

    def __init__(self, spec: ViTSpec):
        super().__init__()
        d = spec.embed_dim
        self.num_heads = spec.num_heads
        self.head_dim = spec.head_dim
        self.scale = self.head_dim**-0.5
        self.use_sdpa = spec.attention == "sdpa"
        if spec.qkv_bias and not spec.k_bias:  # BEiT / EVA: queries and values only
            self.q_bias = nn.Parameter(torch.zeros(d))
            self.v_bias = nn.Parameter(torch.zeros(d))
            self.register_buffer("k_bias", torch.zeros(d), persistent=False)
        else:
            self.q_bias = None
        self.qkv = nn.Linear(d, 3 * d, bias=spec.qkv_bias and spec.k_bias)
        self.q_norm = nn.LayerNorm(self.head_dim, eps=1e-6) if spec.qk_norm else None
        self.k_norm = nn.LayerNorm(self.head_dim, eps=1e-6) if spec.qk_norm else None
        self.rel_pos = build_rel_pos(spec) if spec.rel_pos != "none" and not spec.rel_pos_shared else None
        self.attn_drop = spec.attn_dropout
        self.attn_dropout = nn.Dropout(spec.attn_dropout)
        self.norm = nn.LayerNorm(d, eps=1e-6) if spec.attn_norm else None
        self.proj = nn.Linear(d, d, bias=spec.proj_bias)
        self.proj_drop = nn.Dropout(spec.dropout)

    def forward(self, x: torch.Tensor, rope=None, rel_pos: torch.Tensor | None = None) -> torch.Tensor:
        b, n, d = x.shape
        if self.q_bias is None:
            qkv = self.qkv(x)
        else:
            qkv = F.linear(x, self.qkv.weight, torch.cat((self.q_bias, self.k_bias, self.v_bias)))
        q, k, v = qkv.reshape(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        if rope is not None:
            q, k = rope(q), rope(k)
        bias = self.rel_pos() if self.rel_pos is not None else rel_pos
        if self.use_sdpa:
            x = F.scaled_dot_product_attention(
                q, k, v, attn_mask=bias, dropout_p=self.attn_drop if self.training else 0.0
            )
        else:
            attn = (q * self.scale) @ k.transpose(-2, -1)
            if bias is not None:
                attn = attn + bias
            attn = self.attn_dropout(attn.softmax(dim=-1))
            x = attn @ v
        x = x.transpose(1, 2).reshape(b, n, d)
        if self.norm is not None:
            x = self.norm(x)
        return self.proj_drop(self.proj(x))


class Mlp(nn.Module):
    """Linear(d, m) -> GELU -> Linear(m, d); SwiGLU: one packed Linear(d, 2m) -> SiLU(gate) *
    value -> Linear(m, d); an optional LayerNorm(m) before the second linear."""

    def __init__(self, spec: ViTSpec):
        super().__init__()
        m, bias = spec.mlp_hidden, spec.proj_bias
        self.swiglu = spec.mlp == "swiglu"
        self.fc1 = nn.Linear(spec.embed_dim, 2 * m if self.swiglu else m, bias=bias)
        self.act = nn.SiLU() if self.swiglu else nn.GELU()
        self.drop1 = nn.Dropout(spec.dropout)
        self.norm = nn.LayerNorm(m, eps=1e-6) if spec.mlp_norm else nn.Identity()
        self.fc2 = nn.Linear(m, spec.embed_dim, bias=bias)
        self.drop2 = nn.Dropout(spec.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.fc1(x)
        if self.swiglu:
            gate, value = x.chunk(2, dim=-1)
            x = self.act(gate) * value
        else:
            x = self.act(x)
        return self.drop2(self.fc2(self.norm(self.drop1(x))))


class Block(nn.Module):
    """x + Attn(LN(x)), then x + MLP(LN(x)); ``norms_per_block=1`` shares one LayerNorm;
    ``res_post_norm``: x + LN(Attn(x)), x + LN(MLP(x)); layer scale multiplies each branch."""

    def __init__(self, spec: ViTSpec):
        super().__init__()
        self.norm1 = nn.LayerNorm(spec.embed_dim, eps=1e-6)
        self.attn = Attention(spec)
        self.norm2 = nn.LayerNorm(spec.embed_dim, eps=1e-6) if spec.norms_per_block == 2 else self.norm1
        self.mlp = Mlp(spec)
        self.post_norm = spec.res_post_norm
        self.ls1 = LayerScale(spec.embed_dim) if spec.layer_scale else nn.Identity()
        self.ls2 = LayerScale(spec.embed_dim) if spec.layer_scale else nn.Identity()

    def forward(self, x: torch.Tensor, rope=None, rel_pos: torch.Tensor | None = None) -> torch.Tensor:
        if self.post_norm:
            x = x + self.ls1(self.norm1(self.attn(x, rope, rel_pos)))
            return x + self.ls2(self.norm2(self.mlp(x)))
        x = x + self.ls1(self.attn(self.norm1(x), rope, rel_pos))
        return x + self.ls2(self.mlp(self.norm2(x)))


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
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d)) if spec.has_class_token else None
        self.dist_token = nn.Parameter(torch.zeros(1, 1, d)) if spec.dist_token else None
        self.reg_token = nn.Parameter(torch.zeros(1, spec.reg_tokens, d)) if spec.reg_tokens else None
        self.mask_token = nn.Parameter(torch.zeros(1, d)) if spec.mask_token else None  # unused
        self.pos_embed = None
        self.pos_embed_row = self.pos_embed_col = None
        rows, cols = spec.grid
        if spec.pos_embed == "learned-1d":
            self.pos_embed = nn.Parameter(torch.zeros(1, spec.pos_embed_len or spec.positions, d))
        elif spec.pos_embed == "learned-2d":
            self.pos_embed_row = nn.Parameter(torch.zeros(rows, d // 2))
            self.pos_embed_col = nn.Parameter(torch.zeros(cols, d // 2))
        elif spec.pos_embed == "sincos-2d":
            self.register_buffer("pos_embed_fixed", sincos_2d(rows, cols, d)[None], persistent=False)
        self.pos_drop = nn.Dropout(spec.dropout)
        self.norm_pre = nn.LayerNorm(d, eps=1e-6) if spec.norm_pre else nn.Identity()
        self.rope = Rope2d(spec) if spec.rope else None
        self.rel_pos = build_rel_pos(spec) if spec.rel_pos_shared else None
        self.blocks = nn.Sequential(*(Block(spec) for _ in range(spec.depth)))
        self.norm = nn.LayerNorm(d, eps=1e-6) if spec.final_norm else nn.Identity()
        self.attn_pool = AttentionPool(spec) if spec.pool == "map" else None
        self.head = nn.Linear(d, spec.num_classes) if spec.num_classes else nn.Identity()
        self.head_dist = None
        if spec.dist_token:
            self.head_dist = nn.Linear(d, spec.num_classes) if spec.num_classes else nn.Identity()
        self._init_weights()

    def _init_weights(self) -> None:
        for p in (
            self.cls_token, self.dist_token, self.reg_token,
            self.pos_embed, self.pos_embed_row, self.pos_embed_col,
        ):
            if p is not None:
                nn.init.trunc_normal_(p, std=0.02)

    def _patch_positions(self) -> torch.Tensor | None:
        """Positions added to the patch tokens alone: the 2-D variants, and 1-D positions that
        skip the prefix tokens."""
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
        if self.pos_embed is not None and not self.spec.pos_embed_prefix:
            return self.pos_embed[:, : self.spec.num_patches]
        return None

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(x)
        patch_positions = self._patch_positions()
        if patch_positions is not None:
            x = x + patch_positions
        prefix = [t.expand(x.shape[0], -1, -1) for t in (self.cls_token, self.dist_token, self.reg_token) if t is not None]
        if prefix:
            x = torch.cat((*prefix, x), dim=1)
        if self.pos_embed is not None and self.spec.pos_embed_prefix:
            pos = self.pos_embed
            if pos.shape[1] != x.shape[1]:
                pos = pos[:, : x.shape[1]]
            x = x + pos
        x = self.norm_pre(self.pos_drop(x))
        rel_pos = self.rel_pos() if self.rel_pos is not None else None
        for block in self.blocks:
            x = block(x, self.rope, rel_pos)
        return x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.forward_features(x)
        spec = self.spec
        if spec.pool == "map":
            return self.head(self.attn_pool(self.norm(x)[:, spec.prefix_tokens :]))
        if self.head_dist is not None:
            x = self.norm(x[:, :2])
            return (self.head(x[:, 0]) + self.head_dist(x[:, 1])) / 2
        if spec.pool == "cls":
            x = x[:, 0]
        elif spec.pool == "mean":
            x = x[:, spec.prefix_tokens :].mean(dim=1)
        return self.head(self.norm(x))
