"""ViT specs derived from timm and torchvision modules (see ``derive.py``).

Covered: timm ``VisionTransformer`` (plain, CLIP, DeiT III, DINOv2 +- registers, SigLIP with MAP
or average pooling, gap / register ViTs), ``VisionTransformerDistilled`` (DeiT distilled),
``Eva`` (EVA-02, RoPE ViTs), ``VisionTransformerRelPos`` (relpos ViTs), ``Beit``; torchvision's
``VisionTransformer``. Each reads the built module and refuses (one line) anything the spec's
formulas do not cover, so a returned spec's params and MACs are the module's.
"""

from __future__ import annotations

from typing import Any

from vitbench.errors import SpecError
from vitbench.specs import ViTSpec

Derived = tuple["ViTSpec | None", "str | None"]
NORMS = ("LayerNorm", "LayerNormFp32")


class Refused(Exception):
    """A module the analytic ViT does not describe; the message is the one-line reason."""


def _name(module: Any) -> str:
    return type(module).__name__


def _is_norm(module: Any, dim: int | None = None) -> bool:
    """A LayerNorm with weight and bias (RMSNorm and bias-free norms have other counts)."""
    if _name(module) not in NORMS or getattr(module, "weight", None) is None or module.bias is None:
        return False
    return dim is None or tuple(module.normalized_shape) == (dim,)


def _optional_norm(module: Any, what: str, dim: int | None = None) -> bool:
    """True for a LayerNorm, False for Identity / None, refuse anything else."""
    if module is None or _name(module) == "Identity":
        return False
    if _is_norm(module, dim):
        return True
    raise Refused(f"{what} {_name(module)} is not a LayerNorm")


def _bias(linear: Any) -> bool:
    return getattr(linear, "bias", None) is not None


def _finish(fields: dict[str, Any], name: str = "timm") -> Derived:
    try:
        return ViTSpec(**{"name": name, **fields}), None
    except SpecError as exc:
        return None, f"derived ViT fields are not a valid spec ({exc})"


def _derive(function, *args) -> Derived:
    try:
        return function(*args)
    except Refused as exc:
        return None, str(exc)


def derive(name: str, module: Any) -> Derived:
    """``name`` is one of ``DERIVERS`` (see ``derive.py``'s table)."""
    return _derive(DERIVERS[name], module)


# --- parts shared by the timm families --------------------------------------------------------
def _mlp_fields(mlp: Any, d: int) -> dict[str, Any]:
    """timm Mlp / GluMlp (SwiGLU packed) / SwiGLU -> mlp, hidden width, norm, biases."""
    kind = _name(mlp)
    if kind == "Mlp":
        first, hidden, gated = [mlp.fc1], mlp.fc1.out_features, False
    elif kind == "GluMlp":
        first, hidden, gated = [mlp.fc1], mlp.fc2.in_features, True
    elif kind == "SwiGLU":
        first, hidden, gated = [mlp.fc1_g, mlp.fc1_x], mlp.fc2.in_features, True
    else:
        raise Refused(f"MLP {kind} is not in the analytic ViT")
    if any(_name(f) != "Linear" for f in [*first, mlp.fc2]) or mlp.fc2.out_features != d:
        raise Refused(f"MLP {kind} with convolutions or another output width is not in the analytic ViT")
    biases = {_bias(f) for f in [*first, mlp.fc2]}
    if len(biases) != 1:
        raise Refused("an MLP with a bias on one linear only is not in the analytic ViT")
    return {
        "mlp": "swiglu" if gated else "gelu",
        "mlp_hidden_dim": hidden,
        "mlp_norm": _optional_norm(getattr(mlp, "norm", None), "MLP norm", hidden),
        "mlp_bias": biases.pop(),
    }


def _head_dim(attn: Any) -> int:
    head_dim = getattr(attn, "head_dim", None)
    if head_dim is None:  # BEiT keeps no head_dim attribute
        head_dim = attn.qkv.out_features // (3 * attn.num_heads)
    return head_dim


def _qkv_fields(attn: Any, d: int) -> dict[str, Any]:
    """Fused qkv (+ optional q/v-only biases) or separate q, k, v projections."""
    if getattr(attn, "gate", None) is not None:
        raise Refused("gated attention is not in the analytic ViT")
    if getattr(attn, "num_kv_heads", attn.num_heads) != attn.num_heads:
        raise Refused("grouped-query attention is not in the analytic ViT")
    if attn.num_heads * _head_dim(attn) != d:
        raise Refused("attention wider than the embedding is not in the analytic ViT")
    q_bias = getattr(attn, "q_bias", None)
    if getattr(attn, "qkv", None) is not None:
        if q_bias is not None:
            return {"qkv_bias": True, "k_bias": False}
        return {"qkv_bias": _bias(attn.qkv), "k_bias": True}
    q, k, v = attn.q_proj, attn.k_proj, attn.v_proj
    if _bias(q) != _bias(v):
        raise Refused("a bias on queries or values alone is not in the analytic ViT")
    return {"qkv_bias": _bias(q), "k_bias": _bias(k) or not _bias(q)}


def _attn_fields(attn: Any, d: int) -> dict[str, Any]:
    fields = _qkv_fields(attn, d)
    fields["num_heads"] = attn.num_heads
    fields["qk_norm"] = _optional_norm(getattr(attn, "q_norm", None), "qk norm", _head_dim(attn))
    fields["attn_norm"] = _optional_norm(getattr(attn, "norm", None), "attention norm", d)
    fields["proj_bias"] = _bias(attn.proj)
    return fields


def _block_fields(blocks: list[Any], d: int, attn_names: tuple[str, ...]) -> dict[str, Any]:
    """Fields shared by every block (refuse blocks that differ)."""
    seen = []
    for block in blocks:
        if _name(block.attn) not in attn_names:
            raise Refused(f"attention {_name(block.attn)} is not in the analytic ViT")
        fields = {**_attn_fields(block.attn, d), **_mlp_fields(block.mlp, d)}
        if not (_is_norm(block.norm1, d) and _is_norm(block.norm2, d)):
            raise Refused(f"block norm {_name(block.norm1)} is not a LayerNorm")
        scales = [getattr(block, a, None) for a in ("ls1", "ls2", "gamma_1", "gamma_2")]
        scales = [s for s in scales if s is not None and _name(s) != "Identity"]
        if len(scales) not in (0, 2):
            raise Refused("layer scale on one branch only is not in the analytic ViT")
        fields["layer_scale"] = bool(scales)
        seen.append(fields)
    if any(f != seen[0] for f in seen):
        raise Refused("blocks that differ from each other are not in the analytic ViT")
    fields = dict(seen[0])
    if fields.pop("mlp_bias") != fields["proj_bias"]:
        raise Refused("MLP and projection biases that differ are not in the analytic ViT")
    return fields


def _patch_fields(model: Any, patch: Any) -> dict[str, Any]:
    proj = patch.proj
    if _name(proj) != "Conv2d" or proj.kernel_size != proj.stride or proj.kernel_size[0] != proj.kernel_size[1]:
        raise Refused("a patch embedding other than one square P x P / P convolution is not in the analytic ViT")
    if _optional_norm(getattr(patch, "norm", None), "patch embedding norm") or getattr(patch, "dynamic_img_pad", False):
        raise Refused("a normalised or padded patch embedding is not in the analytic ViT")
    if getattr(model, "dynamic_img_size", False) and getattr(model, "pos_embed", None) is not None:
        raise Refused("dynamic image size (position embeddings resampled every forward) is not in the analytic ViT")
    return {
        "img_size": tuple(patch.img_size),
        "patch_size": proj.kernel_size[0],
        "in_chans": proj.in_channels,
        "embed_dim": proj.out_channels,
        "patch_bias": _bias(proj),
    }


def _pos_fields(pos_embed: Any, fields: dict[str, Any], no_embed_class: bool) -> dict[str, Any]:
    if pos_embed is None:
        return {"pos_embed": "none"}
    rows = fields["img_size"][0] // fields["patch_size"]
    cols = fields["img_size"][1] // fields["patch_size"]
    patches = rows * cols
    prefix = int(fields.get("class_token", False)) + int(fields.get("dist_token", False)) + fields.get("reg_tokens", 0)
    expected = patches if no_embed_class or not prefix else patches + prefix
    if tuple(pos_embed.shape) != (1, expected, fields["embed_dim"]):
        raise Refused(f"position embedding {tuple(pos_embed.shape)} does not match {expected} positions")
    return {"pos_embed": "learned-1d", "pos_embed_prefix": not no_embed_class}


def _pool_fields(model: Any, d: int, mlp_hidden: int, heads: int, prefix_in_map: bool) -> dict[str, Any]:
    pool = model.global_pool
    if getattr(model, "pool_include_prefix", False) and pool not in ("token", "map", ""):
        raise Refused("average pooling over the prefix tokens is not in the analytic ViT")
    if pool == "map":
        ap = model.attn_pool
        if _name(ap) != "AttentionPoolLatent" or ap.latent_len != 1 or ap.pos_embed is not None:
            raise Refused("attention pooling other than one latent query is not in the analytic ViT")
        if prefix_in_map:
            raise Refused("attention pooling over the prefix tokens is not in the analytic ViT")
        checks = (
            ap.num_heads == heads, _name(ap.q) == "Linear", _bias(ap.q), _bias(ap.kv),
            _name(ap.q_norm) == "Identity", _is_norm(ap.norm, d), ap.mlp is not None
            and _name(ap.mlp) == "Mlp" and ap.mlp.fc1.out_features == mlp_hidden and _bias(ap.mlp.fc1),
        )
        if not all(checks):
            raise Refused("this attention pooling head is not the analytic ViT's MAP head")
        return {"pool": "map"}
    if getattr(model, "attn_pool", None) is not None:
        raise Refused(f"pooling {pool!r} is not in the analytic ViT")
    pools = {"token": "cls", "avg": "mean", "": "none"}
    if pool not in pools:
        raise Refused(f"pooling {pool!r} is not in the analytic ViT")
    return {"pool": pools[pool]}


def _head_fields(model: Any, d: int) -> dict[str, Any]:
    head = model.head
    if _name(head) == "Identity":
        return {"num_classes": 0}
    if _name(head) != "Linear" or not _bias(head) or head.in_features != d:
        raise Refused(f"head {_name(head)} is not a linear classifier")
    return {"num_classes": head.out_features}


def _with_tail(model: Any, fields: dict[str, Any], prefix_in_map: bool) -> dict[str, Any]:
    """The fields after the blocks: final norm, head, pooling."""
    d = fields["embed_dim"]
    fields["final_norm"] = _final_norm(model, d)
    fields.update(_head_fields(model, d))
    fields.update(_pool_fields(model, d, fields["mlp_hidden_dim"], fields["num_heads"], prefix_in_map))
    return fields


def _final_norm(model: Any, d: int) -> bool:
    norm = _optional_norm(getattr(model, "norm", None), "final norm", d)
    fc_norm = _optional_norm(getattr(model, "fc_norm", None), "fc norm", d)
    if norm and fc_norm:
        raise Refused("a final norm and an fc norm together are not in the analytic ViT")
    return norm or fc_norm


# --- timm -------------------------------------------------------------------------------------
def _timm_vit(model: Any) -> Derived:
    """timm VisionTransformer / VisionTransformerDistilled."""
    if _name(model.patch_embed) != "PatchEmbed":
        raise Refused(f"patch embedding {_name(model.patch_embed)} (hybrid stem) is not in the analytic ViT")
    fields = _patch_fields(model, model.patch_embed)
    d = fields["embed_dim"]
    distilled = _name(model) == "VisionTransformerDistilled"
    fields.update(
        class_token=model.cls_token is not None,
        dist_token=distilled,
        reg_tokens=getattr(model, "num_reg_tokens", 0) or 0,
    )
    blocks = list(model.blocks)
    kinds = {_name(b) for b in blocks}
    if kinds not in ({"Block"}, {"ResPostBlock"}):
        raise Refused(f"timm blocks {'/'.join(sorted(kinds))} are not in the analytic ViT")
    fields.update(_block_fields(blocks, d, ("Attention",)), depth=len(blocks), res_post_norm=kinds == {"ResPostBlock"})
    fields.update(_pos_fields(model.pos_embed, fields, model.no_embed_class))
    fields["norm_pre"] = _optional_norm(model.norm_pre, "pre-norm", d)
    fields["final_norm"] = _final_norm(model, d)
    fields.update(_head_fields(model, d))
    if distilled:
        if model.global_pool != "token" or _name(model.head_dist) != _name(model.head):
            raise Refused("a distilled ViT without token pooling and twin heads is not in the analytic ViT")
        fields["pool"] = "cls"
    else:
        prefix_in_map = bool(getattr(model, "pool_include_prefix", False) and model.num_prefix_tokens)
        fields.update(_pool_fields(model, d, fields["mlp_hidden_dim"], fields["num_heads"], prefix_in_map))
    return _finish(fields)


def _timm_eva(model: Any) -> Derived:
    """timm Eva: EVA-02, RoPE ViTs (axial 'cat' RoPE without learned frequencies)."""
    fields = _patch_fields(model, model.patch_embed)
    d = fields["embed_dim"]
    if model.patch_drop is not None:
        raise Refused("patch dropout is not in the analytic ViT")
    rope = model.rope
    if rope is not None:
        if _name(rope) not in ("RotaryEmbeddingCat", "RotaryEmbeddingDinoV3") or any(True for _ in rope.parameters()):
            raise Refused(f"RoPE {_name(rope)} (learned frequencies) is not in the analytic ViT")
    reg = model.reg_token.shape[1] if model.reg_token is not None else 0
    fields.update(class_token=model.cls_token is not None, reg_tokens=reg, rope=rope is not None)
    blocks = list(model.blocks)
    kinds = {_name(b) for b in blocks}
    if kinds not in ({"EvaBlock"}, {"EvaBlockPostNorm"}):
        raise Refused(f"Eva blocks {'/'.join(sorted(kinds))} are not in the analytic ViT")
    fields.update(
        _block_fields(blocks, d, ("EvaAttention", "AttentionRope")),
        depth=len(blocks),
        res_post_norm=kinds == {"EvaBlockPostNorm"},
    )
    fields.update(_pos_fields(model.pos_embed, fields, model.no_embed_class))
    fields["norm_pre"] = _optional_norm(model.norm_pre, "pre-norm", d)
    return _finish(_with_tail(model, fields, fields["class_token"] or reg > 0))


def _rel_pos_fields(module: Any, fields: dict[str, Any]) -> dict[str, Any]:
    rows = fields["img_size"][0] // fields["patch_size"]
    cols = fields["img_size"][1] // fields["patch_size"]
    if tuple(module.window_size) != (rows, cols):
        raise Refused("relative positions over a window other than the patch grid are not in the analytic ViT")
    if _name(module) == "RelPosBias":
        return {"rel_pos": "table"}
    if _name(module) != "RelPosMlp" or module.mode == "swin" or not _bias(module.mlp.fc2):
        raise Refused(f"relative position {_name(module)} ({getattr(module, 'mode', '')}) is not in the analytic ViT")
    if _name(module.mlp.norm) != "Identity":
        raise Refused("a normalised relative position MLP is not in the analytic ViT")
    return {"rel_pos": "mlp", "rel_pos_hidden": module.mlp.fc1.out_features}


def _timm_relpos(model: Any) -> Derived:
    """timm VisionTransformerRelPos: relative position bias (table or MLP), no absolute positions."""
    fields = _patch_fields(model, model.patch_embed)
    d = fields["embed_dim"]
    fields.update(class_token=model.cls_token is not None, pos_embed="none")
    blocks = list(model.blocks)
    kinds = {_name(b) for b in blocks}
    if kinds not in ({"RelPosBlock"}, {"ResPostRelPosBlock"}):
        raise Refused(f"relpos blocks {'/'.join(sorted(kinds))} are not in the analytic ViT")
    fields.update(_block_fields(blocks, d, ("RelPosAttention",)), depth=len(blocks))
    fields["res_post_norm"] = kinds == {"ResPostRelPosBlock"}
    shared = model.shared_rel_pos
    modules = [shared] if shared is not None else [b.attn.rel_pos for b in blocks]
    if any(m is None for m in modules):
        raise Refused("a relpos ViT without relative positions in every block is not in the analytic ViT")
    variants = [_rel_pos_fields(m, fields) for m in modules]
    if any(v != variants[0] for v in variants):
        raise Refused("blocks with different relative position modules are not in the analytic ViT")
    fields.update(variants[0], rel_pos_shared=shared is not None)
    return _finish(_with_tail(model, fields, False))


def _timm_beit(model: Any) -> Derived:
    """timm Beit: q/v biases, relative position bias tables (per block or shared), layer scale."""
    fields = _patch_fields(model, model.patch_embed)
    d = fields["embed_dim"]
    fields.update(class_token=True, pos_embed="none")
    if model.pos_embed is not None:
        fields.update(_pos_fields(model.pos_embed, fields, False))
    blocks = list(model.blocks)
    if {_name(b) for b in blocks} != {"Block"}:
        raise Refused("BEiT blocks other than the standard one are not in the analytic ViT")
    fields.update(_block_fields(blocks, d, ("Attention",)), depth=len(blocks))
    shared = model.rel_pos_bias
    tables = [shared] if shared is not None else [b.attn.relative_position_bias_table for b in blocks]
    if any(t is None for t in tables):
        raise Refused("BEiT without a relative position bias in every block is not in the analytic ViT")
    rows = fields["img_size"][0] // fields["patch_size"]
    cols = fields["img_size"][1] // fields["patch_size"]
    entries = (2 * rows - 1) * (2 * cols - 1) + 3
    for table in tables:
        table = table.relative_position_bias_table if hasattr(table, "relative_position_bias_table") else table
        if table.shape[0] != entries:
            raise Refused("a BEiT bias table over a window other than the patch grid is not in the analytic ViT")
    fields.update(rel_pos="table", rel_pos_shared=shared is not None)
    fields["final_norm"] = _final_norm(model, d)
    fields.update(_head_fields(model, d))
    pools = {"avg": "mean", "token": "cls", "": "none"}
    if model.global_pool not in pools:
        raise Refused(f"pooling {model.global_pool!r} is not in the analytic ViT")
    fields["pool"] = pools[model.global_pool]
    return _finish(fields)


# --- torchvision ------------------------------------------------------------------------------
def torchvision_vit(model: Any) -> Derived:
    heads = model.heads
    if len(heads) != 1:
        return None, "torchvision ViT with a representation layer is not in the analytic ViT"
    if _name(model.conv_proj) != "Conv2d":
        return None, "torchvision ViT with a convolutional stem is not in the analytic ViT"
    layer = model.encoder.layers[0]
    return _finish(
        dict(
            name="torchvision",
            img_size=model.image_size,
            patch_size=model.patch_size,
            in_chans=model.conv_proj.in_channels,
            embed_dim=model.hidden_dim,
            depth=len(model.encoder.layers),
            num_heads=layer.self_attention.num_heads,
            mlp_hidden_dim=model.mlp_dim,
            num_classes=heads[0].out_features,
        )
    )


DERIVERS = {
    "timm_vit": _timm_vit,
    "timm_eva": _timm_eva,
    "timm_relpos": _timm_relpos,
    "timm_beit": _timm_beit,
    "torchvision_vit": torchvision_vit,
}
