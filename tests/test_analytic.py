"""Analytic counts against values computed by hand (in comments) and against built modules."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vitbench.analytic import complexity, params
from vitbench.analytic import vit as vit_formulas
from vitbench.presets import list_presets, resolve
from vitbench.specs import ViTSpec


def module_params(spec) -> int:
    from vitbench.models import build_meta

    return sum(p.numel() for p in build_meta(spec).parameters())


@pytest.mark.parametrize("preset", [p.name for p in list_presets()])
@pytest.mark.slow
def test_params_equal_built_module(preset):
    spec = resolve(preset)
    assert params(spec) == module_params(spec)


@pytest.mark.parametrize("name", ["resnet18", "resnet34", "resnet50", "resnet101", "resnet152"])
def test_resnet_params_equal_torchvision(name):
    import torch
    import torchvision

    with torch.device("meta"):
        reference = getattr(torchvision.models, name)()
    assert params(resolve(name)) == sum(p.numel() for p in reference.parameters())


def test_vit_b16_by_hand():
    spec = resolve("vit-b/16")
    # d = 768, n = 197, m = 3072, L = 12, K = 1000, C P^2 = 768
    # patch 768*768 + 768 = 590,592; cls 768; pos 197*768 = 151,296
    # block: 2 LN 4*768 = 3,072; qkv 3*768^2 + 3*768 = 1,771,776; proj 768^2 + 768 = 590,592;
    #        fc1 768*3072 + 3072 = 2,362,368; fc2 3072*768 + 768 = 2,360,064 -> 7,087,872
    # head: LN 1,536 + 768*1000 + 1000 = 770,536
    # total 590,592 + 768 + 151,296 + 12 * 7,087,872 + 770,536 = 86,567,656
    assert params(spec) == 86_567_656
    c = complexity(spec)
    # per layer: qkv 197*768*2304 = 348,585,984; scores = values = 197^2*768 = 29,805,312;
    # proj 197*768^2 = 116,195,328; fc1 = fc2 = 197*768*3072 = 464,781,312 -> 1,453,954,560
    # 12 layers 17,447,454,720 + patch 196*768*768 = 115,605,504 + head 768,000
    assert c.macs_by_component["attn_scores"] == 12 * 29_805_312
    assert c.macs == 17_563_828_224
    assert c.flops == 2 * 17_563_828_224
    assert c.tokens == 197


def test_cifar_vit_patch4_by_hand():
    spec = resolve("cifar-vit/4")
    # d=512, n=65, m=2048, L=6: per layer qkv 65*512*1536 = 51,118,080; scores = values =
    # 65^2*512 = 2,163,200; proj 65*512^2 = 17,039,360; fc1 = fc2 = 65*512*2048 = 68,157,440
    # -> 208,798,720; x6 = 1,252,792,320; patch 64*512*48 = 1,572,864; head 512*2 = 1,024
    assert complexity(spec).macs == 1_254_366_208
    # the notebook reports these parameter counts (“Vision Transformers: From Theory to Practice”)
    assert [params(resolve(f"cifar-vit/{p}")) for p in (4, 8, 16)] == [18_975_234, 19_024_386, 19_313_154]


def test_resnet50_by_hand_totals():
    c = complexity(resolve("resnet50"))
    # stem: 112*112*64*3*49 = 118,013,952; classifier 2048*1000 = 2,048,000
    assert c.macs_by_component["stem"] == 118_013_952
    assert c.macs_by_component["classifier"] == 2_048_000
    assert c.macs == 4_089_184_256  # the widely quoted "4.09 G" (a MAC count)
    assert c.params == 25_557_032


def test_small_models_of_the_documents():
    # slides' ViT: patch 48*256+256 = 12,544; cls 256; pos 65*256 = 16,640;
    # block 2*512 + (3*256^2 + 768) + (256^2 + 256) + (256*512 + 512) + (512*256 + 256) = 527,104
    # head LN 512 + 256*10 + 10 = 3,082 -> 12,544 + 256 + 16,640 + 6 * 527,104 + 3,082 = 3,195,146
    assert params(resolve("slides-vit")) == 3_195_146  # "3.2 M", 12.781 MB in fp32
    # slides' CNN: convs 896 + 18,496 + 73,856 + 147,584 + 295,168 + 590,080, BN 128+256+512,
    # FC 4,195,328 + 524,800 + 5,130 -> 5,852,234 ("5.9 M", 23.409 MB)
    assert params(resolve("slides-cnn")) == 5_852_234
    # MNIST ViT: linear 16*64+64 = 1,088; cls 64; 65 positions * 64 = 4,160;
    # block (one shared LN) 128 + 12,288+192 + 4,096+64 + 8,192+128 + 8,192+64 = 33,344; x3;
    # head 128 + 650 -> 106,122 ("106 K", 0.424 MB)
    assert params(resolve("mnist-vit")) == 106_122
    # chapter's small ResNet: 1,728 + 128 + 147,968 + 525,568 + 2,099,712 + 2,570 = 2,777,674
    assert params(resolve("chapter-resnet-small")) == 2_777_674


def test_attention_share_and_elementwise_kept_apart():
    c = complexity(resolve("vit-b/16"))
    assert c.attention_matmul_share == pytest.approx(2 * 12 * 29_805_312 / 17_563_828_224)
    assert c.elementwise_ops > 0
    assert c.macs == sum(c.macs_by_component.values())  # element-wise work not in MACs


def test_a_cnns_attention_is_zero_and_a_record_has_every_component():
    from vitbench.analytic import Complexity
    from vitbench.specs import PlainCNNSpec

    # a plain CNN on 1 x 8 x 8 (3x3 conv to 2 channels: 2 x 64 x 9 = 1,152 MACs; linear 32 -> 5:
    # 160; linear 5 -> 3: 15): no attention matmuls, so none of its MACs are attention's
    spec = PlainCNNSpec(img_size=(8, 8), in_chans=1, num_classes=3, stages=((2,),), fc_dims=(5,))
    c = complexity(spec)
    assert (c.macs, c.attention_matmul_macs, c.attention_matmul_share) == (1_152 + 160 + 15, 0, 0.0)
    record = complexity(resolve("vit-b/16"), 2).as_record()
    # one macs_<component> column per component, each the batch's MACs of that component
    assert record["macs_attn_scores"] == record["macs_attn_values"] == 2 * 12 * 29_805_312
    assert sum(v for k, v in record.items() if k.startswith("macs_")) == record["macs"] == 2 * 17_563_828_224
    # a record of no work (the guard against dividing by zero MACs)
    empty = Complexity(spec=spec, batch_size=1, params=0, macs=0, macs_by_component={}, elementwise_by_kind={})
    assert empty.attention_matmul_share == 0.0
    # frozen, and hashable although its per-component dicts are not: equal counts are one set element
    assert len({complexity(spec), complexity(spec)}) == 1


def test_an_identity_record_is_the_rows_identity_then_its_analytic_figures():
    from vitbench.analytic.identity import identity_record
    from vitbench.errors import SpecError
    from vitbench.specs.target import Target

    # 32 x 32 image, 16 x 16 patches: N = 4, n = 5 (class token), d = 8, L = 2, m = 32, K = 1000.
    # params: patch 3 x 256 x 8 + 8 = 6,152; class 8; positions 5 x 8 = 40; a block: norms 32,
    # qkv 8 x 24 + 24 = 216, proj 72, fc1 288, fc2 264 = 872, twice 1,744; final norm 16;
    # head 8,000 + 1,000: 16,960. MACs an image: patch 4 x 768 x 8 = 24,576; a layer qkv 960 +
    # scores 200 + values 200 + proj 320 + fc1 1,280 + fc2 1,280 = 4,240, twice 8,480; head 8,000:
    # 41,056, three images 123,168.
    spec = ViTSpec(img_size=(32, 32), patch_size=16, embed_dim=8, depth=2, num_heads=2)
    target = Target(name="tiny", source="spec", input_size=(3, 32, 32), spec=spec, overrides=(("depth", 2),))
    record = identity_record(target, 3)
    assert list(record)[:6] == ["model", "source", "kind", "img_size", "patch_size", "batch_size"]
    assert "spec_key" not in record and "overrides" not in record   # rows matched by model (issue 31)
    assert (record["model"], record["kind"], record["img_size"], record["batch_size"]) == ("tiny", "vit", 32, 3)
    assert (record["tokens"], record["params"], record["macs"], record["flops"]) == (5, 16_960, 123_168, 246_336)
    assert record["macs_head"] == 3 * 8_000
    # no formula: the identity with empty figures
    bare = identity_record(Target(name="mine", source="py", input_size=(3, 32, 32), analytic_note="a module"), 2)
    assert bare == {"model": "mine", "source": "py", "kind": "module", "img_size": 32, "patch_size": None,
                    "batch_size": 2, "tokens": None, "params": None, "macs": None, "flops": None,
                    "attn_matmul_share": None, "elementwise_ops": None}
    with pytest.raises(SpecError, match="batch_size"):
        identity_record(target, 0)


def test_batch_scales_macs_not_params():
    spec = resolve("vit-s/16")
    one, eight = complexity(spec, 1), complexity(spec, 8)
    assert eight.macs == 8 * one.macs and eight.params == one.params


def test_position_embedding_variants():
    base = resolve("ablation-vit")  # 32 px, patch 8 -> 4x4 grid, d=256, 17 tokens
    assert vit_formulas.pos_embed_params(base) == 17 * 256
    assert vit_formulas.pos_embed_params(resolve("ablation-vit-pos2d")) == (4 + 4) * 128
    assert vit_formulas.pos_embed_params(resolve("ablation-vit-nopos")) == 0
    mean = resolve("ablation-vit-meanpool")
    assert mean.tokens == 16 and vit_formulas.cls_token_params(mean) == 0


vit_specs = st.builds(
    lambda heads, head_dim, depth, patch, grid_h, grid_w, ratio, pool, pos, patch_embed, qkv_bias, final_norm, norms, chans, classes: ViTSpec(
        img_size=(patch * grid_h, patch * grid_w),
        patch_size=patch,
        in_chans=chans,
        embed_dim=heads * head_dim,
        depth=depth,
        num_heads=heads,
        mlp_ratio=ratio,
        num_classes=classes,
        pool=pool,
        pos_embed=pos,
        patch_embed=patch_embed,
        qkv_bias=qkv_bias,
        final_norm=final_norm,
        norms_per_block=norms,
    ),
    heads=st.integers(1, 6),
    head_dim=st.sampled_from([4, 8, 12, 16]),
    depth=st.integers(1, 4),
    patch=st.integers(1, 8),
    grid_h=st.integers(1, 5),
    grid_w=st.integers(1, 5),
    ratio=st.sampled_from([0.5, 1.0, 2.0, 4.0]),
    pool=st.sampled_from(["cls", "mean"]),
    pos=st.sampled_from(["learned-1d", "learned-2d", "sincos-2d", "none"]),
    patch_embed=st.sampled_from(["conv", "linear"]),
    qkv_bias=st.booleans(),
    final_norm=st.booleans(),
    norms=st.sampled_from([1, 2]),
    chans=st.integers(1, 4),
    classes=st.integers(1, 20),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vit_specs)
def test_random_vit_params_equal_module(spec):
    assert params(spec) == module_params(spec)


def test_convnext_t_elementwise_work_worked_by_hand():
    from vitbench.analytic.convnext import elementwise_by_kind
    from vitbench.specs.convnext import ConvNeXtSpec

    # ConvNeXt-T at 224: stages of 56^2, 28^2, 14^2, 7^2 positions, 96/192/384/768 channels, 3/3/9/3 blocks
    n = [56 * 56, 28 * 28, 14 * 14, 7 * 7]
    c, depth = [96, 192, 384, 768], [3, 3, 9, 3]
    blocks = sum(d * p * ch for d, p, ch in zip(depth, n, c))
    layernorm = n[0] * c[0] + blocks + sum(n[i] * c[i] for i in range(3)) + c[3]  # stem, blocks, downsamples, head
    assert elementwise_by_kind(ConvNeXtSpec()) == {
        "layernorm": layernorm, "gelu": sum(d * p * 4 * ch for d, p, ch in zip(depth, n, c)), "residual": blocks,
        "layer_scale": blocks, "pool": n[3] * c[3]}
    assert layernorm == 2_973_696


def test_swin_t_elementwise_work_worked_by_hand():
    from vitbench.analytic.swin import elementwise_by_kind
    from vitbench.specs.swin import SwinSpec

    # Swin-T at 224: 56^2, 28^2, 14^2, 7^2 tokens (7 x 7 windows, no padding), 96/192/384/768
    # channels, 2/2/6/2 blocks, 3/6/12/24 heads, MLP 4C; merging layer-norms 4 C_{i-1} a token
    n, c = [3136, 784, 196, 49], [96, 192, 384, 768]
    depth, heads = [2, 2, 6, 2], [3, 6, 12, 24]
    per_block = sum(d * 2 * p * ch for d, p, ch in zip(depth, n, c))  # two norms, two residuals a block
    merging = sum(n[i] * 4 * c[i - 1] for i in range(1, 4))
    assert elementwise_by_kind(SwinSpec()) == {
        "layernorm": n[0] * c[0] + per_block + merging + n[3] * c[3],
        "softmax": sum(d * h * p * 49 for d, h, p in zip(depth, heads, n)),
        "gelu": sum(d * p * 4 * ch for d, p, ch in zip(depth, n, c)), "residual": per_block, "pool": n[3] * c[3]}
    assert elementwise_by_kind(SwinSpec())["layernorm"] == 3_725_568


def test_a_swin_v2_block_has_query_and_value_biases_only():
    from vitbench.analytic.swin import block_params
    from vitbench.specs.swin import SwinSpec

    c = 96  # stage 0 of Swin-T: 3 C^2 weights, then C + C biases (v1: C + C + C)
    assert block_params(SwinSpec(k_bias=False), 0)["qkv"] == 3 * c * c + 2 * c
    assert block_params(SwinSpec(), 0)["qkv"] == 3 * c * c + 3 * c


def test_a_staged_model_s_entry_is_its_own_component():
    from vitbench.analytic.convnext import macs_by_component
    from vitbench.specs.convnext import ConvNeXtSpec

    # the stem: a 4 x 4 / 4 convolution, 3 -> 96 channels, onto a 56 x 56 map
    assert macs_by_component(ConvNeXtSpec())["stem"] == 56 * 56 * 96 * 3 * 4 * 4 == 14_450_688


def test_resnet18_macs_by_component_per_image_are_flop_counter_modes():
    import torch
    import torchvision
    from torch.utils.flop_counter import FlopCounterMode

    from vitbench.analytic.cnn import macs_by_component

    with torch.device("meta"):
        model = torchvision.models.resnet18()
    with FlopCounterMode(display=False) as counter:
        model(torch.empty(1, 3, 224, 224, device="meta"))
    assert sum(macs_by_component(resolve("resnet18")).values()) == counter.get_total_flops() // 2  # one image
