"""The Vision Transformer spec. No torch import."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from vitbench.errors import SpecError
from vitbench.specs.common import (
    boolean,
    choice,
    image_size,
    non_negative,
    positive,
    positive_number,
    probability,
)

#: ``cls``: the class token; ``mean``: the mean of the patch tokens (prefix tokens excluded, as
#: timm's 'avg'); ``none``: no pooling (the head, if any, applies to every token); ``map``:
#: attention pooling by a learned latent query over the patch tokens (SigLIP's MAP head).
POOLINGS = ("cls", "mean", "none", "map")
POS_EMBEDS = ("learned-1d", "learned-2d", "sincos-2d", "none")
PATCH_EMBEDS = ("conv", "linear")
#: ``sdpa`` = F.scaled_dot_product_attention (fused kernels); ``math`` = explicit softmax(QK^T)V.
ATTENTIONS = ("sdpa", "math")
#: ``gelu``: Linear(d, m) -> activation -> Linear(m, d); ``swiglu``: SiLU(x W_g) * (x W_x) -> W_2,
#: gated width m (fused or packed implementations cost the same).
MLPS = ("gelu", "swiglu")
#: Relative position bias added to the attention logits: ``table`` (BEiT / timm RelPosBias:
#: (2 g_h - 1)(2 g_w - 1) (+3 with a class token) learned values per head) or ``mlp`` (timm
#: RelPosMlp: a 2 -> hidden -> heads MLP on log-spaced offsets, evaluated every forward pass).
REL_POS = ("none", "table", "mlp")


@dataclass(frozen=True)
class ViTSpec:
    """A Vision Transformer: patch embedding, prefix tokens (class, distillation, registers),
    `depth` encoder blocks, pooling, head.

    Each block is LN -> multi-head self-attention (fused qkv) -> residual, LN -> MLP -> residual
    (``res_post_norm``: x + LN(f(x)) instead). Fields after ``attention`` describe the variants
    of timm, torchvision and transformers ViTs (DeiT, DINOv2, EVA-02, CLIP, SigLIP, relpos ViTs);
    their defaults give the plain ViT.
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
    #: Classes of the linear head; 0 = no head (a feature extractor).
    num_classes: int = 1000
    pool: str = "cls"
    pos_embed: str = "learned-1d"
    #: Learned 1-D positions allocated (the MNIST assignment allocates 65 for 49 patches);
    #: ``None`` means one per token (per patch token when ``pos_embed_prefix`` is false).
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
    #: A learned class token; ``None``: exactly when ``pool='cls'``.
    class_token: bool | None = None
    #: DeiT's distillation token, with a second head on it (outputs averaged).
    dist_token: bool = False
    #: Learned register tokens (DINOv2 with registers); never pooled.
    reg_tokens: int = 0
    #: An unused learned mask token (d parameters, no work at inference: hf DINOv2, BEiT-style
    #: masked image modelling).
    mask_token: bool = False
    #: Learned 1-D positions also cover the prefix tokens (timm ``no_embed_class=False``).
    pos_embed_prefix: bool = True
    #: LayerNorm after the embeddings, before the blocks (CLIP).
    norm_pre: bool = False
    patch_bias: bool = True
    #: Biases of the attention output projection and of the MLP linears.
    proj_bias: bool = True
    #: With ``qkv_bias``: keys get a bias too (false: queries and values only, BEiT / EVA).
    k_bias: bool = True
    #: LayerNorm over each head's queries and keys.
    qk_norm: bool = False
    #: LayerNorm on the attention output before its projection (EVA's scale_attn_inner).
    attn_norm: bool = False
    mlp: str = "gelu"
    #: LayerNorm over the MLP hidden units before the second linear (EVA's scale_mlp).
    mlp_norm: bool = False
    #: Learned per-channel scales on both residual branches (CaiT / DeiT III / DINOv2).
    layer_scale: bool = False
    res_post_norm: bool = False
    #: 2-D axial rotary position embedding on the patch tokens' queries and keys (no parameters).
    rope: bool = False
    rel_pos: str = "none"
    #: One relative position module for all blocks instead of one per block.
    rel_pos_shared: bool = False
    #: Hidden width of the ``rel_pos='mlp'`` MLP.
    rel_pos_hidden: int = 512

    def __post_init__(self) -> None:
        object.__setattr__(self, "img_size", image_size(self.img_size))
        if isinstance(self.mlp_ratio, int) and not isinstance(self.mlp_ratio, bool):
            object.__setattr__(self, "mlp_ratio", float(self.mlp_ratio))
        for name in ("patch_size", "in_chans", "embed_dim", "depth", "num_heads", "rel_pos_hidden"):
            positive(name, getattr(self, name))
        for name in ("num_classes", "reg_tokens"):
            non_negative(name, getattr(self, name))
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
        choice("mlp", self.mlp, MLPS)
        choice("rel_pos", self.rel_pos, REL_POS)
        if self.norms_per_block not in (1, 2):
            raise SpecError("norms_per_block", self.norms_per_block, "must be 1 or 2")
        for name in ("dropout", "attn_dropout"):
            probability(name, getattr(self, name))
        for name in _BOOLEANS:
            boolean(name, getattr(self, name))
        if self.class_token is not None:
            boolean("class_token", self.class_token)
        self._check_variants()

    def _check_variants(self) -> None:
        """Combinations of the variant fields that the formulas and the module do not cover."""
        self._check_position_variants()
        self._check_token_variants()

    def _check_position_variants(self) -> None:
        if self.pos_embed in ("learned-2d", "sincos-2d") and self.embed_dim % 2:
            raise SpecError("embed_dim", self.embed_dim, f"must be even for {self.pos_embed}")
        if self.pos_embed == "sincos-2d" and self.embed_dim % 4:
            raise SpecError("embed_dim", self.embed_dim, "must be divisible by 4 for sincos-2d")
        if self.pos_embed_len is not None:
            positive("pos_embed_len", self.pos_embed_len)
            if self.pos_embed != "learned-1d":
                raise SpecError("pos_embed_len", self.pos_embed_len, "only applies to learned-1d")
            if self.pos_embed_len < self.positions:
                raise SpecError(
                    "pos_embed_len", self.pos_embed_len, f"is smaller than the {self.positions} positions"
                )

    def _check_token_variants(self) -> None:
        if self.pool == "cls" and self.class_token is False:
            raise SpecError("pool", self.pool, "needs a class token (class_token=false)")
        if self.dist_token and self.pool != "cls":
            raise SpecError("dist_token", self.dist_token, "needs pool=cls (DeiT heads read tokens 0 and 1)")
        if self.qkv_bias is False and self.k_bias is False:
            raise SpecError("k_bias", self.k_bias, "only applies with qkv_bias=true")
        if self.rope and self.head_dim % 4:
            raise SpecError("rope", self.rope, f"needs a head width divisible by 4 (it is {self.head_dim})")
        if self.rel_pos != "none" and (self.dist_token or self.reg_tokens):
            raise SpecError("rel_pos", self.rel_pos, "covers at most one prefix token (the class token)")
        if self.rel_pos_shared and self.rel_pos == "none":
            raise SpecError("rel_pos_shared", self.rel_pos_shared, "needs rel_pos=table or mlp")
        if self.norms_per_block == 1 and self.res_post_norm:
            raise SpecError("norms_per_block", self.norms_per_block, "must be 2 with res_post_norm")

    @property
    def grid(self) -> tuple[int, int]:
        """Patches along height and width."""
        return self.img_size[0] // self.patch_size, self.img_size[1] // self.patch_size

    @property
    def num_patches(self) -> int:
        rows, cols = self.grid
        return rows * cols

    @property
    def has_class_token(self) -> bool:
        return self.pool == "cls" if self.class_token is None else self.class_token

    @property
    def prefix_tokens(self) -> int:
        """Class, distillation and register tokens ahead of the patch tokens."""
        return int(self.has_class_token) + int(self.dist_token) + self.reg_tokens

    @property
    def tokens(self) -> int:
        """Sequence length n: patches plus prefix tokens (the CLS token when pooling by CLS)."""
        return self.num_patches + self.prefix_tokens

    @property
    def positions(self) -> int:
        """Learned 1-D positions needed: one per token, or per patch token without prefix ones."""
        return self.tokens if self.pos_embed_prefix else self.num_patches

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


_BOOLEANS = (
    "qkv_bias", "final_norm", "dist_token", "mask_token", "pos_embed_prefix", "norm_pre", "patch_bias",
    "proj_bias", "k_bias", "qk_norm", "attn_norm", "mlp_norm", "layer_scale", "res_post_norm",
    "rope", "rel_pos_shared",
)


#: Fields describing the variants of other libraries' ViTs (after ``attention``); their defaults
#: give the plain ViT.
VARIANT_FIELDS = (
    "class_token", "dist_token", "reg_tokens", "mask_token", "pos_embed_prefix", "norm_pre",
    "patch_bias", "proj_bias", "k_bias", "qk_norm", "attn_norm", "mlp", "mlp_norm", "layer_scale",
    "res_post_norm", "rope", "rel_pos", "rel_pos_shared", "rel_pos_hidden",
)


def variant_fields(spec: ViTSpec) -> dict[str, object]:
    """The variant fields of ``spec`` that change the model from the plain ViT (a class token
    given explicitly where ``pool`` implies it is not a change), plus pool ``none`` / ``map`` and
    ``num_classes=0``: what a model of the plain ViT alone must refuse."""
    defaults = ViTSpec.__dataclass_fields__
    out = {
        name: getattr(spec, name)
        for name in VARIANT_FIELDS
        if name != "class_token" and getattr(spec, name) != defaults[name].default
    }
    if spec.rel_pos == "none":
        out.pop("rel_pos_hidden", None)
    if spec.has_class_token != (spec.pool == "cls"):
        out["class_token"] = spec.has_class_token
    if spec.pool in ("none", "map"):
        out["pool"] = spec.pool
    if spec.num_classes == 0:
        out["num_classes"] = 0
    return out
