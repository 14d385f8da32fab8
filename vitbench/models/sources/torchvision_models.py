"""``torchvision:NAME``: every classification builder of ``torchvision.models``, random weights.

Input size: the model's own (ViT ``image_size``), else the crop size of the builder's default
weights' transforms (metadata shipped with torchvision; nothing is downloaded), else
``img_size``. ``img_size`` (reference or --img-size) becomes ``image_size`` for ViTs and
``input_size`` for MaxViT (the models whose layers fix the size); for the others it is only the
input size. --num-classes becomes ``num_classes``; other reference keyword arguments go to the
builder as they are.
"""

from __future__ import annotations

from typing import Any

from vitbench.errors import SpecError
from vitbench.models.sources.common import finish, key_of, probe, typed
from vitbench.models.target import input_size_of, no_network, unknown

#: model class -> the builder keyword that fixes the input size
_SIZE_KEYWORDS = {"VisionTransformer": "image_size", "MaxVit": "input_size"}
_OVERRIDES = ("img_size", "num_classes")


def classification_models() -> list[str]:
    import torchvision

    return torchvision.models.list_models(module=torchvision.models)


def default_crop(name: str) -> int | None:
    """Crop size of the builder's default weights (torchvision's transforms metadata)."""
    from torchvision.models import get_model_weights

    try:
        weights = get_model_weights(name)
    except ValueError:
        return None
    default = getattr(weights, "DEFAULT", None) or next(iter(weights), None)
    keywords = getattr(getattr(default, "transforms", None), "keywords", {}) if default else {}
    return keywords.get("crop_size")


def taken(reference: str, name: str, kwargs: dict[str, Any], overrides: dict[str, Any]) -> set[str]:
    """The override names ``resolve`` would apply (nothing is built)."""
    _check(reference, name, kwargs)
    return {field for field in _OVERRIDES if field in overrides}


def _check(reference: str, name: str, kwargs: dict[str, Any]) -> None:
    import torchvision

    if name not in classification_models():
        if name in torchvision.models.list_models():
            raise SpecError("model", reference, "is not a classification model; torchvision: takes classification builders")
        raise unknown(reference, "torchvision classification model", classification_models(), "torchvision:")
    for key in ("weights", "weights_backbone"):
        if kwargs.get(key) not in (None, False):
            raise no_network(reference, f"{key}={kwargs[key]}")


def resolve(reference: str, name: str, kwargs: dict[str, Any], overrides: dict[str, Any], used: set[str]):
    import torchvision

    _check(reference, name, kwargs)

    def builder(kw):
        return lambda: torchvision.models.get_model(name, **kw)

    passed = {k: v for k, v in kwargs.items() if k != "img_size"}
    base = probe(reference, key_of("torchvision", name, passed), builder(passed))
    shown = dict(kwargs)
    for field in _OVERRIDES:
        if field in overrides:
            shown[field] = typed(overrides[field])
            used.add(field)
    final = {k: v for k, v in shown.items() if k != "img_size"}
    img_size = shown.get("img_size")
    size_keyword = _SIZE_KEYWORDS.get(type(base).__name__)
    if img_size is not None and size_keyword == "image_size":
        if isinstance(img_size, tuple) and img_size[0] != img_size[1]:
            raise SpecError("img_size", img_size, f"{reference} takes square images only")
        final["image_size"] = img_size[0] if isinstance(img_size, tuple) else img_size
    elif img_size is not None and size_keyword == "input_size":
        final["input_size"] = input_size_of(img_size)[1:]
    module = base if final == passed else probe(reference, key_of("torchvision", name, final), builder(final))
    if img_size is None:
        img_size = getattr(module, "image_size", None) or default_crop(name)
    if img_size is None:
        raise SpecError("img_size", None, f"{reference} does not say its input size: give --img-size")
    return finish(reference, "torchvision", module, builder(final), input_size_of(img_size), shown)
