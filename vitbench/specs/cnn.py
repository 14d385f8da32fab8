"""CNN specs: ResNets (torchvision's and generic) and the slides' plain VGG-style CNN.
No torch import."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from vitbench.errors import SpecError
from vitbench.specs.common import boolean, choice, image_size, int_tuple, positive
from vitbench.specs.limits import MAX_WALKED_BLOCKS

RESNET_BLOCKS = ("basic", "bottleneck")
RESNET_STEMS = ("imagenet", "cifar")


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
        object.__setattr__(self, "img_size", image_size(self.img_size))
        object.__setattr__(self, "layers", int_tuple("layers", self.layers))
        object.__setattr__(self, "widths", int_tuple("widths", self.widths))
        for name in ("in_chans", "num_classes", "stem_width"):
            positive(name, getattr(self, name))
        choice("block", self.block, RESNET_BLOCKS)
        choice("stem", self.stem, RESNET_STEMS)
        if len(self.layers) != len(self.widths):
            raise SpecError(
                "widths", self.widths, f"needs one width per stage ({len(self.layers)} stages)"
            )
        if sum(self.layers) > MAX_WALKED_BLOCKS:
            raise SpecError("layers", self.layers, f"has {sum(self.layers):,} blocks; the ResNet formulas walk every block, "
                                                   f"at most {MAX_WALKED_BLOCKS:,}")

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
        object.__setattr__(self, "img_size", image_size(self.img_size))
        stages = self.stages
        if isinstance(stages, list):
            stages = tuple(stages)
        if not isinstance(stages, tuple) or not stages:
            raise SpecError("stages", self.stages, "must be a non-empty list of channel lists")
        object.__setattr__(self, "stages", tuple(int_tuple("stages", s) for s in stages))
        fc_dims = tuple(self.fc_dims) if isinstance(self.fc_dims, list) else self.fc_dims
        if not isinstance(fc_dims, tuple):
            raise SpecError("fc_dims", self.fc_dims, "must be a list of positive integers")
        for v in fc_dims:
            positive("fc_dims", v)
        object.__setattr__(self, "fc_dims", fc_dims)
        for name in ("in_chans", "num_classes"):
            positive(name, getattr(self, name))
        boolean("batchnorm", self.batchnorm)
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
