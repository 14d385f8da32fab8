"""Specs derived from Hugging Face transformers vision encoders (see ``derive.py``).

Covered: ``ViTModel`` (its pooler, a dense layer + tanh on the class token, is the spec's head
of ``pooler width`` outputs) and ``ViTForImageClassification``; ``Dinov2Model`` and
``Dinov2WithRegistersModel`` (layer scale, SwiGLU, the unused mask token); ``CLIPVisionModel``
(pre-norm, bias-free patch embedding); ``SiglipVisionModel`` (MAP head); ``SwinModel`` and
``SwinForImageClassification``. Each layer's parameters must all be recognised (the layer's own
count is checked), so an unknown extra module refuses rather than miscounts.
"""

from __future__ import annotations

from typing import Any

from vitbench.analytic import params
from vitbench.models.derive_hier import _stage_windows
from vitbench.models.derive_vit import Refused, _bias, _derive, _finish, _is_norm, _name


def hf_spec(model: Any, img_size: tuple[int, int] | None) -> tuple[Any, str | None]:
    handler = _HANDLERS.get(_name(model))
    if handler is None:
        return None, f"no analytic formula for hf {_name(model)}"
    return _derive(handler, model, img_size)


def _count(module: Any) -> int:
    return sum(p.numel() for p in module.parameters())


def _find(module: Any, *suffixes: str) -> Any:
    """The one submodule whose path ends with one of ``suffixes`` (None if absent)."""
    found = [m for n, m in module.named_modules() if n.rsplit(".", 1)[-1] in suffixes]
    if len(found) > 1:
        raise Refused(f"hf layer with several {'/'.join(suffixes)} is not in the analytic ViT")
    return found[0] if found else None


def _linear(module: Any, d_in: int, d_out: int, what: str) -> Any:
    if _name(module) != "Linear" or module.in_features != d_in or module.out_features != d_out:
        raise Refused(f"hf {what} is not a Linear({d_in}, {d_out})")
    return module


def _mlp(layer: Any, d: int) -> tuple[list[Any], Any, int]:
    """A layer's MLP: (input projections: fc1, or SwiGLU's gate and up; the output projection;
    the hidden width)."""
    gate, up = _find(layer, "gate_proj"), _find(layer, "up_proj")
    if gate is not None and up is not None:  # SwiGLU (hf DINOv2): gate and up projections
        fc2 = _find(layer, "down_proj")
        hidden = fc2.in_features
        first = [_linear(gate, d, hidden, "MLP gate"), _linear(up, d, hidden, "MLP up")]
    else:
        fc1, fc2 = _find(layer, "fc1"), _find(layer, "fc2")
        if fc1 is None or fc2 is None:
            raise Refused("hf layer MLP is not two linears")
        hidden = fc2.in_features
        first = [_linear(fc1, d, hidden, "MLP fc1")]
    _linear(fc2, hidden, d, "MLP fc2")
    return first, fc2, hidden


def _layer_fields(layer: Any, d: int, heads: int) -> dict[str, Any]:
    """One transformer layer: q/k/v/o projections, two LayerNorms, an MLP (GELU or packed
    SwiGLU), optional layer scales; every parameter accounted for."""
    q, k, v = (_linear(_find(layer, f"{x}_proj", x), d, d, f"{x} projection") for x in ("q", "k", "v"))
    o = _linear(_find(layer, "o_proj", "out_proj"), d, d, "attention output")
    if _bias(q) != _bias(v):
        raise Refused("hf attention with a bias on queries or values alone is not in the analytic ViT")
    norms = [m for m in layer.modules() if _name(m) == "LayerNorm"]
    if len(norms) != 2 or not all(_is_norm(n, d) for n in norms):
        raise Refused(f"hf layer with {len(norms)} LayerNorms is not in the analytic ViT")
    first, fc2, hidden = _mlp(layer, d)
    if any(_bias(f) != _bias(fc2) for f in first) or _bias(fc2) != _bias(o):
        raise Refused("hf layer with mixed MLP / projection biases is not in the analytic ViT")
    scales = [p for n, p in layer.named_parameters() if n.endswith(("lambda1", "lambda2"))]
    fields = {
        "num_heads": heads,
        "qkv_bias": _bias(q),
        "k_bias": _bias(k) or not _bias(q),
        "proj_bias": _bias(o),
        "mlp": "swiglu" if len(first) == 2 else "gelu",
        "mlp_hidden_dim": hidden,
        "layer_scale": bool(scales),
    }
    known = sum(_count(m) for m in (q, k, v, o, *first, fc2, *norms)) + sum(p.numel() for p in scales)
    if known != _count(layer) or len(scales) not in (0, 2):
        raise Refused(f"hf layer {_name(layer)} has parameters the analytic ViT does not describe")
    return fields


def _encoder_fields(layers: Any, d: int, heads: int) -> dict[str, Any]:
    seen = [_layer_fields(layer, d, heads) for layer in layers]
    if any(f != seen[0] for f in seen):
        raise Refused("hf layers that differ from each other are not in the analytic ViT")
    return {**seen[0], "depth": len(seen)}


def _patch(conv: Any, config: Any) -> dict[str, Any]:
    size = config.image_size
    img = tuple(size) if isinstance(size, (list, tuple)) else (size, size)
    if _name(conv) != "Conv2d" or conv.kernel_size != conv.stride:
        raise Refused("hf patch embedding is not a P x P / P convolution")
    return {
        "img_size": img,
        "patch_size": conv.kernel_size[0],
        "in_chans": conv.in_channels,
        "embed_dim": conv.out_channels,
        "patch_bias": _bias(conv),
    }


def _check_positions(fields: dict[str, Any], positions: int, prefix: int) -> None:
    rows, cols = (s // fields["patch_size"] for s in fields["img_size"])
    if positions != rows * cols + prefix:
        raise Refused(f"hf position table of {positions} does not match the {rows}x{cols} patch grid")


# --- ViT family -------------------------------------------------------------------------------
def _vit(model: Any, img_size) -> Any:
    vit = getattr(model, "vit", model)  # ViTForImageClassification wraps the ViTModel as .vit
    config, emb = model.config, vit.embeddings
    fields = _patch(emb.patch_embeddings.projection, config)
    d = fields["embed_dim"]
    _check_positions(fields, emb.position_embeddings.shape[1], 1)
    fields.update(class_token=True, pool="cls", mask_token=getattr(emb, "mask_token", None) is not None)
    fields.update(_encoder_fields(vit.layers, d, config.num_attention_heads))
    fields["final_norm"] = _is_norm(vit.layernorm, d)
    head = getattr(model, "classifier", None)
    pooler = getattr(vit, "pooler", None)
    if head is not None and pooler is not None:
        raise Refused("hf ViT with both a pooler and a classifier is not in the analytic ViT")
    if pooler is not None:
        head = pooler.dense  # dense + tanh on the class token: the spec's head
    fields["num_classes"] = _linear(head, d, head.out_features, "head").out_features if head is not None else 0
    return _finish(fields, "hf")


def _dinov2(model: Any, img_size) -> Any:
    config, emb = model.config, model.embeddings
    fields = _patch(emb.patch_embeddings.projection, config)
    d = fields["embed_dim"]
    reg = emb.register_tokens.shape[1] if getattr(emb, "register_tokens", None) is not None else 0
    positions = emb.position_embeddings.shape[1]
    _check_positions(fields, positions, 1)
    fields.update(class_token=True, reg_tokens=reg, pool="cls", num_classes=0)
    fields["mask_token"] = getattr(emb, "mask_token", None) is not None
    if reg:  # positions cover the class and patch tokens, not the registers
        fields.update(pos_embed_prefix=False, pos_embed_len=positions)
    fields.update(_encoder_fields(model.encoder.layer, d, config.num_attention_heads))
    fields["final_norm"] = _is_norm(model.layernorm, d)
    return _finish(fields, "hf")


def _vision_tower(model: Any, prefix: int) -> tuple[Any, dict[str, Any]]:
    """CLIP / SigLIP vision towers: patch convolution, an Embedding of positions, the layers and
    a post-LayerNorm."""
    vision = getattr(model, "vision_model", model)
    emb = vision.embeddings
    fields = _patch(emb.patch_embedding, model.config)
    d = fields["embed_dim"]
    _check_positions(fields, emb.position_embedding.num_embeddings, prefix)
    fields.update(_encoder_fields(vision.encoder.layers, d, model.config.num_attention_heads))
    fields.update(class_token=bool(prefix), num_classes=0, final_norm=_is_norm(vision.post_layernorm, d))
    return vision, fields


def _clip(model: Any, img_size) -> Any:
    vision, fields = _vision_tower(model, 1)
    fields.update(pool="cls", norm_pre=_is_norm(vision.pre_layrnorm, fields["embed_dim"]))
    if _count(vision) != _count(model):
        raise Refused(f"hf {_name(model)} has a projection the analytic ViT does not describe")
    return _finish(fields, "hf")


def _siglip(model: Any, img_size) -> Any:
    vision, fields = _vision_tower(model, 0)
    d = fields["embed_dim"]
    head = getattr(vision, "head", None)
    if head is None:
        fields["pool"] = "none"
    else:
        attn = head.attention
        checks = (
            tuple(head.probe.shape) == (1, 1, d),
            _name(attn) == "MultiheadAttention" and attn.num_heads == fields["num_heads"],
            attn.in_proj_bias is not None and _bias(attn.out_proj),
            _is_norm(head.layernorm, d),
            head.mlp.fc1.out_features == fields["mlp_hidden_dim"] and _bias(head.mlp.fc1),
        )
        if not all(checks):
            raise Refused("this hf SigLIP pooling head is not the analytic ViT's MAP head")
        fields["pool"] = "map"
    return _finish(fields, "hf")


# --- Swin -------------------------------------------------------------------------------------
def _swin(model: Any, img_size) -> Any:
    swin = getattr(model, "swin", model)
    config, emb = model.config, swin.embeddings
    conv = emb.patch_embeddings.projection
    fields = _patch(conv, config)
    if getattr(emb, "position_embeddings", None) is not None or getattr(emb, "mask_token", None) is not None:
        raise Refused("hf Swin with absolute positions or a mask token is not in the analytic Swin")
    if any(s % fields["patch_size"] for s in fields["img_size"]):
        raise Refused("hf Swin pads images to whole patches; that padding is not in the analytic Swin")
    stages = list(swin.encoder.layers)
    first = [stage.blocks[0] for stage in stages]
    for index, stage in enumerate(stages):
        last = index == len(stages) - 1
        if (stage.downsample is None) != last:
            raise Refused("hf Swin downsampling layout is not in the analytic Swin")
    classifier = getattr(model, "classifier", None)
    spec_fields = dict(
        name="hf",
        img_size=fields["img_size"],
        patch_size=fields["patch_size"],
        in_chans=fields["in_chans"],
        embed_dim=fields["embed_dim"],
        depths=tuple(len(stage.blocks) for stage in stages),
        num_heads=tuple(config.num_heads),
        mlp_ratio=float(config.mlp_ratio),
        qkv_bias=bool(config.qkv_bias),
        num_classes=classifier.out_features if classifier is not None and _name(classifier) == "Linear" else 0,
    )
    spec = _stage_windows(spec_fields, [(b.window_size, b.window_size) for b in first], clamps=True)
    if isinstance(spec, str):
        raise Refused(spec)

    if params(spec) != _count(model):
        raise Refused(f"hf {_name(model)} has parameters the analytic Swin does not describe")
    return spec, None


_HANDLERS = {
    "ViTModel": _vit,
    "ViTForImageClassification": _vit,
    "Dinov2Model": _dinov2,
    "Dinov2WithRegistersModel": _dinov2,
    "CLIPVisionModel": _clip,
    "SiglipVisionModel": _siglip,
    "SwinModel": _swin,
    "SwinForImageClassification": _swin,
}
