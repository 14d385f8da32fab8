"""What the reference adapters share: one-line errors for unknown names, missing extras and
downloads, and a small cache of light-built modules. ``Target`` itself is a torch-free record in
:mod:`vitbench.specs.target` (re-exported here). No torch import at module load.
"""

from __future__ import annotations

import difflib
import importlib
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from vitbench.errors import SpecError
from vitbench.models import materialize
from vitbench.specs.target import EXTRAS, SOURCES, Target, input_size_of, is_module, reference_value


def unknown(reference: str, what: str, choices: Iterable[str], prefix: str = "", name: str | None = None) -> SpecError:
    """'model=...: unknown timm model; did you mean 'timm:vit_base_patch16_224'?' (one line);
    ``name`` (default: the part after the namespace) is matched against ``choices``."""
    if name is None:
        name = reference.split(":", 1)[1] if ":" in reference else reference
    close = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(repr(prefix + c) for c in close)}?" if close else ""
    return SpecError("model", reference, f"unknown {what}{hint}")


def require(source: str, reference: str):
    """Import the optional library behind a namespace, or one line naming the extra to install."""
    package, extra = EXTRAS[source]
    try:
        return importlib.import_module(package)
    except ImportError:
        raise SpecError("model", reference, f"needs {package}: pip install 'vitbench[{extra}]'") from None


def no_network(reference: str, what: str) -> SpecError:
    return SpecError("model", reference, f"{what} would need the network; vitbench never downloads")


# --- a small cache of light-built modules (parameters on meta), shared by resolution and counting
_LIGHT: OrderedDict[Any, Any] = OrderedDict()
_LIGHT_SIZE = 4


def light_module(key: Any, build: Callable[[], Any]) -> Any:
    """The module ``build()`` makes, with parameters on meta and real buffers, in eval mode.
    Cached by ``key`` (a few entries): never mutate what this returns."""
    if key in _LIGHT:
        _LIGHT.move_to_end(key)
        return _LIGHT[key]

    module = materialize.light_build(build)
    return remember(key, module.eval() if is_module(module) else module)


def remember(key: Any, module: Any) -> Any:
    """Put a light-built module in the cache under ``key`` (also under a second key)."""
    _LIGHT[key] = module
    _LIGHT.move_to_end(key)
    while len(_LIGHT) > _LIGHT_SIZE:
        _LIGHT.popitem(last=False)
    return module


__all__ = [
    "EXTRAS",  # from vitbench.specs.target
    "SOURCES",
    "Target",
    "input_size_of",
    "is_module",
    "light_module",
    "no_network",
    "reference_value",
    "remember",
    "require",
    "unknown",
]
