"""``hf:ARCH``: a Hugging Face transformers vision encoder built from its config class with
random weights (``hf:vit``, ``hf:dinov2``, ``hf:clip_vision``, ``hf:siglip_vision``, ``hf:swin``,
any model type with an ``image_size``; its base class name too: ``hf:ViTModel``,
``hf:CLIPVisionModel``). Keyword arguments are config fields
(``hf:vit+hidden_size=384+num_attention_heads=6``) or vitbench field names that map to one
(``img_size`` -> ``image_size``, ``depth`` -> ``num_hidden_layers``, see ``CONFIG_FIELDS``),
as are the override flags. A Hub id (``hf:google/vit-base-patch16-224``)
would need the network and is refused.

The module's output (a ModelOutput) is returned as a tuple, first element the last hidden state,
so that tracers see tensors.
"""

from __future__ import annotations

from typing import Any

from vitbench.errors import SpecError
from vitbench.models.sources.common import finish, key_of, probe, typed
from vitbench.models.target import input_size_of, no_network, require, unknown

ALIASES = {
    "clip_vision": "clip_vision_model",
    "siglip_vision": "siglip_vision_model",
    "siglip2_vision": "siglip2_vision_model",  # recognised, then refused (NOT_IMAGE_INPUT)
    "aimv2_vision": "aimv2_vision_model",
}
#: vision encoders whose input is not one image tensor: refused with the reason
NOT_IMAGE_INPUT = {
    "siglip2_vision_model": "takes pre-cut patches with a padding mask and their spatial shapes (NaFlex), not an image tensor",
    "siglip2": "is an image-text model whose vision tower takes pre-cut patches with a padding mask and their spatial shapes (NaFlex), not an image tensor",
}
#: vitbench override field -> candidate config fields (the first the config has wins)
CONFIG_FIELDS = {
    "img_size": ("image_size",),
    "in_chans": ("num_channels",),
    "patch_size": ("patch_size",),
    "embed_dim": ("embed_dim", "hidden_size"),
    "depth": ("num_hidden_layers",),
    "num_heads": ("num_attention_heads",),
    "mlp_hidden_dim": ("intermediate_size",),
    "qkv_bias": ("qkv_bias",),
}


def model_type(name: str, mapping: dict[str, Any]) -> str | None:
    """The transformers model type ``name`` means: a model type (any case), an alias
    (``clip_vision``), or a base model class name as users type it (``ViTModel``,
    ``CLIPVisionModel``, ``Dinov2Model``); None when it is none of these."""
    for candidate in (name, name.lower()):
        candidate = ALIASES.get(candidate, candidate)
        if candidate in mapping:
            return candidate
    for arch, classes in mapping.items():
        names = classes if isinstance(classes, (list, tuple)) else (classes,)
        if any(str(c).lower() == name.lower() for c in names):
            return arch
    return None


def _as_tuple(module, inputs, output):
    return output.to_tuple() if hasattr(output, "to_tuple") else output


def _config(reference: str, name: str, kwargs: dict[str, Any]) -> tuple[str, Any, dict[str, Any], Any]:
    """(model type, config class, its default fields, field -> config field) of an ``hf:``
    reference, checked; nothing is built."""
    if "/" in name:
        raise no_network(reference, "a Hugging Face Hub id (vitbench builds hf:ARCH from config classes only, e.g. hf:vit+hidden_size=384)")
    require("hf", reference)
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    arch = model_type(name, MODEL_MAPPING_NAMES)
    if arch is None:
        raise unknown(reference, "transformers model type", [*MODEL_MAPPING_NAMES, *ALIASES], "hf:")
    if arch in NOT_IMAGE_INPUT:
        raise SpecError("model", reference, f"{NOT_IMAGE_INPUT[arch]}; vitbench measures models that take (batch, channels, height, width)")
    config_class = CONFIG_MAPPING[arch]
    defaults = config_class()
    if not hasattr(defaults, "image_size"):
        vision = next((alias for alias, target in ALIASES.items() if target == f"{arch}_vision_model"), None)
        hint = f"; did you mean hf:{vision} (its image encoder)?" if vision else ""
        raise SpecError("model", reference, f"is not a vision encoder ({config_class.__name__} has no image_size){hint}")
    if not isinstance(getattr(defaults, "num_channels", None), int):
        raise SpecError("model", reference, f"is not an image encoder vitbench can feed ({config_class.__name__} has no num_channels: "
                        "its input is not a (batch, channels, height, width) image)")
    known = defaults.to_dict()

    def config_field(field: str) -> str | None:
        """The config field a vitbench field name maps to (the first the config has)."""
        return next((c for c in CONFIG_FIELDS.get(field, ()) if isinstance(known.get(c), (int, bool))), None)

    for key, value in kwargs.items():
        if key not in known and config_field(key) is None:
            raise unknown(f"{reference}+{key}={value}", f"{config_class.__name__} field", known, f"{reference}+", key)
    return arch, config_class, known, config_field


def taken(reference: str, name: str, kwargs: dict[str, Any], overrides: dict[str, Any]) -> set[str]:
    """The override names ``resolve`` would apply, from the config class (no model is built)."""
    config_field = _config(reference, name, kwargs)[3]
    return {field for field in overrides if config_field(field) is not None}


def resolve(reference: str, name: str, kwargs: dict[str, Any], overrides: dict[str, Any], used: set[str]):
    arch, config_class, known, config_field = _config(reference, name, kwargs)
    fields, shown = {}, dict(kwargs)
    for field, value in overrides.items():
        if config_field(field) is not None:
            shown[field] = typed(value)
            used.add(field)
    for key, value in shown.items():
        name_in_config = key if key in known else config_field(key)
        fields[name_in_config] = list(value) if isinstance(value, tuple) else value

    def build():
        from transformers import AutoModel

        module = AutoModel.from_config(config_class(**fields))
        module.register_forward_hook(_as_tuple)
        return module

    module = probe(reference, key_of("hf", arch, fields), build)
    config = config_class(**fields)
    size = config.image_size
    img_size = tuple(size) if isinstance(size, (list, tuple)) else size
    return finish(reference, "hf", module, build, input_size_of(img_size, config.num_channels), shown)
