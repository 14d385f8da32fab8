"""Markdown building blocks for reports: images, short ratios and counts, an ordered document.
Tables are rendered by :func:`vitbench.reporting.format.render` (the one table renderer)."""

from __future__ import annotations

from collections.abc import Sequence

from vitbench.escape import markdown_text
from vitbench.reporting.format import si


def image(path: str, alt: str, caption: str) -> str:
    return f"![{alt}]({path})\n\n*{caption}*"


def ratio(a: float, b: float, digits: int = 3) -> str:
    """'4.30x' (a / b)."""
    if not b:
        return "n/a"
    return f"{a / b:.{digits}g}x"


def pct(value: float, digits: int = 1) -> str:
    return f"{100 * value:.{digits}f}%"


def count(value: float | None) -> str:
    """A count with SI prefix and the exact value: '17.6 G (17,563,828,224)'."""
    if value is None:
        return "n/a"
    return f"{si(value)} ({int(value):,})"


class Document:
    """An ordered list of markdown blocks."""

    def __init__(self) -> None:
        self.blocks: list[str] = []

    def add(self, *blocks: str) -> None:
        self.blocks.extend(b.rstrip() for b in blocks if b)

    def heading(self, level: int, text: str) -> None:
        self.add("#" * level + " " + text)

    def bullets(self, items: Sequence[str]) -> None:
        if items:
            self.add("\n".join(f"- {item}" for item in items))

    def render(self) -> str:
        """The document, made safe whatever user text its blocks quote
        (:func:`vitbench.escape.markdown_text`: no raw HTML but ``<sub>`` and the like, no
        ``javascript:`` link)."""
        return markdown_text("\n\n".join(self.blocks) + "\n")
