"""Attribute traced per-module MACs to the analytic model's components, so that a disagreement
can name the component that differs.

Counters report MACs per module with children included; a module's *own* MACs are its total
minus its direct children's. Own MACs are then mapped to components by module path.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from vitbench.specs import ModelSpec, PlainCNNSpec, ResNetSpec, ViTSpec


def own_macs(by_module: dict[str, int]) -> dict[str, int]:
    """Per-module MACs excluding children (``''`` is the root module)."""
    own = dict(by_module)
    for name, value in by_module.items():
        if not name:
            continue
        parent = name.rsplit(".", 1)[0] if "." in name else ""
        if parent in own:
            own[parent] -= value
    return {name: value for name, value in own.items() if value}


# Comparison groups: analytic components summed per group, for each module layout.
VIT_GROUPS = {
    "patch_embed": ("patch_embed",),
    "qkv": ("qkv",),
    "attn_matmul": ("attn_scores", "attn_values"),
    "attn_proj": ("attn_proj",),
    "mlp_fc1": ("mlp_fc1",),
    "mlp_fc2": ("mlp_fc2",),
    "head": ("head",),
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


#: (module path pattern, group) per module layout; the first match wins.
VIT_RULES = (
    (r"patch_embed(\..*)?", "patch_embed"),
    (r".*attn\.qkv", "qkv"),
    (r".*attn\.proj", "attn_proj"),
    (r".*\.attn", "attn_matmul"),
    (r".*mlp\.fc1", "mlp_fc1"),
    (r".*mlp\.fc2", "mlp_fc2"),
    (r"head", "head"),
)
TORCHVISION_VIT_RULES = (
    (r"conv_proj", "patch_embed"),
    (r".*self_attention(\..*)?", "attention"),
    (r".*mlp\.0", "mlp_fc1"),
    (r".*mlp\.3", "mlp_fc2"),
    (r"heads(\..*)?", "head"),
)


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


def component_layout(spec: ModelSpec, layout: str = "vitbench") -> tuple[Callable[[str], str], dict[str, tuple[str, ...]]]:
    """(module path -> group, group -> analytic components) for a model's module layout."""
    if isinstance(spec, ViTSpec):
        if layout == "torchvision":
            return _matcher(TORCHVISION_VIT_RULES), TORCHVISION_VIT_GROUPS
        return _matcher(VIT_RULES), VIT_GROUPS
    from vitbench.analytic.cnn import cnn_layers

    groups = {c: (c,) for c in dict.fromkeys(layer.component for layer in cnn_layers(spec))}
    if isinstance(spec, ResNetSpec):
        return _resnet_component, groups
    return _plain_cnn_component(spec), groups


def counted_by_group(by_module: dict[str, int], spec: ModelSpec, layout: str = "vitbench") -> dict[str, int]:
    to_group, _ = component_layout(spec, layout)
    out: dict[str, int] = {}
    for path, value in own_macs(by_module).items():
        group = to_group(path)
        out[group] = out.get(group, 0) + value
    return out


def analytic_by_group(macs_by_component: dict[str, int], spec: ModelSpec, layout: str = "vitbench") -> dict[str, int]:
    _, groups = component_layout(spec, layout)
    return {group: sum(macs_by_component.get(c, 0) for c in members) for group, members in groups.items()}
