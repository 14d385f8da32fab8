"""Closed-form parameter and MAC counts of Swin Transformers v1 and v2 (pure Python).

Notation, stage i: C = embed_dim * 2^i, h heads, (H, W) feature map ((H/P, W/P) for stage 1, then
halved rounding up), (M_h, M_w) window, t = M_h M_w tokens per window, the map zero-padded to
Hp = ceil(H / M_h) M_h by Wp = ceil(W / M_w) M_w, T = Hp Wp padded tokens, m = int(C r) MLP width,
R = (2 M_h - 1)(2 M_w - 1) relative offsets, L last stage, K classes, C_in input channels.

Parameters:
    patch embed  C_0 C_in P^2 + C_0 (convolution) + 2 C_0 (LayerNorm)
    block v1     4C (LayerNorms) + R h (bias table) + 3C^2 + 3C (qkv) + C^2 + C (proj)
                 + C m + m + m C + C (MLP)
    block v2     as v1 without the table, plus the CPB MLP 2*512 + 512 + 512 h and the logit
                 scale h; the qkv bias is 2C when keys have no bias (timm)
    merging      v1: LayerNorm(4C) 8C + Linear 4C * 2C;  v2: Linear 8C^2 + LayerNorm(2C) 4C
                 (C = the width before merging; the linear has no bias)
    head         2 C_L (final LayerNorm) + C_L K + K
MACs per image:
    patch embed  H_0 W_0 C_0 C_in P^2
    block        qkv 3 T C^2;  scores T t C;  values T t C;  proj T C^2  (on the padded map)
                 fc1 = fc2 = H W C m  (on the real map)
    v2 CPB MLP   R (2*512 + 512 h) per block and forward pass, whatever the batch size
    merging      H W 4C 2C  (H, W: the merged map; C: the width before merging)
    head         C_L K
Shifted windows (every second block) change which tokens share a window, not how many: the
cyclic shift and its attention mask are data movement and additions, no MACs. A MAC is one
multiply-accumulate; FLOPs = 2 * MACs.
"""

from __future__ import annotations

from vitbench.analytic.stages import norm_and_classifier_params, staged_macs, staged_params
from vitbench.specs.swin import CPB_HIDDEN, SwinSpec


def _ceil_to(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def padded_tokens(spec: SwinSpec, stage: int) -> int:
    """T = Hp Wp: the stage's map zero-padded to whole windows."""
    height, width = spec.stage_resolution(stage)
    window_h, window_w = spec.stage_window(stage)
    return _ceil_to(height, window_h) * _ceil_to(width, window_w)


def relative_offsets(spec: SwinSpec, stage: int) -> int:
    """R = (2 M_h - 1)(2 M_w - 1) distinct relative positions inside a window."""
    window_h, window_w = spec.stage_window(stage)
    return (2 * window_h - 1) * (2 * window_w - 1)


# --- parameters -------------------------------------------------------------------------------
def patch_embed_params(spec: SwinSpec) -> int:
    """C_0 C_in P^2 + C_0 (convolution with bias) + 2 C_0 (LayerNorm)."""
    c = spec.embed_dim
    return c * spec.in_chans * spec.patch_size**2 + c + 2 * c


def block_params(spec: SwinSpec, stage: int) -> dict[str, int]:
    """One block of stage i, by part (see the module docstring)."""
    c, h, m = spec.stage_dim(stage), spec.num_heads[stage], spec.stage_mlp_hidden(stage)
    qkv_bias = (3 if spec.k_bias else 2) * c if spec.qkv_bias else 0
    out = {
        "norms": 4 * c,
        "qkv": 3 * c * c + qkv_bias,
        "attn_proj": c * c + c,
        "mlp_fc1": c * m + m,
        "mlp_fc2": m * c + c,
    }
    if spec.version == 1:
        out["rel_pos_table"] = relative_offsets(spec, stage) * h
    else:
        out["cpb_mlp"] = 2 * CPB_HIDDEN + CPB_HIDDEN + CPB_HIDDEN * h
        out["logit_scale"] = h
    return out


def merging_params(spec: SwinSpec, stage: int) -> int:
    """Patch merging into stage i (i >= 1), C = C_{i-1}: 8C^2 + 8C (v1) or 8C^2 + 4C (v2)."""
    c = spec.stage_dim(stage - 1)
    return 8 * c * c + (8 * c if spec.version == 1 else 4 * c)


def head_params(spec: SwinSpec) -> int:
    """Final LayerNorm 2 C_L and, with classes, the classifier C_L K + K."""
    return norm_and_classifier_params(spec.num_features, spec.num_classes)


def params(spec: SwinSpec) -> int:
    """params = patch embed + sum_i [merging_i + depth_i * block_i] + head."""
    return staged_params(spec, patch_embed_params(spec), merging_params, block_params)


# --- multiply-accumulates ---------------------------------------------------------------------
def patch_embed_macs(spec: SwinSpec) -> int:
    """H_0 W_0 C_0 C_in P^2."""
    rows, cols = spec.grid
    return rows * cols * spec.embed_dim * spec.in_chans * spec.patch_size**2


def block_macs(spec: SwinSpec, stage: int) -> dict[str, int]:
    """Per image, one block of stage i: qkv 3TC^2, scores TtC, values TtC, proj TC^2 (padded map),
    fc1 = fc2 = HWCm (real map)."""
    c, m = spec.stage_dim(stage), spec.stage_mlp_hidden(stage)
    height, width = spec.stage_resolution(stage)
    window_h, window_w = spec.stage_window(stage)
    tokens = padded_tokens(spec, stage)
    per_window = window_h * window_w
    return {
        "qkv": 3 * tokens * c * c,
        "attn_scores": tokens * per_window * c,
        "attn_values": tokens * per_window * c,
        "attn_proj": tokens * c * c,
        "mlp_fc1": height * width * c * m,
        "mlp_fc2": height * width * m * c,
    }


def cpb_macs(spec: SwinSpec, stage: int) -> int:
    """v2's continuous position bias MLP of one block: R (2*512 + 512 h), once per forward pass."""
    if spec.version == 1:
        return 0
    return relative_offsets(spec, stage) * (2 * CPB_HIDDEN + CPB_HIDDEN * spec.num_heads[stage])


def merging_macs(spec: SwinSpec, stage: int) -> int:
    """Patch merging into stage i (i >= 1): H_i W_i 4C 2C, C = C_{i-1}."""
    height, width = spec.stage_resolution(stage)
    c = spec.stage_dim(stage - 1)
    return height * width * 4 * c * 2 * c


def head_macs(spec: SwinSpec) -> int:
    """C_L K on the pooled features."""
    return spec.num_features * spec.num_classes


def macs_by_component(spec: SwinSpec, batch_size: int = 1) -> dict[str, int]:
    """MACs for a batch of B images: B * (everything per image) + the v2 CPB MLPs, which run once
    per forward pass on the relative coordinates (not on images)."""
    out = staged_macs(
        spec, ("patch_embed", patch_embed_macs(spec)), block_macs, ("patch_merging", merging_macs), head_macs(spec)
    )
    out = {name: batch_size * value for name, value in out.items()}
    if spec.version == 2:
        out["cpb_mlp"] = sum(depth * cpb_macs(spec, stage) for stage, depth in enumerate(spec.depths))
    return out


def elementwise_by_kind(spec: SwinSpec, batch_size: int = 1) -> dict[str, int]:
    """Element-wise work, one unit per output element (never mixed into MACs), per stage i with
    n = H W real and T padded tokens, t per window:
    layernorm = n_0 C_0 (patch) + sum_i depth_i 2 n C + merging (4C or 2C per merged token)
    + n_L C_L (final, every token); softmax = sum_i depth_i h T t; gelu = sum_i depth_i n m;
    residual = sum_i depth_i 2 n C; pool = n_L C_L."""
    rows, cols = spec.grid
    out = {"layernorm": rows * cols * spec.embed_dim, "softmax": 0, "gelu": 0, "residual": 0}
    for stage, depth in enumerate(spec.depths):
        c, h = spec.stage_dim(stage), spec.num_heads[stage]
        height, width = spec.stage_resolution(stage)
        window_h, window_w = spec.stage_window(stage)
        n = height * width
        out["layernorm"] += depth * 2 * n * c
        if stage:
            out["layernorm"] += n * (4 if spec.version == 1 else 2) * spec.stage_dim(stage - 1)
        out["softmax"] += depth * h * padded_tokens(spec, stage) * window_h * window_w
        out["gelu"] += depth * n * spec.stage_mlp_hidden(stage)
        out["residual"] += depth * 2 * n * c
    last_h, last_w = spec.stage_resolution(spec.num_stages - 1)
    out["layernorm"] += last_h * last_w * spec.num_features
    out["pool"] = last_h * last_w * spec.num_features
    return {name: batch_size * value for name, value in out.items()}
