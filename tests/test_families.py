"""Swin, ConvNeXt and the ViT variants: specs and formulas against values computed by hand (in
comments) and torchvision's weights metadata. Pure Python: nothing here builds a module."""

import subprocess
import sys

import pytest

from vitbench.analytic import complexity, params
from vitbench.analytic import convnext as convnext_formulas
from vitbench.analytic import swin as swin_formulas
from vitbench.analytic import vit as vit_formulas
from vitbench.errors import SpecError
from vitbench.specs import ConvNeXtSpec, SwinSpec, ViTSpec, spec_from_dict, spec_to_dict, with_overrides

SWIN_T = SwinSpec(name="swin_t")
SWIN_V2_T = SwinSpec(name="swin_v2_t", img_size=256, window_size=(8,), version=2)
CONVNEXT_T = ConvNeXtSpec(name="convnext_tiny")


def test_swin_t_block_by_hand():
    # stage 1: C = 96, h = 3, 7 x 7 windows -> R = 13^2 = 169 offsets, m = 384
    # norms 4*96 = 384; table 169*3 = 507; qkv 3*96^2 + 3*96 = 27,936; proj 96^2 + 96 = 9,312;
    # fc1 96*384 + 384 = 37,248; fc2 384*96 + 96 = 36,960 -> 112,347
    assert sum(swin_formulas.block_params(SWIN_T, 0).values()) == 112_347
    # 56 x 56 map = 64 windows of t = 49 -> T = 3,136: qkv 3*3136*96^2 = 86,704,128;
    # scores = values = 3136*49*96 = 14,751,744; proj 3136*96^2 = 28,901,376;
    # fc1 = fc2 = 3136*96*384 = 115,605,504
    assert swin_formulas.block_macs(SWIN_T, 0) == {
        "qkv": 86_704_128,
        "attn_scores": 14_751_744,
        "attn_values": 14_751_744,
        "attn_proj": 28_901_376,
        "mlp_fc1": 115_605_504,
        "mlp_fc2": 115_605_504,
    }
    # patch embed 96*3*16 + 96 + 2*96 = 4,896; merging into stage 2: 8*96^2 + 8*96 = 74,496
    assert swin_formulas.patch_embed_params(SWIN_T) == 4_896
    assert swin_formulas.merging_params(SWIN_T, 1) == 74_496


def test_swin_v2_block_by_hand():
    # v2 stage 1 (C = 96, h = 3, 8 x 8 windows, R = 15^2 = 225): the table is replaced by the CPB
    # MLP 2*512 + 512 + 512*3 = 3,072 and a logit scale of 3 -> 112,347 - 507 + 3,072 + 3
    assert sum(swin_formulas.block_params(SWIN_V2_T, 0).values()) == 114_915
    # CPB MLP MACs per block and forward pass: 225 * (2*512 + 512*3) = 576,000, batch-independent
    assert swin_formulas.cpb_macs(SWIN_V2_T, 0) == 576_000
    one, four = complexity(SWIN_V2_T, 1), complexity(SWIN_V2_T, 4)
    assert four.macs_by_component["cpb_mlp"] == one.macs_by_component["cpb_mlp"]
    assert four.macs - four.macs_by_component["cpb_mlp"] == 4 * (one.macs - one.macs_by_component["cpb_mlp"])


# torchvision's weights.meta: num_params and _ops (GMACs, 3 decimals) -- an independent reference
TORCHVISION_META = {
    "swin_t": (SWIN_T, 28_288_354, 4.491),
    "swin_s": (SwinSpec(depths=(2, 2, 18, 2)), 49_606_258, 8.741),
    "swin_b": (SwinSpec(embed_dim=128, depths=(2, 2, 18, 2), num_heads=(4, 8, 16, 32)), 87_768_224, 15.431),
    "swin_v2_t": (SWIN_V2_T, 28_351_570, 5.94),
    "swin_v2_s": (SwinSpec(img_size=256, window_size=(8,), version=2, depths=(2, 2, 18, 2)), 49_737_442, 11.546),
    "swin_v2_b": (
        SwinSpec(img_size=256, window_size=(8,), version=2, embed_dim=128, depths=(2, 2, 18, 2), num_heads=(4, 8, 16, 32)),
        87_930_848,
        20.325,
    ),
    "convnext_tiny": (CONVNEXT_T, 28_589_128, 4.456),
    "convnext_small": (ConvNeXtSpec(depths=(3, 3, 27, 3)), 50_223_688, 8.684),
    "convnext_base": (ConvNeXtSpec(depths=(3, 3, 27, 3), dims=(128, 256, 512, 1024)), 88_591_464, 15.355),
    "convnext_large": (ConvNeXtSpec(depths=(3, 3, 27, 3), dims=(192, 384, 768, 1536)), 197_767_336, 34.361),
}


@pytest.mark.parametrize("name", sorted(TORCHVISION_META))
def test_torchvision_sizes_match_weights_metadata(name):
    spec, num_params, ops = TORCHVISION_META[name]
    c = complexity(spec)
    assert c.params == num_params
    assert round(c.macs / 1e9, 3) == ops


def test_torchvision_metadata_table_is_torchvisions():
    """The numbers above are the ones torchvision ships (read, not downloaded)."""
    from torchvision.models import get_model_weights

    for name, (_, num_params, ops) in TORCHVISION_META.items():
        meta = get_model_weights(name).DEFAULT.meta
        assert (meta["num_params"], meta["_ops"]) == (num_params, ops)


def test_convnext_block_by_hand():
    # stage 1 C = 96, k = 7, m = 384: dw 96*49 + 96 = 4,800; LN 192; fc1 37,248; fc2 36,960;
    # layer scale 96 -> 79,296.  MACs at 56 x 56: dw 3136*96*49 = 14,751,744; fc 115,605,504
    assert sum(convnext_formulas.block_params(CONVNEXT_T, 0).values()) == 79_296
    assert convnext_formulas.block_macs(CONVNEXT_T, 0)["dwconv"] == 14_751_744
    # v2 (GRN, no layer scale): + 2*384 - 96
    v2 = with_overrides(CONVNEXT_T, grn=True, layer_scale=False)
    assert sum(convnext_formulas.block_params(v2, 0).values()) == 79_296 + 768 - 96
    assert complexity(v2).macs == complexity(CONVNEXT_T).macs  # GRN and layer scale: no MACs


def test_swin_padding_when_the_map_is_not_a_multiple_of_the_window():
    # 100 x 60 px, P = 4 -> 25 x 15 -> 13 x 8 -> 7 x 4 -> 4 x 2 (merging rounds up);
    # padded to 7-multiples: 28x21 = 588, 14x14 = 196, 7x7 = 49, 7x7 = 49
    spec = SwinSpec(img_size=(100, 60))
    assert [spec.stage_resolution(i) for i in range(4)] == [(25, 15), (13, 8), (7, 4), (4, 2)]
    assert [swin_formulas.padded_tokens(spec, i) for i in range(4)] == [588, 196, 49, 49]
    # timm clamps instead: windows shrink to the map where it is smaller (7x4 and 4x2 maps)
    clamped = with_overrides(spec, window_clamp=True)
    assert [clamped.stage_window(i) for i in range(4)] == [(7, 7), (7, 7), (7, 4), (4, 2)]
    assert [swin_formulas.padded_tokens(clamped, i) for i in range(4)] == [588, 196, 28, 8]


def test_vit_variants_by_hand():
    base = ViTSpec(name="b")  # vit-b/16: 86,567,656 params (test_analytic)
    d = 768
    # DeiT distilled: + d distillation token + d position + second head d*1000 + 1000
    assert params(with_overrides(base, dist_token=True)) == 86_567_656 + d + d + 769_000
    # 4 registers, positions on patches only (timm no_embed_class): + 4d tokens - d position
    regs = with_overrides(base, reg_tokens=4, pos_embed_prefix=False)
    assert params(regs) == 86_567_656 + 4 * d - d and regs.tokens == 201
    # layer scale: 2d per block; qk-norm: 4 d_h = 256 per block; RoPE: nothing
    assert params(with_overrides(base, layer_scale=True)) == 86_567_656 + 12 * 2 * d
    assert params(with_overrides(base, qk_norm=True)) == 86_567_656 + 12 * 256
    assert params(with_overrides(base, rope=True)) == 86_567_656
    assert complexity(with_overrides(base, rope=True)).macs == complexity(base).macs
    # SwiGLU with m = 2048: fc1 2(768*2048 + 2048) + fc2 2048*768 + 768 per block
    swiglu = with_overrides(base, mlp="swiglu", mlp_hidden_dim=2048)
    assert vit_formulas.block_params(swiglu)["mlp_fc1"] == 2 * (768 * 2048 + 2048)
    assert vit_formulas.mlp_fc1_macs(swiglu) == 2 * 197 * 768 * 2048
    # no head: the classifier's 769,000 parameters and 768,000 MACs go
    headless = with_overrides(base, num_classes=0)
    assert params(headless) == 86_567_656 - 769_000
    assert complexity(headless).macs == complexity(base).macs - 768_000


def test_relative_position_bias_by_hand():
    # 14 x 14 grid: R = 27^2 = 729 offsets; table with a class token: (729 + 3) * 12 = 8,784
    table = ViTSpec(rel_pos="table", k_bias=False)
    assert vit_formulas.rel_pos_params(table) == 8_784
    assert complexity(table).macs == complexity(ViTSpec()).macs  # a gather and an add
    # MLP 2 -> 512 -> 12: 3*512 + 512*12 + 12 = 7,692 params; 729 * (2*512 + 512*12) MACs
    mlp = ViTSpec(rel_pos="mlp", pool="mean", pos_embed="none")
    assert vit_formulas.rel_pos_params(mlp) == 7_692
    assert complexity(mlp, 8).macs_by_component["rel_pos"] == 12 * 729 * 7_168  # once per pass
    shared = with_overrides(mlp, rel_pos_shared=True)
    assert params(mlp) - params(shared) == 11 * 7_692


def test_map_pooling_by_hand():
    # SigLIP-B/16 head: latent 768 + q, kv, proj 4*768^2 + 4*768 + norm 1,536 + MLP
    # 2*768*3072 + 3072 + 768 = 7,087,104 params; MACs 768^2 + 2*196*768^2 + 2*196*768
    # + 768^2 + 2*768*3072 = 237,410,304. Independently: timm's vit_base_patch16_siglip_224 and
    # its _gap_ twin differ by 92,884,224 - 85,797,120 params and 17,708,292,096 - 17,470,881,792
    # dispatch-counted MACs, exactly these.
    spec = ViTSpec(pool="map", num_classes=0, class_token=False)
    assert vit_formulas.attn_pool_params(spec) == 7_087_104 == 92_884_224 - 85_797_120
    assert vit_formulas.attn_pool_macs(spec) == 237_410_304 == 17_708_292_096 - 17_470_881_792


@pytest.mark.parametrize(
    "make, field",
    [
        (lambda: SwinSpec(num_heads=(3, 6)), "num_heads"),
        (lambda: SwinSpec(window_size=(7, 7)), "window_size"),
        (lambda: SwinSpec(embed_dim=96, num_heads=(5, 6, 12, 24)), "num_heads"),
        (lambda: SwinSpec(version=3), "version"),
        (lambda: SwinSpec(qkv_bias=False, k_bias=False), "k_bias"),
        (lambda: SwinSpec(num_classes=-1), "num_classes"),
        (lambda: ConvNeXtSpec(dims=(96, 192)), "dims"),
        (lambda: ConvNeXtSpec(kernel_size=4), "kernel_size"),
        (lambda: ConvNeXtSpec(img_size=16), "img_size"),
        (lambda: ViTSpec(pool="cls", class_token=False), "pool"),
        (lambda: ViTSpec(pool="mean", dist_token=True), "dist_token"),
        (lambda: ViTSpec(rope=True, embed_dim=24, num_heads=4), "rope"),
        (lambda: ViTSpec(rel_pos="table", reg_tokens=4), "rel_pos"),
        (lambda: ViTSpec(mlp="geglu"), "mlp"),
        (lambda: ViTSpec(reg_tokens=-1), "reg_tokens"),
    ],
)
def test_invalid_specs_name_field_and_value(make, field):
    with pytest.raises(SpecError) as info:
        make()
    assert info.value.field == field
    assert "\n" not in str(info.value) and str(info.value).startswith(f"{field}=")


@pytest.mark.parametrize("spec", [SWIN_V2_T, with_overrides(CONVNEXT_T, grn=True), ViTSpec(reg_tokens=4, mlp="swiglu")])
def test_new_specs_round_trip_and_take_text_overrides(spec):
    assert spec_from_dict(spec_to_dict(spec)) == spec
    if isinstance(spec, SwinSpec):
        assert with_overrides(spec, window_size="8,8,8,4", version="1").window_size == (8, 8, 8, 4)
    if isinstance(spec, ConvNeXtSpec):
        assert with_overrides(spec, dims="32,64,128,256").dims == (32, 64, 128, 256)


def test_formulas_import_without_torch():
    code = (
        "import sys; import vitbench.analytic as a; from vitbench.specs import SwinSpec, ConvNeXtSpec;"
        "a.complexity(SwinSpec()); a.complexity(ConvNeXtSpec());"
        "assert 'torch' not in sys.modules, 'analytic imported torch'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
