"""Lazy package exports (PEP 562): a package names what it exports and where each name is
defined; the defining module is imported on first use, so ``import vitbench`` stays torch-free."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps a public name to the module
    that defines it. A name is imported once, then kept in the package's namespace."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        namespace[name] = value  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__


__all__ = ["lazy_exports"]
