"""What the reference adapters share: building a probe module (one-line errors), the
parameters a builder accepts, override values as typed values, the finished Target."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

from vitbench.errors import ModelBuildError, SpecError, model_code
from vitbench.models.derive import derive_spec
from vitbench.models.target import Target, light_module, remember
from vitbench.specs.model_ref import parse_value


def guarded(reference: str, build: Callable[[], Any]) -> Callable[[], Any]:
    """``build`` behind the model-code boundary: what the library's or the user's constructor
    raises (an unexpected keyword argument, its own check) is a :class:`ModelBuildError`, one
    line naming the reference; vitbench's own exceptions pass as they are."""

    def build_guarded() -> Any:
        with model_code(lambda exc: _build_error(reference, exc)):
            return build()

    return build_guarded


def _build_error(reference: str, exc: Exception) -> ModelBuildError:
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return ModelBuildError("model", reference, f"could not be built: {type(exc).__name__}: {message}")


def probe(reference: str, key: Any, build: Callable[[], Any]) -> Any:
    """The module (parameters on meta, real buffers); a builder failure is one line."""
    module = light_module(key, guarded(reference, build))
    from torch import nn

    if not isinstance(module, nn.Module):
        raise SpecError("model", reference, f"returned {type(module).__name__}, not an nn.Module")
    return module


def accepted(function: Callable[..., Any]) -> set[str] | None:
    """Keyword parameters ``function`` names explicitly (None when it cannot be inspected)."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return None
    return {
        name for name, p in parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }


def class_parameters(cls: type) -> set[str]:
    """Keyword parameters a class's constructor takes: its ``__init__``'s, and, while an
    ``__init__`` passes ``**kwargs`` on (as timm's ``VisionTransformerDistilled`` does to
    ``VisionTransformer``), those of the classes it inherits from."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        try:
            parameters = inspect.signature(init).parameters
        except (TypeError, ValueError):
            break
        names |= {n for n, p in parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and n != "self"}
        if not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
            break
    return names


def typed(value: Any) -> Any:
    """Override values arrive as text from the command line: parse them like reference values."""
    return parse_value(value) if isinstance(value, str) else value


def key_of(source: str, name: str, kwargs: dict[str, Any]) -> tuple:
    return (source, name, tuple(sorted((k, repr(v)) for k, v in kwargs.items())))


def finish(
    reference: str,
    source: str,
    module: Any,
    build: Callable[[], Any],
    input_size: tuple[int, int, int],
    shown: dict[str, Any],
    library: str | None = None,
) -> Target:
    """The Target, with the analytic spec derived from the built module when complete
    (``library``: which library built it, when that is not the source, e.g. a py factory)."""
    spec, note = derive_spec(module, source=library or source, img_size=input_size[1:])
    if spec is not None:
        spec = dataclasses.replace(spec, name=reference)
    target = Target(
        name=reference,
        source=source,
        input_size=input_size,
        spec=spec,
        analytic_note=note,
        overrides=tuple(shown.items()),
        build=guarded(reference, build),
    )
    remember(("target", target), module)  # the counters reuse this build
    return target
