"""Exceptions vitbench raises for bad input. The CLI turns each into one line and exit code 2.

User errors and vitbench's own: what the user asked for being wrong, or the user's (or a
library's) model failing, is a :class:`VitbenchError` (one line, exit 2, or a row saying so);
any other exception is vitbench's own bug and keeps its traceback (exit 3). The model's code is
told from vitbench's at the narrow boundaries around the calls into it (:func:`model_code`,
:func:`model_forward`): what they raise becomes a :class:`ModelError` (the original traceback
kept as its cause), unless it was raised by vitbench's own code (:func:`raised_by_vitbench`).
"""

from __future__ import annotations

import contextlib
import os
import traceback
from collections.abc import Callable, Iterator
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


class ModelError(VitbenchError):
    """Code vitbench does not own raised: the user's model or a library's (its constructor, a
    timm/transformers/torchvision factory, a ``py:`` module, its forward or backward, torch
    running it on meta or fake tensors). The user's to see (exit 2, or a row), never vitbench's
    bug: :func:`model_code` converts only what vitbench's own code did not raise. The original
    exception is the cause, its traceback in :attr:`traceback_text`; :attr:`detail` says what
    failed without naming the model (a row names it)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.detail = message

    @property
    def traceback_text(self) -> str:
        """The traceback of what the model's code raised ('' when there is no cause)."""
        cause = self.__cause__
        return "".join(traceback.format_exception(type(cause), cause, cause.__traceback__)) if cause else ""


class ModelBuildError(SpecError, ModelError):
    """A model's constructor or factory raised (``model=REF: could not be built: ...``)."""

    def __init__(self, field: str, value: object, reason: str):
        SpecError.__init__(self, field, value, reason)
        self.detail = reason


class ModelForwardError(ModelError):
    """A model's own forward (the user's or a library's code) raised while vitbench counted or
    traced it: the model is broken for this input, not vitbench. ``model`` is the reference,
    given by the caller that knows it (:meth:`named`); the original exception is the cause."""

    def __init__(self, model: object, shape: tuple, dtype: str, cause: str):
        self.model, self.shape, self.dtype, self.cause = model, shape, dtype, cause
        detail = f"its forward failed on a {shape} {dtype} input: {cause}"
        super().__init__(f"model={shown(model)}: {detail}")
        self.detail = detail

    def named(self, model: object) -> ModelForwardError:
        named = ModelForwardError(model, self.shape, self.dtype, self.cause)
        named.__cause__ = self.__cause__
        return named


#: vitbench's own source folder: an exception whose innermost frame is in it was raised by vitbench
_OWN_SOURCE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def foreign_call(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, a call into code vitbench does not own (a ``py:`` factory,
    an operator a dispatch mode passes on): what the call itself raises (an unexpected keyword,
    a kernel's error) counts as that code's, not as raised by this frame of vitbench's."""
    return function(*args, **kwargs)


def raised_by_vitbench(exc: BaseException) -> bool:
    """Whether vitbench's own code raised ``exc`` (a bug): its innermost frame is in vitbench's
    source (a :func:`foreign_call` excepted) and it is not a ``RuntimeError``, which is torch's
    error for a kernel, a device or the machine, even from an operator vitbench's code called.
    A model's code, a library's and torch's Python raise elsewhere. vitbench's own model classes
    (the presets) are vitbench's code: a TypeError in their forward is vitbench's bug."""
    tb = exc.__traceback__
    if tb is None or isinstance(exc, RuntimeError):
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    return code.co_filename.startswith(_OWN_SOURCE) and code is not foreign_call.__code__


def one_line_cause(exc: BaseException, limit: int = 300) -> str:
    """``Type: message`` on one printable line, at most ``limit`` characters."""
    text = " ".join("".join(c if c.isprintable() else " " for c in str(exc)).split())
    cause = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return cause if len(cause) <= limit else cause[: limit - 3] + "..."


def error_reason(exc: VitbenchError) -> str:
    """What a row says of ``exc``: a :class:`ModelError`'s detail (``Type: message`` of what the
    model's code raised), else the one-line message."""
    return exc.detail if isinstance(exc, ModelError) else str(exc)


def error_detail(exc: BaseException) -> str:
    """The traceback a row keeps in ``error_detail``: vitbench's own exception's, or for a
    :class:`ModelError` the model code's it was converted from."""
    if isinstance(exc, ModelError) and exc.__cause__ is not None:
        return exc.traceback_text
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


@contextlib.contextmanager
def model_code(convert: Callable[[Exception], VitbenchError] | None = None) -> Iterator[None]:
    """The boundary around a call into a model's (or a library's) code: what that code raises
    becomes ``convert(exc)`` (default a :class:`ModelError` saying ``Type: message``), raised
    from it. Interrupts, memory errors, vitbench's own errors and anything vitbench's own code
    raised (a bug: :func:`raised_by_vitbench`) pass unchanged."""
    try:
        yield
    except (KeyboardInterrupt, SystemExit, MemoryError, VitbenchError):
        raise
    # the one boundary around code vitbench does not own: which exceptions a user's model, timm,
    # transformers or torch on fake tensors raise is open-ended; vitbench's own are re-raised
    except Exception as exc:  # noqa: BLE001
        if raised_by_vitbench(exc):
            raise
        raise (convert or (lambda e: ModelError(one_line_cause(e))))(exc) from exc


@contextlib.contextmanager
def model_forward(images: Any, model: object = None) -> Iterator[None]:
    """Around the one call of a model's forward on ``images``: what the forward raises becomes a
    :class:`ModelForwardError` (chained), interrupts, memory errors and vitbench's own errors
    (and bugs) as they are."""
    shape = tuple(int(n) for n in getattr(images, "shape", ()))
    dtype = str(getattr(images, "dtype", "")).removeprefix("torch.")
    with model_code(lambda exc: ModelForwardError(model, shape, dtype, one_line_cause(exc))):
        yield
