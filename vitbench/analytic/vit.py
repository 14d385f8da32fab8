"""Closed-form parameter and MAC counts of a Vision Transformer (pure Python).

Notation (per image unless a batch B appears):
    C in_chans, P patch size, N = (H/P)(W/P) patches, n tokens (N + 1 with a CLS token),
    d embed_dim, h heads, d_h = d / h, m MLP hidden width, L depth, K classes.
A MAC is one multiply-accumulate; FLOPs = 2 * MACs.
"""

from __future__ import annotations

from vitbench.specs import ViTSpec


# --- parameters -------------------------------------------------------------------------------
def patch_embed_params(spec: ViTSpec) -> int:
    """Patch projection (convolution P x P / P, or linear on flattened patches): d * C * P^2 + d."""
    return spec.embed_dim * spec.patch_dim + spec.embed_dim


def cls_token_params(spec: ViTSpec) -> int:
    """A learned CLS token, d values, only when pooling by CLS."""
    return spec.embed_dim if spec.pool == "cls" else 0


def pos_embed_params(spec: ViTSpec) -> int:
    """learned-1d: n_pos * d (n_pos = tokens unless allocated larger);
    learned-2d: (H/P + W/P) * d/2 (a row table and a column table, each of width d/2, concatenated);
    sincos-2d and none: 0 (a fixed buffer or nothing)."""
    if spec.pos_embed == "learned-1d":
        return (spec.pos_embed_len or spec.tokens) * spec.embed_dim
    if spec.pos_embed == "learned-2d":
        rows, cols = spec.grid
        return (rows + cols) * (spec.embed_dim // 2)
    return 0


def block_params(spec: ViTSpec) -> dict[str, int]:
    """One encoder block:
    norms = k * 2d (k LayerNorms of weight and bias);  qkv = 3d^2 (+ 3d bias);
    proj = d^2 + d;  fc1 = d m + m;  fc2 = m d + d."""
    d, m = spec.embed_dim, spec.mlp_hidden
    return {
        "norms": spec.norms_per_block * 2 * d,
        "qkv": 3 * d * d + (3 * d if spec.qkv_bias else 0),
        "attn_proj": d * d + d,
        "mlp_fc1": d * m + m,
        "mlp_fc2": m * d + d,
    }


def head_params(spec: ViTSpec) -> int:
    """Final LayerNorm (2d, optional) and the classifier d K + K."""
    return (2 * spec.embed_dim if spec.final_norm else 0) + spec.embed_dim * spec.num_classes + spec.num_classes


def params(spec: ViTSpec) -> int:
    """params = patch + cls + pos + L * block + head."""
    return (
        patch_embed_params(spec)
        + cls_token_params(spec)
        + pos_embed_params(spec)
        + spec.depth * sum(block_params(spec).values())
        + head_params(spec)
    )


# --- multiply-accumulates ---------------------------------------------------------------------
def patch_embed_macs(spec: ViTSpec) -> int:
    """patch_embed = N * d * C * P^2."""
    return spec.num_patches * spec.embed_dim * spec.patch_dim


def qkv_macs(spec: ViTSpec) -> int:
    """qkv = n * d * 3d (one fused projection to queries, keys and values)."""
    return spec.tokens * spec.embed_dim * 3 * spec.embed_dim


def attn_scores_macs(spec: ViTSpec) -> int:
    """scores = h * n^2 * d_h = n^2 * d (Q K^T for every head)."""
    return spec.num_heads * spec.tokens**2 * spec.head_dim


def attn_values_macs(spec: ViTSpec) -> int:
    """values = h * n^2 * d_h = n^2 * d (softmax(Q K^T / sqrt(d_h)) V for every head)."""
    return spec.num_heads * spec.tokens**2 * spec.head_dim


def attn_proj_macs(spec: ViTSpec) -> int:
    """proj = n * d^2 (output projection of the concatenated heads)."""
    return spec.tokens * spec.embed_dim**2


def mlp_fc1_macs(spec: ViTSpec) -> int:
    """fc1 = n * d * m."""
    return spec.tokens * spec.embed_dim * spec.mlp_hidden


def mlp_fc2_macs(spec: ViTSpec) -> int:
    """fc2 = n * m * d."""
    return spec.tokens * spec.mlp_hidden * spec.embed_dim


def head_macs(spec: ViTSpec) -> int:
    """head = d * K (on the one pooled token)."""
    return spec.embed_dim * spec.num_classes


def macs_by_component(spec: ViTSpec, batch_size: int = 1) -> dict[str, int]:
    """MACs for a batch of B images, per component:
    B * [patch_embed + L * (qkv + scores + values + proj + fc1 + fc2) + head]."""
    per_layer = {
        "qkv": qkv_macs(spec),
        "attn_scores": attn_scores_macs(spec),
        "attn_values": attn_values_macs(spec),
        "attn_proj": attn_proj_macs(spec),
        "mlp_fc1": mlp_fc1_macs(spec),
        "mlp_fc2": mlp_fc2_macs(spec),
    }
    out = {"patch_embed": patch_embed_macs(spec)}
    out.update({name: spec.depth * value for name, value in per_layer.items()})
    out["head"] = head_macs(spec)
    return {name: batch_size * value for name, value in out.items()}


def attention_matmul_macs_per_layer(spec: ViTSpec) -> int:
    """The quadratic part of one layer's attention, per image: scores + values = 2 n^2 d."""
    return attn_scores_macs(spec) + attn_values_macs(spec)


def elementwise_by_kind(spec: ViTSpec, batch_size: int = 1) -> dict[str, int]:
    """Element-wise work, one unit per output element of each operation (never mixed into MACs):
    layernorm = L * 2 * n d (+ d final, on the pooled token);  softmax = L * h n^2 (incl. the
    1/sqrt(d_h) scaling, fused in SDPA);  gelu = L * n m;  residual = L * 2 n d;
    pos_embed = N d (patch tokens) or n d (learned-1d with CLS);  pool = n d for mean pooling."""
    n, d = spec.tokens, spec.embed_dim
    pos = 0
    if spec.pos_embed == "learned-1d":
        pos = n * d
    elif spec.pos_embed in ("learned-2d", "sincos-2d"):
        pos = spec.num_patches * d
    out = {
        "layernorm": spec.depth * 2 * n * d + (d if spec.final_norm else 0),
        "softmax": spec.depth * spec.num_heads * n * n,
        "gelu": spec.depth * n * spec.mlp_hidden,
        "residual": spec.depth * 2 * n * d,
        "pos_embed": pos,
        "pool": n * d if spec.pool == "mean" else 0,
    }
    return {name: batch_size * value for name, value in out.items()}
