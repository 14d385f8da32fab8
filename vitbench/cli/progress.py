"""Progress of a long command on stderr: a tqdm bar on a terminal, a line per step otherwise,
nothing under ``--quiet``. Standard output is never touched (it may be CSV or JSON). With
``delay_s``, a step says nothing unless it lasts that long (``analyze`` of a preset is instant;
of a large traced model, minutes); once anything was said, the counter never skips silently: the
next line shown names the quick steps before it (``[3/4] label ([2/4] took under 2 s)``), and
:meth:`Steps.close` names those after the last one shown.

The library reports progress through callbacks, ``on_progress(done, total, label)``, called as
the step ``done + 1`` of ``total`` starts; :class:`Steps` is such a callback. A step with no
count of its own (a calibration in a worker process) is a *wait*: :meth:`Steps.wait` says what
it waits for and, until the next step, how long it has waited (a line every
:data:`WAIT_LINE_S` seconds, or the bar's clock).

>>> steps = Steps("profile", quiet=args.quiet)  # doctest: +SKIP
>>> profile(models, on_progress=steps)  # doctest: +SKIP
>>> steps.close()  # doctest: +SKIP
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

#: seconds between the lines that say a wait goes on (non-terminal output)
WAIT_LINE_S = 10.0


def _is_tty(stream: TextIO) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)())


def clock(seconds: float) -> str:
    """'42 s', '3m05s', '1h02m'."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Steps:
    """A progress callback for one command: ``steps(done, total, label)`` as each step starts,
    ``steps.wait(message)`` before a step with no count of its own, ``steps.close()`` at the end."""

    def __init__(self, desc: str, *, quiet: bool = False, stream: TextIO | None = None, bar: bool | None = None,
                 delay_s: float = 0.0):
        self.desc, self.quiet, self.delay_s = desc, quiet, delay_s
        self.stream = stream if stream is not None else sys.stderr
        self.use_bar = (not quiet and _is_tty(self.stream)) if bar is None else (bar and not quiet)
        self._bar: Any = None
        self._lock = threading.Lock()
        self._waiting: threading.Event | None = None
        self._pending: threading.Timer | None = None
        self._ticker: threading.Thread | None = None
        self._shown = 0      # the last step (1-based) whose line was shown
        self._started = 0    # the last step started
        self._total = 0
        self._label = ""
        self._spoke = False  # whether any line was shown (a quick command stays silent)

    def _line(self, text: str) -> None:
        from vitbench.escape import terminal_text

        print(f"vitbench: {self.desc}: {terminal_text(text)}", file=self.stream, flush=True)
        self._spoke = True

    def _under(self) -> str:
        return f"took under {self.delay_s:g} s"

    def _skipped(self, before: int) -> tuple[int, int] | None:
        """The steps started, not shown, after the last one shown and before step ``before``."""
        first = self._shown + 1
        return (first, before - 1) if before - 1 >= first else None

    def _counter(self, first: int, last: int) -> str:
        return f"[{first}/{self._total}]" if first == last else f"[{first}-{last}/{self._total}]"

    def _show_step(self, step: int, total: int, label: str) -> None:
        """Step ``step``'s line, naming the quick steps skipped since the last line shown."""
        with self._lock:
            if total == self._total and step <= self._shown:  # told already (close summed it up)
                return
            text = f"[{step}/{total}] {label}"
            skipped = self._skipped(step) if total == self._total else None
            if skipped is not None:
                each = "" if skipped[0] == skipped[1] else " each"
                text += f" ({self._counter(*skipped)} {self._under()}{each})"
            self._line(text)
            self._shown = max(self._shown, step)

    def __call__(self, done: int, total: int, label: str) -> None:
        self._stop_wait()
        if self.quiet:
            return
        if not self.use_bar:
            with self._lock:
                if total != self._total:  # another count: a new series of steps
                    self._total, self._shown = total, 0
                self._started, self._label = done + 1, label
            self._line_later(done + 1, total, label)
            return
        with self._lock:
            if self._bar is None or self._bar.total != total:
                self._close_bar()
                from tqdm import tqdm

                self._bar = tqdm(total=total, file=self.stream, dynamic_ncols=True, desc=self.desc, leave=False,
                                 delay=self.delay_s)
            from vitbench.escape import terminal_text

            self._bar.set_postfix_str(terminal_text(label)[:60], refresh=False)
            self._bar.update(done - self._bar.n)

    def _line_later(self, step: int, total: int, label: str) -> None:
        """The step's line now, or (``delay_s``) once the step has lasted that long."""
        if self.delay_s <= 0:
            self._show_step(step, total, label)
            return
        self._pending = threading.Timer(self.delay_s, self._show_step, (step, total, label))
        self._pending.daemon = True
        self._pending.start()

    def wait(self, message: str) -> None:
        """Say ``message`` (a step with no count: a calibration), then how long it has lasted."""
        self._stop_wait()
        if self.quiet:
            return
        self._line(message)
        stop = threading.Event()
        self._waiting = stop
        start = time.monotonic()

        def tick() -> None:
            period = 0.5 if self.use_bar else WAIT_LINE_S
            while not stop.wait(period):
                elapsed = time.monotonic() - start
                if self.use_bar:
                    print(f"\rvitbench: {self.desc}: waited {clock(elapsed)}", end="", file=self.stream, flush=True)
                else:
                    self._line(f"still at it after {clock(elapsed)}")
            if self.use_bar:
                print(file=self.stream, flush=True)

        self._ticker = threading.Thread(target=tick, name="vitbench-progress-wait", daemon=True)
        self._ticker.start()

    def _stop_wait(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        if self._waiting is not None:
            self._waiting.set()
            self._waiting = None
        if self._ticker is not None:
            self._ticker.join(timeout=1.0)  # its last words before the next step's
            self._ticker = None

    def _close_bar(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def close(self) -> None:
        self._stop_wait()
        with self._lock:
            self._close_bar()
            skipped = self._skipped(self._started + 1)
            if self._spoke and not self.use_bar and skipped is not None:  # the quick steps after the last shown
                first, last = skipped
                if first == last:
                    self._line(f"{self._counter(first, last)} {self._label} ({self._under()})")
                else:
                    self._line(f"{self._counter(first, last)} {self._under()} each, the last {self._label}")
                self._shown = last


def add_quiet_argument(parser) -> None:
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress on stderr (a bar on a terminal, else a line per step)")


__all__ = ["WAIT_LINE_S", "Steps", "add_quiet_argument", "clock"]
