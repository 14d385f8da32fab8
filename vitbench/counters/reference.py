"""Reference models built by their own libraries (torchvision, timm), paired with the vitbench
spec of the same architecture so analytic and traced counts can be compared.

Names: ``torchvision:vit_b_16`` (also vit_b_32, vit_l_16, vit_l_32, vit_h_14, resnet18..152)
and ``timm:<model name>`` for timm VisionTransformers (needs the optional ``timm`` extra).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from vitbench.errors import SpecError
from vitbench.specs import ModelSpec, ViTSpec

TORCHVISION_PRESETS = {
    "vit_b_16": "vit-b/16",
    "vit_b_32": "vit-b/32",
    "vit_l_16": "vit-l/16",
    "vit_l_32": "vit-l/32",
    "vit_h_14": "vit-h/14",
    **{f"resnet{n}": f"resnet{n}" for n in (18, 34, 50, 101, 152)},
}


@dataclass(frozen=True)
class Reference:
    name: str  # e.g. "torchvision:vit_b_16"
    spec: ModelSpec  # the same architecture as a vitbench spec
    layout: str  # module naming scheme: "torchvision" (ViT) or "vitbench"
    build: Callable[[], Any]  # -> nn.Module, constructed on the current default device


def is_reference(name: str) -> bool:
    return isinstance(name, str) and name.split(":", 1)[0] in ("torchvision", "timm") and ":" in name


def get_reference(name: str) -> Reference:
    library, _, model = name.partition(":")
    if library == "torchvision":
        if model not in TORCHVISION_PRESETS:
            raise SpecError("model", name, f"unknown torchvision reference (known: {', '.join(TORCHVISION_PRESETS)})")
        from vitbench.presets import resolve

        spec = resolve(TORCHVISION_PRESETS[model])

        def build():
            import torchvision

            return getattr(torchvision.models, model)()

        return Reference(name, spec, "torchvision" if model.startswith("vit") else "vitbench", build)
    if library == "timm":
        try:
            import timm
        except ImportError:
            raise SpecError("model", name, "needs timm: pip install 'vitbench[timm]'") from None
        if model not in timm.list_models():
            raise SpecError("model", name, "unknown timm model")
        import torch

        with torch.device("meta"):
            probe = timm.create_model(model, pretrained=False)
        return Reference(name, timm_spec(probe, name), "vitbench", lambda: timm.create_model(model, pretrained=False))
    raise SpecError("model", name, "references are torchvision:NAME or timm:NAME")


def timm_spec(model, name: str) -> ViTSpec:
    """The ViTSpec of a standard timm VisionTransformer (CLS or mean pooling, no register tokens)."""
    if not hasattr(model, "blocks") or getattr(model, "num_reg_tokens", 0) or not hasattr(model, "patch_embed"):
        raise SpecError("model", name, "only standard timm VisionTransformers are supported")
    block = model.blocks[0]
    img = tuple(model.patch_embed.img_size)
    return ViTSpec(
        name=name,
        img_size=img,
        patch_size=model.patch_embed.patch_size[0],
        in_chans=model.patch_embed.proj.in_channels,
        embed_dim=model.embed_dim,
        depth=len(model.blocks),
        num_heads=block.attn.num_heads,
        mlp_hidden_dim=block.mlp.fc1.out_features,
        num_classes=model.num_classes,
        pool="cls" if model.global_pool == "token" else "mean",
        qkv_bias=block.attn.qkv.bias is not None,
    )
