"""Argument helpers shared by subcommands: model lists, spec-field overrides, output format."""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from typing import Any

from vitbench.reporting.format import FORMATS, render
from vitbench.errors import SpecError
from vitbench.specs import SPEC_TYPES, list_valued, spec_fields, split_alternatives


def _override_fields() -> dict[str, str]:
    """Every spec field (union over model kinds) -> a help text naming the kinds that have it."""
    out: dict[str, list[str]] = {}
    for kind, spec_type in SPEC_TYPES.items():
        for f in fields(spec_type):
            if f.name != "name":
                out.setdefault(f.name, []).append(kind)
    return {name: "/".join(kinds) for name, kinds in out.items()}


def field_flag(name: str) -> str:
    """The command-line flag of a spec field, the same in every command. The plain CNN's
    ``stages`` field is ``--conv-stages`` (``--stages`` names a sweep's stages)."""
    return "--conv-stages" if name == "stages" else "--" + name.replace("_", "-")


def _is_list_valued(name: str) -> bool:
    return any(name in spec_fields(t) and list_valued(t, name) for t in SPEC_TYPES.values())


def add_override_arguments(parser: argparse.ArgumentParser, title: str, dest_prefix: str) -> None:
    """One flag per spec field. Every flag takes a list of values, one row (or grid point) each:
    ``--img-size 224,384``; list-valued fields separate alternatives with ';'
    (``--layers '2,2,2,2;3,4,6,3'``); a non-square size is ``224x320``."""
    group = parser.add_argument_group(
        title,
        "replace a field of every model that has it; comma-separated values give one row each "
        "(e.g. --img-size 224,384; list-valued fields such as --layers separate values with ';')",
    )
    for name, kinds in _override_fields().items():
        group.add_argument(
            field_flag(name), dest=f"{dest_prefix}{name}", metavar="V1,V2" if not _is_list_valued(name) else "V1;V2",
            default=None, help=f"({kinds})",
        )


def add_model_arguments(parser: argparse.ArgumentParser, nargs: str = "+") -> None:
    parser.add_argument(
        "models", nargs=nargs, metavar="MODEL",
        help="presets (see `vitbench models`) or references: torchvision:NAME, timm:NAME, hf:ARCH, "
        "py:package.module:factory; keyword arguments as NAME+key=value (e.g. timm:convnext_tiny+drop_path_rate=0.1)",
    )
    add_override_arguments(parser, "spec overrides", "override_")


def values_from(args: argparse.Namespace, dest_prefix: str) -> dict[str, list[str]]:
    """Flags given with ``dest_prefix`` -> {field: [value, ...]} (each value still text)."""
    out: dict[str, list[str]] = {}
    for key, value in vars(args).items():
        if key.startswith(dest_prefix) and value is not None:
            name = key[len(dest_prefix):]
            try:
                out[name] = split_alternatives(value, _is_list_valued(name))
            except ValueError as exc:
                raise SpecError(name, value, str(exc)) from None
    return out


def overrides_from(args: argparse.Namespace) -> dict[str, list[str]]:
    """Spec overrides from the command line; a list holds alternatives (one row each)."""
    return values_from(args, "override_")


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid non-negative integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text!r}")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid positive integer: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def add_format_argument(parser: argparse.ArgumentParser, default: str = "table") -> None:
    parser.add_argument("--format", choices=FORMATS, default=default, help=f"output format (default {default})")
    parser.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")


def emit(args: argparse.Namespace, records, columns=None) -> None:
    text = render(records, args.format, columns)
    if getattr(args, "output", None):
        from vitbench.results import atomic_write_text

        atomic_write_text(args.output, text if text.endswith("\n") else text + "\n")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
