"""Progress of a running sweep, shared by `vitbench sweep` and `vitbench report`, and a
scheduler's SIGTERM turned into the same clean interruption as Ctrl-C.

:class:`Progress` writes to the stream it is given (the CLI passes stderr): a tqdm bar with ETA
on a terminal, one line per row otherwise (with the ETA too), nothing when quiet or ``CI=true``.
The ETA weighs the configurations left by what they cost (:func:`eta_weighted`): each study's
rows carry an estimated cost (:class:`RowCosts`, from :func:`vitbench.sweeps.rows.row_costs`: a
measured row starts worker processes, a counted row traces the model), and the estimate is
scaled by how the completed rows compared with theirs (per study, else per kind, measured or
not, else over all rows). Without costs it is the configurations left times the mean duration
of those completed (:func:`eta_s`). The bar shows the same ETA (not tqdm's, which counts rows).

>>> progress = Progress(sys.stderr, quiet=False, desc="study")  # doctest: +SKIP
>>> with sigterm_as_interrupt():  # doctest: +SKIP
...     sweep(plan, on_start=progress.on_start, on_row=progress.on_row)
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from vitbench.escape import terminal_text
from vitbench.row_status import RowStatus


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


@dataclass(frozen=True)
class RowCosts:
    """What the rows of a sweep are expected to cost: ``seconds`` per row of each study,
    ``rows`` of each study (before duplicates between studies are dropped) and the studies whose
    rows are ``measured`` (worker processes: they slow down with the machine's load unlike the rest)."""

    seconds: Mapping[str, float]
    rows: Mapping[str, int]
    measured: frozenset[str] = field(default_factory=frozenset)

    def kind(self, study: str) -> str:
        return "measured" if study in self.measured else "other"


def eta_weighted(costs: RowCosts, spent: Mapping[str, float], done: Mapping[str, int], left: int) -> float | None:
    """Seconds left for ``left`` configurations, given the seconds ``spent`` on the ``done`` rows
    of each study: each study's rows left (its rows less those done, scaled so they add up to
    ``left``) at its estimated cost, times a ratio of time spent to time estimated, the study's
    own, else its kind's (measured or not), else all rows'. None before a row completed. Measured
    rows take all rows' ratio only where it is above 1 (a busy machine slows them too): counted rows
    done faster than estimated say nothing of a worker process's start (at rest the default
    study's counted rows took a fifth of their estimate, its measured rows their estimate).

        eta = sum_s  left_s x seconds_s x (spent / estimated)_{s, else kind(s), else all}"""
    if sum(done.values()) <= 0:
        return None
    if left <= 0:
        return 0.0

    def ratio(studies: list[str]) -> float | None:
        estimated = sum(done.get(s, 0) * costs.seconds.get(s, 0.0) for s in studies)
        return sum(spent.get(s, 0.0) for s in studies) / estimated if estimated > 0 and any(done.get(s) for s in studies) else None

    remaining = {s: max(0, n - done.get(s, 0)) for s, n in costs.rows.items()}
    total = sum(remaining.values())
    if total <= 0:  # more done than the estimate knew of: the mean over all rows
        return eta_s(sum(spent.values()), sum(done.values()), sum(done.values()) + left)
    every = list(costs.rows)
    overall = ratio(every)
    seconds = 0.0
    for study, count in remaining.items():
        if not count:
            continue
        same_kind = [s for s in every if costs.kind(s) == costs.kind(study)]
        fallback = max(1.0, overall) if costs.kind(study) == "measured" and overall is not None else overall
        scale = ratio([study]) or ratio(same_kind) or fallback or 1.0
        seconds += count * left / total * costs.seconds.get(study, 0.0) * scale
    return seconds


def duration_text(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class Progress:
    """``on_start(todo, skipped)`` / ``on_estimate(costs)`` / ``on_row(row)`` / ``on_note(text)``
    callbacks for :func:`vitbench.sweep`. ``clock``: seconds (``time.monotonic``; a test's fake)."""

    def __init__(self, stream: TextIO, *, quiet: bool = False, desc: str = "sweep", bar: bool | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.stream, self.quiet, self.desc = stream, quiet, terminal_text(desc)  # a sweep file's name, printed
        if bar is None:
            bar = not quiet and not in_ci() and getattr(stream, "isatty", lambda: False)()
        self.use_bar = bar
        self.log_rows = not quiet and not bar and not in_ci()
        self.done = self.todo = 0
        self._bar: Any = None
        self._clock = clock
        self._started: float | None = None
        self._last: float | None = None
        self._costs: RowCosts | None = None
        self._spent: dict[str, float] = {}
        self._counted: dict[str, int] = {}

    def on_start(self, todo: int, skipped: int) -> None:
        self.todo = todo
        self._started = self._last = self._clock()
        if skipped and not self.quiet:
            print(f"vitbench: resuming: {skipped} configurations already done, {todo} to run", file=self.stream, flush=True)
        if self.use_bar and todo:
            from tqdm import tqdm

            # the remaining time is ours (eta(): weighted by the rows' costs), in the postfix, not tqdm's count-based one
            self._bar = tqdm(total=todo, unit="cfg", file=self.stream, dynamic_ncols=True, desc=self.desc, smoothing=0,
                             bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]")

    def on_estimate(self, costs: RowCosts) -> None:
        """The rows' expected costs: the ETA weighs what is left by them (:func:`eta_weighted`)."""
        self._costs = costs

    def on_note(self, text: str) -> None:
        """A line about the sweep as a whole (a phase starting), unless quiet."""
        if self._bar is not None:
            self._bar.write(f"vitbench: {terminal_text(text)}", file=self.stream)
        elif not self.quiet:
            print(f"vitbench: {terminal_text(text)}", file=self.stream, flush=True)

    def eta(self) -> float | None:
        """Seconds left (None before the first row completed)."""
        if self._costs is not None:
            return eta_weighted(self._costs, self._spent, self._counted, self.todo - self.done)
        now = self._clock()
        return eta_s(now - (self._started if self._started is not None else now), self.done, self.todo)

    def on_row(self, row: dict[str, Any]) -> None:
        now = self._clock()
        spent, self._last = now - (self._last if self._last is not None else now), now
        if (row.get("attempts") or 1) > 1:  # re-measured after the sweep's rows: not one more of them
            self._remeasured(row)
            return
        self.done += 1
        if row.get("error_detail") and os.environ.get("VITBENCH_DEBUG"):  # the row's traceback, asked for
            print(row["error_detail"], end="", file=self.stream, flush=True)
        study = str(row.get("study") or "")
        self._spent[study] = self._spent.get(study, 0.0) + spent
        self._counted[study] = self._counted.get(study, 0) + 1
        if self._bar is not None:
            left = self.eta()
            eta = f"eta {duration_text(left)}, " if left is not None and self.done < self.todo else ""
            self._bar.set_postfix_str(f"{eta}{terminal_text(describe(row))[:50]}", refresh=False)
            self._bar.update(1)
        elif self.log_rows:
            status = row.get("status")
            extra = f": {terminal_text(str(row.get('error')))}" if status != RowStatus.OK and row.get("error") else ""
            left = self.eta()
            eta = f" (eta {duration_text(left)})" if left is not None and self.done < self.todo else ""
            print(f"[{self.done}/{self.todo}] {terminal_text(describe(row))}: {status}{extra}{eta}", file=self.stream, flush=True)

    def _remeasured(self, row: dict[str, Any]) -> None:
        if self.quiet or not (self.log_rows or self._bar is not None):
            return
        spreads = row.get("attempt_spreads") or []
        said = " -> ".join("?" if s is None else f"{s:.0%}" for s in spreads)
        kept = row.get("kept_attempt")
        self.on_note(f"re-measured {describe(row)}: timing spread {said}; kept attempt {kept}")

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


__all__ = ["Progress", "RowCosts", "describe", "duration_text", "eta_s", "eta_weighted", "sigterm_as_interrupt"]
