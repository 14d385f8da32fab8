"""vitbench's version, at the bottom of the layers: records and caches name it (importing the
package root for it would be an arrow up: the root is the public API's facade)."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
