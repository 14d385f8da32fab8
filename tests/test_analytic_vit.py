"""The ViT formulas term by term on tiny specs counted by hand (issue 35: mutation testing found
the variants' terms untested). Every expected number is worked out in the comments from the
layer shapes, never read back from vitbench.analytic.vit.

Shared shapes: 8x8 image (or 8x12), patch 4 -> a 2x2 grid, N = 4 patches; C = 3 channels, so a
patch holds C P^2 = 48 values; d = 8, h = 2 heads of d_h = 4, m = 16 (ratio 2), L = 2, K = 5.
"""

from __future__ import annotations

import pytest

from vitbench.analytic import vit
from vitbench.specs import ViTSpec

TINY = dict(img_size=8, patch_size=4, in_chans=3, embed_dim=8, depth=2, num_heads=2, mlp_ratio=2.0, num_classes=5)


def spec(**changes) -> ViTSpec:
    return ViTSpec(**{**TINY, **changes})


def test_plain_tiny_vit_params_by_hand():
    s = spec()  # class token: n = 5
    assert vit.patch_embed_params(s) == 8 * 48 + 8 == 392
    assert vit.cls_token_params(s) == 8
    assert vit.pos_embed_params(s) == 5 * 8
    # 2 LayerNorms 2*2*8 = 32; qkv 3*8*8 + 3*8 = 216; proj 64 + 8 = 72; fc1 8*16 + 16 = 144;
    # fc2 16*8 + 8 = 136
    assert vit.block_params(s) == {"norms": 32, "qkv": 216, "attn_proj": 72, "mlp_fc1": 144, "mlp_fc2": 136}
    assert vit.head_params(s) == 16 + 8 * 5 + 5 == 61
    assert vit.params(s) == 392 + 8 + 40 + 2 * 600 + 61 == 1701


def test_plain_tiny_vit_macs_by_hand():
    s = spec()
    # patch 4*8*48 = 1536; per layer qkv 5*8*24 = 960, scores = values = 2*5^2*4 = 200,
    # proj 5*8^2 = 320, fc1 = fc2 = 5*8*16 = 640; head 8*5 = 40 (one pooled token)
    assert vit.macs_by_component(s) == {
        "patch_embed": 1536, "qkv": 2 * 960, "attn_scores": 2 * 200, "attn_values": 2 * 200,
        "attn_proj": 2 * 320, "mlp_fc1": 2 * 640, "mlp_fc2": 2 * 640, "head": 40,
    }
    assert sum(vit.macs_by_component(s, batch_size=3).values()) == 3 * (1536 + 2 * 2960 + 40) == 22_488
    assert vit.attention_matmul_macs_per_layer(s) == 400


def test_variant_terms_by_hand():
    s = spec(mlp="swiglu", layer_scale=True, qk_norm=True, attn_norm=True, mlp_norm=True, proj_bias=False,
             k_bias=False, dist_token=True, reg_tokens=2, mask_token=True, norm_pre=True, patch_bias=False,
             pos_embed_prefix=False)
    # prefix tokens: class + distillation + 2 registers = 4, n = 8; positions skip them: 4
    assert vit.patch_embed_params(s) == 8 * 48            # no bias
    assert vit.cls_token_params(s) == (4 + 1) * 8         # plus the mask token
    assert vit.pos_embed_params(s) == 4 * 8
    # qkv: 3*64 + 2*8 (no key bias); proj 64; swiglu fc1 2*(8*16); fc2 16*8 (no biases);
    # qk-norm 4*d_h = 16; attention norm 2*8; MLP norm 2*16; layer scale 2*8
    assert vit.block_params(s) == {"norms": 32, "qkv": 208, "attn_proj": 64, "mlp_fc1": 256, "mlp_fc2": 128,
                                   "qk_norm": 16, "attn_norm": 16, "mlp_norm": 32, "layer_scale": 16}
    assert vit.head_params(s) == 16 + 2 * (8 * 5 + 5)    # final norm, two classifiers (DeiT)
    assert vit.params(s) == 384 + 40 + 32 + 16 + 2 * 768 + 106 == 2114  # norm_pre 2*8 = 16
    # n = 8: qkv 8*8*24 = 1536, scores = values = 2*64*4 = 512, proj 8*64 = 512,
    # swiglu fc1 2*8*8*16 = 2048, fc2 8*16*8 = 1024; head 2 * 8*5 = 80
    assert vit.macs_by_component(s) == {
        "patch_embed": 1536, "qkv": 2 * 1536, "attn_scores": 2 * 512, "attn_values": 2 * 512,
        "attn_proj": 2 * 512, "mlp_fc1": 2 * 2048, "mlp_fc2": 2 * 1024, "head": 80,
    }


def test_map_pooling_and_mlp_relative_position_by_hand():
    s = spec(pool="map", rel_pos="mlp", rel_pos_hidden=3, final_norm=False)
    # no class token: n = N = 4; R = (2*2 - 1)^2 = 9 relative offsets
    assert vit.relative_offsets(s) == 9
    assert vit.rel_pos_params(s) == 2 * 3 + 3 + 3 * 2 + 2 == 17       # 2 -> s -> h MLP
    assert vit.block_params(s)["rel_pos"] == 17
    # MAP: latent 8 + q, kv, proj 4*64 + 4*8 + norm 16 + MLP 2*8*16 + 16 + 8 = 592
    assert vit.attn_pool_params(s) == 592
    assert vit.params(s) == 392 + 0 + 4 * 8 + 2 * (600 + 17) + 592 + 45 == 2295
    # per layer (n = 4): qkv 768, scores = values = 128, proj 256, fc1 = fc2 = 512 -> 2304;
    # MAP: 64 + 2*4*64 + 2*4*8 + 64 + 2*8*16 = 960; relative MLP per pass: 2 * 9 * (2*3 + 3*2) = 216
    assert vit.attn_pool_macs(s) == 960
    assert vit.rel_pos_macs(s) == 216
    one, two = vit.macs_by_component(s), vit.macs_by_component(s, batch_size=2)
    assert sum(one.values()) == 1536 + 2 * 2304 + 960 + 40 + 216 == 7360
    assert two["rel_pos"] == 216 and sum(two.values()) == 2 * 7144 + 216      # once per pass, not per image


def test_shared_relative_position_table_by_hand():
    s = spec(rel_pos="table", rel_pos_shared=True)
    # (R + 3 class-token entries) * h = (9 + 3) * 2, once for the model, no MACs
    assert vit.rel_pos_params(s) == 24
    assert "rel_pos" not in vit.block_params(s)
    assert vit.params(s) == 1701 + 24
    assert vit.rel_pos_macs(s) == 0 and "rel_pos" not in vit.macs_by_component(s)
    per_block = spec(rel_pos="table")
    assert vit.params(per_block) == 1701 + 2 * 24
    no_class = spec(rel_pos="table", pool="mean")
    assert vit.rel_pos_params(no_class) == 9 * 2


def test_relative_offsets_of_a_rectangular_grid():
    # 8x12 image, patch 4: 2 rows, 3 columns -> (2*2 - 1) * (2*3 - 1) = 15
    assert vit.relative_offsets(spec(img_size=(8, 12))) == 15


@pytest.mark.parametrize("changes, expected", [
    ({"pos_embed": "learned-2d"}, (2 + 2) * 4),          # row and column tables of width d/2
    ({"pos_embed": "learned-2d", "img_size": (8, 12)}, (2 + 3) * 4),
    ({"pos_embed": "sincos-2d"}, 0),
    ({"pos_embed": "none"}, 0),
    ({"pos_embed_len": 10}, 10 * 8),                     # allocated larger than the 5 tokens
])
def test_position_tables_by_hand(changes, expected):
    assert vit.pos_embed_params(spec(**changes)) == expected


@pytest.mark.parametrize("pool, expected", [("cls", 8 * 5), ("mean", 8 * 5), ("none", 4 * 8 * 5)])
def test_head_macs_by_pooling(pool, expected):
    # pool none classifies every token (no class token: n = 4)
    assert vit.head_macs(spec(pool=pool)) == expected


def test_no_classes_no_head():
    s = spec(num_classes=0)
    assert vit.head_params(s) == 16 and vit.head_macs(s) == 0


def test_elementwise_work_by_hand():
    s = spec()  # n = 5, positions 5
    # layernorm 2 layers * 2 * 5*8 + 8 (final, pooled token); softmax 2 * 2 * 25; gelu 2 * 5*16;
    # residual 2 * 2 * 5*8; positions 5*8
    assert vit.elementwise_by_kind(s, batch_size=3) == {
        "layernorm": 3 * 168, "softmax": 3 * 100, "gelu": 3 * 160, "residual": 3 * 160, "pos_embed": 3 * 40,
        "pool": 0,
    }
    v = spec(mlp="swiglu", layer_scale=True, qk_norm=True, attn_norm=True, mlp_norm=True, norm_pre=True,
             reg_tokens=2, pos_embed_prefix=False, rope=True)
    # n = 7, N = 4: layernorm 2*2*7*8 + 8 + pre 7*8 + 2 * (qk 2*7*8 + attn 7*8) + 2 * (mlp 7*16)
    # = 224 + 8 + 56 + 336 + 224 = 848; layer scale 2*2*7*8; rope 2*2*4*8 (patch tokens); positions 4*8
    out = vit.elementwise_by_kind(v)
    assert out["layernorm"] == 848
    assert out["layer_scale"] == 224 and out["rope"] == 128 and out["pos_embed"] == 32
    assert out["softmax"] == 2 * 2 * 49 and out["gelu"] == 2 * 7 * 16 and out["residual"] == 224
    mean = vit.elementwise_by_kind(spec(pool="mean", pos_embed="sincos-2d", final_norm=False))
    # n = 4: sincos added to the 4 patch tokens, mean pooling reads 4*8
    assert mean["pos_embed"] == 32 and mean["pool"] == 32 and mean["layernorm"] == 2 * 2 * 4 * 8
    assert vit.elementwise_by_kind(spec(pos_embed="none"))["pos_embed"] == 0
    assert vit.elementwise_by_kind(spec(pos_embed="learned-2d"))["pos_embed"] == 4 * 8   # added to the patch tokens
