"""The Swin Transformer spec (v1 and v2). No torch import."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from vitbench.errors import SpecError
from vitbench.specs.common import boolean, image_size, int_tuple, non_negative, positive, positive_number

SWIN_VERSIONS = (1, 2)
#: Hidden width of Swin v2's continuous position bias MLP (2 -> 512 -> heads), fixed in the paper,
#: torchvision, timm and transformers alike.
CPB_HIDDEN = 512


@dataclass(frozen=True)
class SwinSpec:
    """A Swin Transformer: P x P patch embedding (+ LayerNorm), stages of window-attention blocks
    (every second block on shifted windows) joined by 2 x 2 patch merging, final LayerNorm,
    global average pool, linear head (none when ``num_classes=0``).

    Stage i has width C_i = embed_dim * 2^i and works on windows of ``window_size`` tokens a side
    (one value for every stage, or one per stage). ``version=1``: pre-norm blocks, learned relative
    position bias table, patch merging LayerNorm(4C) -> Linear(4C, 2C). ``version=2``: res-post-norm
    blocks, cosine attention with a learned logit scale per head, a continuous position bias MLP
    (2 -> 512 -> heads) instead of the table, patch merging Linear(4C, 2C) -> LayerNorm(2C).

    ``window_clamp``: a window larger than the feature map shrinks to it (timm); otherwise the map
    is zero-padded up to a multiple of the window (torchvision). ``k_bias=False``: only queries and
    values get a bias (timm's Swin v2); torchvision keeps a (zeroed) key bias parameter.
    """

    kind: ClassVar[str] = "swin"

    name: str = "swin"
    img_size: tuple[int, int] = (224, 224)
    patch_size: int = 4
    in_chans: int = 3
    embed_dim: int = 96
    depths: tuple[int, ...] = (2, 2, 6, 2)
    num_heads: tuple[int, ...] = (3, 6, 12, 24)
    #: Window side in tokens: one value for all stages, or one per stage.
    window_size: tuple[int, ...] = (7,)
    mlp_ratio: float = 4.0
    qkv_bias: bool = True
    k_bias: bool = True
    version: int = 1
    window_clamp: bool = False
    num_classes: int = 1000

    def __post_init__(self) -> None:
        object.__setattr__(self, "img_size", image_size(self.img_size))
        if isinstance(self.window_size, int) and not isinstance(self.window_size, bool):
            object.__setattr__(self, "window_size", (self.window_size,))
        for name in ("depths", "num_heads", "window_size"):
            object.__setattr__(self, name, int_tuple(name, getattr(self, name)))
        if isinstance(self.mlp_ratio, int) and not isinstance(self.mlp_ratio, bool):
            object.__setattr__(self, "mlp_ratio", float(self.mlp_ratio))
        for name in ("patch_size", "in_chans", "embed_dim"):
            positive(name, getattr(self, name))
        non_negative("num_classes", self.num_classes)
        positive_number("mlp_ratio", self.mlp_ratio)
        for name in ("qkv_bias", "k_bias", "window_clamp"):
            boolean(name, getattr(self, name))
        if self.version not in SWIN_VERSIONS:
            raise SpecError("version", self.version, "must be 1 or 2")
        self._check_stages()

    def _check_stages(self) -> None:
        """Per-stage heads and windows, biases, and sizes the stages can be built at."""
        stages = len(self.depths)
        if len(self.num_heads) != stages:
            raise SpecError("num_heads", self.num_heads, f"needs one value per stage ({stages} stages)")
        if len(self.window_size) not in (1, stages):
            raise SpecError("window_size", self.window_size, f"needs one value or one per stage ({stages})")
        for index, heads in enumerate(self.num_heads):
            if self.stage_dim(index) % heads:
                raise SpecError(
                    "num_heads", self.num_heads, f"{heads} does not divide stage {index + 1} width {self.stage_dim(index)}"
                )
        if not self.k_bias and not self.qkv_bias:
            raise SpecError("k_bias", self.k_bias, "only applies with qkv_bias=true")
        for side, extent in zip(("height", "width"), self.img_size):
            if extent < self.patch_size:
                raise SpecError("patch_size", self.patch_size, f"is larger than the image {side} {extent}")
        for index in range(stages):
            if int(self.stage_dim(index) * self.mlp_ratio) == 0:
                raise SpecError("mlp_ratio", self.mlp_ratio, "gives an MLP of width 0")

    @property
    def num_stages(self) -> int:
        return len(self.depths)

    @property
    def grid(self) -> tuple[int, int]:
        """Patch tokens along height and width (the convolution floors: H // P, W // P)."""
        return self.img_size[0] // self.patch_size, self.img_size[1] // self.patch_size

    def stage_dim(self, index: int) -> int:
        """C_i = embed_dim * 2^i."""
        return self.embed_dim * 2**index

    def stage_resolution(self, index: int) -> tuple[int, int]:
        """Feature map of stage i: the patch grid, halved (rounding up: merging pads odd sides) i times."""
        height, width = self.grid
        for _ in range(index):
            height, width = -(-height // 2), -(-width // 2)
        return height, width

    def stage_window(self, index: int) -> tuple[int, int]:
        """(height, width) of the windows of stage i, after clamping to the feature map if asked."""
        window = self.window_size[index] if len(self.window_size) > 1 else self.window_size[0]
        if not self.window_clamp:
            return window, window
        height, width = self.stage_resolution(index)
        return min(window, height), min(window, width)

    def stage_mlp_hidden(self, index: int) -> int:
        return int(self.stage_dim(index) * self.mlp_ratio)

    @property
    def num_features(self) -> int:
        """Width of the last stage (what the head sees)."""
        return self.stage_dim(self.num_stages - 1)
