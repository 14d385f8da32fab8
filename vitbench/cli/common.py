"""Argument helpers shared by subcommands: model lists, spec-field overrides, output format."""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from typing import Any

from vitbench.reporting.format import FORMATS, render
from vitbench.specs import SPEC_TYPES


def _override_fields() -> dict[str, str]:
    """Every spec field (union over model kinds) -> a help text naming the kinds that have it."""
    out: dict[str, list[str]] = {}
    for kind, spec_type in SPEC_TYPES.items():
        for f in fields(spec_type):
            if f.name != "name":
                out.setdefault(f.name, []).append(kind)
    return {name: "/".join(kinds) for name, kinds in out.items()}


def add_model_arguments(parser: argparse.ArgumentParser, nargs: str = "+") -> None:
    parser.add_argument(
        "models", nargs=nargs, metavar="MODEL", help="preset names (see `vitbench models`)"
    )
    group = parser.add_argument_group(
        "spec overrides", "replace a field of every model that has it (e.g. --img-size 384)"
    )
    for name, kinds in _override_fields().items():
        group.add_argument(
            f"--{name.replace('_', '-')}",
            dest=f"override_{name}",
            metavar="VALUE",
            default=None,
            help=f"({kinds})",
        )


def overrides_from(args: argparse.Namespace) -> dict[str, Any]:
    return {
        key[len("override_"):]: value
        for key, value in vars(args).items()
        if key.startswith("override_") and value is not None
    }


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
