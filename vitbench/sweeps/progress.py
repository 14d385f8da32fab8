"""Progress of a running sweep, shared by `vitbench sweep` and `vitbench report`, and a
scheduler's SIGTERM turned into the same clean interruption as Ctrl-C.

:class:`Progress` writes to the stream it is given (the CLI passes stderr): a tqdm bar with ETA
on a terminal, one line per row otherwise (with the ETA too), nothing when quiet or ``CI=true``.
The ETA is the configurations left times the mean duration of those completed in this run
(:func:`eta_s`; tqdm's bar with ``smoothing=0`` computes the same), not a recent rate: a sweep's
configurations differ in cost, and a rate over the last few is as noisy as they are.

>>> progress = Progress(sys.stderr, quiet=False, desc="study")  # doctest: +SKIP
>>> with sigterm_as_interrupt():  # doctest: +SKIP
...     sweep(plan, on_start=progress.on_start, on_row=progress.on_row)
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from typing import Any, TextIO

from vitbench.escape import terminal_text


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def describe(row: dict[str, Any]) -> str:
    """'vit-b/16 img_size=384 batch 8 infer fp32' for a row."""
    parts = [str(row.get("model"))]
    if row.get("overrides"):
        parts.append(str(row["overrides"]))
    parts.append(f"batch {row.get('batch_size')}")
    if row.get("mode"):
        parts.append(f"{row['mode']} {row.get('precision')}")
    return " ".join(parts)


def eta_s(elapsed_s: float, done: int, todo: int) -> float | None:
    """Seconds left: the mean duration of the ``done`` completed configurations (``elapsed_s``
    since the first started) times the ``todo - done`` left; None before one has completed.

        eta = elapsed / done x (todo - done)"""
    if done <= 0:
        return None
    return elapsed_s / done * max(0, todo - done)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class Progress:
    """``on_start(todo, skipped)`` / ``on_row(row)`` callbacks for :func:`vitbench.sweep`."""

    def __init__(self, stream: TextIO, *, quiet: bool = False, desc: str = "sweep", bar: bool | None = None):
        self.stream, self.quiet, self.desc = stream, quiet, terminal_text(desc)  # a sweep file's name, printed
        if bar is None:
            bar = not quiet and not in_ci() and getattr(stream, "isatty", lambda: False)()
        self.use_bar = bar
        self.log_rows = not quiet and not bar and not in_ci()
        self.done = self.todo = 0
        self._bar: Any = None
        self._started: float | None = None

    def on_start(self, todo: int, skipped: int) -> None:
        self.todo = todo
        self._started = time.monotonic()
        if skipped and not self.quiet:
            print(f"vitbench: resuming: {skipped} configurations already done, {todo} to run", file=self.stream, flush=True)
        if self.use_bar and todo:
            from tqdm import tqdm

            # smoothing=0: the rate over every completed configuration, as eta_s
            self._bar = tqdm(total=todo, unit="cfg", file=self.stream, dynamic_ncols=True, desc=self.desc, smoothing=0)

    def on_row(self, row: dict[str, Any]) -> None:
        self.done += 1
        if row.get("error_detail") and os.environ.get("VITBENCH_DEBUG"):  # the row's traceback, asked for
            print(row["error_detail"], end="", file=self.stream, flush=True)
        if self._bar is not None:
            self._bar.set_postfix_str(terminal_text(describe(row))[:60], refresh=False)
            self._bar.update(1)
        elif self.log_rows:
            status = row.get("status")
            extra = f": {terminal_text(str(row.get('error')))}" if status != "ok" and row.get("error") else ""
            left = eta_s(time.monotonic() - (self._started or time.monotonic()), self.done, self.todo)
            eta = f" (eta {_clock(left)})" if left is not None and self.done < self.todo else ""
            print(f"[{self.done}/{self.todo}] {terminal_text(describe(row))}: {status}{extra}{eta}", file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM (a scheduler ending or preempting the job) raises
    KeyboardInterrupt, so a sweep saves its rows and exports as on Ctrl-C."""

    def on_term(signum, frame):
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, on_term)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


__all__ = ["Progress", "describe", "eta_s", "sigterm_as_interrupt"]
