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

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from vitbench.errors import SpecError, UnknownModelError
from vitbench.models import sources
from vitbench.models.derive import derive_spec
from vitbench.models.inputs import library_of, module_input_size
from vitbench.models.own import build_spec
from vitbench.models.sources.py_factory import check_reference
from vitbench.models.target import SOURCES, Target, input_size_of, is_module
from vitbench.presets import PRESETS, get_preset
from vitbench.specs import SPEC_TYPES, ModelSpec, override_combinations, spec_fields, with_overrides
from vitbench.specs.model_ref import REFERENCE_SOURCES, ModelRef, model_ref, parse_value


def parse_reference(text: str) -> tuple[str, str, dict[str, str]]:
    """'timm:vit_base_patch16_224+img_size=384' -> ('timm', 'vit_base_patch16_224',
    {'img_size': '384'}); a name without a known namespace is a preset (source 'preset').
    The tuple form of :meth:`ModelRef.parse`."""
    ref = ModelRef.parse(text)
    return ref.source, ref.name, dict(ref.args)


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
    """One model (preset name, reference text or :class:`ModelRef`, spec, Target or nn.Module)
    -> Target.

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
    if isinstance(model, (str, ModelRef)):
        return resolve_ref(model_ref(model), overrides, input_size, used)
    if is_module(model):
        return _module_target(model, input_size, overrides, used)
    raise SpecError("model", model, "must be a preset name, a reference (torchvision:, timm:, hf:, py:), a spec or an nn.Module")


def resolve_ref(ref: ModelRef, overrides: dict[str, Any], input_size: Any, used: set[str]) -> Target:
    """A parsed reference (preset or namespace) -> Target; see :func:`resolve`."""
    if ref.is_preset:
        return _fixed_size(_preset_target(ref.name, ref.spec_args(), overrides, used), input_size)

    kwargs, reference = ref.typed_args(), ref.reference
    if input_size is None:
        return sources.resolve(ref.source, reference, ref.name, kwargs, overrides, used)
    # an explicit input size is the img_size (and in_chans) override, so the model is built for it
    channels, height, width = _check_input_size(input_size)
    size = {"img_size": (height, width), **({"in_chans": channels} if channels != 3 else {})}
    applied: set[str] = set()
    target = sources.resolve(ref.source, reference, ref.name, kwargs, {**overrides, **size}, applied)
    used |= applied & set(overrides)
    if target.input_size != (channels, height, width):
        raise SpecError("input_size", input_size, f"{reference} cannot be built for this input size")
    return target


def overrides_taken(model: str | ModelRef, overrides: Mapping[str, Any]) -> set[str]:
    """The names in ``overrides`` a reference (``timm:``, ``hf:``, ...) would apply, found
    without calling a ``py:`` factory or building the model, except a timm model: only its class
    tells, and only an instance shows it, so it is built once on the meta device.
    The reference itself is checked (unknown names, downloads) as ``resolve`` checks it."""
    ref = model_ref(model)
    if ref.is_preset:
        raise SpecError("model", ref.text, "is a preset, not a reference")
    return sources.taken(ref.source, ref.reference, ref.name, ref.typed_args(), dict(overrides))


def _fixed_size(target: Target, input_size: Any) -> Target:
    """A spec's (or a resolved Target's) input size is its own: a different ``input_size`` is an error."""
    if input_size is not None and tuple(input_size) != target.input_size:
        raise SpecError(
            "input_size", input_size, f"{target.name} is built for input size {target.input_size}: override img_size/in_chans instead"
        )
    return target


def _is_py(model: Any) -> bool:
    return isinstance(model, ModelRef) and model.source == "py"


def check_py(model: ModelRef) -> None:
    """A ``py:`` reference checked from its text and the file system (syntax, the file exists,
    the allow-list of :mod:`vitbench.models.sources.py_contract`), nothing imported."""
    check_reference(model.reference, model.name, model.typed_args())


def check_before_import(models: Iterable[Any]) -> list[Any]:
    """Every model of a command checked before the first ``py:`` module is imported: each parsed
    (references as :class:`ModelRef`, returned in order), each ``py:`` one checked by
    :func:`check_py`, and, when there is one, every other model resolved (library code only:
    an unknown preset or name is refused before any user module runs)."""
    parsed = [model_ref(m) if isinstance(m, str) else m for m in models]
    if any(_is_py(m) for m in parsed):
        for model in parsed:
            if _is_py(model):
                check_py(model)
            else:
                resolve(model)
    return parsed


def resolve_one(model: Any, overrides: dict[str, Any], combinations: list[dict[str, Any]], input_size: Any) -> tuple[list[Target], set[str]]:
    """One model (parsed: a :class:`ModelRef`, spec, Target or module): a Target per
    combination (``combinations``: :func:`~vitbench.specs.override_combinations` of
    ``overrides``) of the list-valued overrides that apply to it, and the names that applied."""

    applied: set[str] = set()
    first = resolve(model, combinations[0], input_size=input_size, used=applied)
    alternatives = override_combinations({k: v for k, v in overrides.items() if k in applied})
    return [first, *(resolve(model, c, input_size=input_size) for c in alternatives[1:])], applied


def resolve_all(models: Iterable[Any], overrides: Mapping[str, Any] | None = None, *, input_size: Any = None,
                one: Callable[..., tuple[list[Target], set[str]]] | None = None) -> list[Target]:
    """Several models with the same overrides. An override given as a ``list`` holds
    alternatives: one Target per combination of the overrides that apply to the model. An
    override that applies to none of the models is an error (it would otherwise be silently
    ignored).

    In two passes, so that no user code runs before every model is checked: first every ``py:``
    reference is checked without being imported (:func:`check_py`) and every other model is
    resolved (library code); then the ``py:`` references are imported and built. ``one``: what
    resolves each model (default :func:`resolve_one`, with its arguments), e.g. a cache in front of it."""

    one = one or resolve_one
    overrides = dict(overrides or {})
    combinations = override_combinations(overrides)
    parsed = [model_ref(m) if isinstance(m, str) else m for m in models]  # parsed once, for every alternative
    done: dict[int, tuple[list[Target], set[str]]] = {}
    for index, model in enumerate(parsed):
        if _is_py(model):
            check_py(model)
        else:
            done[index] = one(model, overrides, combinations, input_size)
    for index, model in enumerate(parsed):
        if index not in done:
            done[index] = one(model, overrides, combinations, input_size)
    targets = [t for index in range(len(parsed)) for t in done[index][0]]
    used = set().union(*(applied for _, applied in done.values()))
    for name, value in overrides.items():
        if name not in used:
            kinds = sorted({t.spec.kind if t.source in ("preset", "spec") else t.source for t in targets})
            shown = ",".join(map(str, value)) if isinstance(value, list) else value
            raise SpecError(name, shown, f"unknown field for {'/'.join(kinds)} models")
    return targets


__all__ = [
    "REFERENCE_SOURCES", "SOURCES", "ModelRef", "Target", "check_before_import", "check_py", "model_ref", "overrides_taken",
    "parse_reference", "parse_value", "resolve", "resolve_all", "resolve_one", "resolve_ref",
]
