"""``timm:NAME`` (``NAME.tag`` too): any ``timm.list_models()`` name, ``pretrained=False``.

Input size: the model's ``pretrained_cfg['input_size']`` (timm's own metadata, no download),
or ``img_size``. ``img_size`` (from the reference or --img-size) becomes timm's ``img_size``
argument for models whose layers fix the input size (ViTs, Swin); for the others it is only the
input size. ``in_chans`` also sets the input channels. Other override flags become timm keyword
arguments when the model class takes them; keyword arguments in the reference always do.
"""

from __future__ import annotations

from typing import Any

from vitbench.errors import SpecError
from vitbench.models.inputs import size_pair
from vitbench.models.sources.common import (
    class_parameters,
    finish,
    key_of,
    probe,
    typed,
)
from vitbench.models.target import input_size_of, no_network, require, unknown

_NETWORK_PREFIXES = ("hf-hub:", "hf_hub:", "local-dir:")


def taken(reference: str, name: str, kwargs: dict[str, Any], overrides: dict[str, Any]) -> set[str]:
    """The override names ``resolve`` applies. Only the model's class tells, and only an instance
    shows the class (timm's entry points do not all annotate it), so this is ``resolve`` itself:
    the model is built once on the meta device (library code, no weights, cached)."""
    used: set[str] = set()
    resolve(reference, name, kwargs, overrides, used)
    return used


def _check_offline(timm: Any, reference: str, name: str, kwargs: dict[str, Any]) -> None:
    """A known timm model that needs no download, or one line saying why not."""
    if name.startswith(_NETWORK_PREFIXES):
        raise no_network(reference, "a timm model from the Hugging Face Hub or a local directory")
    for key in ("pretrained", "checkpoint_path"):
        if kwargs.get(key) not in (None, False):
            raise no_network(reference, f"{key}={kwargs[key]}")
    if not timm.is_model(name):
        raise unknown(reference, "timm model", timm.list_models(), "timm:")


def resolve(reference: str, name: str, kwargs: dict[str, Any], overrides: dict[str, Any], used: set[str]):
    timm = require("timm", reference)
    _check_offline(timm, reference, name, kwargs)

    def builder(kw):
        return lambda: timm.create_model(name, pretrained=False, **kw)

    passed = {k: v for k, v in kwargs.items() if k != "img_size"}
    base = probe(reference, key_of("timm", name, passed), builder(passed))
    takes = class_parameters(type(base))
    cfg = dict(getattr(base, "pretrained_cfg", None) or {})
    fixed_size = bool(cfg.get("fixed_input_size")) and "img_size" in takes
    final, shown = dict(passed), dict(kwargs)
    img_size = kwargs.get("img_size")
    for field, value in overrides.items():
        value = typed(value)
        if field != "img_size" and field not in takes:
            continue
        if field == "img_size":
            img_size = value
        else:
            final[field] = value
        shown[field] = value
        used.add(field)
    if img_size is not None and fixed_size:
        final["img_size"] = img_size
    same = final == passed or (final == {**passed, "img_size": img_size} and _built_size(base) == size_pair(img_size))
    module = base if same else probe(reference, key_of("timm", name, final), builder(final))
    channels, *size = cfg.get("input_size") or (3, None, None)
    channels = final.get("in_chans", channels)
    if img_size is None:
        img_size = getattr(getattr(module, "patch_embed", None), "img_size", None)
        img_size = tuple(img_size) if img_size else tuple(size) if None not in size else None
    if img_size is None:
        raise SpecError("img_size", None, f"{reference} does not say its input size: give --img-size")
    return finish(reference, "timm", module, builder(final), input_size_of(img_size, channels), shown)


def _built_size(module: Any) -> tuple[int, int] | None:
    """The image size a fixed-size timm model was built for (its patch embedding's): a model asked
    for that very size is the one already built, and is not built again."""
    return size_pair(getattr(getattr(module, "patch_embed", None), "img_size", None))
