"""``py:package.module:factory``: a user's own factory returning an ``nn.Module``.

Keyword arguments in the reference are passed to the factory (``pretrained``/``weights`` are
refused: nothing is downloaded); override flags are passed when the factory names them as
parameters (``--img-size`` also sets the input size). Input size:
--img-size, else the module's own metadata (timm ``pretrained_cfg``, an ``image_size`` or
``img_size`` attribute, an hf ``config.image_size``), else a one-line error.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from vitbench.errors import SpecError
from vitbench.models.sources.common import accepted, finish, key_of, probe, typed
from vitbench.models.target import input_size_of, no_network, unknown

_PATH = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*")


def resolve(reference: str, name: str, kwargs: dict[str, Any], overrides: dict[str, Any], used: set[str]):
    from vitbench.models.inputs import library_of, module_input_size

    if not _PATH.fullmatch(name):
        raise SpecError("model", reference, "must be py:package.module:factory")
    module_path, _, attribute = name.partition(":")
    try:
        namespace = importlib.import_module(module_path)
    except ImportError as exc:
        raise SpecError("model", reference, f"cannot import {module_path!r}: {exc}") from None
    factory = getattr(namespace, attribute, None)
    if not callable(factory):
        public = [n for n in dir(namespace) if not n.startswith("_") and callable(getattr(namespace, n))]
        raise unknown(reference, f"factory in {module_path}", public, f"py:{module_path}:", attribute)
    for key in ("pretrained", "weights"):  # the usual names for downloaded weights
        if kwargs.get(key) not in (None, False):
            raise no_network(reference, f"{key}={kwargs[key]}")
    takes = accepted(factory) or set()
    shown = dict(kwargs)
    for field, value in overrides.items():
        if field in takes or field == "img_size":
            shown[field] = typed(value)
            used.add(field)
    final = {k: v for k, v in shown.items() if k != "img_size" or k in takes}

    def build():
        return factory(**final)

    module = probe(reference, key_of("py", name, final), build)
    default = module_input_size(module)
    channels = final.get("in_chans", default[0] if default else 3)
    img_size = shown.get("img_size")
    if img_size is None and default is not None:
        img_size = default[1:]
    if img_size is None:
        raise SpecError("img_size", None, f"{reference} does not say its input size: give --img-size")
    size = input_size_of(img_size, channels)
    return finish(reference, "py", module, build, size, shown, library=library_of(module))
