"""Reference adapters, one module per library: torchvision, timm, hf (transformers), py
(a user's factory). Each ``resolve(reference, name, kwargs, overrides, used) -> Target``, and
``taken(reference, name, kwargs, overrides) -> set``: the override names ``resolve`` would
apply, found without building (timm, whose class only an instance shows, builds on meta)."""

from __future__ import annotations

import importlib
from typing import Any

MODULES = {
    "torchvision": "vitbench.models.sources.torchvision_models",
    "timm": "vitbench.models.sources.timm_models",
    "hf": "vitbench.models.sources.hf_models",
    "py": "vitbench.models.sources.py_factory",
}


def resolve(source: str, reference: str, name: str, kwargs: dict[str, Any], overrides: dict[str, Any], used: set[str]):
    return importlib.import_module(MODULES[source]).resolve(reference, name, kwargs, overrides, used)


def taken(source: str, reference: str, name: str, kwargs: dict[str, Any], overrides: dict[str, Any]) -> set[str]:
    return importlib.import_module(MODULES[source]).taken(reference, name, kwargs, overrides)
