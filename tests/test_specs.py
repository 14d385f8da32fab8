import dataclasses

import pytest

from vitbench.errors import SpecError, UnknownModelError
from vitbench.presets import get_preset, resolve
from vitbench.specs import (
    PlainCNNSpec,
    ResNetSpec,
    ViTSpec,
    spec_from_dict,
    spec_key,
    spec_to_dict,
    with_overrides,
)


@pytest.mark.parametrize(
    "changes, field, value",
    [
        ({"patch_size": 7}, "patch_size", 7),  # 7 does not divide 32
        ({"num_heads": 5}, "num_heads", 5),  # 5 does not divide 64
        ({"embed_dim": 0}, "embed_dim", 0),
        ({"depth": -1}, "depth", -1),
        ({"pool": "max"}, "pool", "max"),
        ({"pos_embed": "rope"}, "pos_embed", "rope"),
        ({"dropout": 1.5}, "dropout", 1.5),
        ({"img_size": (32, 0)}, "img_size", (32, 0)),
        ({"mlp_ratio": -2.0}, "mlp_ratio", -2.0),
        ({"norms_per_block": 3}, "norms_per_block", 3),
        ({"pos_embed_len": 3}, "pos_embed_len", 3),  # fewer positions than the 17 tokens
    ],
)
def test_invalid_vit_specs_name_field_and_value(changes, field, value):
    base = dict(img_size=32, patch_size=8, embed_dim=64, depth=2, num_heads=4)
    with pytest.raises(SpecError) as info:
        ViTSpec(**{**base, **changes})
    assert info.value.field == field
    assert info.value.value == value
    assert field in str(info.value) and repr(value) in str(info.value)


def test_invalid_cnn_specs():
    with pytest.raises(SpecError, match="widths"):
        ResNetSpec(layers=(2, 2), widths=(64, 128, 256))
    with pytest.raises(SpecError, match="block"):
        ResNetSpec(block="dense")
    with pytest.raises(SpecError, match="img_size"):
        PlainCNNSpec(img_size=30)  # three 2x2 pools need a multiple of 8


def test_image_size_square_and_rectangular():
    assert ViTSpec(img_size=224).img_size == (224, 224)
    spec = ViTSpec(img_size=(224, 320), patch_size=16)
    assert spec.grid == (14, 20) and spec.num_patches == 280 and spec.tokens == 281
    assert ViTSpec(img_size=32, patch_size=8, embed_dim=64, num_heads=4, pool="mean").tokens == 16


def test_overrides_coerce_text_and_validate():
    spec = resolve("vit-b/16", img_size="384", qkv_bias="false", mlp_ratio="2")
    assert spec.img_size == (384, 384) and spec.qkv_bias is False and spec.mlp_ratio == 2.0
    assert resolve("vit-b/16", img_size="224x320").img_size == (224, 320)
    with pytest.raises(SpecError, match="patch_size"):
        resolve("vit-b/16", img_size="100")  # 16 does not divide 100
    with pytest.raises(SpecError, match="unknown field"):
        resolve("resnet50", patch_size="8")
    with pytest.raises(SpecError, match="depth='x'"):
        resolve("vit-b/16", depth="x")
    with pytest.raises(SpecError, match="qkv_bias"):
        resolve("vit-b/16", qkv_bias="maybe")


def test_unknown_preset_suggests():
    with pytest.raises(UnknownModelError) as info:
        get_preset("vit-b/61")
    assert "vit-b/16" in str(info.value) and "did you mean" in str(info.value)


@pytest.mark.parametrize("alias", ["vit_b_16", "ViT-B/16", "vit_base_patch16_224", "vit-base-16"])
def test_preset_aliases(alias):
    assert get_preset(alias).name == "vit-b/16"


def test_spec_round_trip_and_key():
    for name in ("vit-b/16", "resnet50", "slides-cnn", "mnist-vit", "chapter-resnet-small"):
        spec = get_preset(name).spec
        assert spec_from_dict(spec_to_dict(spec)) == spec
    a = resolve("vit-b/16")
    assert spec_key(a) == spec_key(dataclasses.replace(a, name="other"))
    assert spec_key(a) != spec_key(resolve("vit-b/16", img_size=384))
    assert hash(a) == hash(resolve("vit-b/16"))
    with pytest.raises(SpecError, match="kind"):
        spec_from_dict({"kind": "transformer-xl"})
    with pytest.raises(SpecError, match="bogus"):
        spec_from_dict({"kind": "vit", "bogus": 1})


def test_with_overrides_no_change_returns_same():
    spec = resolve("vit-s/16")
    assert with_overrides(spec) is spec

