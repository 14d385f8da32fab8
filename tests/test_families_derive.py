"""Analytic specs derived from torchvision, timm and transformers modules: either exact (analytic
params == the module's, analytic MACs == the counters') or refused with a one-line reason.
Modules are built on the meta device (nothing downloaded, no weights initialised)."""

import pytest
from _lazy import LazyModule
from test_families import TORCHVISION_META

from vitbench.analytic import complexity
from vitbench.counters import count
from vitbench.models.derive import derive_spec

timm = LazyModule("timm")


def meta(factory):
    import torch

    with torch.device("meta"):
        return factory().eval()


def timm_module(name, **kwargs):
    return meta(lambda: timm.create_model(name, pretrained=False, **kwargs))


def input_of(module):
    return tuple(module.pretrained_cfg["input_size"])


def assert_derived_exact(module, source, input_size, counters=("dispatch",)):
    spec, reason = derive_spec(module, source=source, img_size=input_size[1:])
    assert reason is None and spec is not None, reason
    counted = count(module, 1, counters, input_size=input_size)
    analytic = complexity(spec)
    assert counted["module_params"] == analytic.params
    for counter in counters:
        assert counted[f"{counter}_macs"] == analytic.macs, counter
    return spec


# one timm model per mechanism in the default suite; the whole matrix is under -m slow
@pytest.mark.parametrize(
    "name, expected",
    [
        ("deit_tiny_distilled_patch16_224", {"dist_token": True, "tokens": 198}),
        ("vit_small_patch14_reg4_dinov2", {"reg_tokens": 4, "layer_scale": True, "num_classes": 0}),
        ("eva02_tiny_patch14_224", {"rope": True, "mlp": "swiglu", "k_bias": False, "mlp_norm": False}),
        ("swinv2_tiny_window8_256", {"version": 2, "k_bias": False, "window_size": (8,)}),
        ("convnextv2_atto", {"grn": True, "layer_scale": False}),
    ],
)
@pytest.mark.slow
def test_timm_mechanisms_derive_exactly(name, expected):
    module = timm_module(name)
    spec = assert_derived_exact(module, "timm", input_of(module))
    for field, value in expected.items():
        assert getattr(spec, field) == value, field


@pytest.mark.parametrize(
    "source, build, reason",
    [
        ("timm", lambda: timm.create_model("convnext_atto_ols"), "overlapping stem"),
        ("timm", lambda: timm.create_model("vit_small_patch16_rope_mixed_224"), "learned frequencies"),
        ("timm", lambda: timm.create_model("swinv2_cr_tiny_224"), "SwinTransformerV2Cr"),
        ("torchvision", lambda: __import__("torchvision").models.resnext50_32x4d(), "grouped"),
    ],
)
def test_incomplete_derivations_give_a_reason(source, build, reason):
    spec, why = derive_spec(meta(build), source=source, img_size=(224, 224))
    assert spec is None and reason in why and "\n" not in why


def test_an_unseen_extra_module_is_refused_not_miscounted():
    import torch

    module = timm_module("vit_tiny_patch16_224")
    with torch.device("meta"):
        module.blocks[0].adapter = torch.nn.Linear(4, 4)  # never called, but has parameters
    spec, why = derive_spec(module, source="timm", img_size=(224, 224))
    assert spec is None and "parameters" in why


def test_a_vit_counted_at_another_size_is_refused():
    spec, why = derive_spec(timm_module("vit_tiny_patch16_224"), source="timm", img_size=(384, 384))
    assert spec is None and "384" in why


def test_torchvision_swin_derives_exactly():
    import torchvision

    spec = assert_derived_exact(meta(torchvision.models.swin_t), "torchvision", (3, 224, 224))
    assert spec.window_size == (7,) and spec.depths == (2, 2, 6, 2)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TORCHVISION_META))
def test_every_torchvision_size_derives_to_its_spec(name):
    """Derived from torchvision's module = the spec written from the paper's table (whose counts
    equal torchvision's weights metadata, test_families.py)."""
    import dataclasses

    import torchvision

    expected = TORCHVISION_META[name][0]
    spec, reason = derive_spec(meta(getattr(torchvision.models, name)), source="torchvision", img_size=expected.img_size)
    assert reason is None and dataclasses.replace(spec, name=expected.name) == expected


# --- the matrix (slow) --------------------------------------------------------------------------
TIMM_HIERARCHICAL = [
    "swin_tiny_patch4_window7_224", "swin_small_patch4_window7_224", "swin_base_patch4_window7_224",
    "swin_base_patch4_window12_384", "swin_large_patch4_window7_224", "swin_large_patch4_window12_384",
    "swin_s3_tiny_224", "swin_s3_small_224", "swin_s3_base_224",
    "swinv2_tiny_window8_256", "swinv2_tiny_window16_256", "swinv2_small_window8_256",
    "swinv2_small_window16_256", "swinv2_base_window8_256", "swinv2_base_window16_256",
    "swinv2_base_window12_192", "swinv2_base_window12to16_192to256", "swinv2_base_window12to24_192to384",
    "swinv2_large_window12_192", "swinv2_large_window12to16_192to256", "swinv2_large_window12to24_192to384",
    "convnext_atto", "convnext_femto", "convnext_pico", "convnext_nano", "convnext_tiny", "convnext_tiny_hnf",
    "convnext_small", "convnext_base", "convnext_large", "convnext_xlarge", "convnext_xxlarge",
    "convnextv2_atto", "convnextv2_femto", "convnextv2_pico", "convnextv2_nano", "convnextv2_tiny",
    "convnextv2_small", "convnextv2_base", "convnextv2_large", "convnextv2_huge",
]
TIMM_VITS = [
    "vit_tiny_patch16_224", "vit_small_patch16_224", "vit_base_patch16_224", "vit_base_patch32_384",
    "vit_large_patch16_224", "vit_huge_patch14_224", "vit_base_patch16_gap_224", "vit_base_patch16_224_miil",
    "deit_tiny_distilled_patch16_224", "deit_base_distilled_patch16_384", "deit3_small_patch16_224",
    "vit_small_patch14_dinov2", "vit_small_patch14_reg4_dinov2", "vit_giant_patch14_dinov2",
    "vit_giant_patch14_reg4_dinov2", "vit_base_patch16_clip_224", "vit_base_patch16_clip_quickgelu_224",
    "vit_base_patch16_siglip_224", "vit_base_patch16_siglip_gap_224", "vit_so400m_patch14_siglip_224",
    "vit_medium_patch16_reg4_gap_256", "vit_base_patch16_rpn_224",
    "vit_relpos_small_patch16_224", "vit_relpos_base_patch16_cls_224", "vit_relpos_base_patch16_clsgap_224",
    "vit_relpos_base_patch16_rpn_224", "vit_srelpos_small_patch16_224",
    "vit_small_patch16_rope_224", "vit_base_patch16_rope_ape_224", "vit_base_patch16_rope_reg1_gap_256",
    "vit_small_patch16_dinov3", "eva02_tiny_patch14_224", "eva02_small_patch14_336", "eva02_base_patch14_224",
    "eva02_large_patch14_clip_224", "beit_base_patch16_224", "beitv2_base_patch16_224",
]
TIMM_REFUSED = {
    "convnext_atto_rms": "RmsNorm2d",
    "convnext_zepto_rms": "SimpleNorm2d",
    "convnext_large_mlp": "MLP head",
    "vit_base_patch16_xp_224": "ParallelScalingBlock",
    "vit_small_patch16_18x2_224": "ParallelThingsBlock",
    "vit_dlittle_patch16_reg1_gap_256": "DiffAttention",
    "vit_pe_core_base_patch16_224": "prefix tokens",
    "naflexvit_base_patch16_gap": "NaFlexVit",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", TIMM_HIERARCHICAL)
def test_timm_swin_and_convnext_sizes_equal_both_counters(name):
    """Every timm Swin / ConvNeXt size: derived spec == module params == dispatch == fvcore."""
    module = timm_module(name)
    spec, reason = derive_spec(module, source="timm", img_size=input_of(module)[1:])
    assert reason is None, reason
    counted = count(f"timm:{name}", 1, ("dispatch", "fvcore"))
    analytic = complexity(spec)
    assert counted["module_params"] == analytic.params
    assert counted["dispatch_macs"] == counted["fvcore_macs"] == analytic.macs


@pytest.mark.slow
@pytest.mark.parametrize("name", TIMM_VITS)
def test_timm_vits_derive_exactly(name):
    module = timm_module(name)
    assert_derived_exact(module, "timm", input_of(module))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["deit_tiny_distilled_patch16_224", "eva02_tiny_patch14_224",
                                  "vit_srelpos_small_patch16_224", "vit_small_patch16_rope_224",
                                  "vit_small_patch14_reg4_dinov2", "vit_base_patch16_siglip_224"])
def test_timm_vits_equal_fvcore_too(name):
    module = timm.create_model(name, pretrained=False).eval()  # fvcore executes: real storage
    assert_derived_exact(module, "timm", input_of(module), counters=("dispatch", "fvcore"))


@pytest.mark.slow
@pytest.mark.parametrize("name, reason", sorted(TIMM_REFUSED.items()))
def test_timm_refusals(name, reason):
    spec, why = derive_spec(timm_module(name), source="timm", img_size=(224, 224))
    assert spec is None and reason in why


HF_CASES = [
    ("vit", {}),
    ("vit", {"hidden_size": 192, "num_attention_heads": 3, "num_hidden_layers": 2, "qkv_bias": False}),
    ("dinov2", {"num_hidden_layers": 2}),
    ("dinov2", {"use_swiglu_ffn": True, "num_hidden_layers": 2}),
    ("dinov2_with_registers", {"num_hidden_layers": 2}),
    ("clip_vision_model", {"num_hidden_layers": 2}),
    ("siglip_vision_model", {"num_hidden_layers": 2}),
    ("siglip_vision_model", {"num_hidden_layers": 2, "vision_use_head": False}),
    ("swin", {}),
    ("swin", {"image_size": 256, "window_size": 8}),
]


def hf_module(arch, fields):
    from transformers import AutoModel
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    config = CONFIG_MAPPING[arch](**fields)
    size = config.image_size
    return meta(lambda: AutoModel.from_config(config)), (config.num_channels, size, size)


@pytest.mark.slow  # importing transformers alone takes seconds
def test_hf_siglip_derives_exactly():
    pytest.importorskip("transformers")
    module, size = hf_module("siglip_vision_model", {"num_hidden_layers": 1})
    assert assert_derived_exact(module, "hf", size).pool == "map"


@pytest.mark.slow
@pytest.mark.parametrize("arch, fields", HF_CASES)
def test_hf_encoders_equal_both_counters(arch, fields):
    pytest.importorskip("transformers")
    module, size = hf_module(arch, fields)
    spec, reason = derive_spec(module, source="hf", img_size=size[1:])
    assert reason is None, reason
    reference = "hf:" + "+".join([arch, *(f"{k}={v}" for k, v in fields.items())])
    counted = count(reference, 1, ("dispatch", "fvcore"))
    analytic = complexity(spec)
    assert counted["module_params"] == analytic.params
    assert counted["dispatch_macs"] == counted["fvcore_macs"] == analytic.macs
