"""What ``predict`` and ``choose`` need of a model besides its trace, from the question cache
(:mod:`vitbench.timemodel.question_cache`) when the same question was asked before:

- ``resolution``: a ``timm:``, ``torchvision:`` or ``hf:`` reference, with its overrides and input
  size, as the :class:`~vitbench.models.target.Target` objects (name, source, input size, derived
  spec, the note when there is none, the overrides applied) and the override names that applied
  (:func:`resolve_cached`). The trace cache's key is made of these fields, so a cached resolution
  finds the cached trace. A cached Target's ``build`` resolves the reference with its library
  when a model is needed after all (a trace not cached yet); should what the library builds
  differ from the entry, the entry is removed and the step fails with the reason.
- ``counts``: the counted ``params``, ``macs``, ``flops`` at a batch of a model no formula covers
  (:func:`cached_counts`), as :func:`~vitbench.counters.fill.counted_identity` counts them.
- ``memory``: the affine memory profile of a traced step (:func:`cached_memory_profile`), as
  :func:`~vitbench.counters.memory_trace.trace_target` traces it (``choose``'s memory check of
  models the closed-form replay does not cover).

Presets need no entry (their spec is vitbench's own; nothing is imported to resolve them);
``py:`` factories and live modules are never cached (their code can change between runs). An
entry is written only when it reads back to exactly what was computed.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from vitbench.analytic.memory.replay import Profile
from vitbench.counters import fill, memory_trace
from vitbench.errors import ModelError, SpecError
from vitbench.models import references
from vitbench.models.target import Target
from vitbench.specs import override_combinations, spec_from_dict, spec_to_dict
from vitbench.specs.common import MAX_FIELD
from vitbench.timemodel.question_cache import StaleEntry, entry_key, forget, read, stored, tagged, write
from vitbench.timemodel.trace_cache import CACHED_SOURCES

#: the reference namespaces whose resolution is cached
RESOLVED_SOURCES = ("torchvision", "timm", "hf")
#: the most targets one reference gives (alternatives of list-valued overrides) that an entry holds
MAX_TARGETS = 4096
#: the longest text (a name, a note) an entry may hold
MAX_TEXT = 4096
MAX_COUNT = 2**62
MAX_POINTS = 100_000
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_TARGET_KEYS = frozenset({"name", "source", "input_size", "spec", "analytic_note", "overrides"})


class StaleResolution(ModelError):
    """A cached resolution that the library no longer gives (the entry has been removed): the
    rows of that model are refused with the reason, and the next question resolves it again."""


# --- the resolution of a reference ---------------------------------------------------------------
def resolve_cached(models: Iterable[Any], overrides: Mapping[str, Any] | None = None, *, input_size: Any = None,
                   use_cache: bool = True) -> tuple[list[Any], dict[int, list[dict[str, str]]]]:
    """:func:`~vitbench.models.references.resolve_all`, each ``timm:``, ``torchvision:`` and
    ``hf:`` reference read from the question cache when it was resolved before (written there
    when not), and the warnings of refused entries by ``id()`` of the targets they concern."""
    warnings: dict[int, list[dict[str, str]]] = {}
    if not use_cache:
        return references.resolve_all(models, overrides, input_size=input_size), warnings

    def one(model: Any, given: dict[str, Any], combinations: list[dict[str, Any]], size: Any) -> tuple[list[Any], set[str]]:
        if not (isinstance(model, references.ModelRef) and model.source in RESOLVED_SOURCES):
            return references.resolve_one(model, given, combinations, size)
        targets, applied, refused = _resolution(model, given, combinations, size)
        for target in targets:
            warnings[id(target)] = refused
        return targets, applied

    return references.resolve_all(models, overrides, input_size=input_size, one=one), warnings


def cached_resolution(model: str, overrides: Mapping[str, Any], input_size: Any = None) -> list[Any] | None:
    """The targets the question cache holds for the reference ``model`` (as written) asked with
    ``overrides`` and ``input_size``, or None when it holds none or ``model`` is not a library
    reference (nothing is imported, resolved or built)."""
    ref = references.model_ref(model)
    if not (isinstance(ref, references.ModelRef) and ref.source in RESOLVED_SOURCES):
        return None
    key = entry_key("resolution", {"model": ref.text, "overrides": dict(overrides), "input_size": input_size})
    found, _ = read("resolution", key, lambda value: _of_reference(parse_resolution(value), ref))
    return None if found is None else found[0]


def counts_cached(target: Any, batch: int, reparam: bool) -> bool:
    """Whether a row of ``target`` at ``batch`` needs no counting: it has a formula, or the
    question cache holds its counts (present: not read)."""
    if target.spec is not None:
        return True
    key = _target_key("counts", target, batch=batch, reparam=bool(reparam))
    return key is not None and stored(key)


def _resolution(model: Any, overrides: dict[str, Any], combinations: list[dict[str, Any]],
                input_size: Any) -> tuple[list[Any], set[str], list[dict[str, str]]]:
    """(targets, override names applied, warnings) of one reference: cached, or resolved and cached."""
    key = entry_key("resolution", {"model": model.text, "overrides": dict(overrides), "input_size": input_size})
    def parse(value: Any) -> tuple[list[Any], set[str]]:
        return _of_reference(parse_resolution(value), model)

    found, refused = read("resolution", key, parse)
    if found is not None:
        targets, applied = found
        return [dataclasses.replace(t, build=_LazyBuild(model, overrides, input_size, index, t, key))
                for index, t in enumerate(targets)], applied, refused
    targets, applied = references.resolve_one(model, overrides, combinations, input_size)
    value = encode_resolution(targets, applied)
    if value is not None:
        write("resolution", key, value, parse)
    return targets, applied, refused


class _LazyBuild:
    """A cached Target's ``build``: resolve the reference with its library (the first time a
    model is needed) and build what it gives, after checking it is the target the entry holds."""

    def __init__(self, model: Any, overrides: dict[str, Any], input_size: Any, index: int, expected: Any, key: str):
        self.model, self.overrides, self.input_size = model, dict(overrides), input_size
        self.index, self.expected, self.key = index, expected, key

    def __call__(self) -> Any:
        targets, _ = references.resolve_one(self.model, self.overrides, override_combinations(self.overrides),
                                            self.input_size)
        fresh = targets[self.index] if self.index < len(targets) else None
        if fresh is None or repr(fresh) != repr(self.expected):
            forget(self.key)
            raise StaleResolution(f"the question cache's entry for {self.model.text} is not what the library now builds "
                                  f"({fresh!r} against {self.expected!r}); the entry is removed: ask again")
        return fresh.build()


def encode_resolution(targets: list[Any], applied: set[str]) -> dict[str, Any] | None:
    """The entry's value for ``targets`` and ``applied``, or None when the entry would not give
    them back exactly (the same ``repr``, which the trace cache's key is made of)."""
    encoded = []
    for target in targets:
        if target.module is not None or target.source not in RESOLVED_SOURCES:
            return None
        encoded.append({"name": target.name, "source": target.source, "input_size": list(target.input_size),
                        "spec": spec_to_dict(target.spec) if target.spec is not None else None,
                        "analytic_note": target.analytic_note,
                        "overrides": [[name, tagged(value)] for name, value in target.overrides]})
    value = {"targets": encoded, "applied": sorted(applied)}
    try:
        back, names = parse_resolution(json.loads(json.dumps(value, allow_nan=False)))
    except (StaleEntry, ValueError, TypeError):
        return None
    same = [repr(a) for a in back] == [repr(t) for t in targets] and names == set(applied)
    return value if same else None


def parse_resolution(value: Any) -> tuple[list[Any], set[str]]:
    """The targets and applied names of a ``resolution`` entry's value; StaleEntry naming the
    first field that is not what it must be."""
    if not isinstance(value, dict) or set(value) != {"targets", "applied"}:
        raise StaleEntry("a resolution is not {targets, applied}")
    targets, applied = value["targets"], value["applied"]
    if not isinstance(targets, list) or not 1 <= len(targets) <= MAX_TARGETS:
        raise StaleEntry(f"targets is not a list of 1 to {MAX_TARGETS} targets")
    if not isinstance(applied, list) or not all(isinstance(a, str) and _NAME.fullmatch(a) for a in applied):
        raise StaleEntry("applied is not a list of field names")
    return [_target(t) for t in targets], set(applied)


def _of_reference(found: tuple[list[Any], set[str]], model: Any) -> tuple[list[Any], set[str]]:
    """``found`` when every target is named by the reference asked for (its namespace and name)."""
    if any(t.name != model.reference or t.source != model.source for t in found[0]):
        raise StaleEntry(f"a target is not named {model.reference}")
    return found


def _text(value: Any, field: str, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= MAX_TEXT:
        raise StaleEntry(f"a target's {field} is not text of 1 to {MAX_TEXT} characters")
    return value


def _size(value: Any) -> tuple[int, int, int]:
    if not isinstance(value, list) or len(value) != 3 or not all(type(v) is int and 0 < v <= MAX_FIELD for v in value):
        raise StaleEntry("a target's input_size is not 3 positive integers")
    return value[0], value[1], value[2]


def _value(value: Any, depth: int = 0) -> Any:
    """An override's value from :func:`~vitbench.timemodel.question_cache.tagged` JSON: a
    number, text, true/false, none or a tuple of them."""
    if value is None or isinstance(value, (bool, int, str)):
        if isinstance(value, str) and len(value) > MAX_TEXT:
            raise StaleEntry("an override's value is too long")
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, dict) and set(value) == {"tuple"} and isinstance(value["tuple"], list) and depth < 2:
        return tuple(_value(v, depth + 1) for v in value["tuple"])
    raise StaleEntry("an override's value is not a number, text or a tuple")


def _target(data: Any) -> Any:
    """One Target of an entry, every field checked (the spec by its own validation)."""
    if not isinstance(data, dict) or set(data) != _TARGET_KEYS:
        raise StaleEntry(f"a target is not {{{', '.join(sorted(_TARGET_KEYS))}}}")
    if data["source"] not in RESOLVED_SOURCES:
        raise StaleEntry("a target's source is not a cached namespace")
    spec = data["spec"]
    if spec is not None:
        if not isinstance(spec, dict):
            raise StaleEntry("a target's spec is not an object")
        try:
            spec = spec_from_dict(spec)
        except SpecError as exc:
            raise StaleEntry(f"a target's spec is not valid: {exc}") from None
        except (TypeError, ValueError):
            raise StaleEntry("a target's spec is not valid") from None
    overrides = data["overrides"]
    if not isinstance(overrides, list) or not all(isinstance(o, list) and len(o) == 2 and isinstance(o[0], str)
                                                 and _NAME.fullmatch(o[0]) for o in overrides):
        raise StaleEntry("a target's overrides are not [name, value] pairs")
    return Target(name=_text(data["name"], "name"), source=data["source"], input_size=_size(data["input_size"]), spec=spec,
                  analytic_note=_text(data["analytic_note"], "analytic_note", optional=True),
                  overrides=tuple((name, _value(value)) for name, value in overrides))


# --- counts and memory profiles of a resolved model -----------------------------------------------
def _target_key(kind: str, target: Any, **setting: Any) -> str | None:
    """The entry's name for ``target`` at ``setting``, or None when the model is not cached (a
    live module, a ``py:`` factory)."""
    if target.module is not None or target.source not in CACHED_SOURCES:
        return None
    return entry_key(kind, {"target": repr(target), "overrides": target.overrides_text, **setting})


def cached_counts(target: Any, batch: int, reparam: bool, counts: dict | None,
                  use_cache: bool = True) -> tuple[dict[str, int], list[dict[str, str]]]:
    """:func:`~vitbench.counters.fill.counted_identity` of ``target`` at ``batch`` (``reparam``:
    ``target`` is the deployed form, which compares equal to the other: the key tells them
    apart), from the question cache when counted before; and the warnings."""
    if target.spec is not None:  # the row has the formula's figures
        return {}, []
    key = _target_key("counts", target, batch=batch, reparam=bool(reparam)) if use_cache else None
    found, refused = read("counts", key, parse_counts) if key is not None else (None, [])
    if found is not None:
        return found, refused
    figures = fill.counted_identity(target, batch, counts)
    if key is not None and figures:
        write("counts", key, figures, parse_counts)
    return figures, refused


def _count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= MAX_COUNT


def parse_counts(value: Any) -> dict[str, int]:
    """A ``counts`` entry's value: ``params``, and ``macs`` with ``flops`` = 2 x ``macs``."""
    if not isinstance(value, dict) or not value or not set(value) <= {"params", "macs", "flops"}:
        raise StaleEntry("counts are not {params, macs, flops}")
    if not all(_count(v) for v in value.values()):
        raise StaleEntry("a count is not an integer from 0 to 2^62")
    if ("macs" in value) != ("flops" in value) or value.get("flops", 0) != 2 * value.get("macs", 0):
        raise StaleEntry("flops is not 2 x macs")
    return dict(value)


def cached_memory_profile(target: Any, mode: str, precision: str, optimizer: str,
                          use_cache: bool = True) -> tuple[Any, list[dict[str, str]]]:
    """:func:`~vitbench.counters.memory_trace.trace_target` of ``target``, from the question cache
    when traced before; and the warnings. Raises as ``trace_target`` does (nothing is cached then)."""
    key = _target_key("memory", target, mode=mode, precision=precision, optimizer=optimizer) if use_cache else None
    found, refused = read("memory", key, parse_profile) if key is not None else (None, [])
    if found is not None:
        return found, refused
    profile = memory_trace.trace_target(target, mode, precision, optimizer)
    if key is not None:
        write("memory", key, {"points": [list(p) for p in profile.points], "forward_end": list(profile.forward_end),
                              "fixed": profile.fixed}, parse_profile)
    return profile, refused


def _affine(value: Any) -> tuple[int, int]:
    if not (isinstance(value, list) and len(value) == 2 and all(type(v) is int and abs(v) <= MAX_COUNT for v in value)
            and value[0] >= 0):
        raise StaleEntry("a memory point is not [bytes per image >= 0, bytes]")
    return value[0], value[1]


def parse_profile(value: Any) -> Any:
    """A ``memory`` entry's value: the profile's points, live bytes at forward's end, fixed bytes."""
    if not isinstance(value, dict) or set(value) != {"points", "forward_end", "fixed"}:
        raise StaleEntry("a memory profile is not {points, forward_end, fixed}")
    points = value["points"]
    if not isinstance(points, list) or not 1 <= len(points) <= MAX_POINTS:
        raise StaleEntry(f"a memory profile's points are not a list of 1 to {MAX_POINTS:,}")
    if not _count(value["fixed"]):
        raise StaleEntry("a memory profile's fixed bytes are not an integer from 0 to 2^62")
    return Profile(tuple(_affine(p) for p in points), _affine(value["forward_end"]), value["fixed"])


__all__ = ["RESOLVED_SOURCES", "StaleResolution", "cached_counts", "cached_memory_profile", "encode_resolution",
           "parse_counts", "parse_profile", "parse_resolution", "resolve_cached"]
