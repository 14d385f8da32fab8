"""``hf:ARCH``: a Hugging Face transformers vision encoder built from its config class with
random weights (``hf:vit``, ``hf:dinov2``, ``hf:clip_vision``, ``hf:siglip_vision``, ``hf:swin``,
any model type with an ``image_size``; its base class name too: ``hf:ViTModel``,
``hf:CLIPVisionModel``). Keyword arguments are config fields
(``hf:vit+hidden_size=384+num_attention_heads=6``) or vitbench field names that map to one
(``img_size`` -> ``image_size``, ``depth`` -> ``num_hidden_layers``, see ``CONFIG_FIELDS``),
as are the override flags. A Hub id (``hf:google/vit-base-patch16-224``)
would need the network and is refused.

The module's output (a ModelOutput) is returned as a tuple, first element the last hidden state,
so that tracers see tensors. An encoder that takes each image's patch grid beside the pixels
(MiniCPM's vision towers: ``target_sizes``) is given it, as its processor would for whole images.
"""

from __future__ import annotations

import inspect
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


def _forward_inputs(arch: str) -> tuple[str | None, list[str]]:
    """(the first argument of the base model's forward, the others it requires), read from the
    class without building it; (None, []) when it cannot be read. An image encoder takes
    ``pixel_values`` first and requires nothing else."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    names = MODEL_MAPPING_NAMES.get(arch)
    name = names if isinstance(names, str) else names[0] if names else None
    model_class = getattr(transformers, name, None) if name else None
    try:
        parameters = [p for n, p in inspect.signature(model_class.forward).parameters.items() if n != "self"]
    except (AttributeError, TypeError, ValueError):
        return None, []
    if not parameters:
        return None, []
    plain = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    required = [p.name for p in parameters[1:] if p.kind in plain and p.default is inspect.Parameter.empty]
    return parameters[0].name, required


#: forward arguments that carry each image's patch grid (rows, columns) beside the pixels
GRID_KEYWORDS = ("target_sizes", "tgt_sizes")


def _grid_keyword(module: Any) -> str | None:
    """The forward argument through which ``module`` wants each image's patch grid (MiniCPM's
    vision towers: ``target_sizes``), None for an encoder that takes the pixels alone."""
    parameters = inspect.signature(module.forward).parameters
    if list(parameters)[:1] != ["pixel_values"]:
        return None
    return next((k for k in GRID_KEYWORDS if k in parameters), None)


def _with_patch_grid_class() -> type:
    from torch import nn

    class WithPatchGrid(nn.Module):
        """Feeds an encoder that takes the patch grid beside the pixels: for a batch of
        (B, C, H, W) images, ``[[H // patch, W // patch]] * B`` as int32, as its processor would
        for whole images. Parameters, buffers and ``config`` are the encoder's."""

        def __init__(self, encoder: nn.Module, keyword: str):
            super().__init__()
            self.encoder, self.keyword, self.config = encoder, keyword, encoder.config
            patch = encoder.config.patch_size
            self.patch = tuple(patch) if isinstance(patch, (list, tuple)) else (patch, patch)

        def forward(self, pixel_values):
            import torch

            batch, _, height, width = pixel_values.shape
            grid = torch.tensor([height // self.patch[0], width // self.patch[1]], dtype=torch.int32, device=pixel_values.device)
            return self.encoder(pixel_values, **{self.keyword: grid.repeat(batch, 1)})

    return WithPatchGrid


def _WithPatchGrid(encoder: Any, keyword: str) -> Any:
    """The encoder fed its patch grid, in a class named as the encoder's (messages name it)."""
    base = _with_patch_grid_class()
    named = type(type(encoder).__name__, (base,), {"__doc__": base.__doc__, "__module__": __name__})
    return named(encoder, keyword)


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
    frames = getattr(defaults, "num_frames", None)
    if isinstance(frames, int) and not isinstance(frames, bool):
        raise SpecError("model", reference, f"is a video encoder (its input is {frames} frames: (batch, frames, channels, height, width)); "
                        "vitbench measures image models, (batch, channels, height, width)")
    first, required = _forward_inputs(arch)
    if first not in (None, "pixel_values"):
        raise SpecError("model", reference, f"takes {first} first, not pixel_values: it needs more than an image (text tokens, masks); "
                        "vitbench measures image encoders")
    if required:
        raise SpecError("model", reference, f"needs {', '.join(required)} beside pixel_values (not only an image); "
                        "vitbench measures image encoders")
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
        keyword = _grid_keyword(module)
        return _WithPatchGrid(module, keyword) if keyword else module

    module = probe(reference, key_of("hf", arch, fields), build)
    config = config_class(**fields)
    size = config.image_size
    img_size = tuple(size) if isinstance(size, (list, tuple)) else size
    return finish(reference, "hf", module, build, input_size_of(img_size, config.num_channels), shown)
