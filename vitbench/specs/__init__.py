"""Model specifications: frozen, validated, hashable dataclasses. No torch import here.

A spec is the identity of a model configuration. Everything downstream (building the module,
analytic formulas, counters, measurement, result keys) takes a spec. One module per family;
``SPEC_TYPES`` maps each spec's ``kind`` to its class.
"""

from __future__ import annotations

from typing import Any

from vitbench.errors import SpecError
from vitbench.specs.cnn import RESNET_BLOCKS, RESNET_STEMS, PlainCNNSpec, ResNetSpec
from vitbench.specs.convnext import ConvNeXtSpec
from vitbench.specs.swin import SWIN_VERSIONS, SwinSpec
from vitbench.specs.text import (
    format_overrides,
    format_value,
    key_data,
    list_valued,
    omitted_from_key,
    override_combinations,
    overrides_of,
    parse_field_value,
    spec_fields,
    spec_key,
    spec_to_dict,
    split_alternatives,
    with_overrides,
)
from vitbench.specs.vit import ATTENTIONS, PATCH_EMBEDS, POOLINGS, POS_EMBEDS, ViTSpec

ModelSpec = ViTSpec | ResNetSpec | PlainCNNSpec | SwinSpec | ConvNeXtSpec
SPEC_TYPES: dict[str, type] = {
    cls.kind: cls for cls in (ViTSpec, ResNetSpec, PlainCNNSpec, SwinSpec, ConvNeXtSpec)
}


def spec_from_dict(data: dict[str, Any]) -> ModelSpec:
    """The spec of a plain dict (``kind`` names the class); inverse of :func:`spec_to_dict`."""
    data = dict(data)
    kind = data.pop("kind", "vit")
    if kind not in SPEC_TYPES:
        raise SpecError("kind", kind, f"must be one of {', '.join(SPEC_TYPES)}")
    spec_type = SPEC_TYPES[kind]
    for name in data:
        if name not in spec_fields(spec_type):
            raise SpecError(name, data[name], f"unknown field for a {kind} model")
    for name, value in data.items():  # JSON lists back to the tuples the specs hold
        if isinstance(value, list):
            data[name] = tuple(tuple(v) if isinstance(v, list) else v for v in value)
    return spec_type(**data)


__all__ = [
    "ATTENTIONS",
    "PATCH_EMBEDS",
    "POOLINGS",
    "POS_EMBEDS",
    "RESNET_BLOCKS",
    "RESNET_STEMS",
    "SPEC_TYPES",
    "SWIN_VERSIONS",
    "ConvNeXtSpec",
    "ModelSpec",
    "PlainCNNSpec",
    "ResNetSpec",
    "SwinSpec",
    "ViTSpec",
    "format_overrides",
    "format_value",
    "key_data",
    "list_valued",
    "omitted_from_key",
    "override_combinations",
    "overrides_of",
    "parse_field_value",
    "spec_fields",
    "spec_from_dict",
    "spec_key",
    "spec_to_dict",
    "split_alternatives",
    "with_overrides",
]
