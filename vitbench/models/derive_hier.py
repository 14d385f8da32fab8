"""Swin and ConvNeXt specs derived from torchvision and timm modules (see ``derive.py``).

Each function reads the built module and returns ``(spec, None)`` only when every parameter and
MAC of the module is covered by the spec's formulas, else ``(None, reason)`` in one line.
"""

from __future__ import annotations

from typing import Any

from vitbench.errors import SpecError
from vitbench.specs import ConvNeXtSpec, SwinSpec

Derived = tuple[Any, "str | None"]


def _name(module: Any) -> str:
    return type(module).__name__


def _classes(module: Any) -> int:
    """Output classes of a head module (0 for Identity / no classifier)."""
    return getattr(module, "out_features", 0) or 0


def _widths(layer: Any) -> tuple[int, int]:
    """(in, out) features of a Linear or a 1 x 1 convolution (timm's conv_mlp)."""
    if hasattr(layer, "in_features"):
        return layer.in_features, layer.out_features
    return layer.in_channels, layer.out_channels


def _mlp_ratio(dims_hidden: list[tuple[int, int]]) -> float | None:
    """One ratio r with int(C r) == m for every (C, m), or None."""
    for dim, hidden in dims_hidden:
        ratio = hidden / dim
        if all(int(d * ratio) == h for d, h in dims_hidden):
            return ratio
    return None


def _stage_windows(spec_kwargs: dict[str, Any], windows: list[tuple[int, int]], clamps: bool) -> SwinSpec | str:
    """A SwinSpec whose per-stage windows are exactly ``windows``, or a reason; ``clamps``: the
    library shrinks windows to small maps (timm, transformers) rather than padding (torchvision),
    the spelling tried first when both describe the module."""
    target = tuple(max(w) for w in windows)
    if len(set(target)) == 1:
        target = target[:1]  # one window for every stage
    for clamp in (clamps, not clamps):
        try:
            spec = SwinSpec(window_size=target, window_clamp=clamp, **spec_kwargs)
        except SpecError as exc:  # an invalid combination is a reason, not a crash
            return f"Swin layout is not a valid spec ({exc})"
        if all(spec.stage_window(i) == tuple(w) for i, w in enumerate(windows)):
            return spec
    return f"Swin windows {windows} are neither square nor clamped to the feature map"


# --- torchvision ------------------------------------------------------------------------------
def torchvision_swin(model: Any, img_size: tuple[int, int] | None) -> Derived:
    from torch import nn
    from torchvision.models import swin_transformer as tv

    if img_size is None:
        return None, "a Swin spec needs the input size"
    stem = model.features[0][0]
    stages = [m for m in model.features[1:] if isinstance(m, nn.Sequential)]
    merges = [m for m in model.features[1:] if not isinstance(m, nn.Sequential)]
    blocks = [b for s in stages for b in s]
    version = 2 if _name(blocks[0]) == "SwinTransformerBlockV2" else 1
    reason = _torchvision_swin_issue(tv, version, stages, merges, blocks)
    if reason:
        return None, reason
    ratio = _mlp_ratio([(b.mlp[0].in_features, b.mlp[0].out_features) for b in blocks])
    if ratio is None:
        return None, "torchvision Swin MLP widths differ from int(C * mlp_ratio)"
    first = [s[0] for s in stages]
    spec = _stage_windows(
        dict(
            name="torchvision",
            img_size=img_size,
            patch_size=stem.kernel_size[0],
            in_chans=stem.in_channels,
            embed_dim=stem.out_channels,
            depths=tuple(len(s) for s in stages),
            num_heads=tuple(b.attn.num_heads for b in first),
            mlp_ratio=ratio,
            qkv_bias=blocks[0].attn.qkv.bias is not None,
            version=version,
            num_classes=_classes(model.head),
        ),
        [tuple(b.attn.window_size) for b in first],
        clamps=False,
    )
    if isinstance(spec, str):
        return None, spec
    return spec, None


def _torchvision_swin_issue(tv: Any, version: int, stages: list[Any], merges: list[Any], blocks: list[Any]) -> str | None:
    """Why torchvision's Swin blocks, downsampling or biases are not the analytic Swin's, or None."""
    block_cls = tv.SwinTransformerBlockV2 if version == 2 else tv.SwinTransformerBlock
    attn_cls = tv.ShiftedWindowAttentionV2 if version == 2 else tv.ShiftedWindowAttention
    merge_cls = tv.PatchMergingV2 if version == 2 else tv.PatchMerging
    if any(type(b) is not block_cls or type(b.attn) is not attn_cls for b in blocks):
        return "torchvision Swin with custom blocks is not in the analytic Swin"
    if len(merges) != len(stages) - 1 or any(type(m) is not merge_cls for m in merges):
        return "torchvision Swin with custom downsampling is not in the analytic Swin"
    if any(b.attn.proj.bias is None for b in blocks) or len({b.attn.qkv.bias is None for b in blocks}) > 1:
        return "torchvision Swin without projection biases is not in the analytic Swin"
    return None


def torchvision_convnext(model: Any, img_size: tuple[int, int] | None) -> Derived:
    if img_size is None:
        return None, "a ConvNeXt spec needs the input size"
    stem = model.features[0][0]
    stages = list(model.features[1::2])
    blocks = [b for s in stages for b in s]
    if any(_name(b) != "CNBlock" for b in blocks):
        return None, "torchvision ConvNeXt with custom blocks is not in the analytic ConvNeXt"
    return (
        ConvNeXtSpec(
            name="torchvision",
            img_size=img_size,
            in_chans=stem.in_channels,
            patch_size=stem.kernel_size[0],
            depths=tuple(len(s) for s in stages),
            dims=tuple(s[0].block[0].in_channels for s in stages),
            num_classes=_classes(model.classifier[-1]),
        ),
        None,
    )


# --- timm -------------------------------------------------------------------------------------
def _timm_swin_issue(model: Any, version: int, blocks: list[Any]) -> str | None:
    """Why timm Swin's blocks, stage widths or attention widths are not the analytic Swin's, or None."""
    block_name = "SwinTransformerV2Block" if version == 2 else "SwinTransformerBlock"
    if any(_name(b) != block_name or _name(b.mlp) != "Mlp" for b in blocks):
        return "timm Swin with custom blocks is not in the analytic Swin"
    for index, layer in enumerate(model.layers):
        merge = layer.downsample
        if (index == 0) != (_name(merge) == "Identity") or (index and merge.out_dim != 2 * merge.dim):
            return "timm Swin stages that do not double the width are not in the analytic Swin"
    for block in blocks:
        attn, dim = block.attn, block.norm1.normalized_shape[0]
        if attn.qkv.out_features != 3 * dim or attn.proj.bias is None:
            return "timm Swin with a custom head width or no projection bias is not in the analytic Swin"
    return None


def timm_swin(model: Any, img_size: tuple[int, int] | None) -> Derived:
    """timm SwinTransformer and SwinTransformerV2 (not swinv2_cr, a different block)."""
    version = 2 if _name(model) == "SwinTransformerV2" else 1
    patch = model.patch_embed
    built = tuple(patch.img_size)
    if getattr(patch, "dynamic_img_pad", False) or _name(patch.norm) != "LayerNorm":
        return None, "timm Swin with a padded or unnormalised patch embedding is not in the analytic Swin"
    blocks = [b for layer in model.layers for b in layer.blocks]
    reason = _timm_swin_issue(model, version, blocks)
    if reason:
        return None, reason
    first = [layer.blocks[0] for layer in model.layers]
    if version == 1:
        qkv_bias, k_bias = blocks[0].attn.qkv.bias is not None, True
    else:
        qkv_bias = blocks[0].attn.q_bias is not None
        k_bias = not qkv_bias
    ratio = _mlp_ratio([(b.mlp.fc1.in_features, b.mlp.fc1.out_features) for b in blocks])
    if ratio is None:
        return None, "timm Swin MLP widths differ from int(C * mlp_ratio)"
    head = model.head
    if _name(head.global_pool) != "SelectAdaptivePool2d" or head.global_pool.pool_type != "avg":
        return None, f"timm Swin pooling {model.global_pool!r} is not in the analytic Swin"
    spec = _stage_windows(
        dict(
            name="timm",
            img_size=built,
            patch_size=patch.proj.kernel_size[0],
            in_chans=patch.proj.in_channels,
            embed_dim=patch.proj.out_channels,
            depths=tuple(len(layer.blocks) for layer in model.layers),
            num_heads=tuple(b.attn.num_heads for b in first),
            mlp_ratio=ratio,
            qkv_bias=qkv_bias,
            k_bias=k_bias,
            version=version,
            num_classes=_classes(head.fc),
        ),
        [tuple(b.window_size) for b in first],
        clamps=True,
    )
    if isinstance(spec, str):
        return None, spec
    return spec, None


_NORMS = {"LayerNorm", "LayerNorm2d"}


def _timm_convnext_stem_issue(stem: list[Any]) -> str | None:
    if len(stem) != 2 or _name(stem[0]) != "Conv2d" or stem[0].kernel_size[0] != stem[0].stride[0]:
        return "timm ConvNeXt with an overlapping stem is not in the analytic ConvNeXt"
    if stem[0].bias is None:
        return "timm ConvNeXt without convolution biases is not in the analytic ConvNeXt"
    if _name(stem[1]) not in _NORMS:
        return f"timm ConvNeXt with {_name(stem[1])} is not in the analytic ConvNeXt"
    return None


def _timm_convnext_block_issue(block: Any) -> str | None:
    if _name(block) != "ConvNeXtBlock" or _name(block.shortcut) != "Identity":
        return "timm ConvNeXt with custom or strided blocks is not in the analytic ConvNeXt"
    conv = block.conv_dw
    if conv.stride[0] != 1 or conv.dilation[0] != 1:
        return "timm ConvNeXt with a reduced output stride (dilation) is not in the analytic ConvNeXt"
    if _name(block.norm) not in _NORMS or conv.bias is None:
        return f"timm ConvNeXt block with {_name(block.norm)} or no bias is not in the analytic ConvNeXt"
    if _name(block.mlp) not in ("Mlp", "GlobalResponseNormMlp") or block.mlp.fc1.bias is None:
        return f"timm ConvNeXt MLP {_name(block.mlp)} is not in the analytic ConvNeXt"
    return None


def _timm_convnext_downsample_issue(stages: Any) -> str | None:
    for index, stage in enumerate(stages):
        down = stage.downsample
        if (index == 0) != (_name(down) == "Identity"):
            return "timm ConvNeXt downsampling layout is not in the analytic ConvNeXt"
        if index and (down[1].kernel_size[0] != 2 or down[1].stride[0] != 2 or down[1].bias is None):
            return "timm ConvNeXt with dilated or unbiased downsampling is not in the analytic ConvNeXt"
    return None


def _timm_convnext_head_issue(model: Any) -> str | None:
    head = model.head
    if _name(head) == "NormMlpClassifierHead":
        if _name(head.pre_logits) != "Identity":
            return "timm ConvNeXt with an MLP head (head_hidden_size) is not in the analytic ConvNeXt"
        head_norm = head.norm
    else:
        head_norm = model.norm_pre
    if _name(head_norm) not in _NORMS or head.global_pool.pool_type != "avg":
        return "timm ConvNeXt head without a LayerNorm and average pool is not in the analytic ConvNeXt"
    return None


def timm_convnext(model: Any, img_size: tuple[int, int] | None) -> Derived:
    """timm ConvNeXt v1/v2 with the patch stem, LayerNorms and a plain (norm, pool, fc) head."""
    if img_size is None:
        return None, "a ConvNeXt spec needs the input size"
    stem = list(model.stem)
    reason = _timm_convnext_stem_issue(stem)
    if reason:
        return None, reason
    blocks = [b for s in model.stages for b in s.blocks]
    reason = next(filter(None, map(_timm_convnext_block_issue, blocks)), None) or _timm_convnext_downsample_issue(model.stages)
    if reason:
        return None, reason
    kernels = {b.conv_dw.kernel_size[0] for b in blocks}
    scales = {b.gamma is not None for b in blocks}
    grns = {_name(b.mlp) == "GlobalResponseNormMlp" for b in blocks}
    if len(kernels) != 1 or len(scales) != 1 or len(grns) != 1:
        return None, "timm ConvNeXt with per-stage block variants is not in the analytic ConvNeXt"
    ratio = _mlp_ratio([_widths(b.mlp.fc1) for b in blocks])
    if ratio is None:
        return None, "timm ConvNeXt MLP widths differ from int(C * mlp_ratio)"
    reason = _timm_convnext_head_issue(model)
    if reason:
        return None, reason
    head = model.head
    return (
        ConvNeXtSpec(
            name="timm",
            img_size=img_size,
            in_chans=stem[0].in_channels,
            patch_size=stem[0].kernel_size[0],
            depths=tuple(len(s.blocks) for s in model.stages),
            dims=tuple(s.blocks[0].conv_dw.in_channels for s in model.stages),
            kernel_size=kernels.pop(),
            mlp_ratio=ratio,
            layer_scale=scales.pop(),
            grn=grns.pop(),
            num_classes=_classes(head.fc),
        ),
        None,
    )
