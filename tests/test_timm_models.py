"""timm models across families: parameters counted from vitbench's build equal those of the module
timm builds normally; the dispatch counter (FlopCounterMode on meta) equals fvcore (executing the
model with real buffers) exactly; and where an analytic spec is derived, its parameters and MACs
equal both. The full matrix runs under ``-m slow``; a few essential ones by default.
"""

from __future__ import annotations

import pytest

timm = pytest.importorskip("timm")

from vitbench.analytic import complexity  # noqa: E402
from vitbench.counters import count_detailed  # noqa: E402
from vitbench.counters.components import analytic_by_group  # noqa: E402
from vitbench.models.references import resolve  # noqa: E402

#: family -> timm references (DINOv2 at 224 px instead of 518 to keep fvcore's run short)
FAMILIES = {
    "plain ViT": [
        "vit_tiny_patch16_224", "vit_small_patch16_224", "vit_base_patch32_224",
        "vit_base_patch16_clip_224", "vit_medium_patch16_gap_256",
    ],
    "ViT feature extractor": ["vit_small_patch16_224+num_classes=0"],
    "DeiT": ["deit_tiny_distilled_patch16_224", "deit_small_distilled_patch16_224", "deit3_small_patch16_224"],
    "EVA02": ["eva02_tiny_patch14_224", "eva02_small_patch14_224"],
    "DINOv2": ["vit_small_patch14_dinov2+img_size=224", "vit_small_patch14_reg4_dinov2+img_size=224"],
    "SigLIP": ["vit_base_patch16_siglip_224", "vit_base_patch16_siglip_gap_224"],
    "RoPE ViT": ["vit_small_patch16_rope_224", "vit_small_patch16_rope_mixed_224", "vit_medium_patch16_rope_reg1_gap_256"],
    "relpos ViT": ["vit_relpos_small_patch16_224", "vit_relpos_base_patch16_224", "vit_srelpos_small_patch16_224", "beit_base_patch16_224"],
    "Swin": ["swin_tiny_patch4_window7_224", "swinv2_tiny_window8_256", "swinv2_cr_tiny_224"],
    "ConvNeXt": ["convnext_atto", "convnext_tiny", "convnextv2_atto"],
    "CoAtNet / MaxViT": ["coatnet_nano_rw_224", "coatnet_0_rw_224", "maxvit_nano_rw_256"],
    "PVT v2": ["pvt_v2_b0", "pvt_v2_b1"],
    "EfficientNet": ["efficientnet_b0", "tf_efficientnet_b0", "efficientnetv2_rw_t"],
    "RegNet": ["regnetx_002", "regnety_002", "regnetz_005"],
    "other": [
        "resnet18", "mobilenetv3_small_100", "levit_128s", "cait_xxs24_224", "xcit_nano_12_p16_224",
        "mixer_b16_224", "fastvit_t8", "efficientvit_b0", "poolformer_s12", "crossvit_tiny_240",
    ],
}
#: the default run: the relpos crash of issue 11, register tokens, a feature extractor, each cut
#: to two blocks (every kind of module and buffer is still there, at a sixth of the tracing; the
#: full-depth models run under -m slow with the rest of the matrix)
DEFAULT_RUN = [
    "vit_relpos_small_patch16_224+depth=2",
    "vit_small_patch14_reg4_dinov2+img_size=224+depth=2",
    "vit_small_patch16_224+num_classes=0+depth=2",
]
MODELS = [m for models in FAMILIES.values() for m in models]


def test_the_matrix_covers_at_least_30_models_in_every_family_asked_for():
    assert len(MODELS) >= 30
    assert len(set(MODELS)) == len(MODELS)
    assert all(timm.is_model(m.split("+")[0]) for m in MODELS)
    assert all(m.removesuffix("+depth=2") in MODELS for m in DEFAULT_RUN)  # the slow run has them at full depth


def nonzero(groups: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in groups.items() if v}


def _module_params(reference: str) -> int:
    """Parameters of the module timm builds by itself (``timm.create_model``; its own weight
    initialisation skipped on the meta device, which changes no shape), independently of
    vitbench's build."""
    import torch

    name, *pairs = reference.split("+")
    kwargs = {k: int(v) for k, v in (p.split("=") for p in pairs)}
    with torch.device("meta"):
        return sum(p.numel() for p in timm.create_model(name, pretrained=False, **kwargs).parameters())


@pytest.mark.parametrize(
    "reference", DEFAULT_RUN + [pytest.param(m, marks=pytest.mark.slow) for m in MODELS]
)
def test_counted_params_dispatch_fvcore_and_analytic_agree(reference):
    target = resolve(f"timm:{reference}")
    counted = count_detailed(target, activations=False)
    assert counted.module_params == _module_params(reference)
    assert counted.dispatch_macs > 0
    assert counted.dispatch_macs == counted.fvcore_macs
    assert not counted.warnings  # counted on meta: no fallback to running the model
    if target.spec is not None:  # derive_spec claims the model: the formulas must be exact
        analytic = complexity(target.spec)
        assert analytic.params == counted.module_params
        assert analytic.macs == counted.dispatch_macs
        # ... component by component (matched by module path), for both counters
        expected = nonzero(analytic_by_group(analytic.macs_by_component, target.spec, counted.dispatch_by_module))
        assert nonzero(counted.dispatch_by_group) == expected
        assert nonzero(counted.fvcore_by_group) == expected
    else:
        assert target.analytic_note


@pytest.mark.parametrize("reference", ["vit_relpos_small_patch16_224", "beit_base_patch16_224"])
def test_buffers_hold_the_values_timm_computes(reference):
    """Issue 11: fvcore ran on uninitialised storage and crashed with an IndexError on the
    relative position index. The module vitbench traces keeps every buffer as timm computes it
    (parameters alone are left uninitialised)."""
    import torch

    from vitbench.models import build_uninitialized

    ours = dict(build_uninitialized(f"timm:{reference}+depth=1").named_buffers())
    theirs = dict(timm.create_model(reference, pretrained=False, depth=1).named_buffers())
    assert ours.keys() == theirs.keys()
    assert any(not b.is_floating_point() for b in theirs.values())  # an index buffer is there
    for name, buffer in theirs.items():
        assert torch.equal(ours[name], buffer), name
