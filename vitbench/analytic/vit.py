"""Closed-form parameter and MAC counts of a Vision Transformer (pure Python).

Notation (per image unless a batch B appears):
    C in_chans, P patch size, N = (H/P)(W/P) patches, p prefix tokens (class + distillation +
    registers), n = N + p tokens, d embed_dim, h heads, d_h = d / h, m MLP hidden width, L depth,
    K classes (0: no head), R = (2 H/P - 1)(2 W/P - 1) relative offsets.
A MAC is one multiply-accumulate; FLOPs = 2 * MACs.

Variants and what they cost:
    SwiGLU MLP          fc1 is two d x m linears (gate and value): params 2(dm + m), MACs 2ndm
    layer scale         2d parameters per block, element-wise only
    RoPE                no parameters; rotating q and k is element-wise (never MACs)
    qk-norm             4 d_h parameters per block (LayerNorm over each head's q and k)
    rel. position bias  table: (R + 3 [class token]) h parameters per block (or once, shared),
                        a gather and an addition (no MACs); mlp: 2 -> s -> h MLP on R offsets,
                        3s + s h + h parameters and R (2s + s h) MACs per evaluation, once per
                        forward pass and block (or once, shared), whatever the batch size
    MAP pooling         a latent query attends over the N patch tokens: d (latent)
                        + 4d^2 + 4d (q, kv, proj) + 2d (norm) + 2dm + m + d (MLP) parameters;
                        MACs d^2 + 2N d^2 + 2N d + d^2 + 2dm
"""

from __future__ import annotations

from vitbench.specs import ViTSpec


def relative_offsets(spec: ViTSpec) -> int:
    """R = (2 H/P - 1)(2 W/P - 1): distinct relative positions between two patches."""
    rows, cols = spec.grid
    return (2 * rows - 1) * (2 * cols - 1)


# --- parameters -------------------------------------------------------------------------------
def patch_embed_params(spec: ViTSpec) -> int:
    """Patch projection (convolution P x P / P, or linear on flattened patches): d * C * P^2 + d
    (no bias: d * C * P^2)."""
    return spec.embed_dim * spec.patch_dim + (spec.embed_dim if spec.patch_bias else 0)


def cls_token_params(spec: ViTSpec) -> int:
    """Learned prefix tokens, d values each: class, distillation and register tokens (and an
    unused mask token)."""
    return (spec.prefix_tokens + int(spec.mask_token)) * spec.embed_dim


def pos_embed_params(spec: ViTSpec) -> int:
    """learned-1d: n_pos * d (n_pos = n, or N when positions skip the prefix tokens, unless
    allocated larger); learned-2d: (H/P + W/P) * d/2 (a row table and a column table, each of
    width d/2, concatenated); sincos-2d and none: 0 (a fixed buffer or nothing)."""
    if spec.pos_embed == "learned-1d":
        return (spec.pos_embed_len or spec.positions) * spec.embed_dim
    if spec.pos_embed == "learned-2d":
        rows, cols = spec.grid
        return (rows + cols) * (spec.embed_dim // 2)
    return 0


def rel_pos_params(spec: ViTSpec) -> int:
    """One relative position module: table (R + 3 [class token]) h; mlp 2s + s + s h + h."""
    h = spec.num_heads
    if spec.rel_pos == "table":
        return (relative_offsets(spec) + (3 if spec.has_class_token else 0)) * h
    if spec.rel_pos == "mlp":
        s = spec.rel_pos_hidden
        return 2 * s + s + s * h + h
    return 0


def block_params(spec: ViTSpec) -> dict[str, int]:
    """One encoder block:
    norms = k * 2d (k LayerNorms of weight and bias);  qkv = 3d^2 (+ 3d bias, 2d without keys);
    proj = d^2 + d;  fc1 = d m + m (SwiGLU: 2(d m + m));  fc2 = m d + d  (no projection bias:
    without the +d, +m terms);  plus qk-norm 4 d_h, attention norm 2d, MLP norm 2m, layer scale
    2d, and the block's own relative position module."""
    d, m = spec.embed_dim, spec.mlp_hidden
    bias = 1 if spec.proj_bias else 0
    qkv_bias = ((3 if spec.k_bias else 2) * d) if spec.qkv_bias else 0
    fc1 = d * m + bias * m
    out = {
        "norms": spec.norms_per_block * 2 * d,
        "qkv": 3 * d * d + qkv_bias,
        "attn_proj": d * d + bias * d,
        "mlp_fc1": 2 * fc1 if spec.mlp == "swiglu" else fc1,
        "mlp_fc2": m * d + bias * d,
    }
    extras = {
        "qk_norm": 4 * spec.head_dim if spec.qk_norm else 0,
        "attn_norm": 2 * d if spec.attn_norm else 0,
        "mlp_norm": 2 * m if spec.mlp_norm else 0,
        "layer_scale": 2 * d if spec.layer_scale else 0,
        "rel_pos": 0 if spec.rel_pos_shared else rel_pos_params(spec),
    }
    out.update({name: value for name, value in extras.items() if value})
    return out


def attn_pool_params(spec: ViTSpec) -> int:
    """MAP head: latent d + q (d^2 + d) + kv (2d^2 + 2d) + proj (d^2 + d) + norm 2d
    + MLP (d m + m + m d + d)."""
    if spec.pool != "map":
        return 0
    d, m = spec.embed_dim, spec.mlp_hidden
    return d + 4 * d * d + 4 * d + 2 * d + 2 * d * m + m + d


def head_params(spec: ViTSpec) -> int:
    """Final LayerNorm (2d, optional), MAP pooling, and the classifier d K + K (twice with a
    distillation token; none when K = 0)."""
    d, k = spec.embed_dim, spec.num_classes
    heads = 2 if spec.dist_token else 1
    return (2 * d if spec.final_norm else 0) + attn_pool_params(spec) + heads * (d * k + k)


def params(spec: ViTSpec) -> int:
    """params = patch + prefix tokens + pos (+ norm_pre) (+ shared rel pos) + L * block + head."""
    return (
        patch_embed_params(spec)
        + cls_token_params(spec)
        + pos_embed_params(spec)
        + (2 * spec.embed_dim if spec.norm_pre else 0)
        + (rel_pos_params(spec) if spec.rel_pos_shared else 0)
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
    """fc1 = n * d * m (SwiGLU: 2 n d m, gate and value)."""
    macs = spec.tokens * spec.embed_dim * spec.mlp_hidden
    return 2 * macs if spec.mlp == "swiglu" else macs


def mlp_fc2_macs(spec: ViTSpec) -> int:
    """fc2 = n * m * d."""
    return spec.tokens * spec.mlp_hidden * spec.embed_dim


def rel_pos_macs(spec: ViTSpec) -> int:
    """mlp relative position bias, per forward pass: instances * R (2s + s h), instances = L
    (or 1 when shared); a table costs no MACs."""
    if spec.rel_pos != "mlp":
        return 0
    s = spec.rel_pos_hidden
    instances = 1 if spec.rel_pos_shared else spec.depth
    return instances * relative_offsets(spec) * (2 * s + s * spec.num_heads)


def attn_pool_macs(spec: ViTSpec) -> int:
    """MAP: q d^2 (one latent) + kv 2 N d^2 + scores and values 2 N d + proj d^2 + MLP 2 d m."""
    if spec.pool != "map":
        return 0
    d, n = spec.embed_dim, spec.num_patches
    return d * d + 2 * n * d * d + 2 * n * d + d * d + 2 * d * spec.mlp_hidden


def head_macs(spec: ViTSpec) -> int:
    """head = d * K on the pooled token (n d K with pool='none'; twice with a distillation
    token)."""
    pooled = spec.tokens if spec.pool == "none" else 1
    heads = 2 if spec.dist_token else 1
    return heads * pooled * spec.embed_dim * spec.num_classes


def macs_by_component(spec: ViTSpec, batch_size: int = 1) -> dict[str, int]:
    """MACs for a batch of B images, per component:
    B * [patch_embed + L * (qkv + scores + values + proj + fc1 + fc2) + attn_pool + head]
    (+ rel_pos, once per forward pass, for the mlp relative position bias)."""
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
    if spec.pool == "map":
        out["attn_pool"] = attn_pool_macs(spec)
    out["head"] = head_macs(spec)
    out = {name: batch_size * value for name, value in out.items()}
    if spec.rel_pos == "mlp":
        out["rel_pos"] = rel_pos_macs(spec)
    return out


def attention_matmul_macs_per_layer(spec: ViTSpec) -> int:
    """The quadratic part of one layer's attention, per image: scores + values = 2 n^2 d."""
    return attn_scores_macs(spec) + attn_values_macs(spec)


def elementwise_by_kind(spec: ViTSpec, batch_size: int = 1) -> dict[str, int]:
    """Element-wise work, one unit per output element of each operation (never mixed into MACs):
    layernorm = L * 2 * n d (+ d final, on the pooled token; + n d pre-norm; + 2 n d qk-norm,
    n d attention norm, n m MLP norm per layer);  softmax = L * h n^2 (incl. the 1/sqrt(d_h)
    scaling, fused in SDPA);  gelu (or silu gate) = L * n m;  residual = L * 2 n d;
    layer_scale = L * 2 n d;  rope = L * 2 N d (queries and keys of the patch tokens);
    pos_embed = N d (patch tokens) or n_pos d (learned-1d);  pool = N d for mean pooling."""
    n, d, m, depth = spec.tokens, spec.embed_dim, spec.mlp_hidden, spec.depth
    pos = 0
    if spec.pos_embed == "learned-1d":
        pos = spec.positions * d
    elif spec.pos_embed in ("learned-2d", "sincos-2d"):
        pos = spec.num_patches * d
    layernorm = depth * 2 * n * d + (d if spec.final_norm else 0) + (n * d if spec.norm_pre else 0)
    layernorm += depth * ((2 * n * d if spec.qk_norm else 0) + (n * d if spec.attn_norm else 0))
    layernorm += depth * (n * m if spec.mlp_norm else 0)
    out = {
        "layernorm": layernorm,
        "softmax": depth * spec.num_heads * n * n,
        "gelu": depth * n * m,
        "residual": depth * 2 * n * d,
        "pos_embed": pos,
        "pool": spec.num_patches * d if spec.pool == "mean" else 0,
    }
    if spec.layer_scale:
        out["layer_scale"] = depth * 2 * n * d
    if spec.rope:
        out["rope"] = depth * 2 * spec.num_patches * d
    return {name: batch_size * value for name, value in out.items()}
