"""Exceptions vitbench raises for bad input. The CLI turns each into one line and exit code 2."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


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


class ModelForwardError(VitbenchError):
    """A model's own forward (the user's or a library's code) raised while vitbench counted or
    traced it: the model is broken for this input, not vitbench. ``model`` is the reference,
    given by the caller that knows it (:meth:`named`); the original exception is the cause."""

    def __init__(self, model: object, shape: tuple, dtype: str, cause: str):
        self.model, self.shape, self.dtype, self.cause = model, shape, dtype, cause
        self.detail = f"its forward failed on a {shape} {dtype} input: {cause}"
        super().__init__(f"model={shown(model)}: {self.detail}")

    def named(self, model: object) -> ModelForwardError:
        named = ModelForwardError(model, self.shape, self.dtype, self.cause)
        named.__cause__ = self.__cause__
        return named


@contextlib.contextmanager
def model_forward(images: Any, model: object = None) -> Iterator[None]:
    """Around the one call of a model's forward on ``images``: what the forward raises becomes a
    :class:`ModelForwardError` (chained), interrupts, memory errors and vitbench's own errors as
    they are."""
    try:
        yield
    except (KeyboardInterrupt, SystemExit, MemoryError, VitbenchError):
        raise
    except Exception as exc:  # noqa: BLE001 - the model's code failed on this input: the user's to fix
        text = "".join(c if c.isprintable() else " " for c in str(exc))
        text = " ".join(text.split())
        cause = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
        cause = cause if len(cause) <= 300 else cause[:297] + "..."
        shape = tuple(int(n) for n in getattr(images, "shape", ()))
        dtype = str(getattr(images, "dtype", "")).removeprefix("torch.")
        raise ModelForwardError(model, shape, dtype, cause) from exc
