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
        # a private name is never what a test asks of a library, and pytest probes them while it
        # collects (``_mock_name`` since pytest 9: that imported timm and transformers, 7 s of
        # CPU in each process that collects, each xdist worker)
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        if self._loaded is None:
            self._loaded = pytest.importorskip(self.__name__)
        return getattr(self._loaded, attribute)


