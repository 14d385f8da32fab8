"""Specs as text and plain data: parsing field values given as text (command line, sweep files),
overrides, JSON-able dicts and the stable identity key. No torch import."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from vitbench.errors import SpecError

_IMAGE_SIZE = re.compile(r"^\s*(\d+)\s*(?:[xX]\s*(\d+)\s*)?$")
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


@functools.cache
def spec_fields(spec_type: type) -> dict[str, dataclasses.Field]:
    """The fields of a spec class by name (cached: a sweep asks this per field per row; the
    dict is shared, never to be changed)."""
    return {f.name: f for f in fields(spec_type)}


def parse_bool(name: str, text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise SpecError(name, text, "must be true or false")


_HUGE = re.compile(r"(?<![\d.])\d{31,}")


def parse_image_size(text: str) -> int | tuple[int, int]:
    """'224' -> 224; '224x320' -> (224, 320) (height x width). Anything else is an error: a list
    of sizes ('224,384') is a list of values, split by the caller, never one size."""
    match = _IMAGE_SIZE.match(text)
    if not match:
        raise SpecError("img_size", text, "is not a valid image size (an integer, or HxW such as 224x320)")
    height, width = match.groups()
    return int(height) if width is None else (int(height), int(width))


def _expected(name: str, annotation: str) -> str:
    if annotation.startswith("tuple"):
        return "comma-separated list of integers"
    if annotation.startswith("int"):
        return "integer"
    return "number"


def parse_field_value(spec_type: type, name: str, value: Any) -> Any:
    """Coerce a value given as text (CLI, sweep file) to the type of the spec field ``name``.
    Values that are not text are returned unchanged (the spec validates them)."""
    known = spec_fields(spec_type)
    if name not in known:
        raise SpecError(
            name,
            value,
            f"unknown field for a {spec_type.kind} model (fields: {', '.join(sorted(known))})",
        )
    if not isinstance(value, str):
        return value
    text = value.strip()
    if _HUGE.search(text):  # int() refuses over 4,300 digits; no field is near 30 (specs cap them at 10^15)
        raise SpecError(name, text, "has a number of more than 30 digits: no model is that large")
    annotation = str(known[name].type)
    numeric = name in ("img_size", "stages") or annotation.startswith(("int", "float", "tuple[int"))
    if numeric and (not text.isascii() or "_" in text):  # int() reads "٨" and "1_6"; no file or JSON does
        raise SpecError(name, value, "must be written with the digits 0-9 (no other script's digits, no '_')")
    if name == "img_size":
        return parse_image_size(text)
    if annotation in ("bool", "bool | None"):
        if annotation.endswith("None") and text.lower() in ("none", "auto", ""):
            return None
        return parse_bool(name, text)
    return _parse_text(name, annotation, text, value)


def _parse_text(name: str, annotation: str, text: str, value: str) -> Any:
    """A field's text (not a bool or an image size) as its annotation's type: integer lists,
    integers, finite numbers, None where the field allows it; other text stays text."""
    try:
        if name == "stages":
            return tuple(tuple(int(c) for c in group.split("-")) for group in text.split(","))
        if annotation.startswith("tuple[int"):  # 3,4,6,3 or 3-4-6-3
            return tuple(int(p) for p in re.split(r"[,-]", text))
        if annotation.startswith(("int", "float")) and annotation.endswith("None") and text.lower() in ("none", ""):
            return None
        if annotation.startswith("int"):
            return int(text)
        if not annotation.startswith("float"):
            return text
        number = float(text)
    except ValueError:
        raise SpecError(name, value, f"is not a valid {_expected(name, annotation)}") from None
    if not math.isfinite(number):
        raise SpecError(name, value, "must be a finite number")
    return number


def list_valued(spec_type: type, name: str) -> bool:
    """Fields whose one value is itself a list (``layers``, ``widths``, ``stages``...): on the
    command line their alternatives are separated by ';' instead of ','."""
    field = spec_fields(spec_type).get(name)
    return field is not None and name != "img_size" and str(field.type).startswith("tuple")


def split_alternatives(text: str, list_valued_field: bool = False) -> list[str]:
    """'224,384' -> ['224', '384']; for a list-valued field '2,2,2,2;3,4,6,3' -> two values.
    An empty alternative ('224,' or ',') is an error, never silently dropped."""
    separator = ";" if list_valued_field else ","
    parts = [part.strip() for part in str(text).split(separator)]
    if not parts or any(not part for part in parts):
        raise ValueError(f"empty value in {text!r} (separate values with '{separator}')")
    return parts


def override_combinations(overrides: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every combination of override values: a ``list`` holds alternatives (one row each), any
    other value (a tuple such as an (H, W) size, a number, text) is one value.
    {'img_size': [224, 384], 'depth': 6} -> [{'img_size': 224, 'depth': 6}, {'img_size': 384, ...}]."""
    names = list(overrides)
    choices = [v if isinstance(v, list) else [v] for v in overrides.values()]
    for name, values in zip(names, choices):
        if not values:
            raise SpecError(name, values, "needs at least one value")
    return [dict(zip(names, combo)) for combo in itertools.product(*choices)]


def with_overrides(spec: Any, **overrides: Any) -> Any:
    """A copy of ``spec`` with fields replaced, validated.

    Args:
        spec: a model spec.
        **overrides: the fields to replace; values may be given as text (``depth="13"``).

    Returns:
        The new spec (``spec`` itself when nothing is replaced).

    Raises:
        SpecError: a field the spec does not have, or a value it refuses.
    """
    if not overrides:
        return spec
    parsed = {k: parse_field_value(type(spec), k, v) for k, v in overrides.items()}
    try:
        return dataclasses.replace(spec, **parsed)
    except TypeError as exc:  # a value of the wrong type reaching a comparison
        name, value = next(iter(parsed.items()))
        raise SpecError(name, value, str(exc)) from None


def spec_to_dict(spec: Any) -> dict[str, Any]:
    """Plain JSON-able dict including ``kind``; inverse of :func:`spec_from_dict`."""
    out: dict[str, Any] = {"kind": spec.kind}
    for f in fields(spec):
        value = getattr(spec, f.name)
        if isinstance(value, tuple):
            value = [list(v) if isinstance(v, tuple) else v for v in value]
        out[f.name] = value
    return out


#: The fields each kind had when spec keys were first recorded (results schema 1). A spec key
#: always lists these; a field added since appears only when it differs from its default, so a
#: key recorded by an earlier vitbench (a CI baseline, say) still matches the same model.
KEYED_SINCE_SCHEMA_1 = {
    "vit": (
        "img_size", "patch_size", "in_chans", "embed_dim", "depth", "num_heads", "mlp_ratio",
        "mlp_hidden_dim", "num_classes", "pool", "pos_embed", "pos_embed_len", "qkv_bias",
        "patch_embed", "final_norm", "norms_per_block", "dropout", "attn_dropout", "attention",
    ),
    "resnet": ("img_size", "in_chans", "num_classes", "block", "layers", "widths", "stem", "stem_width"),
    "plaincnn": ("img_size", "in_chans", "num_classes", "stages", "fc_dims", "batchnorm"),
}


def omitted_from_key(spec_type: type, name: str, value: Any) -> bool:
    """Is field ``name`` left out of the spec key at ``value``? Only a field added after
    schema 1 that holds its default value is."""
    always = KEYED_SINCE_SCHEMA_1.get(spec_type.kind)
    if always is None or name in always or name == "kind":
        return False
    field = spec_fields(spec_type).get(name)
    return field is not None and value == field.default


def key_data(spec: Any) -> dict[str, Any]:
    """The fields a spec key lists (JSON-able), ``kind`` included and ``name`` excluded."""
    data = spec_to_dict(spec)
    data.pop("name")
    return {k: v for k, v in data.items() if not omitted_from_key(type(spec), k, getattr(spec, k, None))}


def spec_key(spec: Any) -> str:
    """A stable string identity of the configuration (the name excluded), for result matching:
    the JSON of its fields, minus fields added after schema 1 that hold their default value."""
    return json.dumps(key_data(spec), sort_keys=True, separators=(",", ":"))


def overrides_of(spec: Any, base: Any) -> dict[str, Any]:
    """Fields where ``spec`` differs from ``base`` (for labelling overridden presets)."""
    return {
        f.name: getattr(spec, f.name)
        for f in fields(spec)
        if f.name != "name" and getattr(spec, f.name) != getattr(base, f.name)
    }


def format_overrides(overrides: dict[str, Any]) -> str:
    """{'img_size': (384, 384), 'depth': 6} -> 'img_size=384,depth=6' (for tables and ids)."""
    return ",".join(f"{name}={format_value(value, name)}" for name, value in overrides.items())


def format_value(value: Any, name: str | None = None) -> str:
    """A field value as text that parses back to it: img_size 384 or 224x320; integer tuples
    3-4-6-3 (no commas, so that the text can sit in a comma-separated list); the plain CNN's
    stages 32-64,128-128; booleans true/false."""
    if isinstance(value, tuple):
        if value and all(isinstance(v, tuple) for v in value):
            return ",".join("-".join(str(c) for c in v) for v in value)
        if name == "img_size" and len(value) == 2:
            return str(value[0]) if value[0] == value[1] else f"{value[0]}x{value[1]}"
        return "-".join(str(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
