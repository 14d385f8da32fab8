"""build_model(spec | reference | Target) -> nn.Module, plus construction that skips weight
initialisation. References (``torchvision:``, ``timm:``, ``hf:``, ``py:``) resolve in
:mod:`vitbench.models.references`; what a module says about itself in :mod:`vitbench.models.inputs`.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from vitbench.models import materialize
from vitbench.models.materialize import materialize_parameters
from vitbench.models.own import build_spec
from vitbench.models.references import resolve
from vitbench.specs import SPEC_TYPES, ModelSpec

__all__ = ["build_meta", "build_model", "build_spec", "build_uninitialized"]

if TYPE_CHECKING:
    from torch import nn

    from vitbench.models.target import Target


def build_model(model: ModelSpec | Target | str | nn.Module, device: Any = None) -> nn.Module:
    """The ``nn.Module`` for a spec, a reference (``timm:convnext_tiny``) or a resolved Target.

    Args:
        model: a spec, a preset name or reference, a Target, or a live module.
        device: where to build it (None: the current default device).

    Returns:
        The module with random initial weights (never downloaded), in training mode. A live
        module (a Target made from one) is returned as it is, moved to ``device`` when given.

    Raises:
        SpecError: an unknown model or reference.
        ModelError: the model's own code fails to build it.
    """
    import torch

    if isinstance(model, tuple(SPEC_TYPES.values())):
        build = lambda: build_spec(model)  # noqa: E731
    else:
        target = resolve(model)
        if target.module is not None:
            return target.module.to(device) if device is not None else target.module
        build = target.build
    with torch.device(device) if device is not None else contextlib.nullcontext():
        return build().train()


def build_meta(model: ModelSpec | Target | str) -> nn.Module:
    """The module with every parameter and buffer on the meta device (shapes only, no memory)."""
    import torch

    if isinstance(model, tuple(SPEC_TYPES.values())):
        with torch.device("meta"):  # no storage: initialisers cost nothing
            return build_spec(model)

    target = resolve(model)
    if target.module is not None:
        raise TypeError("a live module is already built")
    # constructors that compute with tensors (RegNet's widths) cannot run entirely on meta
    return materialize.light_build(target.build).to("meta")


def build_uninitialized(model: ModelSpec | Target | str, device: str = "cpu") -> nn.Module:
    """The module on ``device`` with zero-filled parameters (no initialiser runs), for tracers that need
    real tensors (fvcore) without paying for weight initialisation. Buffers hold their real
    values (relative-position indices, RoPE tables), computed as the constructor computes them."""
    if isinstance(model, tuple(SPEC_TYPES.values())):
        return materialize_parameters(materialize.light_build(lambda: build_spec(model)), device)

    target = resolve(model)
    if target.module is not None:
        raise TypeError("a live module is already built")
    return materialize_parameters(materialize.light_build(target.build), device)
