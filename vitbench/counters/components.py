"""Attribute traced per-module MACs: by module path for any model (depth-limited, like fvcore's
by-module table), and to named components (patch embedding, qkv, attention matmuls, MLP, head)
when the module is a ViT, or to the analytic spec's components, so that a disagreement can name
the component that differs.

Counters report MACs per module with children included; a module's *own* MACs are its total
minus its direct children's. Own MACs are then mapped to components by module path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from vitbench.analytic.cnn import cnn_layers
from vitbench.errors import SpecError
from vitbench.specs import ModelSpec, PlainCNNSpec, ResNetSpec, ViTSpec


def own_macs(by_module: dict[str, int]) -> dict[str, int]:
    """Per-module MACs excluding children (``''`` is the root module). A module's parent is its
    nearest recorded ancestor: containers a model iterates over instead of calling (timm's
    ``blocks`` in some ViTs) are not recorded."""
    own = dict(by_module)
    for name, value in by_module.items():
        if not name:
            continue
        parent = name
        while parent:
            parent = parent.rsplit(".", 1)[0] if "." in parent else ""
            if parent in own:
                own[parent] -= value
                break
    return {name: value for name, value in own.items() if value}


def by_depth(by_module: dict[str, int], depth: int) -> dict[str, int]:
    """MACs per module path down to ``depth`` levels below the root (``''`` = the whole model),
    children included, like fvcore's by-module table: every module's own MACs are added to each
    of its path prefixes, so a container the model iterates over instead of calling (and which
    the counter therefore never saw) still gets its total."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise SpecError("depth", depth, "must be a non-negative integer")
    out: dict[str, int] = {}
    for path, value in own_macs(by_module).items():
        parts = path.split(".") if path else []
        for level in range(min(depth, len(parts)) + 1):
            prefix = ".".join(parts[:level])
            out[prefix] = out.get(prefix, 0) + value
    return out


# Comparison groups: analytic components summed per group, for each module layout.
VIT_GROUPS = {
    "patch_embed": ("patch_embed",),
    "qkv": ("qkv",),
    "attn_matmul": ("attn_scores", "attn_values"),
    "attn_proj": ("attn_proj",),
    "mlp_fc1": ("mlp_fc1",),
    "mlp_fc2": ("mlp_fc2",),
    "head": ("head",),
    "attn_pool": ("attn_pool",),
    "rel_pos": ("rel_pos",),
}
#: torchvision's ViT hides qkv, the attention matmuls and the output projection in one
#: nn.MultiheadAttention (one fused operator on its fast path).
TORCHVISION_VIT_GROUPS = {
    "patch_embed": ("patch_embed",),
    "attention": ("qkv", "attn_scores", "attn_values", "attn_proj"),
    "mlp_fc1": ("mlp_fc1",),
    "mlp_fc2": ("mlp_fc2",),
    "head": ("head",),
}

_ATTN = r"(?:attn|self_attn|attention\.attention|attention)"
#: (module path pattern, group); the first match wins. vitbench and timm name modules alike
#: (blocks.N.attn.qkv); transformers ViT/DINOv2 (encoder.layer.N.attention.attention.query) and
#: CLIP/SigLIP (encoder.layers.N.self_attn.q_proj) name them their own way.
VIT_RULES = (
    (r"(?:.*\.)?(?:patch_embed|patch_embeddings|patch_embedding)(?:\..*)?", "patch_embed"),
    (r"(?:.*\.)?(?:shared_)?rel_pos(?:\..*)?", "rel_pos"),  # timm's relative-position MLP
    (r"attn_pool(?:\..*)?|head\.(?:attention|mlp|layernorm)(?:\..*)?", "attn_pool"),  # SigLIP MAP
    (rf".*{_ATTN}\.(?:qkv|query|key|value|q_proj|k_proj|v_proj|q|k|v)", "qkv"),
    (rf".*{_ATTN}\.(?:proj|out_proj|o_proj)", "attn_proj"),
    (r".*attention\.output\.dense", "attn_proj"),
    (rf".*\.{_ATTN}", "attn_matmul"),
    (r".*mlp\.(?:fc1|fc1_g|fc1_x|w12|weights_in)", "mlp_fc1"),
    (r".*intermediate\.dense", "mlp_fc1"),
    (r".*mlp\.(?:fc2|w3|weights_out)", "mlp_fc2"),
    (r".*(?:layers?|blocks)\.\d+\.output\.dense", "mlp_fc2"),
    (r"(?:head|head_dist|pooler|classifier)(?:\..*)?", "head"),
)
#: the first pattern of each ViT group, by group (rules are looked up by name, never by position)
_VIT_PATTERNS = {group: pattern for pattern, group in reversed(VIT_RULES)}

TORCHVISION_VIT_RULES = (
    (r"conv_proj", "patch_embed"),
    (r".*self_attention(\..*)?", "attention"),
    (r".*mlp\.0", "mlp_fc1"),
    (r".*mlp\.3", "mlp_fc2"),
    (r"heads(\..*)?", "head"),
)


SWIN_GROUPS = {**VIT_GROUPS, "patch_merging": ("patch_merging",), "cpb_mlp": ("cpb_mlp",)}
#: torchvision (features.0 = patch embedding, features.2k = PatchMerging, mlp.0/mlp.3), timm
#: (layers.N.downsample.reduction, mlp.fc1/fc2) and transformers (attention.self.query) Swin.
SWIN_RULES = (
    (r"features\.0(?:\..*)?", "patch_embed"),
    (r".*\.cpb_mlp(?:\..*)?", "cpb_mlp"),
    (r".*(?:downsample\.)?reduction", "patch_merging"),
    (r".*mlp\.0", "mlp_fc1"),
    (r".*mlp\.3", "mlp_fc2"),
    (r".*attention\.self\.(?:query|key|value)", "qkv"),
    (r".*attention\.self", "attn_matmul"),
    *VIT_RULES,
)
TORCHVISION_SWIN_GROUPS = {
    **{k: v for k, v in SWIN_GROUPS.items() if k not in ("qkv", "attn_matmul", "attn_proj")},
    "attention": ("qkv", "attn_scores", "attn_values", "attn_proj"),
}
TORCHVISION_SWIN_RULES = (
    (r"features\.0(?:\..*)?", "patch_embed"),
    (r".*\.cpb_mlp(?:\..*)?", "cpb_mlp"),
    (r".*\.attn", "attention"),
    (r".*reduction", "patch_merging"),
    (r".*mlp\.0", "mlp_fc1"),
    (r".*mlp\.3", "mlp_fc2"),
    (r"head", "head"),
)
CONVNEXT_GROUPS = {c: (c,) for c in ("stem", "dwconv", "mlp_fc1", "mlp_fc2", "downsample", "head")}
#: torchvision (features.0 stem, features.i.j.block.{0,3,5}, features.2k.1 downsampling conv,
#: classifier.2) and timm (stem, stages.i.downsample, conv_dw, mlp.fc1/fc2, head.fc) ConvNeXt.
CONVNEXT_RULES = (
    (r"(?:features\.0|stem)(?:\..*)?", "stem"),
    (r".*block\.0|.*conv_dw", "dwconv"),
    (r".*block\.3|.*mlp\.fc1", "mlp_fc1"),
    (r".*block\.5|.*mlp\.fc2", "mlp_fc2"),
    (r"features\.\d+\.1|stages\.\d+\.downsample(?:\..*)?", "downsample"),
    (r"(?:classifier|head)(?:\..*)?", "head"),
)


def vit_layout(paths: Iterable[str]) -> str | None:
    """'torchvision' or 'vit' (vitbench, timm, transformers naming) when the module paths are
    those of a ViT or Swin (a patch embedding and attention blocks), else None. torchvision's
    ViT and Swin compute qkv and the output projection inside one attention module."""
    paths = list(paths)
    if "conv_proj" in paths and any(p.endswith("self_attention") for p in paths):
        return "torchvision"
    if "features.0" in paths and any(p.endswith(".attn") for p in paths):
        if not any(p.endswith(".attn.qkv") for p in paths):
            return "torchvision"
    has_patches = any(re.fullmatch(_VIT_PATTERNS["patch_embed"], p) for p in paths)
    has_attention = any(re.fullmatch(_VIT_PATTERNS["qkv"], p) or re.fullmatch(_VIT_PATTERNS["attn_matmul"], p)
                        for p in paths)
    return "vit" if has_patches and has_attention else None


def _matcher(rules: tuple[tuple[str, str], ...]) -> Callable[[str], str]:
    def component(path: str) -> str:
        for pattern, group in rules:
            if re.fullmatch(pattern, path):
                return group
        return f"other:{path or '<root>'}"

    return component


def _resnet_component(path: str) -> str:
    match = re.match(r"(?:layer(\d+)|stages\.(\d+))", path)
    if match:
        index = int(match.group(1)) if match.group(1) else int(match.group(2)) + 1
        return f"stage{index}"
    if re.match(r"(conv1|bn1|stem)", path):
        return "stem"
    if path.startswith("fc"):
        return "classifier"
    return f"other:{path or '<root>'}"


def _plain_cnn_component(spec: PlainCNNSpec) -> Callable[[str], str]:
    """nn.Sequential indices -> stage; mirrors vitbench.models.cnn.build_plain_cnn's order."""
    index_to_component: dict[str, str] = {}
    index = 0
    for stage, channels in enumerate(spec.stages):
        for _ in channels:
            index_to_component[str(index)] = f"stage{stage + 1}"
            index += 2  # conv, relu
        index += 2 if spec.batchnorm else 1  # pool (+ batchnorm)
    return lambda path: index_to_component.get(path.split(".")[0], "classifier")


def component_layout(
    spec: ModelSpec | None, layout: str | None
) -> tuple[Callable[[str], str], dict[str, tuple[str, ...]]] | None:
    """(module path -> group, group -> analytic components) for a module layout, or None when
    the model has neither an analytic spec nor a recognised ViT layout."""
    if isinstance(spec, ViTSpec) or (spec is None and layout):
        if layout == "torchvision":
            return _matcher(TORCHVISION_VIT_RULES), TORCHVISION_VIT_GROUPS
        return _matcher(VIT_RULES), VIT_GROUPS
    if spec is None:
        return None
    if spec.kind == "swin":
        if layout == "torchvision":
            return _matcher(TORCHVISION_SWIN_RULES), TORCHVISION_SWIN_GROUPS
        return _matcher(SWIN_RULES), SWIN_GROUPS
    if spec.kind == "convnext":
        return _matcher(CONVNEXT_RULES), CONVNEXT_GROUPS
    if not isinstance(spec, (ResNetSpec, PlainCNNSpec)):
        return None  # a family without a module layout: totals only

    groups = {c: (c,) for c in dict.fromkeys(layer.component for layer in cnn_layers(spec))}
    if isinstance(spec, ResNetSpec):
        return _resnet_component, groups
    return _plain_cnn_component(spec), groups


#: attention parts that some implementations compute inside the attention module with
#: ``F.linear`` on the submodule's weights (timm EVA, BEiT, Swin v2: q/v-only biases), so that
#: no module path carries them alone: they are then compared together as ``attention``.
_FUSABLE = ("qkv", "attn_proj")


def comparison(
    spec: ModelSpec | None, by_module: dict[str, int]
) -> tuple[Callable[[str], str], dict[str, tuple[str, ...]]] | None:
    """The (matcher, groups) of :func:`component_layout` for the module layout the counted paths
    show, with qkv / output projection fused into ``attention`` when no module carries them."""
    paths = [p for p, v in by_module.items() if v]
    found = component_layout(spec, vit_layout(paths))
    if found is None or "attn_matmul" not in found[1]:
        return found
    to_group, groups = found
    seen = {to_group(p) for p in paths}
    fused = [g for g in _FUSABLE if g not in seen]
    if not fused or "attn_matmul" not in seen:
        return found
    members = tuple(c for g in ("attn_matmul", *fused) for c in groups[g])
    groups = {k: v for k, v in groups.items() if k not in ("attn_matmul", *fused)}
    groups["attention"] = members

    def fused_group(path: str) -> str:
        group = to_group(path)
        return "attention" if group == "attn_matmul" or group in fused else group

    return fused_group, groups


def counted_by_group(by_module: dict[str, int], spec: ModelSpec | None) -> dict[str, int]:
    """Own MACs summed per named component ({} when the model has no named components)."""
    found = comparison(spec, by_module)
    if found is None:
        return {}
    to_group, _ = found
    out: dict[str, int] = {}
    for path, value in own_macs(by_module).items():
        group = to_group(path)
        out[group] = out.get(group, 0) + value
    return out


def analytic_by_group(macs_by_component: dict[str, int], spec: ModelSpec, by_module: dict[str, int]) -> dict[str, int]:
    """The analytic components summed per comparison group, for the module layout that
    ``by_module`` (counted MACs per module path) shows ({} for a family without groups)."""
    found = comparison(spec, by_module)
    if found is None:
        return {}
    _, groups = found
    return {group: sum(macs_by_component.get(c, 0) for c in members) for group, members in groups.items()}
