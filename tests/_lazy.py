"""Collection stays fast: heavy libraries are imported when a test runs, not when pytest
collects the module (issue: timm and the transformers registry took 15 s of a 15 s collection)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest


class LazyModule(ModuleType):
    """``timm = LazyModule("timm")``: the module is imported on first attribute access, inside
    the test that needs it (``pytest.importorskip``, so a missing optional package skips with
    its name)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._loaded: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        if self._loaded is None:
            self._loaded = pytest.importorskip(self.__name__)
        return getattr(self._loaded, attribute)


