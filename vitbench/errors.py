"""Exceptions vitbench raises for bad input. The CLI turns each into one line and exit code 2."""

from __future__ import annotations


class VitbenchError(Exception):
    """Base class: a problem with what the user asked for, not a bug in vitbench."""

    exit_code = 2


class SpecError(VitbenchError, ValueError):
    """An invalid model specification: names the field and the bad value."""

    def __init__(self, field: str, value: object, reason: str):
        self.field = field
        self.value = value
        self.reason = reason
        super().__init__(f"{field}={shown(value)}: {reason}")


def shown(value: object, limit: int = 120) -> str:
    """``repr(value)`` for a one-line message: an object whose repr spans lines (an nn.Module)
    by its type, anything longer than ``limit`` characters cut short."""
    try:
        text = repr(value)
    except ValueError:  # an integer of more digits than Python writes (4,300)
        return f"<{type(value).__name__} of over 4,300 digits>"
    if "\n" in text:
        return f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


class UnknownModelError(VitbenchError, KeyError):
    def __init__(self, name: str, suggestions: list[str]):
        self.name = name
        self.suggestions = suggestions
        hint = f"; did you mean {', '.join(repr(s) for s in suggestions)}?" if suggestions else ""
        super().__init__(f"model={name!r}: unknown model{hint} (see `vitbench models`)")

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return self.args[0]


class InputFileError(VitbenchError):
    """A results, sweep or baseline file that is missing, unreadable or of the wrong schema."""


class OutputFileError(VitbenchError):
    """An output path vitbench must not or cannot write: not a regular file (a device, a FIFO,
    a socket, a folder, a symlink), or a folder that is missing, read-only or denied."""
