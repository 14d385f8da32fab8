"""Functions a higher layer lends a lower one: how :class:`vitbench.results.Records` show
themselves (``html``: an HTML table, ``plot``: a matplotlib Axes) are the reporting layer's,
registered by the package root (``vitbench/__init__.py``), because the records layer imports
nothing above it. The root's own import of this module is of the bottom layer: importing any
vitbench module runs it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: name -> the function that shows a Records (see the module docstring)
DISPLAY: dict[str, Callable[..., Any]] = {}

__all__ = ["DISPLAY"]
