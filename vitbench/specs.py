"""Model specifications: frozen, validated, hashable dataclasses. No torch import here.

A spec is the identity of a model configuration. Everything downstream (building the module,
analytic formulas, counters, measurement, result keys) takes a spec.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Union

from vitbench.errors import SpecError

POOLINGS = ("cls", "mean")
POS_EMBEDS = ("learned-1d", "learned-2d", "sincos-2d", "none")
PATCH_EMBEDS = ("conv", "linear")
ATTENTIONS = ("sdpa", "math")
RESNET_BLOCKS = ("basic", "bottleneck")
RESNET_STEMS = ("imagenet", "cifar")


def _positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(name, value, "must be an integer")
    if value <= 0:
        raise SpecError(name, value, "must be a positive integer")


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise SpecError(name, value, f"must be one of {', '.join(choices)}")


def _probability(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
        raise SpecError(name, value, "must be a number in [0, 1)")


def _image_size(value: Any) -> tuple[int, int]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value, value)
    if isinstance(value, list):
        value = tuple(value)
    if not (isinstance(value, tuple) and len(value) == 2):
        raise SpecError("img_size", value, "must be an integer or a (height, width) pair")
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise SpecError("img_size", value, "must be positive integers")
    return value  # type: ignore[return-value]


def _int_tuple(name: str, value: Any) -> tuple[int, ...]:
    if isinstance(value, list):
        value = tuple(value)
    if not isinstance(value, tuple) or not value:
        raise SpecError(name, value, "must be a non-empty sequence of positive integers")
    for v in value:
        _positive(name, v)
    return value


@dataclass(frozen=True)
class ViTSpec:
    """A Vision Transformer: patch embedding, `depth` pre-norm encoder blocks, pooling, head.

    Each block is LN -> multi-head self-attention (fused qkv) -> residual, LN -> MLP -> residual.
    """

    kind: ClassVar[str] = "vit"

    name: str = "vit"
    img_size: tuple[int, int] = (224, 224)
    patch_size: int = 16
    in_chans: int = 3
    embed_dim: int = 768
    depth: int = 12
    num_heads: int = 12
    mlp_ratio: float = 4.0
    #: Explicit MLP hidden width; when set it wins over ``mlp_ratio``.
    mlp_hidden_dim: int | None = None
    num_classes: int = 1000
    pool: str = "cls"
    pos_embed: str = "learned-1d"
    #: Learned 1-D positions allocated (the MNIST assignment allocates 65 for 49 patches);
    #: ``None`` means one per token.
    pos_embed_len: int | None = None
    qkv_bias: bool = True
    patch_embed: str = "conv"
    final_norm: bool = True
    #: 2 = separate LayerNorms before attention and MLP; 1 = one LayerNorm shared by both.
    norms_per_block: int = 2
    dropout: float = 0.0
    attn_dropout: float = 0.0
    #: ``sdpa`` = F.scaled_dot_product_attention; ``math`` = explicit softmax(QK^T / sqrt(d))V.
    attention: str = "sdpa"

    def __post_init__(self) -> None:
        object.__setattr__(self, "img_size", _image_size(self.img_size))
        if isinstance(self.mlp_ratio, int) and not isinstance(self.mlp_ratio, bool):
            object.__setattr__(self, "mlp_ratio", float(self.mlp_ratio))
        for name in ("patch_size", "in_chans", "embed_dim", "depth", "num_heads", "num_classes"):
            _positive(name, getattr(self, name))
        height, width = self.img_size
        for side, extent in (("height", height), ("width", width)):
            if extent % self.patch_size:
                raise SpecError(
                    "patch_size", self.patch_size, f"does not divide the image {side} {extent}"
                )
        if self.embed_dim % self.num_heads:
            raise SpecError(
                "num_heads", self.num_heads, f"does not divide embed_dim {self.embed_dim}"
            )
        if isinstance(self.mlp_ratio, bool) or not isinstance(self.mlp_ratio, float) or self.mlp_ratio <= 0:
            raise SpecError("mlp_ratio", self.mlp_ratio, "must be a positive number")
        if self.mlp_hidden_dim is not None:
            _positive("mlp_hidden_dim", self.mlp_hidden_dim)
        elif self.mlp_hidden == 0:
            raise SpecError("mlp_ratio", self.mlp_ratio, "gives an MLP of width 0")
        _choice("pool", self.pool, POOLINGS)
        _choice("pos_embed", self.pos_embed, POS_EMBEDS)
        _choice("patch_embed", self.patch_embed, PATCH_EMBEDS)
        _choice("attention", self.attention, ATTENTIONS)
        if self.norms_per_block not in (1, 2):
            raise SpecError("norms_per_block", self.norms_per_block, "must be 1 or 2")
        if self.pos_embed in ("learned-2d", "sincos-2d") and self.embed_dim % 2:
            raise SpecError("embed_dim", self.embed_dim, f"must be even for {self.pos_embed}")
        if self.pos_embed == "sincos-2d" and self.embed_dim % 4:
            raise SpecError("embed_dim", self.embed_dim, "must be divisible by 4 for sincos-2d")
        if self.pos_embed_len is not None:
            _positive("pos_embed_len", self.pos_embed_len)
            if self.pos_embed != "learned-1d":
                raise SpecError("pos_embed_len", self.pos_embed_len, "only applies to learned-1d")
            if self.pos_embed_len < self.tokens:
                raise SpecError(
                    "pos_embed_len", self.pos_embed_len, f"is smaller than the {self.tokens} tokens"
                )
        for name in ("dropout", "attn_dropout"):
            _probability(name, getattr(self, name))
        for name in ("qkv_bias", "final_norm"):
            if not isinstance(getattr(self, name), bool):
                raise SpecError(name, getattr(self, name), "must be true or false")

    @property
    def grid(self) -> tuple[int, int]:
        """Patches along height and width."""
        return self.img_size[0] // self.patch_size, self.img_size[1] // self.patch_size

    @property
    def num_patches(self) -> int:
        rows, cols = self.grid
        return rows * cols

    @property
    def tokens(self) -> int:
        """Sequence length n: patches plus the CLS token when pooling by CLS."""
        return self.num_patches + (1 if self.pool == "cls" else 0)

    @property
    def head_dim(self) -> int:
        return self.embed_dim // self.num_heads

    @property
    def mlp_hidden(self) -> int:
        if self.mlp_hidden_dim is not None:
            return self.mlp_hidden_dim
        return int(self.embed_dim * self.mlp_ratio)

    @property
    def patch_dim(self) -> int:
        """Values in one flattened patch: C * P^2."""
        return self.in_chans * self.patch_size**2


@dataclass(frozen=True)
class ResNetSpec:
    """A ResNet: stem, stages of basic or bottleneck blocks, global average pool, linear head.

    ``stem='imagenet'``: 7x7/2 convolution + 3x3/2 max pool (torchvision's ResNet-18..152).
    ``stem='cifar'``: a single 3x3/1 convolution (the textbook chapter's small CIFAR ResNet).
    The first block of every stage after the first downsamples by 2 (on the 3x3 convolution, as
    torchvision's ResNet v1.5); a 1x1 convolution + BatchNorm shortcut wherever shape changes.
    """

    kind: ClassVar[str] = "resnet"

    name: str = "resnet"
    img_size: tuple[int, int] = (224, 224)
    in_chans: int = 3
    num_classes: int = 1000
    block: str = "bottleneck"
    layers: tuple[int, ...] = (3, 4, 6, 3)
    widths: tuple[int, ...] = (64, 128, 256, 512)
    stem: str = "imagenet"
    stem_width: int = 64

    def __post_init__(self) -> None:
        object.__setattr__(self, "img_size", _image_size(self.img_size))
        object.__setattr__(self, "layers", _int_tuple("layers", self.layers))
        object.__setattr__(self, "widths", _int_tuple("widths", self.widths))
        for name in ("in_chans", "num_classes", "stem_width"):
            _positive(name, getattr(self, name))
        _choice("block", self.block, RESNET_BLOCKS)
        _choice("stem", self.stem, RESNET_STEMS)
        if len(self.layers) != len(self.widths):
            raise SpecError(
                "widths", self.widths, f"needs one width per stage ({len(self.layers)} stages)"
            )

    @property
    def expansion(self) -> int:
        return 4 if self.block == "bottleneck" else 1

    @property
    def is_torchvision(self) -> bool:
        """True when torchvision's own ``ResNet`` class builds exactly this network."""
        return (
            self.stem == "imagenet"
            and self.stem_width == 64
            and self.in_chans == 3
            and self.widths == (64, 128, 256, 512)
        )


@dataclass(frozen=True)
class PlainCNNSpec:
    """A VGG-style CNN: stages of [3x3 conv (padding 1) + ReLU] x k, 2x2 max pool, BatchNorm;
    then flatten, hidden linear layers with ReLU, and a linear classifier (the slides' CNN)."""

    kind: ClassVar[str] = "plaincnn"

    name: str = "plaincnn"
    img_size: tuple[int, int] = (32, 32)
    in_chans: int = 3
    num_classes: int = 10
    stages: tuple[tuple[int, ...], ...] = ((32, 64), (128, 128), (256, 256))
    fc_dims: tuple[int, ...] = (1024, 512)
    batchnorm: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "img_size", _image_size(self.img_size))
        stages = self.stages
        if isinstance(stages, list):
            stages = tuple(stages)
        if not isinstance(stages, tuple) or not stages:
            raise SpecError("stages", self.stages, "must be a non-empty list of channel lists")
        object.__setattr__(self, "stages", tuple(_int_tuple("stages", s) for s in stages))
        fc_dims = tuple(self.fc_dims) if isinstance(self.fc_dims, list) else self.fc_dims
        if not isinstance(fc_dims, tuple):
            raise SpecError("fc_dims", self.fc_dims, "must be a list of positive integers")
        for v in fc_dims:
            _positive("fc_dims", v)
        object.__setattr__(self, "fc_dims", fc_dims)
        for name in ("in_chans", "num_classes"):
            _positive(name, getattr(self, name))
        divisor = 2 ** len(self.stages)
        for extent in self.img_size:
            if extent % divisor:
                raise SpecError(
                    "img_size", self.img_size, f"must be divisible by {divisor} ({len(self.stages)} pools)"
                )

    @property
    def flat_features(self) -> int:
        divisor = 2 ** len(self.stages)
        return self.stages[-1][-1] * (self.img_size[0] // divisor) * (self.img_size[1] // divisor)


ModelSpec = Union[ViTSpec, ResNetSpec, PlainCNNSpec]
SPEC_TYPES: dict[str, type] = {cls.kind: cls for cls in (ViTSpec, ResNetSpec, PlainCNNSpec)}


def spec_fields(spec_type: type) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in fields(spec_type)}


def _parse_bool(name: str, text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise SpecError(name, text, "must be true or false")


def parse_field_value(spec_type: type, name: str, value: Any) -> Any:
    """Coerce a value given as text (CLI, sweep file) to the type of the spec field ``name``."""
    known = spec_fields(spec_type)
    if name not in known:
        raise SpecError(
            name,
            value,
            f"unknown field for a {spec_type.kind} model (fields: {', '.join(sorted(known))})",
        )
    if not isinstance(value, str):
        return value
    text = value.strip()
    annotation = str(known[name].type)
    try:
        if name == "img_size":
            parts = text.lower().replace("x", ",").split(",")
            ints = tuple(int(p) for p in parts if p.strip())
            return ints[0] if len(ints) == 1 else ints
        if name == "stages":
            return tuple(tuple(int(c) for c in group.split("-")) for group in text.split(","))
        if annotation.startswith("tuple[int"):
            return tuple(int(p) for p in text.split(",") if p.strip())
        if annotation == "bool":
            return _parse_bool(name, text)
        if annotation.startswith("int"):
            if annotation.endswith("None") and text.lower() in ("none", ""):
                return None
            return int(text)
        if annotation == "float":
            return float(text)
    except ValueError:
        if name == "img_size":
            expected = "image size (an integer, or HxW such as 224x320)"
        elif annotation.startswith("tuple"):
            expected = "comma-separated list of integers"
        elif annotation.startswith("int"):
            expected = "integer"
        else:
            expected = "number"
        raise SpecError(name, value, f"is not a valid {expected}") from None
    return text


def with_overrides(spec: ModelSpec, **overrides: Any) -> ModelSpec:
    """A copy of ``spec`` with fields replaced; values may be given as text. Validates."""
    if not overrides:
        return spec
    parsed = {k: parse_field_value(type(spec), k, v) for k, v in overrides.items()}
    try:
        return dataclasses.replace(spec, **parsed)
    except TypeError as exc:  # a value of the wrong type reaching a comparison
        name, value = next(iter(parsed.items()))
        raise SpecError(name, value, str(exc)) from None


def spec_to_dict(spec: ModelSpec) -> dict[str, Any]:
    """Plain JSON-able dict including ``kind``; inverse of :func:`spec_from_dict`."""
    out: dict[str, Any] = {"kind": spec.kind}
    for f in fields(spec):
        value = getattr(spec, f.name)
        if isinstance(value, tuple):
            value = [list(v) if isinstance(v, tuple) else v for v in value]
        out[f.name] = value
    return out


def spec_from_dict(data: dict[str, Any]) -> ModelSpec:
    data = dict(data)
    kind = data.pop("kind", "vit")
    if kind not in SPEC_TYPES:
        raise SpecError("kind", kind, f"must be one of {', '.join(SPEC_TYPES)}")
    spec_type = SPEC_TYPES[kind]
    for name in data:
        if name not in spec_fields(spec_type):
            raise SpecError(name, data[name], f"unknown field for a {kind} model")
    if "stages" in data and isinstance(data["stages"], list):
        data["stages"] = tuple(tuple(s) for s in data["stages"])
    return spec_type(**data)


def spec_key(spec: ModelSpec) -> str:
    """A stable string identity of the configuration (the name excluded), for result matching."""
    data = spec_to_dict(spec)
    data.pop("name")
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def overrides_of(spec: ModelSpec, base: ModelSpec) -> dict[str, Any]:
    """Fields where ``spec`` differs from ``base`` (for labelling overridden presets)."""
    return {
        f.name: getattr(spec, f.name)
        for f in fields(spec)
        if f.name != "name" and getattr(spec, f.name) != getattr(base, f.name)
    }


__all__ = [
    "ViTSpec",
    "ResNetSpec",
    "PlainCNNSpec",
    "ModelSpec",
    "SPEC_TYPES",
    "with_overrides",
    "parse_field_value",
    "spec_to_dict",
    "spec_from_dict",
    "spec_key",
    "overrides_of",
]
