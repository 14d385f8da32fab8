"""Derive a vitbench analytic spec from a module built by torchvision, timm or transformers.

``derive_spec(module, *, source, img_size=None) -> (spec, None) | (None, reason)``: a spec only
when the derivation is complete (every parameter and MAC of the module is covered by the spec's
formulas); otherwise ``None`` and a one-line reason, so callers leave the analytic columns empty
and say why. ``source`` is "torchvision", "timm", "hf" or "py"; ``img_size`` is the input
(height, width) the model is counted at (CNN specs carry it; ViTs take it from the module).

One module per family of sources: ``derive_vit`` (timm VisionTransformer / Distilled / Eva /
RelPos / Beit, torchvision ViT), ``derive_hier`` (Swin and ConvNeXt from torchvision and timm),
``derive_hf`` (transformers ViT, DINOv2, CLIP-vision, SigLIP-vision, Swin); torchvision's ResNets
here. Whatever the family, a spec whose analytic parameter count differs from the module's is
refused (a last guard against a part the derivation did not see).
"""

from __future__ import annotations

from typing import Any

from vitbench.analytic import params
from vitbench.models import derive_hier, derive_vit
from vitbench.models.derive_hf import hf_spec
from vitbench.specs import ModelSpec, ResNetSpec

Derived = tuple[ModelSpec | None, str | None]

#: (source, module class) -> function of ``derive_vit`` (ViT family).
_VITS = {
    ("timm", "VisionTransformer"): "timm_vit",
    ("timm", "VisionTransformerDistilled"): "timm_vit",
    ("timm", "Eva"): "timm_eva",
    ("timm", "VisionTransformerRelPos"): "timm_relpos",
    ("timm", "Beit"): "timm_beit",
    ("torchvision", "VisionTransformer"): "torchvision_vit",
}
#: (source, module class) -> function of ``derive_hier`` (Swin and ConvNeXt).
_HIERARCHICAL = {
    ("torchvision", "SwinTransformer"): "torchvision_swin",
    ("torchvision", "ConvNeXt"): "torchvision_convnext",
    ("timm", "SwinTransformer"): "timm_swin",
    ("timm", "SwinTransformerV2"): "timm_swin",
    ("timm", "ConvNeXt"): "timm_convnext",
}


def derive_spec(module: Any, *, source: str, img_size: tuple[int, int] | None = None) -> Derived:
    """(spec, None) when the module is fully described by a vitbench spec, else (None, reason).

    A derived spec whose analytic parameter count differs from the module's is refused too (a
    last guard against a part the derivation did not see)."""
    spec, reason = _derive(module, source, img_size)
    if spec is None:
        return None, reason
    if img_size is not None and tuple(img_size) != spec.img_size:
        built = "x".join(map(str, spec.img_size))
        return None, f"the module is built for {built} px, not the {img_size[0]}x{img_size[1]} it is counted at"

    counted = sum(p.numel() for p in module.parameters())
    if params(spec) != counted:
        return None, f"the derived {spec.kind} spec has {params(spec)} parameters, the module {counted}"
    return spec, None


def _derive(module: Any, source: str, img_size: tuple[int, int] | None) -> Derived:
    kind = type(module).__name__
    if source == "torchvision" and kind == "ResNet":
        return _torchvision_resnet(module, img_size)
    if (source, kind) in _HIERARCHICAL:
        return getattr(derive_hier, _HIERARCHICAL[source, kind])(module, img_size)
    if (source, kind) in _VITS:
        return derive_vit.derive(_VITS[source, kind], module)
    if source == "hf":
        return hf_spec(module, img_size)
    return None, f"no analytic formula for {source} {kind}"


def _torchvision_resnet(model, img_size) -> Derived:
    if img_size is None:
        return None, "a ResNet's spec needs the input size"
    stages = [model.layer1, model.layer2, model.layer3, model.layer4]
    block = type(stages[0][0]).__name__
    if block not in ("BasicBlock", "Bottleneck"):
        return None, f"ResNet block {block} is not in the analytic ResNet"
    if block == "Bottleneck" and (stages[0][0].conv2.groups != 1 or stages[0][0].conv1.out_channels != 64):
        return None, "grouped or wide bottlenecks (ResNeXt, Wide ResNet) are not in the analytic ResNet"
    return (
        ResNetSpec(
            name="torchvision",
            img_size=img_size,
            in_chans=model.conv1.in_channels,
            num_classes=model.fc.out_features,
            block="basic" if block == "BasicBlock" else "bottleneck",
            layers=tuple(len(s) for s in stages),
        ),
        None,
    )

