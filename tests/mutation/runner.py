"""Run a module's own tests against its mutants, each in a temporary copy of the package.

The package (``vitbench/``) is copied once per module into a temporary folder; for each mutant
the module's file there is overwritten and pytest runs the module's test files in a fresh
process whose working directory (first on ``sys.path``) is that folder, so ``import vitbench``
finds the copy, never the checkout. No bytecode is written (a mutant of the same size written in
the same second would otherwise be read from a stale cache). Before the mutants, two runs check
the set-up itself: the unmutated module (ast round trip) must pass, and a module that raises on
import must fail, else nothing the run reports would mean anything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .mutants import Mutant

KILLED, SURVIVED, EQUIVALENT, TIMEOUT = "killed", "survived", "equivalent", "timeout"


class HarnessError(RuntimeError):
    """The set-up cannot tell mutants apart (the tests fail unmutated, or do not see the copy)."""


@dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    status: str          # killed, survived, equivalent (reviewed), timeout (counts as killed)
    seconds: float
    detail: str = ""     # the first failing test, for a killed mutant


@dataclass(frozen=True)
class Tally:
    module: str
    outcomes: tuple[Outcome, ...]

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def killed(self) -> int:
        return self.count(KILLED) + self.count(TIMEOUT)

    @property
    def survived(self) -> int:
        return self.count(SURVIVED)

    @property
    def equivalent(self) -> int:
        return self.count(EQUIVALENT)

    @property
    def kill_rate(self) -> float | None:
        """Killed over non-equivalent mutants (None when every mutant is equivalent)."""
        live = self.killed + self.survived
        return self.killed / live if live else None


def _pytest(copy_root: Path, tests: Sequence[Path], timeout: float) -> tuple[int | None, str]:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(copy_root))
    command = [sys.executable, "-m", "pytest", "-x", "-q", "--no-header", "-p", "no:cacheprovider",
               "-p", "no:randomly", *map(str, tests)]
    try:
        done = subprocess.run(command, cwd=copy_root, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    failed = [line for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
    return done.returncode, (failed[0] if failed else done.stdout.strip().splitlines()[-1:] or [""])[0][:200]


class Workspace:
    """A temporary copy of the package in which one module is swapped for its mutants."""

    def __init__(self, source_root: Path, module: str):
        self.module = module
        self._dir = tempfile.TemporaryDirectory(prefix="vitbench-mutants-")
        self.root = Path(self._dir.name)
        shutil.copytree(source_root / "vitbench", self.root / "vitbench",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        self.target = self.root / module
        self.original = self.target.read_text()

    def write(self, source: str) -> None:
        self.target.write_text(source)

    def close(self) -> None:
        self._dir.cleanup()


def check_setup(space: Workspace, tests: Sequence[Path], round_trip: str) -> float:
    """Seconds the unmutated tests take; raises :class:`HarnessError` when the set-up cannot
    tell mutants apart."""
    start = time.monotonic()
    space.write(round_trip)
    code, detail = _pytest(space.root, tests, timeout=600)
    seconds = time.monotonic() - start
    if code != 0:
        raise HarnessError(f"{space.module}: its tests fail before any mutation ({detail})")
    space.write("raise ImportError('mutation harness: the copy is what is tested')\n" + round_trip)
    code, _ = _pytest(space.root, tests, timeout=600)
    if code == 0:
        raise HarnessError(f"{space.module}: the tests pass with a module that cannot be imported: "
                           "they do not import the copy (or do not touch the module)")
    space.write(space.original)
    return seconds


def run_mutants(
    source_root: Path, mutants: Sequence[Mutant], tests: Sequence[Path], round_trip: str,
    equivalent: frozenset[str] = frozenset(), progress: Callable[[Outcome], None] | None = None,
) -> Tally:
    """Each mutant against the module's tests; a reviewed equivalent mutant is not run."""
    module = mutants[0].module if mutants else ""
    space = Workspace(source_root, module)
    outcomes = []
    try:
        if mutants:
            budget = 3 * check_setup(space, tests, round_trip) + 30
        for mutant in mutants:
            if mutant.name in equivalent:
                outcome = Outcome(mutant, EQUIVALENT, 0.0, "reviewed: equivalent")
            else:
                start = time.monotonic()
                space.write(mutant.source)
                code, detail = _pytest(space.root, tests, budget)
                status = TIMEOUT if code is None else SURVIVED if code == 0 else KILLED
                outcome = Outcome(mutant, status, time.monotonic() - start, detail)
            outcomes.append(outcome)
            if progress is not None:
                progress(outcome)
    finally:
        space.close()
    return Tally(module, tuple(outcomes))
