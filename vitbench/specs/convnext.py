"""The ConvNeXt spec (v1, and v2's global response normalisation). No torch import."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from vitbench.errors import SpecError
from vitbench.specs.common import boolean, image_size, int_tuple, non_negative, positive, positive_number


@dataclass(frozen=True)
class ConvNeXtSpec:
    """A ConvNeXt: P x P / P stem convolution + LayerNorm; stages of blocks (k x k depthwise
    convolution, LayerNorm, Linear(C, rC), GELU, [GRN], Linear(rC, C), [layer scale], residual);
    between stages LayerNorm + 2 x 2 / 2 convolution; global average pool, LayerNorm, linear head
    (none when ``num_classes=0``).

    ``grn=True`` adds ConvNeXt v2's global response normalisation (2 rC parameters) after the
    GELU; v2 drops layer scale (``layer_scale=False``).
    """

    kind: ClassVar[str] = "convnext"

    name: str = "convnext"
    img_size: tuple[int, int] = (224, 224)
    in_chans: int = 3
    patch_size: int = 4
    depths: tuple[int, ...] = (3, 3, 9, 3)
    dims: tuple[int, ...] = (96, 192, 384, 768)
    kernel_size: int = 7
    mlp_ratio: float = 4.0
    layer_scale: bool = True
    grn: bool = False
    num_classes: int = 1000

    def __post_init__(self) -> None:
        object.__setattr__(self, "img_size", image_size(self.img_size))
        for name in ("depths", "dims"):
            object.__setattr__(self, name, int_tuple(name, getattr(self, name)))
        if isinstance(self.mlp_ratio, int) and not isinstance(self.mlp_ratio, bool):
            object.__setattr__(self, "mlp_ratio", float(self.mlp_ratio))
        for name in ("in_chans", "patch_size", "kernel_size"):
            positive(name, getattr(self, name))
        if self.kernel_size % 2 == 0:
            raise SpecError("kernel_size", self.kernel_size, "must be odd (same padding)")
        non_negative("num_classes", self.num_classes)
        positive_number("mlp_ratio", self.mlp_ratio)
        for name in ("layer_scale", "grn"):
            boolean(name, getattr(self, name))
        if len(self.dims) != len(self.depths):
            raise SpecError("dims", self.dims, f"needs one width per stage ({len(self.depths)} stages)")
        for dim in self.dims:
            if int(dim * self.mlp_ratio) == 0:
                raise SpecError("mlp_ratio", self.mlp_ratio, "gives an MLP of width 0")
        last = self.stage_resolution(len(self.depths) - 1)
        if min(last) < 1:
            raise SpecError("img_size", self.img_size, f"is too small for {len(self.depths)} stages")

    @property
    def num_stages(self) -> int:
        return len(self.depths)

    def stage_resolution(self, index: int) -> tuple[int, int]:
        """Feature map of stage i: floor(H / P), then halved (flooring) by each downsampling."""
        height, width = self.img_size[0] // self.patch_size, self.img_size[1] // self.patch_size
        for _ in range(index):
            height, width = height // 2, width // 2
        return height, width

    def stage_mlp_hidden(self, index: int) -> int:
        return int(self.dims[index] * self.mlp_ratio)

    @property
    def num_features(self) -> int:
        return self.dims[-1]
