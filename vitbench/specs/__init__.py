"""Model specifications: frozen, validated, hashable dataclasses. No torch import here.

A spec is the identity of a model configuration. Everything downstream (building the module,
analytic formulas, counters, measurement, result keys) takes a spec. One module per family;
``SPEC_TYPES`` maps each spec's ``kind`` to its class.
"""

from __future__ import annotations

from typing import Union

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
    split_alternatives,
    spec_from_dict,
    spec_key,
    spec_to_dict,
    with_overrides,
)
from vitbench.specs.vit import ATTENTIONS, PATCH_EMBEDS, POOLINGS, POS_EMBEDS, ViTSpec

ModelSpec = Union[ViTSpec, ResNetSpec, PlainCNNSpec, SwinSpec, ConvNeXtSpec]
SPEC_TYPES: dict[str, type] = {
    cls.kind: cls for cls in (ViTSpec, ResNetSpec, PlainCNNSpec, SwinSpec, ConvNeXtSpec)
}

__all__ = [
    "ViTSpec",
    "ResNetSpec",
    "PlainCNNSpec",
    "SwinSpec",
    "ConvNeXtSpec",
    "SWIN_VERSIONS",
    "ModelSpec",
    "SPEC_TYPES",
    "ATTENTIONS",
    "PATCH_EMBEDS",
    "POOLINGS",
    "POS_EMBEDS",
    "RESNET_BLOCKS",
    "RESNET_STEMS",
    "spec_fields",
    "with_overrides",
    "parse_field_value",
    "spec_to_dict",
    "spec_from_dict",
    "spec_key",
    "overrides_of",
    "format_overrides",
    "format_value",
    "key_data",
    "list_valued",
    "omitted_from_key",
    "override_combinations",
    "split_alternatives",
]
