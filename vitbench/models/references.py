"""Every way to name a model, resolved in one place to a :class:`~vitbench.models.target.Target`.

Reference syntax (shell-safe, no quoting needed; ``,`` stays free for model lists)::

    vit-b/16                      a preset (see `vitbench models`)
    torchvision:swin_t            a torchvision classification builder, random weights
    timm:convnext_tiny            any timm model name (pip install 'vitbench[timm]')
    hf:dinov2                     a transformers vision encoder from its config class (vitbench[hf])
    py:mypkg.models:build         your factory: ``build(**kwargs)`` returns an nn.Module
    NAME+key=value+key=value      keyword arguments: builder kwargs (timm, torchvision, py),
                                  config fields (hf), spec fields (presets)

Values: integers, numbers, true/false/none, text; integer tuples as ``224x320`` or ``2-2-6-2``.
Override flags (``--img-size 384``) apply to every model that has the field: spec fields for
presets; for references the matching keyword (timm ``img_size`` for fixed-size models, the
input size otherwise; hf ``image_size``; torchvision ViT ``image_size``; a py factory's own
parameters). Nothing is downloaded, ever.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from vitbench.errors import SpecError, UnknownModelError
from vitbench.models.target import SOURCES, Target, input_size_of, is_module
from vitbench.specs import SPEC_TYPES, ModelSpec, spec_fields, with_overrides

REFERENCE_SOURCES = ("torchvision", "timm", "hf", "py")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT_TUPLE = re.compile(r"\d+(?:[x-]\d+)+")


def parse_value(text: str) -> Any:
    """'384' -> 384, '0.1' -> 0.1, 'true' -> True, 'none' -> None, '224x320' -> (224, 320),
    '2-2-6-2' -> (2, 2, 6, 2); anything else stays text."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if _INT_TUPLE.fullmatch(lowered):
        return tuple(int(v) for v in re.split("[x-]", lowered))
    return text


def parse_reference(text: str) -> tuple[str, str, dict[str, str]]:
    """'timm:vit_base_patch16_224+img_size=384' -> ('timm', 'vit_base_patch16_224',
    {'img_size': '384'}); a name without a known namespace is a preset (source 'preset')."""
    head, *pairs = text.strip().split("+")
    kwargs: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not _KEY.fullmatch(key) or not value:
            raise SpecError("model", text, f"keyword argument {pair!r} is not key=value (e.g. {head}+img_size=384)")
        if key in kwargs:
            raise SpecError("model", text, f"keyword argument {key!r} given twice")
        kwargs[key] = value
    source, sep, name = head.partition(":")
    if sep and source in REFERENCE_SOURCES:
        if not name:
            raise SpecError("model", text, f"missing the model name after '{source}:'")
        return source, name, kwargs
    return "preset", head, kwargs


def _suggest_namespace(name: str) -> list[str]:
    """A bare name that is a torchvision or timm model: suggest the reference."""
    try:
        import torchvision

        if name in torchvision.models.list_models(module=torchvision.models):
            return [f"torchvision:{name}"]
    except ImportError:  # pragma: no cover - torchvision is a dependency
        pass
    try:
        import timm

        if timm.is_model(name):
            return [f"timm:{name}"]
    except ImportError:
        pass
    return []


def _preset_target(name: str, kwargs: dict[str, Any], overrides: dict[str, Any], used: set[str]) -> Target:
    from vitbench.presets import PRESETS, get_preset

    try:
        preset = get_preset(name)
    except UnknownModelError as exc:
        if exc.suggestions or name in PRESETS:
            raise
        raise UnknownModelError(name, _suggest_namespace(name)) from None
    return _spec_target(preset.name, "preset", preset.spec, kwargs, overrides, used)


def _spec_target(
    name: str, source: str, spec: ModelSpec, kwargs: dict[str, Any], overrides: dict[str, Any], used: set[str]
) -> Target:
    from vitbench.models.own import build_spec

    known = spec_fields(type(spec))
    for key in kwargs:
        if key not in known:
            raise SpecError(key, kwargs[key], f"unknown field for a {spec.kind} model (fields: {', '.join(sorted(known))})")
    applicable = {k: v for k, v in overrides.items() if k in known}
    used.update(applicable)
    changes = {**kwargs, **applicable}
    spec = with_overrides(spec, **changes)
    shown = tuple((k, getattr(spec, k)) for k in changes)
    return Target(
        name=name,
        source=source,
        input_size=(spec.in_chans, *spec.img_size),
        spec=spec,
        overrides=shown,
        build=lambda: build_spec(spec),
    )


def _module_target(module: Any, input_size: Any, overrides: dict[str, Any], used: set[str]) -> Target:
    """A live nn.Module: counted as it is; its input size from ``input_size``, the --img-size
    override, or the module's own metadata."""
    from vitbench.models.derive import derive_spec
    from vitbench.models.inputs import library_of, module_input_size

    size = overrides.get("img_size")
    if size is not None:
        used.add("img_size")
        if input_size is not None:
            given = parse_value(str(size)) if isinstance(size, str) else size
            height, width = given if isinstance(given, tuple) else (given, given)
            if (height, width) != tuple(input_size)[1:]:
                raise SpecError("img_size", size, f"contradicts input_size={tuple(input_size)}: give one of them")
    if input_size is None:
        default = module_input_size(module)
        channels = overrides.get("in_chans", default[0] if default else 3)
        if "in_chans" in overrides:
            used.add("in_chans")
        if size is not None:
            input_size = input_size_of(parse_value(str(size)) if isinstance(size, str) else size, int(channels))
        elif default is not None:
            input_size = default
        else:
            raise SpecError(
                "input_size", None, f"{type(module).__name__} does not say its input size: pass input_size=(3, H, W)"
            )
    input_size = _check_input_size(input_size)
    own = getattr(module, "spec", None)
    if type(module).__module__.startswith("vitbench.") and isinstance(own, tuple(SPEC_TYPES.values())):
        spec, note = own, None  # vitbench's own module, built from this spec
        if (own.in_chans, *own.img_size) != input_size:
            spec, note = None, f"the module's spec is for input size {(own.in_chans, *own.img_size)}"
    else:
        spec, note = derive_spec(module, source=library_of(module), img_size=input_size[1:])
    return Target(
        name=type(module).__name__,
        source="module",
        input_size=input_size,
        spec=spec,
        analytic_note=note,
        build=lambda: module,
        module=module,
    )


def _check_input_size(value: Any) -> tuple[int, int, int]:
    if (
        isinstance(value, (tuple, list))
        and len(value) == 3
        and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    ):
        return tuple(value)  # type: ignore[return-value]
    raise SpecError("input_size", value, "must be (channels, height, width), positive integers")


def resolve(
    model: Any, overrides: Mapping[str, Any] | None = None, *, input_size: Any = None, used: set[str] | None = None
) -> Target:
    """One model (preset name, reference text, spec, Target or nn.Module) -> Target.

    ``overrides`` (field name -> value, text or typed) apply where the model has the field;
    the names that applied are added to ``used``."""
    overrides = dict(overrides or {})
    used = used if used is not None else set()
    if isinstance(model, Target):
        if overrides:
            raise SpecError("overrides", ",".join(overrides), "cannot be applied to an already resolved Target")
        return _fixed_size(model, input_size)
    if isinstance(model, tuple(SPEC_TYPES.values())):
        return _fixed_size(_spec_target(model.name, "spec", model, {}, overrides, used), input_size)
    if not isinstance(model, str):
        if is_module(model):
            return _module_target(model, input_size, overrides, used)
        raise SpecError("model", model, "must be a preset name, a reference (torchvision:, timm:, hf:, py:), a spec or an nn.Module")
    source, name, raw = parse_reference(model)
    kwargs = {k: parse_value(v) for k, v in raw.items()}
    if source == "preset":  # spec fields parse text themselves; integer tuples as 2-2-6-2 too
        raw = {k: kwargs[k] if isinstance(kwargs[k], tuple) else v for k, v in raw.items()}
        return _fixed_size(_preset_target(name, raw, overrides, used), input_size)
    from vitbench.models import sources

    reference = model.split("+", 1)[0]
    if input_size is None:
        return sources.resolve(source, reference, name, kwargs, overrides, used)
    # an explicit input size is the img_size (and in_chans) override, so the model is built for it
    channels, height, width = _check_input_size(input_size)
    size = {"img_size": (height, width), **({"in_chans": channels} if channels != 3 else {})}
    applied: set[str] = set()
    target = sources.resolve(source, reference, name, kwargs, {**overrides, **size}, applied)
    used |= applied & set(overrides)
    if target.input_size != (channels, height, width):
        raise SpecError("input_size", input_size, f"{reference} cannot be built for this input size")
    return target


def overrides_taken(model: str, overrides: Mapping[str, Any]) -> set[str]:
    """The names in ``overrides`` a reference (``timm:``, ``hf:``, ...) would apply, found
    without calling a ``py:`` factory or building the model, except a timm model: only its class
    tells, and only an instance shows it, so it is built once on the meta device.
    The reference itself is checked (unknown names, downloads) as ``resolve`` checks it."""
    from vitbench.models import sources

    source, name, raw = parse_reference(model)
    if source == "preset":
        raise SpecError("model", model, "is a preset, not a reference")
    kwargs = {k: parse_value(v) for k, v in raw.items()}
    return sources.taken(source, model.split("+", 1)[0], name, kwargs, dict(overrides))


def _fixed_size(target: Target, input_size: Any) -> Target:
    """A spec's (or a resolved Target's) input size is its own: a different ``input_size`` is an error."""
    if input_size is not None and tuple(input_size) != target.input_size:
        raise SpecError(
            "input_size", input_size, f"{target.name} is built for input size {target.input_size}: override img_size/in_chans instead"
        )
    return target


def resolve_all(models: Iterable[Any], overrides: Mapping[str, Any] | None = None, *, input_size: Any = None) -> list[Target]:
    """Several models with the same overrides. An override given as a ``list`` holds
    alternatives: one Target per combination of the overrides that apply to the model. An
    override that applies to none of the models is an error (it would otherwise be silently
    ignored)."""
    from vitbench.specs import override_combinations

    overrides = dict(overrides or {})
    combinations = override_combinations(overrides)
    used: set[str] = set()
    targets: list[Target] = []
    for model in models:
        applied: set[str] = set()
        first = resolve(model, combinations[0], input_size=input_size, used=applied)
        alternatives = override_combinations({k: v for k, v in overrides.items() if k in applied})
        targets.append(first)
        targets += [resolve(model, c, input_size=input_size) for c in alternatives[1:]]
        used |= applied
    for name, value in overrides.items():
        if name not in used:
            kinds = sorted({t.spec.kind if t.source in ("preset", "spec") else t.source for t in targets})
            shown = ",".join(map(str, value)) if isinstance(value, list) else value
            raise SpecError(name, shown, f"unknown field for {'/'.join(kinds)} models")
    return targets


__all__ = ["REFERENCE_SOURCES", "SOURCES", "Target", "overrides_taken", "parse_reference", "parse_value", "resolve", "resolve_all"]
