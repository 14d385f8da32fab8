"""Named model specifications, looked up by name with a "did you mean" hint. No torch import.

Paper ViTs (Dosovitskiy et al. 2021; Ti from DeiT), DeiT, torchvision's ResNets, and every model
in the source documents (vitbench.documents names them by title), each with where it comes from.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace
from typing import Any

from vitbench.documents import cite
from vitbench.errors import UnknownModelError
from vitbench.specs import ModelSpec, PlainCNNSpec, ResNetSpec, ViTSpec, with_overrides


@dataclass(frozen=True)
class Preset:
    name: str
    spec: ModelSpec
    description: str
    source: str


PRESETS: dict[str, Preset] = {}


def register(name: str, spec: ModelSpec, description: str, source: str) -> None:
    if name in PRESETS:
        raise ValueError(f"preset {name!r} registered twice")
    PRESETS[name] = Preset(name, replace(spec, name=name), description, source)


#: (embed_dim, depth, heads) of the paper's ViT sizes; Ti is DeiT's.
VIT_SIZES: dict[str, tuple[int, int, int]] = {
    "ti": (192, 12, 3),
    "s": (384, 12, 6),
    "b": (768, 12, 12),
    "l": (1024, 24, 16),
    "h": (1280, 32, 16),
}

for _size, (_dim, _depth, _heads) in VIT_SIZES.items():
    for _patch in (8, 14, 16, 32):
        register(
            f"vit-{_size}/{_patch}",
            ViTSpec(patch_size=_patch, embed_dim=_dim, depth=_depth, num_heads=_heads),
            f"ViT-{_size.upper() if _size != 'ti' else 'Ti'}/{_patch}, 224 px, 1000 classes",
            "Dosovitskiy et al. 2021, Table 1 (Ti: Touvron et al. 2021); " + cite("003", "variants table"),
        )

for _size in ("ti", "s", "b"):
    _dim, _depth, _heads = VIT_SIZES[_size]
    register(
        f"deit-{_size}/16",
        ViTSpec(patch_size=16, embed_dim=_dim, depth=_depth, num_heads=_heads),
        f"DeiT-{_size.upper() if _size != 'ti' else 'Ti'}/16 (no distillation token), 224 px",
        "Touvron et al. 2021, Table 1",
    )

_RESNET_LAYERS = {
    18: ("basic", (2, 2, 2, 2)),
    34: ("basic", (3, 4, 6, 3)),
    50: ("bottleneck", (3, 4, 6, 3)),
    101: ("bottleneck", (3, 4, 23, 3)),
    152: ("bottleneck", (3, 8, 36, 3)),
}
for _depth_n, (_block, _layers) in _RESNET_LAYERS.items():
    register(
        f"resnet{_depth_n}",
        ResNetSpec(block=_block, layers=_layers),
        f"ResNet-{_depth_n} (torchvision), 224 px, 1000 classes",
        "He et al. 2016; torchvision.models.resnet" + str(_depth_n),
    )

_CIFAR_VIT = ViTSpec(
    img_size=32, embed_dim=512, depth=6, num_heads=8, mlp_ratio=4.0, num_classes=2, dropout=0.1
)
for _patch in (4, 8, 16):
    register(
        f"cifar-vit/{_patch}",
        replace(_CIFAR_VIT, patch_size=_patch),
        f"complexity notebook's CIFAR ViT, patch {_patch}: 32 px, dim 512, depth 6, 8 heads, 2 classes",
        cite("000", "complexity analysis, In [3]"),
    )

_ABLATION_VIT = ViTSpec(
    img_size=32, patch_size=8, embed_dim=256, depth=4, num_heads=8, mlp_ratio=2.0,
    num_classes=10, dropout=0.1,
)
for _suffix, _changes, _what in (
    ("", {}, "baseline (CLS token, learned 1-D positions)"),
    ("-nopos", {"pos_embed": "none"}, "no position embedding"),
    ("-meanpool", {"pool": "mean"}, "mean pooling instead of the CLS token"),
    ("-pos2d", {"pos_embed": "learned-2d"}, "learned 2-D position embedding (row/column halves)"),
):
    register(
        f"ablation-vit{_suffix}",
        replace(_ABLATION_VIT, **_changes),
        f"CIFAR-10 ablation ViT, {_what}: 32 px, patch 8, dim 256, depth 4, 8 heads, MLP 2x",
        cite("000", "ablation study, In [7]-[10]"),
    )

register(
    "slides-vit",
    ViTSpec(
        img_size=32, patch_size=4, embed_dim=256, mlp_hidden_dim=512, depth=6, num_heads=8,
        num_classes=10, patch_embed="linear", dropout=0.2,
    ),
    "slides' CIFAR-10 ViT: embed 256, hidden 512, 8 heads, 6 layers, patch 4 (3.2 M params)",
    cite("001", "hyperparameters slide"),
)
register(
    "slides-cnn",
    PlainCNNSpec(),
    "slides' CIFAR-10 CNN: 6 conv (32-64, 128-128, 256-256), 3 pools, FC 4096-1024-512-10 (5.9 M)",
    cite("001", "CNN - Training slide"),
)
register(
    "chapter-vit-tiny",
    ViTSpec(
        img_size=32, patch_size=4, embed_dim=192, depth=6, num_heads=3, mlp_ratio=4.0,
        num_classes=10, dropout=0.1,
    ),
    "textbook chapter's CIFAR-10 ViT-Tiny: 32 px, patch 4, dim 192, depth 6, 3 heads",
    cite("002", "Exercise 4 solution, class ViTTiny"),
)
register(
    "chapter-resnet-small",
    ResNetSpec(
        img_size=32, num_classes=10, block="basic", layers=(2, 2, 2), widths=(64, 128, 256),
        stem="cifar",
    ),
    "textbook chapter's small CIFAR ResNet: 3x3 stem, 3 stages of 2 basic blocks (64/128/256)",
    cite("002", "Exercise 4 part d, class SmallResNet"),
)
register(
    "mnist-vit",
    ViTSpec(
        img_size=28, patch_size=4, in_chans=1, embed_dim=64, mlp_hidden_dim=128, depth=3,
        num_heads=4, num_classes=10, patch_embed="linear", pos_embed_len=65, norms_per_block=1,
        dropout=0.1,
    ),
    "assignment's MNIST ViT: 28 px, 1 channel, patch 4, embed 64, hidden 128, 4 heads, 3 layers",
    cite("004", "model_kwargs; one LayerNorm per block, 65 positions allocated for 49 patches"),
)
register(
    "tutorial-vit-imagenette",
    ViTSpec(patch_size=32, embed_dim=384, depth=12, num_heads=6, num_classes=10, dropout=0.1,
            attn_dropout=0.1),
    "tutorial's Imagenette ViT: ViT-S/32 at 224 px with 10 classes",
    cite("003", "training section"),
)


def _canonical(name: str) -> str:
    """Accept timm/torchvision-style spellings: ``vit_b_16``, ``ViT-B/16``, ``vit_base_patch16``."""
    text = name.strip().lower()
    sizes = {"tiny": "ti", "small": "s", "base": "b", "large": "l", "huge": "h"}
    match = re.fullmatch(r"(vit|deit)[-_ ]?(ti|s|b|l|h|tiny|small|base|large|huge)[-_/ ]?(?:patch)?(\d+)(?:_224)?", text)
    if match:
        family, size, patch = match.groups()
        return f"{family}-{sizes.get(size, size)}/{patch}"
    match = re.fullmatch(r"resnet[-_ ]?(\d+)", text)
    if match:
        return f"resnet{match.group(1)}"
    return text


def get_preset(name: str) -> Preset:
    """The preset named ``name``.

    Args:
        name: a preset's name, in any of its spellings (``vit-b/16``, ``ViT-B_16``, ``resnet50``).

    Returns:
        The :class:`Preset`: its name, spec, description and source.

    Raises:
        UnknownModelError: no such preset (the closest names suggested).
    """
    key = _canonical(name)
    if key in PRESETS:
        return PRESETS[key]
    suggestions = difflib.get_close_matches(key, PRESETS.keys(), n=3, cutoff=0.6)
    raise UnknownModelError(name, suggestions)


def resolve(name: str, **overrides: Any) -> ModelSpec:
    """The spec of preset ``name`` with field overrides applied.

    Args:
        name: a preset's name (:func:`get_preset`).
        **overrides: spec fields to change (``patch_size=8``; values may be text, ``"8"``).

    Returns:
        The spec, validated.

    Raises:
        UnknownModelError: no such preset.
        SpecError: a field the spec does not have, or a wrong value.
    """
    preset = get_preset(name)
    return with_overrides(preset.spec, **overrides)


def list_presets() -> list[Preset]:
    """Every preset, in the order ``vitbench models`` lists them.

    Returns:
        The :class:`Preset` objects.

    Raises:
        Nothing: the presets are built in.
    """
    return list(PRESETS.values())
