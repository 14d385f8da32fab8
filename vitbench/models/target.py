"""``Target``: one model to analyse, count or measure, whatever it came from (a preset, a spec, a
torchvision/timm/hf/py reference, a live ``nn.Module``), plus the helpers the reference adapters
share. No torch import at module load.
"""

from __future__ import annotations

import difflib
import sys
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from vitbench.errors import SpecError
from vitbench.specs import ModelSpec, format_value

SOURCES = ("preset", "spec", "torchvision", "timm", "hf", "py", "module")
#: The optional extra that provides each reference namespace's library.
EXTRAS = {"timm": ("timm", "timm"), "hf": ("transformers", "hf")}


@dataclass(frozen=True)
class Target:
    """What to build and at which input size, and its analytic spec or the reason there is none.

    ``name`` is the model as the user named it (``vit-b/16``, ``timm:convnext_tiny``,
    ``py:mypkg.models:build``, or the class name of a live module); ``overrides`` are the keyword
    arguments and override flags applied to it (shown beside the name in tables); ``build``
    constructs the module on the current default device (``vitbench.models.build_model`` and the
    counters decide the device and what is initialised)."""

    name: str
    source: str
    input_size: tuple[int, int, int]  # (channels, height, width) of one image
    spec: ModelSpec | None = None
    analytic_note: str | None = None  # why there is no analytic spec
    overrides: tuple[tuple[str, Any], ...] = ()
    build: Callable[[], Any] | None = field(default=None, compare=False, hash=False, repr=False)
    module: Any = field(default=None, compare=False, hash=False, repr=False)  # a live nn.Module

    @property
    def img_size(self) -> tuple[int, int]:
        return self.input_size[1], self.input_size[2]

    @property
    def in_chans(self) -> int:
        return self.input_size[0]

    @property
    def label(self) -> str:
        """The name with its overrides, in the reference syntax: ``timm:vit_base_patch16_224+img_size=384``."""
        return "".join([self.name, *(f"+{k}={reference_value(k, v)}" for k, v in self.overrides)])

    @property
    def overrides_text(self) -> str:
        """'img_size=384,depth=6': the overrides for a table column ('' when none)."""
        return ",".join(f"{k}={reference_value(k, v)}" for k, v in self.overrides)

    @property
    def kind(self) -> str:
        """The spec's kind (vit, resnet, ...) when there is a spec, else ``module``."""
        return self.spec.kind if self.spec is not None else "module"


def reference_value(name: str, value: Any) -> str:
    """A value as a reference keyword argument takes it back (384, 224x320, depths=2-2-6-2,
    true/false): the spec fields' own text form."""
    return format_value(value, name)


def is_module(value: Any) -> bool:
    """An ``nn.Module``? (Without importing torch: if torch is not loaded, nothing is one.)"""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.nn.Module)


def input_size_of(img_size: Any, in_chans: int = 3) -> tuple[int, int, int]:
    """(C, H, W) from an int or (H, W) image size."""
    if isinstance(img_size, int) and not isinstance(img_size, bool):
        img_size = (img_size, img_size)
    if (
        not isinstance(img_size, (tuple, list))
        or len(img_size) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in img_size)
    ):
        raise SpecError("img_size", img_size, "must be a positive integer or a (height, width) pair")
    return in_chans, int(img_size[0]), int(img_size[1])


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
    import importlib

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
    from vitbench.models.materialize import light_build

    module = light_build(build)
    return remember(key, module.eval() if is_module(module) else module)


def remember(key: Any, module: Any) -> Any:
    """Put a light-built module in the cache under ``key`` (also under a second key)."""
    _LIGHT[key] = module
    _LIGHT.move_to_end(key)
    while len(_LIGHT) > _LIGHT_SIZE:
        _LIGHT.popitem(last=False)
    return module
