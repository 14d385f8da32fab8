"""pytest plugin (``-p tests.mutation.tracer``): which functions of the core packages each test runs.

The test map (:mod:`tests.mutation.testmap`) is built by running the default suite once with this
plugin: for every test it records the functions of ``vitbench/{gate,timemodel,store,analytic,
counters}/`` whose code ran, by module path and qualified name (``Store._load``), so that a mutant
of a function is run against only the tests that call that function, and which of them call it
from the test's own code (``direct``: a unit test of it, run first). What ran while a fixture was
set up counts for every test that uses the fixture (a module fixture runs once, for the first test,
but feeds them all). Before each test the in-process caches of the package are emptied (its
``lru_cache`` functions, its module-level ``*_CACHE`` dicts) and the trace cache moved to a new
folder: a test that would find a trace another test made, in the map run, is recorded as running
the tracing code, as it does when it runs alone against a mutant.

Only the ``call`` event is traced (no line events), so a test runs at most a few times slower.
Calls in child processes (a CLI run in a subprocess, sweep workers) are not seen: such a test is
chosen only for the functions it runs in its own process. Each process (each xdist worker) writes
``part-<id>.json`` into ``$VITBENCH_MUTATION_MAP_OUT``.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

CORE_PACKAGES = ("gate", "timemodel", "store", "analytic", "counters")
OUT_ENV = "VITBENCH_MUTATION_MAP_OUT"
_UNKNOWN = object()


def code_key(filename: str, qualname: str) -> tuple[str, str] | None:
    """(module path in the package tree, the enclosing ``def``'s qualified name) of a code object,
    None outside the core packages. Lambdas and comprehensions count as their function:
    ``f.<locals>.<listcomp>`` is ``f``."""
    at = filename.replace(os.sep, "/").rfind("/vitbench/")
    if at < 0:
        return None
    module = filename.replace(os.sep, "/")[at + 1:]
    parts = module.split("/")
    if len(parts) < 3 or parts[1] not in CORE_PACKAGES or not module.endswith(".py"):
        return None
    return module, enclosing_def(qualname)


def enclosing_def(qualname: str) -> str:
    """``f.<locals>.<listcomp>`` -> ``f``; ``C.m.<locals>.<dictcomp>.<listcomp>`` -> ``C.m``."""
    names = qualname.split(".")
    while names and names[-1].startswith("<") and names[-1] != "<locals>":
        names.pop()
        if names and names[-1] == "<locals>":
            names.pop()
    return ".".join(names)


class Recorder:
    """Collects, per test, the core functions that ran (a pytest plugin object)."""

    def __init__(self) -> None:
        self._keys: dict[object, tuple[str, str] | None] = {}
        self._test_code: dict[object, bool] = {}
        self.current: set[tuple[str, str]] | None = None
        self.direct: set[tuple[str, str]] = set()        # called from a test's (or fixture's) own code
        self.fixtures: dict[int, tuple[set[tuple[str, str]], set[tuple[str, str]]]] = {}
        self.tests: dict[str, dict] = {}
        self._trace_root = Path(tempfile.mkdtemp(prefix="vitbench-map-traces-"))

    def trace(self, frame, event, arg):  # sys.settrace: called on every new frame
        collected = self.current
        if collected is not None:
            code = frame.f_code
            key = self._keys.get(code, _UNKNOWN)
            if key is _UNKNOWN:
                # module bodies and class bodies run at import, not in a test
                key = code_key(code.co_filename, code.co_qualname) if code.co_flags & inspect.CO_OPTIMIZED else None
                self._keys[code] = key
            if key is not None:
                collected.add(key)
                caller = frame.f_back
                if caller is not None and self._is_test_code(caller.f_code):
                    self.direct.add(key)
        return None

    def _is_test_code(self, code) -> bool:
        known = self._test_code.get(code)
        if known is None:
            path = code.co_filename.replace(os.sep, "/")
            known = self._test_code[code] = "/tests/" in path and "/site-packages/" not in path
        return known

    def _install(self) -> None:
        sys.settrace(self.trace)
        threading.settrace(self.trace)

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        outer, outer_direct = self.current, self.direct
        self.current, self.direct = set(), set()
        try:
            return (yield)
        finally:
            calls, direct = self.fixtures.setdefault(id(fixturedef), (set(), set()))
            calls.update(self.current)
            direct.update(self.direct)
            self.current, self.direct = outer, outer_direct

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        _reset_caches()
        os.environ["VITBENCH_TRACE_DIR"] = tempfile.mkdtemp(dir=self._trace_root)
        self.current, self.direct = set(), set()
        self._install()
        start = time.perf_counter()
        try:
            return (yield)
        finally:
            seconds = time.perf_counter() - start
            calls, direct = self.current, self.direct
            self.current, self.direct = None, set()
            info = getattr(item, "_fixtureinfo", None)
            for defs in (info.name2fixturedefs.values() if info is not None else ()):
                for fixturedef in defs:
                    fixture_calls, fixture_direct = self.fixtures.get(id(fixturedef), (set(), set()))
                    calls, direct = calls | fixture_calls, direct | fixture_direct
            entry = self._entry(item.nodeid)
            entry["seconds"] += seconds
            entry["calls"] |= calls
            entry["direct"] |= direct
            shutil.rmtree(os.environ["VITBENCH_TRACE_DIR"], ignore_errors=True)

    def _entry(self, nodeid: str) -> dict:
        return self.tests.setdefault(nodeid, {"seconds": 0.0, "passed": True, "calls": set(), "direct": set()})

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self._entry(report.nodeid)["passed"] = False

    def pytest_sessionfinish(self, session):
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
        out = os.environ.get(OUT_ENV)
        shutil.rmtree(self._trace_root, ignore_errors=True)
        if not out:
            return
        worker = os.environ.get("PYTEST_XDIST_WORKER", f"pid{os.getpid()}")
        tests = {nodeid: {"seconds": round(e["seconds"], 4), "passed": e["passed"],
                          "calls": sorted(f"{m}::{q}" for m, q in e["calls"]),
                          "direct": sorted(f"{m}::{q}" for m, q in e["direct"])}
                 for nodeid, e in self.tests.items()}
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / f"part-{worker}.json").write_text(json.dumps({"tests": tests}))


def _reset_caches() -> None:
    """Empty the package's in-process caches: each test then runs what it would run alone."""
    for name, module in list(sys.modules.items()):
        if module is None or name.split(".")[0] != "vitbench":
            continue
        for attr, value in list(vars(module).items()):
            if callable(getattr(value, "cache_clear", None)) and getattr(value, "__module__", None) == name:
                value.cache_clear()
            elif attr.endswith("_CACHE") and isinstance(value, dict):
                value.clear()


_recorder = Recorder()


def pytest_configure(config):
    config.pluginmanager.register(_recorder, "vitbench-mutation-recorder")
