"""Model families, as the GPU model's validation reports its error bands: ViT-like (plain token
transformers), ResNet-like, ConvNeXt, EfficientNet/MobileNet, other (hierarchical and hybrid
transformers, MLP-mixers, everything else). From the model's name alone (timm's, torchvision's,
or a vitbench preset's), so a prediction row and the published file classify a model alike.
"""

from __future__ import annotations

FAMILIES = ("ViT-like", "ResNet-like", "ConvNeXt", "EfficientNet/MobileNet", "other")

_PREFIXES = {
    "ConvNeXt": ("convnext",),
    "EfficientNet/MobileNet": ("efficientnet", "tf_efficientnet", "mobilenet", "tf_mobilenet", "mnasnet", "tinynet",
                               "fbnet", "lcnet", "mixnet", "tf_mixnet", "spnasnet", "semnasnet", "hardcorenas",
                               "ghostnet", "mobileone", "rexnet", "efficientnet_", "mobilevit", "mobilenetv"),
    "ResNet-like": ("resnet", "resnext", "wide_resnet", "seresnet", "seresnext", "ecaresnet", "skresnet", "resnest",
                    "res2net", "res2next", "gcresnet", "lambda_resnet", "haloregnet", "bat_resnext", "legacy_seresnet",
                    "legacy_seresnext", "ig_resnext", "cspresnet", "cspresnext", "dpn", "densenet", "vgg", "repvgg",
                    "dla", "tresnet", "regnet", "nf_resnet", "nf_regnet", "resnetrs", "resnetv2", "gernet", "resnetaa",
                    "resnetblur", "seresnextaa", "cs3", "darknet", "cspdarknet", "selecsls", "hrnet", "inception",
                    "xception", "legacy_xception", "senet", "legacy_senet", "botnet", "sebotnet", "eca_", "halonet",
                    "lambda_", "skresnext", "wide_", "bat_", "nfnet", "dm_nfnet", "eca_nfnet"),
    "ViT-like": ("vit", "deit", "beit", "eva", "flexivit", "samvit", "cait", "test_vit", "aimv2", "naflexvit",
                 "vitamin", "xcit", "vit_"),
}


def family(model: str) -> str:
    """The family of a model name: ``timm:convnext_tiny.fb_in1k`` -> 'ConvNeXt'."""
    name = str(model).split(":", 1)[-1].split(".")[0].split("+")[0].lower()
    if name.startswith(("vit-", "mnist-vit", "cifar-vit", "deit-")) or name in ("vit",):
        return "ViT-like"
    for group in ("ConvNeXt", "EfficientNet/MobileNet", "ResNet-like", "ViT-like"):
        if name.startswith(_PREFIXES[group]):
            return group
    return "other"


__all__ = ["FAMILIES", "family"]
