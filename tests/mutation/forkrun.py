"""Run chosen tests against a mutant in a forked child of a process that has already imported the
heavy third-party packages (torch, numpy, pytest, ...): a mutant costs its tests, not the
interpreter's and torch's start (seconds each, a thousand times over a whole-core run).

The parent never imports ``vitbench``. Each child makes a temporary copy of the package (the
:class:`~tests.mutation.runner.Workspace`, one per slot) the first thing on ``sys.path`` and its
working directory (subprocesses the tests start import the copy too, as with the subprocess
runner; they write no bytecode), runs ``pytest.main`` on the chosen node ids (``-x``: the first
failure ends it) and exits with pytest's code. A child that runs past its time is killed with its
process group: the mutant counts as killed by timeout, as usual in mutation testing.
"""

from __future__ import annotations

import gc
import importlib
import os
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

PRELOADED = ("numpy", "torch", "torchvision", "timm", "hypothesis", "pytest", "_pytest.pytester", "xdist")

KILLED, SURVIVED, TIMEOUT, NO_TESTS = "killed", "survived", "timeout", "no tests"


@dataclass(frozen=True)
class Result:
    status: str         # killed, survived, timeout, no tests (none of the chosen tests was collected)
    seconds: float
    detail: str = ""    # the first failing test (killed), pytest's exit code when it is not a test failure


def preload(names: tuple[str, ...] = PRELOADED) -> None:
    """Import the heavy packages once, in the parent (a missing optional one is skipped)."""
    if "vitbench" in sys.modules:
        raise RuntimeError("the fork runner's parent must not import vitbench: children import the mutated copy")
    plugins = [entry.module for entry in metadata.entry_points(group="pytest11")]
    for name in (*names, *plugins):   # pytest's plugins too: loading them is most of its start
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a plugin that cannot load in the parent loads (or fails) in the child
            pass
    gc.collect()
    gc.freeze()   # the children's collections (pytest runs two at its end) skip what the parent loaded


class _Selector:
    """pytest plugin in the child: keeps only the chosen node ids, in the chosen order, and notes
    the first failure."""

    def __init__(self, nodeids: list[str], failure_file: str):
        self.order = {n: i for i, n in enumerate(nodeids)}   # a node id, a test function or a file
        self.failure_file = failure_file
        self.noted = False

    def _position(self, item) -> int | None:
        """Where the item's node id, its test function (a parametrized test named without its
        cases: all of them) or its file stands in the chosen order; None: not chosen."""
        for key in (item.nodeid, item.nodeid.split("[", 1)[0], item.nodeid.split("::", 1)[0]):
            if key in self.order:
                return self.order[key]
        return None

    def pytest_collection_modifyitems(self, session, config, items):
        keep = sorted((i for i in items if self._position(i) is not None), key=self._position)
        dropped = [i for i in items if self._position(i) is None]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = keep

    def pytest_runtest_logreport(self, report):
        if report.failed and not self.noted:
            self.noted = True
            with open(self.failure_file, "w") as out:
                out.write(f"{report.nodeid} ({report.when})")


def _child(package_root: Path, tests_root: Path, nodeids: list[str], failure_file: str, log_file: str) -> int:
    import pytest

    os.setpgid(0, 0)
    fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.chdir(package_root)
    sys.path.insert(0, str(package_root))
    os.environ.update(PYTHONPATH=str(package_root), PYTHONDONTWRITEBYTECODE="1")
    files = list(dict.fromkeys(str(tests_root / n.split("::", 1)[0]) for n in nodeids))
    # the last plugin's collection hook runs after conftest's (the slow-test sampling)
    code = pytest.main(["-x", "-q", "--no-header", "-m", "not acceptance", "-p", "no:cacheprovider", "-p", "no:randomly",
                        "--rootdir", str(tests_root), "-c", str(tests_root / "pyproject.toml"), *files],
                       plugins=[_Selector(nodeids, failure_file)])
    return int(code)


def forget_bytecode(module_file: Path) -> None:
    """Remove the cached bytecode of a module just rewritten (a mutant of the same size written in
    the same second would otherwise be read from it); the copy's other modules keep theirs."""
    for cached in (module_file.parent / "__pycache__").glob(f"{module_file.stem}.*.pyc"):
        cached.unlink(missing_ok=True)


def run_tests(package_root: Path, tests_root: Path, nodeids: list[str], timeout: float) -> Result:
    """``nodeids`` (relative to ``tests_root``; a file alone: all its tests) against the package
    under ``package_root``."""
    if not nodeids:
        return Result(NO_TESTS, 0.0, "no test runs this code")
    with tempfile.TemporaryDirectory(prefix="vitbench-mutant-run-") as scratch:
        failure_file, log_file = os.path.join(scratch, "failure"), os.path.join(scratch, "log")
        sys.stdout.flush()
        sys.stderr.flush()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 98
            try:
                code = _child(package_root, tests_root, nodeids, failure_file, log_file)
            except BaseException:  # noqa: BLE001 - the child reports by its exit code, never returns
                code = 97
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        code = _wait(pid, start + timeout)
        seconds = time.monotonic() - start
        if code is None:
            return Result(TIMEOUT, seconds, f"over {timeout:.0f} s")
        failure = Path(failure_file).read_text() if os.path.exists(failure_file) else ""
        return _result(code, seconds, failure, Path(log_file).read_text(errors="replace")[-2000:])


def _result(code: int, seconds: float, failure: str, log: str) -> Result:
    if code == 0:
        return Result(SURVIVED, seconds)
    if code < 0:  # a signal: the mutant crashed the interpreter (or something it called)
        return Result(KILLED, seconds, failure or f"died by signal {-code}")
    if code == 5:
        return Result(NO_TESTS, seconds, "none of the chosen tests was collected")
    if code in (1, 2, 3):  # tests failed; collection failed (the mutant cannot be imported); internal error
        return Result(KILLED, seconds, failure or f"pytest exit {code}: {log.strip().splitlines()[-1:] or ''}")
    raise RuntimeError(f"the test child ended with {code}: {log}")


def _wait(pid: int, deadline: float) -> int | None:
    """The child's exit code, None when it ran past ``deadline`` (then it is killed, with every
    process it started)."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            return None
        time.sleep(0.05)
