"""``Target``: one model to analyse, count or measure, whatever it came from (a preset, a spec, a
torchvision/timm/hf/py reference, a live ``nn.Module``). A torch-free record: the formulas,
counters and measurements all take one, so it sits beside the specs, below every one of them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
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


def img_size_cell(img_size: tuple[int, int]) -> int | str:
    """The ``img_size`` column of every row: 224 for a square image, '224x320' otherwise."""
    height, width = img_size
    return height if height == width else f"{height}x{width}"


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


__all__ = ["EXTRAS", "SOURCES", "Target", "img_size_cell", "input_size_of", "is_module", "reference_value"]
