"""Element-wise work (``elementwise_ops``) counted by hand for tiny models: every term of the
ViT's formula switched on and off, and a CNN's per-layer outputs."""

from __future__ import annotations

import pytest

from vitbench.analytic import complexity
from vitbench.analytic.cnn import elementwise_by_kind as cnn_elementwise
from vitbench.analytic.vit import elementwise_by_kind
from vitbench.specs import PlainCNNSpec, ViTSpec

# 32 x 32 image, 16 x 16 patches: N = 4 patches; d = 8, 2 layers, 2 heads, MLP hidden m = 4 x 8 = 32
TINY = dict(img_size=(32, 32), patch_size=16, embed_dim=8, depth=2, num_heads=2)


def test_tiny_vit_with_a_class_token():
    # n = 5 tokens (4 patches + class), learned 1-d positions over the 5 tokens, final norm:
    # layernorm = 2 layers x 2 x 5 x 8 + 8 (final, on the class token) = 168
    # softmax   = 2 layers x 2 heads x 5 x 5 = 100;  gelu = 2 x 5 x 32 = 320
    # residual  = 2 x 2 x 5 x 8 = 160;  pos_embed = 5 x 8 = 40;  pool (class token) = 0
    counts = elementwise_by_kind(ViTSpec(**TINY))
    assert counts == {"layernorm": 168, "softmax": 100, "gelu": 320, "residual": 160, "pos_embed": 40, "pool": 0}
    assert complexity(ViTSpec(**TINY)).elementwise_ops == 788
    assert complexity(ViTSpec(**TINY), 3).elementwise_ops == 3 * 788


def test_tiny_vit_with_every_extra_term():
    # n = N = 4 tokens (mean pooling, no class token), rotary positions, no position table:
    # layernorm = 2 x 2 x 4 x 8 (blocks) + 8 (final) + 4 x 8 (pre-norm)
    #           + 2 x (2 x 4 x 8 (q, k norms) + 4 x 8 (attention norm)) + 2 x 4 x 32 (MLP norm)
    #           = 128 + 8 + 32 + 192 + 256 = 616
    # softmax = 2 x 2 x 16 = 64;  gelu = 2 x 4 x 32 = 256;  residual = 2 x 2 x 4 x 8 = 128
    # layer_scale = 128;  rope = 2 x 2 x 4 x 8 = 128;  pool = 4 x 8 = 32
    spec = ViTSpec(**TINY, pool="mean", class_token=False, pos_embed="none", rope=True, layer_scale=True,
                   qk_norm=True, attn_norm=True, mlp_norm=True, norm_pre=True)
    counts = elementwise_by_kind(spec, batch_size=2)
    assert counts == {"layernorm": 2 * 616, "softmax": 2 * 64, "gelu": 2 * 256, "residual": 2 * 128,
                      "pos_embed": 0, "pool": 2 * 32, "layer_scale": 2 * 128, "rope": 2 * 128}


@pytest.mark.parametrize("pos_embed, expected", [("sincos-2d", 4 * 8), ("learned-2d", 4 * 8)])
def test_vit_2d_positions_cover_the_patches_only(pos_embed, expected):
    # a 2-d table covers the N = 4 patch tokens, not the class token: 4 x 8
    assert elementwise_by_kind(ViTSpec(**TINY, pos_embed=pos_embed))["pos_embed"] == expected


def test_plain_cnn_counts_every_non_matmul_layers_outputs():
    # 1 x 8 x 8 image; a stage of one 3x3 conv (padding 1) to 2 channels: relu on 2 x 8 x 8 = 128,
    # 2x2 max pool to 2 x 4 x 4 = 32, batchnorm on those 32; a hidden linear layer of 5: relu on 5.
    # Twice for a batch of 2.
    spec = PlainCNNSpec(img_size=(8, 8), in_chans=1, num_classes=3, stages=((2,),), fc_dims=(5,))
    assert cnn_elementwise(spec, batch_size=2) == {"relu": 2 * (128 + 5), "maxpool": 2 * 32, "batchnorm": 2 * 32}
    assert complexity(spec, 2).elementwise_ops == 2 * (133 + 32 + 32)


def test_tiny_resnet_counts_the_residual_adds_and_the_pool():
    from vitbench.specs import ResNetSpec

    # 1 x 8 x 8 image, CIFAR stem (3x3 conv to 2 channels: 2 x 8 x 8 = 128), basic blocks, one per
    # stage, widths 2 and 4. Stem: batchnorm 128, relu 128. Stage 1 (8 x 8 x 2, no shortcut):
    # conv, bn 128, relu 128, conv, bn 128, add 128, relu 128. Stage 2 (stride 2: 4 x 4 x 4 = 64):
    # conv, bn 64, relu 64, conv, bn 64; shortcut 1x1 conv, bn 64; add 64, relu 64.
    # Global average pool: 4 x 1 x 1.
    spec = ResNetSpec(img_size=(8, 8), in_chans=1, num_classes=3, block="basic", layers=(1, 1), widths=(2, 4),
                      stem="cifar", stem_width=2)
    assert cnn_elementwise(spec, batch_size=3) == {
        "batchnorm": 3 * (128 + 2 * 128 + 3 * 64), "relu": 3 * (128 + 2 * 128 + 2 * 64),
        "add": 3 * (128 + 64), "avgpool": 3 * 4}
    assert complexity(spec).elementwise_ops == 576 + 512 + 192 + 4


def test_tiny_convnext_counts_every_stage():
    from vitbench.analytic.convnext import elementwise_by_kind as convnext_elementwise
    from vitbench.specs import ConvNeXtSpec

    # 32 x 32 image, 4 x 4 patches: stage 1 is 8 x 8 (n = 64) of C = 4, MLP m = 16; stage 2 is 4 x 4
    # (n = 16) of C = 8, m = 32; one block each. layernorm: stem 64 x 4 = 256, stage 1 256, the
    # downsampling norm on stage 1's map 256, stage 2 16 x 8 = 128, head 8: 904. gelu 64 x 16 +
    # 16 x 32 = 1,536; residual and layer scale 256 + 128 = 384; pool 16 x 8 = 128.
    spec = ConvNeXtSpec(img_size=(32, 32), patch_size=4, depths=(1, 1), dims=(4, 8), num_classes=3)
    assert convnext_elementwise(spec, batch_size=2) == {
        "layernorm": 2 * 904, "gelu": 2 * 1_536, "residual": 2 * 384, "layer_scale": 2 * 384, "pool": 2 * 128}
    # ConvNeXt V2: global response normalisation over the MLP's hidden map, no layer scale
    v2 = ConvNeXtSpec(img_size=(32, 32), patch_size=4, depths=(2, 1), dims=(4, 8), num_classes=3, grn=True,
                      layer_scale=False)
    # two blocks in stage 1: layernorm 256 + 2 x 256 + 256 + 128 + 8 = 1,160; gelu and grn
    # 2 x 1,024 + 512 = 2,560; residual 2 x 256 + 128 = 640
    assert convnext_elementwise(v2) == {"layernorm": 1_160, "gelu": 2_560, "grn": 2_560, "residual": 640, "pool": 128}
