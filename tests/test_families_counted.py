"""Swin, ConvNeXt and ViT-variant formulas against the built modules: parameters counted from the
module, MACs from both counters (dispatch: FlopCounterMode on meta; fvcore, whose "flop" is a
MAC), exact integers, for torchvision's sizes and random valid configurations."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_families import TORCHVISION_META

from vitbench.analytic import complexity
from vitbench.counters import count
from vitbench.specs import ConvNeXtSpec, SwinSpec, ViTSpec

FAST = ("swin_t", "convnext_tiny")


def assert_exact(spec, batch_size=1, counters=("dispatch",)):
    counted = count(spec, batch_size, counters)
    analytic = complexity(spec, batch_size)
    assert counted["module_params"] == analytic.params
    for counter in counters:
        assert counted[f"{counter}_macs"] == analytic.macs, counter


@pytest.mark.parametrize("name", FAST)
def test_torchvision_size_equals_dispatch(name):
    assert_exact(TORCHVISION_META[name][0])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TORCHVISION_META))
def test_torchvision_size_equals_both_counters(name):
    assert_exact(TORCHVISION_META[name][0], counters=("dispatch", "fvcore"))


@pytest.mark.parametrize("name", ["swin_t", "swin_v2_t", "convnext_tiny"])
def test_builder_is_torchvisions_architecture(name):
    """The spec builds torchvision's module: same state-dict keys and shapes."""
    import torch
    import torchvision

    from vitbench.models import build_model

    spec = TORCHVISION_META[name][0]
    with torch.device("meta"):
        ours = build_model(spec).state_dict()
        theirs = getattr(torchvision.models, name)().state_dict()
    assert {k: tuple(v.shape) for k, v in ours.items()} == {k: tuple(v.shape) for k, v in theirs.items()}


@st.composite
def swin_specs(draw):
    stages = draw(st.integers(1, 4))
    version = draw(st.sampled_from([1, 2]))
    qkv_bias = draw(st.booleans())
    windows = draw(st.lists(st.integers(1, 7), min_size=1, max_size=1) | st.lists(st.integers(1, 7), min_size=stages, max_size=stages))
    return SwinSpec(
        img_size=(draw(st.integers(8, 72)), draw(st.integers(8, 72))),
        patch_size=draw(st.integers(1, 4)),
        in_chans=draw(st.integers(1, 3)),
        embed_dim=4 * draw(st.integers(1, 3)),
        depths=tuple(draw(st.integers(1, 2)) for _ in range(stages)),
        num_heads=tuple(draw(st.sampled_from([1, 2, 4])) for _ in range(stages)),
        window_size=tuple(windows),
        mlp_ratio=draw(st.sampled_from([1.0, 1.5, 2.0, 4.0])),
        qkv_bias=qkv_bias,
        k_bias=True if not qkv_bias or version == 1 else draw(st.booleans()),
        version=version,
        window_clamp=draw(st.booleans()),
        num_classes=draw(st.integers(0, 5)),
    )


@st.composite
def convnext_specs(draw):
    stages = draw(st.integers(1, 4))
    patch = draw(st.integers(1, 4))
    low = patch * 2 ** (stages - 1)
    return ConvNeXtSpec(
        img_size=(draw(st.integers(low, low + 40)), draw(st.integers(low, low + 40))),
        in_chans=draw(st.integers(1, 3)),
        patch_size=patch,
        depths=tuple(draw(st.integers(1, 2)) for _ in range(stages)),
        dims=tuple(draw(st.integers(1, 24)) for _ in range(stages)),
        kernel_size=draw(st.sampled_from([1, 3, 5, 7])),
        mlp_ratio=draw(st.sampled_from([1.0, 2.0, 4.0])),
        layer_scale=draw(st.booleans()),
        grn=draw(st.booleans()),
        num_classes=draw(st.integers(0, 5)),
    )


@st.composite
def vit_variant_specs(draw):
    heads, head_dim = draw(st.integers(1, 3)), draw(st.sampled_from([4, 8]))
    pool = draw(st.sampled_from(["cls", "mean", "none", "map"]))
    dist = pool == "cls" and draw(st.booleans())
    regs = draw(st.integers(0, 2))
    qkv_bias = draw(st.booleans())
    rel_pos = "none" if dist or regs else draw(st.sampled_from(["none", "table", "mlp"]))
    patch = draw(st.sampled_from([4, 8]))
    return ViTSpec(
        img_size=(patch * draw(st.integers(1, 3)), patch * draw(st.integers(1, 3))),
        patch_size=patch,
        embed_dim=heads * head_dim,
        num_heads=heads,
        depth=draw(st.integers(1, 2)),
        mlp_ratio=draw(st.sampled_from([1.0, 2.0, 2.5])),
        num_classes=draw(st.integers(0, 4)),
        pool=pool,
        class_token=True if pool == "cls" else draw(st.sampled_from([None, True, False])),
        dist_token=dist,
        reg_tokens=regs,
        mask_token=draw(st.booleans()),
        pos_embed=draw(st.sampled_from(["learned-1d", "learned-2d", "sincos-2d", "none"])),
        pos_embed_prefix=draw(st.booleans()),
        norm_pre=draw(st.booleans()),
        patch_bias=draw(st.booleans()),
        proj_bias=draw(st.booleans()),
        qkv_bias=qkv_bias,
        k_bias=True if not qkv_bias else draw(st.booleans()),
        qk_norm=draw(st.booleans()),
        attn_norm=draw(st.booleans()),
        mlp=draw(st.sampled_from(["gelu", "swiglu"])),
        mlp_norm=draw(st.booleans()),
        layer_scale=draw(st.booleans()),
        res_post_norm=draw(st.booleans()),
        rope=head_dim % 4 == 0 and draw(st.booleans()),
        rel_pos=rel_pos,
        rel_pos_shared=rel_pos != "none" and draw(st.booleans()),
        rel_pos_hidden=draw(st.sampled_from([4, 16])),
        attention=draw(st.sampled_from(["sdpa", "math"])),
    )


FEW = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MANY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(swin_specs(), st.integers(1, 2))
@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
def test_random_swin_equals_dispatch(spec, batch_size):
    assert_exact(spec, batch_size)


@FEW
@given(convnext_specs(), st.integers(1, 2))
def test_random_convnext_equals_dispatch(spec, batch_size):
    assert_exact(spec, batch_size)


@FEW
@given(vit_variant_specs(), st.integers(1, 2))
def test_random_vit_variant_equals_dispatch(spec, batch_size):
    assert_exact(spec, batch_size)


@pytest.mark.slow
@MANY
@given(st.one_of(swin_specs(), convnext_specs(), vit_variant_specs()), st.integers(1, 3))
def test_random_families_equal_both_counters(spec, batch_size):
    assert_exact(spec, batch_size, counters=("dispatch", "fvcore"))
