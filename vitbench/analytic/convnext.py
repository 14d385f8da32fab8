"""Closed-form parameter and MAC counts of ConvNeXt v1 (and v2's GRN) (pure Python).

Notation, stage i: C = dims[i], (H, W) feature map (floor(H/P), floor(W/P) for stage 1, halved
(flooring) by each downsampling), k depthwise kernel, m = int(C r) MLP width, L last stage,
K classes, C_in input channels, P stem patch.

Parameters:
    stem         C_0 C_in P^2 + C_0 (convolution) + 2 C_0 (LayerNorm)
    block        C k^2 + C (depthwise convolution) + 2C (LayerNorm) + C m + m (fc1)
                 + m C + C (fc2) + C (layer scale, v1) + 2m (GRN, v2)
    downsample   2 C_{i-1} (LayerNorm) + 4 C_{i-1} C_i + C_i (2 x 2 / 2 convolution)
    head         2 C_L (LayerNorm) + C_L K + K
MACs per image:
    stem         H_0 W_0 C_0 C_in P^2
    block        depthwise H W C k^2;  fc1 = fc2 = H W C m   (GRN and layer scale: element-wise)
    downsample   H_i W_i C_i C_{i-1} 4
    head         C_L K
A MAC is one multiply-accumulate; FLOPs = 2 * MACs.
"""

from __future__ import annotations

from vitbench.analytic.stages import norm_and_classifier_params, staged_macs, staged_params
from vitbench.specs.convnext import ConvNeXtSpec


# --- parameters -------------------------------------------------------------------------------
def stem_params(spec: ConvNeXtSpec) -> int:
    """C_0 C_in P^2 + C_0 + 2 C_0."""
    c = spec.dims[0]
    return c * spec.in_chans * spec.patch_size**2 + 3 * c


def block_params(spec: ConvNeXtSpec, stage: int) -> dict[str, int]:
    """One block of stage i, by part."""
    c, m, k = spec.dims[stage], spec.stage_mlp_hidden(stage), spec.kernel_size
    out = {
        "dwconv": c * k * k + c,
        "norm": 2 * c,
        "mlp_fc1": c * m + m,
        "mlp_fc2": m * c + c,
    }
    if spec.grn:
        out["grn"] = 2 * m
    if spec.layer_scale:
        out["layer_scale"] = c
    return out


def downsample_params(spec: ConvNeXtSpec, stage: int) -> int:
    """Into stage i (i >= 1): 2 C_{i-1} + 4 C_{i-1} C_i + C_i."""
    before, after = spec.dims[stage - 1], spec.dims[stage]
    return 2 * before + 4 * before * after + after


def head_params(spec: ConvNeXtSpec) -> int:
    """2 C_L (LayerNorm) and, with classes, C_L K + K."""
    return norm_and_classifier_params(spec.num_features, spec.num_classes)


def params(spec: ConvNeXtSpec) -> int:
    """params = stem + sum_i [downsample_i + depth_i * block_i] + head."""
    return staged_params(spec, stem_params(spec), downsample_params, block_params)


# --- multiply-accumulates ---------------------------------------------------------------------
def stem_macs(spec: ConvNeXtSpec) -> int:
    """H_0 W_0 C_0 C_in P^2."""
    height, width = spec.stage_resolution(0)
    return height * width * spec.dims[0] * spec.in_chans * spec.patch_size**2


def block_macs(spec: ConvNeXtSpec, stage: int) -> dict[str, int]:
    """Per image, one block of stage i: depthwise H W C k^2, fc1 = fc2 = H W C m."""
    c, m = spec.dims[stage], spec.stage_mlp_hidden(stage)
    height, width = spec.stage_resolution(stage)
    n = height * width
    return {"dwconv": n * c * spec.kernel_size**2, "mlp_fc1": n * c * m, "mlp_fc2": n * m * c}


def downsample_macs(spec: ConvNeXtSpec, stage: int) -> int:
    """Into stage i (i >= 1): H_i W_i C_i C_{i-1} 4."""
    height, width = spec.stage_resolution(stage)
    return height * width * spec.dims[stage] * spec.dims[stage - 1] * 4


def head_macs(spec: ConvNeXtSpec) -> int:
    """C_L K."""
    return spec.num_features * spec.num_classes


def macs_by_component(spec: ConvNeXtSpec, batch_size: int = 1) -> dict[str, int]:
    """MACs for a batch of B images: B * [stem + sum_i (downsample_i + depth_i * block_i) + head]."""
    out = staged_macs(
        spec, ("stem", stem_macs(spec)), block_macs, ("downsample", downsample_macs), head_macs(spec)
    )
    return {name: batch_size * value for name, value in out.items()}


def elementwise_by_kind(spec: ConvNeXtSpec, batch_size: int = 1) -> dict[str, int]:
    """Element-wise work, one unit per output element (never mixed into MACs), n = H W of a stage:
    layernorm = n_0 C_0 (stem) + sum_i [depth_i n C + n_{i-1} C_{i-1} (downsample)] + C_L (head);
    gelu = sum_i depth_i n m;  grn = sum_i depth_i n m (v2);  layer_scale = sum_i depth_i n C (v1);
    residual = sum_i depth_i n C;  pool = n_L C_L."""
    height, width = spec.stage_resolution(0)
    out = {"layernorm": height * width * spec.dims[0], "gelu": 0, "residual": 0}
    if spec.grn:
        out["grn"] = 0
    if spec.layer_scale:
        out["layer_scale"] = 0
    for stage, depth in enumerate(spec.depths):
        height, width = spec.stage_resolution(stage)
        n, c, m = height * width, spec.dims[stage], spec.stage_mlp_hidden(stage)
        if stage:
            before_h, before_w = spec.stage_resolution(stage - 1)
            out["layernorm"] += before_h * before_w * spec.dims[stage - 1]
        out["layernorm"] += depth * n * c
        out["gelu"] += depth * n * m
        out["residual"] += depth * n * c
        if spec.grn:
            out["grn"] += depth * n * m
        if spec.layer_scale:
            out["layer_scale"] += depth * n * c
    last_h, last_w = spec.stage_resolution(spec.num_stages - 1)
    out["layernorm"] += spec.num_features
    out["pool"] = last_h * last_w * spec.num_features
    return {name: batch_size * value for name, value in out.items()}
