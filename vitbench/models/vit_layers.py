"""The ViT variants' extra layers: rotary position embedding, relative position bias (table or
MLP), layer scale, attention pooling (MAP).

Integer position indices are recomputed from ``arange`` on every call rather than kept as
buffers: they cost no MACs, and a module moved with ``to_empty`` (as the counters do) then still
gathers valid positions.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from vitbench.specs import ViTSpec


def _grid_coords(rows: int, cols: int, device) -> torch.Tensor:
    """(2, rows * cols) row and column index of every patch, row-major."""
    y, x = torch.meshgrid(
        torch.arange(rows, device=device), torch.arange(cols, device=device), indexing="ij"
    )
    return torch.stack((y.flatten(), x.flatten()))


def relative_index(rows: int, cols: int, device) -> torch.Tensor:
    """(N, N) index into the R = (2 rows - 1)(2 cols - 1) relative offsets (Swin's layout)."""
    coords = _grid_coords(rows, cols, device)
    rel = coords[:, :, None] - coords[:, None, :]
    return (rel[0] + rows - 1) * (2 * cols - 1) + (rel[1] + cols - 1)


class RelPosTable(nn.Module):
    """A learned bias per head and relative offset (BEiT / timm RelPosBias); with a class token
    three more entries: class-to-patch, patch-to-class, class-to-class."""

    def __init__(self, spec: ViTSpec):
        super().__init__()
        self.grid = spec.grid
        self.cls = spec.has_class_token
        rows, cols = spec.grid
        entries = (2 * rows - 1) * (2 * cols - 1)
        self.table = nn.Parameter(torch.zeros(entries + (3 if self.cls else 0), spec.num_heads))

    def forward(self) -> torch.Tensor:
        """(1, h, n, n) bias for the attention logits."""
        index = relative_index(*self.grid, self.table.device)
        if self.cls:
            entries = self.table.shape[0] - 3
            index = F.pad(index, (1, 0, 1, 0), value=entries)
            index[0, 0] = entries + 2
            index[1:, 0] = entries + 1
        n = index.shape[0]
        return self.table[index.flatten()].view(n, n, -1).permute(2, 0, 1).unsqueeze(0)


class RelPosMlp(nn.Module):
    """A 2 -> hidden -> heads MLP on log-spaced relative offsets (timm RelPosMlp, Swin v2's
    continuous position bias); prefix tokens get a zero bias."""

    def __init__(self, spec: ViTSpec):
        super().__init__()
        self.grid = spec.grid
        self.prefix = spec.prefix_tokens
        self.fc1 = nn.Linear(2, spec.rel_pos_hidden)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(spec.rel_pos_hidden, spec.num_heads)

    def forward(self) -> torch.Tensor:
        rows, cols = self.grid
        device = self.fc1.weight.device
        offsets = torch.stack(
            torch.meshgrid(
                torch.arange(1 - rows, rows, device=device, dtype=torch.float32),
                torch.arange(1 - cols, cols, device=device, dtype=torch.float32),
                indexing="ij",
            ),
            dim=-1,
        ).reshape(-1, 2)
        offsets = torch.sign(offsets) * torch.log(1.0 + offsets.abs())
        bias = self.fc2(self.act(self.fc1(offsets.to(self.fc1.weight.dtype))))
        index = relative_index(rows, cols, device)
        n = index.shape[0]
        bias = bias[index.flatten()].view(n, n, -1).permute(2, 0, 1)
        if self.prefix:
            bias = F.pad(bias, (self.prefix, 0, self.prefix, 0))
        return bias.unsqueeze(0)


def build_rel_pos(spec: ViTSpec) -> nn.Module:
    return RelPosTable(spec) if spec.rel_pos == "table" else RelPosMlp(spec)


class Rope2d(nn.Module):
    """2-D axial rotary embedding of the patch tokens' queries and keys: the first half of each
    pair of rotated channels turns with the row, the second with the column. Element-wise."""

    def __init__(self, spec: ViTSpec, temperature: float = 10000.0):
        super().__init__()
        self.prefix = spec.prefix_tokens
        quarter = spec.head_dim // 4
        freqs = 1.0 / temperature ** (torch.arange(quarter, dtype=torch.float32) / quarter)
        coords = _grid_coords(*spec.grid, None).to(torch.float32)
        angles = torch.cat((coords[0][:, None] * freqs, coords[1][:, None] * freqs), dim=1)
        angles = torch.cat((angles, angles), dim=1)  # (N, d_h): channel i pairs with i + d_h/2
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, h, n, d_h); rotates the patch tokens, leaves the prefix tokens."""
        prefix, patches = x[:, :, : self.prefix], x[:, :, self.prefix :]
        half = patches.shape[-1] // 2
        rotated = torch.cat((-patches[..., half:], patches[..., :half]), dim=-1)
        patches = patches * self.cos + rotated * self.sin
        return torch.cat((prefix, patches), dim=2) if self.prefix else patches


class LayerScale(nn.Module):
    def __init__(self, dim: int, init: float = 1e-5):
        super().__init__()
        self.gamma = nn.Parameter(torch.full((dim,), init))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gamma


class AttentionPool(nn.Module):
    """MAP head (SigLIP): a learned latent query attends over the patch tokens, then
    x + MLP(LN(x)); returns the pooled (B, d) vector."""

    def __init__(self, spec: ViTSpec):
        super().__init__()
        d = spec.embed_dim
        self.num_heads = spec.num_heads
        self.latent = nn.Parameter(torch.zeros(1, 1, d))
        self.q = nn.Linear(d, d)
        self.kv = nn.Linear(d, 2 * d)
        self.proj = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.fc1 = nn.Linear(d, spec.mlp_hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(spec.mlp_hidden, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        h = self.num_heads
        # F.linear, not self.q(...): a module called on a view of a parameter trips torch's
        # module tracker under no_grad (FlopCounterMode)
        q = F.linear(self.latent.expand(b, -1, -1), self.q.weight, self.q.bias)
        q = q.reshape(b, 1, h, d // h).transpose(1, 2)
        k, v = self.kv(x).reshape(b, n, 2, h, d // h).permute(2, 0, 3, 1, 4).unbind(0)
        x = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, 1, d)
        x = self.proj(x)
        x = x + self.fc2(self.act(self.fc1(self.norm(x))))
        return x[:, 0]
