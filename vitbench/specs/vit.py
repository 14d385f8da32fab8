"""The Vision Transformer spec. No torch import."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from vitbench.errors import SpecError
from vitbench.specs.common import boolean, choice, image_size, positive, positive_number, probability

POOLINGS = ("cls", "mean")
POS_EMBEDS = ("learned-1d", "learned-2d", "sincos-2d", "none")
PATCH_EMBEDS = ("conv", "linear")
#: ``sdpa`` = F.scaled_dot_product_attention (fused kernels); ``math`` = explicit softmax(QK^T)V.
ATTENTIONS = ("sdpa", "math")


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
        object.__setattr__(self, "img_size", image_size(self.img_size))
        if isinstance(self.mlp_ratio, int) and not isinstance(self.mlp_ratio, bool):
            object.__setattr__(self, "mlp_ratio", float(self.mlp_ratio))
        for name in ("patch_size", "in_chans", "embed_dim", "depth", "num_heads", "num_classes"):
            positive(name, getattr(self, name))
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
        positive_number("mlp_ratio", self.mlp_ratio)
        if self.mlp_hidden_dim is not None:
            positive("mlp_hidden_dim", self.mlp_hidden_dim)
        elif self.mlp_hidden == 0:
            raise SpecError("mlp_ratio", self.mlp_ratio, "gives an MLP of width 0")
        choice("pool", self.pool, POOLINGS)
        choice("pos_embed", self.pos_embed, POS_EMBEDS)
        choice("patch_embed", self.patch_embed, PATCH_EMBEDS)
        choice("attention", self.attention, ATTENTIONS)
        if self.norms_per_block not in (1, 2):
            raise SpecError("norms_per_block", self.norms_per_block, "must be 1 or 2")
        if self.pos_embed in ("learned-2d", "sincos-2d") and self.embed_dim % 2:
            raise SpecError("embed_dim", self.embed_dim, f"must be even for {self.pos_embed}")
        if self.pos_embed == "sincos-2d" and self.embed_dim % 4:
            raise SpecError("embed_dim", self.embed_dim, "must be divisible by 4 for sincos-2d")
        if self.pos_embed_len is not None:
            positive("pos_embed_len", self.pos_embed_len)
            if self.pos_embed != "learned-1d":
                raise SpecError("pos_embed_len", self.pos_embed_len, "only applies to learned-1d")
            if self.pos_embed_len < self.tokens:
                raise SpecError(
                    "pos_embed_len", self.pos_embed_len, f"is smaller than the {self.tokens} tokens"
                )
        for name in ("dropout", "attn_dropout"):
            probability(name, getattr(self, name))
        for name in ("qkv_bias", "final_norm"):
            boolean(name, getattr(self, name))

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
