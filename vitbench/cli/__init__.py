"""The command line: the only place that prints or exits.

Each subcommand lives in ``vitbench/cli/<name>.py`` with ``register(subparsers)``, which adds
its parser and sets ``handler`` to a function ``(args) -> exit code``.

Exit codes: 0 success; 1 a check failed (regression, counter disagreement); 2 usage, input or
file error; 3 a run failed; 130 interrupted.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import re
import sys
import traceback

from vitbench.cli.common import UsageError, resolve_format
from vitbench.errors import OutputFileError, VitbenchError
from vitbench.escape import terminal_text
from vitbench.results import check_output_path
from vitbench.version import __version__

COMMANDS = (
    "analyze",
    "models",
    "validate",
    "profile",
    "predict",
    "choose",
    "devices",
    "calibrate",
    "selftest",
    "sweep",
    "merge",
    "plan",
    "report",
    "compare",
    "gate",
    "history",
    "audit",
)


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2, never a usage dump."""

    def error(self, message: str):  # type: ignore[override]
        where = self.prog.removeprefix("vitbench").strip()
        raise UsageError(f"{where}: {message}" if where else message)


def build_parser(command: str | None = None) -> Parser:
    """The parser of every command, or of ``command`` alone (one of :data:`COMMANDS`): what a
    command line that names it needs, without importing what the other commands' flags do."""

    parser = Parser(
        prog="vitbench",
        description="What a vision model costs: parameters, MACs, memory, throughput, latency.",
    )
    parser.add_argument("--version", action="version", version=f"vitbench {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in (command,) if command in COMMANDS else COMMANDS:
        try:
            module = importlib.import_module(f"vitbench.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"vitbench.cli.{name}":
                continue
            raise
        module.register(subparsers)
    return parser


def glue_negative_values(argv: list[str]) -> list[str]:
    """``--memory -1GiB`` -> ``--memory=-1GiB``: argparse takes a value that starts with '-'
    and is not a plain number for an option, and answers "expected one argument" instead of
    saying what is wrong with the value."""
    out: list[str] = []
    for token in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and re.match(r"-\.?\d", token) and not re.fullmatch(r"-\d+(\.\d*)?", token):
            out[-1] = f"{out[-1]}={token}"
        else:
            out.append(token)
    return out


def error(message: str) -> None:
    # one line whatever the message quotes (a JSON key or a file's text holding a line break)
    one_line = message.strip().replace("\r\n", "\n").replace("\n", "\\n")
    print(f"vitbench: error: {terminal_text(one_line)}", file=sys.stderr)


class _Closed:
    """A standard stream that was closed when vitbench started (``>&-``)."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "the stream is closed")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


class TerminalStream:
    """Standard output or error as the command prints to it: every write passes through
    :func:`vitbench.escape.terminal_text` (no escape sequence, bell or carriage return from a
    model name, a sweep file's ``name:`` or a calibration's ``device_name`` reaches the terminal);
    a carriage return that begins a write (a progress bar redrawing its line) stays."""

    def __init__(self, stream, name: str = "standard output"):
        self._stream = _Closed() if stream is None else stream
        self._name = name

    def write(self, text: str) -> int:
        lead = "\r" if text.startswith("\r") else ""
        self._guarded(self._stream.write, lead + terminal_text(text[len(lead):]))
        return len(text)

    def flush(self) -> None:
        self._guarded(self._stream.flush)

    def _guarded(self, call, *args) -> None:
        """A write that fails (a full disk, a closed stream) is one line and exit 2, not an
        internal error; a closed pipe (``| head``) stays BrokenPipeError, a quiet exit 0; standard
        error, with nowhere to say so, loses the text."""
        try:
            call(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            if self._name == "standard output":
                raise OutputFileError(f"{self._name}: cannot be written ({exc.strerror or type(exc).__name__})") from None

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def main(argv: list[str] | None = None) -> int:
    """Run one command (``argv``: the arguments, default ``sys.argv[1:]``); its exit code. All it
    prints passes through :class:`TerminalStream`."""
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = (s if isinstance(s, TerminalStream) else TerminalStream(s, name)
                              for s, name in zip(streams, ("standard output", "standard error")))
    try:
        return _main_flush(_main(argv))  # what is still buffered: a full disk says so now, not at exit
    finally:
        sys.stdout, sys.stderr = streams


def _main_flush(code: int) -> int:
    try:
        sys.stdout.flush()
    except OutputFileError as exc:
        error(str(exc))
        return 2
    except BrokenPipeError:
        pass
    return code


def _main(argv: list[str] | None) -> int:
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser(argv[0] if argv else None)
        args = parser.parse_args(glue_negative_values(argv))
        if not getattr(args, "handler", None):
            parser.print_help()
            return 2
        if getattr(args, "output", None):  # before any work: profile must not measure, then fail

            check_output_path(args.output, "--output")

        resolve_format(args)
        return int(args.handler(args) or 0)
    except UsageError as exc:
        error(str(exc))
        return 2
    except VitbenchError as exc:
        error(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        error("interrupted")
        return 130
    except BrokenPipeError:
        return 0
    # the command's boundary: anything else is vitbench's own bug, exit 3, its traceback on
    # standard error under VITBENCH_DEBUG=1 (else one line saying how to see it)
    except Exception as exc:  # noqa: BLE001
        return internal_error(exc)


def internal_error(exc: BaseException) -> int:
    """Exit code 3 for vitbench's own exception: one line naming it, and under
    ``VITBENCH_DEBUG=1`` its whole traceback first, on standard error."""
    # a note added on the way up (what was kept despite the fault: calibrate_gpu's steps) is part of the line
    notes = "".join(f"; {' '.join(str(note).split())}" for note in getattr(exc, "__notes__", ()))
    if os.environ.get("VITBENCH_DEBUG"):
        sys.stderr.write("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
        error(f"internal error: {exc.__class__.__name__}: {exc}{notes}")
    else:
        error(f"internal error: {exc.__class__.__name__}: {exc}{notes} (set VITBENCH_DEBUG=1 for a traceback)")
    return 3
