"""One meaning per flag in every command: list-valued spec overrides, strict values, one-line
errors. Expected values are computed by hand in the comments."""

import io
import json

import pandas as pd
import pytest
from _cli import run

from vitbench.specs import ViTSpec, override_combinations, parse_field_value, split_alternatives


def test_img_size_list_is_one_row_per_size_not_a_rectangle(capsys):
    # Before: `--img-size 224,384` was read as one 224x384 image.
    code, out, _ = run(capsys, "analyze", "vit-b/16", "--img-size", "224,384", "--format", "json")
    assert code == 0
    records = json.loads(out)["records"]
    assert [r["img_size"] for r in records] == [224, 384]
    assert [r["tokens"] for r in records] == [197, 577]  # (224/16)^2 + 1, (384/16)^2 + 1


def test_non_square_size_is_hxw(capsys):
    code, out, _ = run(capsys, "analyze", "vit-b/16", "--img-size", "224x320", "--format", "json")
    assert code == 0
    (record,) = json.loads(out)["records"]
    assert record["tokens"] == 14 * 20 + 1


def test_override_lists_multiply(capsys):
    code, out, _ = run(capsys, "analyze", "vit-s/16", "--img-size", "224,384", "--depth", "6,12", "--format", "csv")
    assert code == 0
    frame = pd.read_csv(io.StringIO(out))
    assert len(frame) == 4
    # ViT-S/16 at 224 px (d=384, m=1536, n=197, 1000 classes):
    # patch 384*768+384 = 295,296; cls 384; pos 197*384 = 75,648; head 2*384 + 384*1000+1000 = 385,768
    # block = 4d + (3d^2 + 3d) + (d^2 + d) + (dm + m) + (md + d) = 1,774,464
    # depth 12: 22,050,664 (timm's vit_small_patch16_224); depth 6: 11,403,880
    at_224 = frame[frame["img_size"] == 224].sort_values("params")
    assert at_224["params"].tolist() == [11_403_880, 22_050_664]


def test_list_valued_fields_take_semicolons(capsys):
    code, out, _ = run(capsys, "analyze", "resnet50", "--layers", "2,2,2,2;3,4,6,3", "--format", "json")
    assert code == 0
    params = [r["params"] for r in json.loads(out)["records"]]
    assert params[1] == 25_557_032  # torchvision's resnet50 num_params
    assert params[0] < params[1]


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["analyze", "vit-b/16", "--img-size", "224x"], "img_size='224x'"),
        (["analyze", "vit-b/16", "--img-size", "224,"], "img_size='224,'"),
        (["analyze", "vit-b/16", "--img-size", "x224"], "img_size='x224'"),
        (["analyze", "vit-b/16", "--mlp-ratio", "nan"], "mlp_ratio='nan': must be a finite number"),
        (["analyze", "vit-b/16", "--mlp-ratio", "inf"], "mlp_ratio='inf': must be a finite number"),
        (["analyze", "vit-b/16", "--dropout=-inf"], "dropout='-inf'"),
        (["analyze", "vit-b/16", "--qkv-bias", "maybe"], "must be true or false"),
        (["analyze", "vit-b/16", "--module-table", "-1"], "--module-table"),
        (["analyze", "slides-cnn", "--mlp-ratio", "2"], "mlp_ratio='2': unknown field for plaincnn"),
        (["models", "--filter", "no-such-model"], "--filter='no-such-model': no preset matches"),
    ],
)
def test_bad_values_are_one_line_errors(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vitbench: error:")
    assert needle in lines[0]


def test_conv_stages_is_the_plain_cnn_field_everywhere(capsys):
    # the slides' CNN with one stage fewer: 32 px / 2^2 pools = 8 x 8 x 128 features
    code, out, _ = run(capsys, "analyze", "slides-cnn", "--conv-stages", "32-64,128-128", "--format", "json")
    assert code == 0
    (record,) = json.loads(out)["records"]
    convs = 3 * 32 * 9 + 32 + 32 * 64 * 9 + 64 + 64 * 128 * 9 + 128 + 128 * 128 * 9 + 128
    norms = 2 * 64 + 2 * 128
    fcs = 8 * 8 * 128 * 1024 + 1024 + 1024 * 512 + 512 + 512 * 10 + 10
    assert record["params"] == convs + norms + fcs


def test_parsing_helpers():
    assert parse_field_value(ViTSpec, "img_size", "224") == 224
    assert parse_field_value(ViTSpec, "img_size", " 224 x 320 ") == (224, 320)
    assert split_alternatives("224,384") == ["224", "384"]
    assert split_alternatives("2,2;3,4", list_valued_field=True) == ["2,2", "3,4"]
    with pytest.raises(ValueError):
        split_alternatives("224,,384")
    assert override_combinations({"img_size": [224, 384], "depth": 6}) == [
        {"img_size": 224, "depth": 6},
        {"img_size": 384, "depth": 6},
    ]
    # a tuple is one value (an H x W size), never alternatives
    assert override_combinations({"img_size": (224, 320)}) == [{"img_size": (224, 320)}]


# Spec keys recorded by vitbench 0.1.0 (commit f91cf56, before the ViT spec grew new fields):
# a baseline written then must still match the same model now.
KEYS_RECORDED_BY_0_1_0 = {
    "vit-b/16": '{"attention":"sdpa","attn_dropout":0.0,"depth":12,"dropout":0.0,"embed_dim":768,"final_norm":true,"img_size":[224,224],"in_chans":3,"kind":"vit","mlp_hidden_dim":null,"mlp_ratio":4.0,"norms_per_block":2,"num_classes":1000,"num_heads":12,"patch_embed":"conv","patch_size":16,"pool":"cls","pos_embed":"learned-1d","pos_embed_len":null,"qkv_bias":true}',
    "resnet50": '{"block":"bottleneck","img_size":[224,224],"in_chans":3,"kind":"resnet","layers":[3,4,6,3],"num_classes":1000,"stem":"imagenet","stem_width":64,"widths":[64,128,256,512]}',
    "slides-cnn": '{"batchnorm":true,"fc_dims":[1024,512],"img_size":[32,32],"in_chans":3,"kind":"plaincnn","num_classes":10,"stages":[[32,64],[128,128],[256,256]]}',
    "mnist-vit": '{"attention":"sdpa","attn_dropout":0.0,"depth":3,"dropout":0.1,"embed_dim":64,"final_norm":true,"img_size":[28,28],"in_chans":1,"kind":"vit","mlp_hidden_dim":128,"mlp_ratio":4.0,"norms_per_block":1,"num_classes":10,"num_heads":4,"patch_embed":"linear","patch_size":4,"pool":"cls","pos_embed":"learned-1d","pos_embed_len":65,"qkv_bias":true}',
}


@pytest.mark.parametrize("name", sorted(KEYS_RECORDED_BY_0_1_0))
def test_spec_keys_recorded_by_earlier_versions_still_match(name):
    from vitbench.presets import resolve
    from vitbench.specs import spec_key

    assert spec_key(resolve(name)) == KEYS_RECORDED_BY_0_1_0[name]


def test_a_new_field_at_a_non_default_value_changes_the_key():
    from vitbench.presets import resolve
    from vitbench.specs import spec_key

    base = resolve("vit-b/16")
    assert spec_key(resolve("vit-b/16", reg_tokens=4)) != spec_key(base)
    assert '"reg_tokens":4' in spec_key(resolve("vit-b/16", reg_tokens=4))


def test_optional_booleans_parse_from_text():
    assert parse_field_value(ViTSpec, "class_token", "true") is True
    assert parse_field_value(ViTSpec, "class_token", "false") is False
    assert parse_field_value(ViTSpec, "class_token", "none") is None
