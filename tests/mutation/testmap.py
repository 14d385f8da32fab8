"""The test map: for every function of the core packages, the tests that run it.

Built by running the default suite once with the tracer plugin (:mod:`tests.mutation.tracer`),
kept in ``.mutation/testmap.json`` (not committed: it is rebuilt from the tests). A mutant inside a
function is run against the tests that call that function (the narrowest set that can kill it);
a mutant outside any function (a module constant, a class attribute, a dataclass default) against
every test that runs any code of its module. A test file changed or added since the map was built
is traced again on its own and merged in (:func:`refresh`), so a test written to kill a survivor is
chosen the next time that mutant runs.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from .tracer import OUT_ENV

MAP_FILE = Path(".mutation") / "testmap.json"
#: the tests a map traces (pytest -m): a map made with another selection is traced again whole
SELECTION = "not acceptance"
#: test files never traced: the harness's own tests mutate nothing in-process
NOT_MAPPED = ("tests/test_mutation.py",)


@dataclass
class TestMap:
    seconds: dict[str, float] = field(default_factory=dict)          # nodeid -> seconds in the map run
    failed: set[str] = field(default_factory=set)                      # nodeids that failed in the map run
    callers: dict[str, dict[str, set[str]]] = field(default_factory=dict)  # module -> qualname -> nodeids
    digests: dict[str, str] = field(default_factory=dict)              # test file -> sha256 when traced
    scope: list[str] | None = None                                     # the test files mapped (None: all)
    direct: dict[str, dict[str, set[str]]] = field(default_factory=dict)   # callers from the test's own code
    selection: str = SELECTION                                         # the pytest -m it traced

    def for_function(self, module: str, qualname: str | None) -> list[str]:
        """The passing tests that run ``qualname`` of ``module`` (every test that runs any of the
        module's code when ``qualname`` is None: code outside a function)."""
        by_function = self.callers.get(module, {})
        found = by_function.get(qualname, set()) if qualname is not None else set().union(*by_function.values())
        return sorted(found - self.failed)

    def for_module(self, module: str) -> list[str]:
        return self.for_function(module, None)

    def breadth(self, nodeid: str) -> int:
        """How many core functions a test runs (few: a focused test, likelier to see a change)."""
        if not hasattr(self, "_breadth"):
            counts: dict[str, int] = defaultdict(int)
            for by_function in self.callers.values():
                for nodeids in by_function.values():
                    for n in nodeids:
                        counts[n] += 1
            self._breadth = counts
        return self._breadth.get(nodeid, 0)

    def cost(self, entry: str) -> float:
        """A test's seconds in the map run; a whole file's, the sum of its tests' (30 s unknown)."""
        if "::" in entry:
            return self.seconds.get(entry, 30.0)
        return sum(s for n, s in self.seconds.items() if n.split("::", 1)[0] == entry) or 30.0

    def add_parts(self, parts: list[dict]) -> None:
        self.__dict__.pop("_breadth", None)
        for part in parts:
            for nodeid, entry in part["tests"].items():
                self.seconds[nodeid] = entry["seconds"]
                if not entry["passed"]:
                    self.failed.add(nodeid)
                for call in entry["calls"]:
                    module, qualname = call.split("::", 1)
                    self.callers.setdefault(module, {}).setdefault(qualname, set()).add(nodeid)
                for call in entry.get("direct", ()):
                    module, qualname = call.split("::", 1)
                    self.direct.setdefault(module, {}).setdefault(qualname, set()).add(nodeid)

    def drop_files(self, files: set[str]) -> None:
        self.__dict__.pop("_breadth", None)
        def kept(nodeid: str) -> bool:
            return nodeid.split("::", 1)[0] not in files

        self.seconds = {n: s for n, s in self.seconds.items() if kept(n)}
        self.failed = {n for n in self.failed if kept(n)}
        for mapping in (self.callers, self.direct):
            for by_function in mapping.values():
                for qualname in list(by_function):
                    by_function[qualname] = {n for n in by_function[qualname] if kept(n)}

    def to_json(self) -> str:
        return json.dumps({
            "version": 1, "selection": self.selection, "scope": self.scope, "seconds": self.seconds,
            "failed": sorted(self.failed),
            "digests": self.digests,
            "callers": _plain(self.callers), "direct": _plain(self.direct),
        }, indent=0)

    @classmethod
    def from_json(cls, text: str) -> TestMap:
        data = json.loads(text)
        def sets(mapping: dict) -> dict[str, dict[str, set[str]]]:
            return {m: {q: set(n) for q, n in fs.items()} for m, fs in mapping.items()}

        return cls(dict(data["seconds"]), set(data["failed"]), sets(data["callers"]), dict(data["digests"]),
                   data.get("scope"), sets(data.get("direct", {})), data.get("selection", "not slow and not acceptance"))

    def calls_directly(self, module: str, qualnames: list[str] | None) -> set[str]:
        """The tests that call one of ``qualnames`` of ``module`` (any of its functions when None)
        from their own code."""
        by_function = self.direct.get(module, {})
        chosen = by_function.values() if qualnames is None else (by_function.get(q, set()) for q in qualnames)
        return set().union(*chosen)

    def calls_package_directly(self, module: str) -> set[str]:
        """The tests that call a function of ``module``'s package (its folder) from their own code."""
        folder = module.rsplit("/", 1)[0]
        return set().union(*(self.calls_directly(m, None) for m in self.direct if m.rsplit("/", 1)[0] == folder))


def _plain(mapping: dict[str, dict[str, set[str]]]) -> dict[str, dict[str, list[str]]]:
    return {m: {q: sorted(n) for q, n in sorted(fs.items()) if n} for m, fs in sorted(mapping.items())}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_files(tests_root: Path, scope: list[str] | None = None) -> list[str]:
    """The suite's test files (relative to the repository root) that the map covers: all of them,
    or those of ``scope`` that exist."""
    found = sorted(p.relative_to(tests_root).as_posix() for p in (tests_root / "tests").glob("test_*.py"))
    return [f for f in found if f not in NOT_MAPPED and (scope is None or f in scope)]


def trace(tests_root: Path, files: list[str], jobs: int = 2) -> list[dict]:
    """Run ``files`` (the slow tests too: CI runs them; not the hour-long acceptance experiments)
    under the tracer; the parts it writes."""
    with tempfile.TemporaryDirectory(prefix="vitbench-testmap-") as out:
        env = dict(os.environ, **{OUT_ENV: out}, PYTHONPATH=str(tests_root), PYTHONDONTWRITEBYTECODE="1")
        command = [sys.executable, "-m", "pytest", "-q", "-m", SELECTION, "-p", "no:cacheprovider",
                   "-p", "tests.mutation.tracer",
                   *(["-n", str(jobs)] if jobs > 1 and len(files) > 1 else []), *files]
        done = subprocess.run(command, cwd=tests_root, env=env, capture_output=True, text=True)
        if done.returncode not in (0, 1):
            raise RuntimeError(f"tracing the tests failed ({done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}")
        return [json.loads(p.read_text()) for p in sorted(Path(out).glob("part-*.json"))]


def build(tests_root: Path, jobs: int = 2, scope: list[str] | None = None) -> TestMap:
    files = test_files(tests_root, scope)
    test_map = TestMap(scope=scope)
    digests = {f: _digest(tests_root / f) for f in files}   # before: a file edited meanwhile is stale
    test_map.add_parts(trace(tests_root, files, jobs))
    test_map.digests = digests
    return test_map


def stale_files(test_map: TestMap, tests_root: Path) -> list[str]:
    """Test files added, changed or removed since they were traced."""
    now = {f: _digest(tests_root / f) for f in test_files(tests_root, test_map.scope)}
    return sorted(f for f in set(now) | set(test_map.digests) if now.get(f) != test_map.digests.get(f))


def refresh(test_map: TestMap, tests_root: Path, jobs: int = 2) -> list[str]:
    """Trace again the test files that changed since the map was built; the files traced."""
    stale = stale_files(test_map, tests_root)
    if stale:
        test_map.drop_files(set(stale))
        present = [f for f in stale if (tests_root / f).is_file()]
        digests = {f: _digest(tests_root / f) for f in present}
        if present:
            test_map.add_parts(trace(tests_root, present, jobs))
        for f in stale:
            if f in present:
                test_map.digests[f] = digests[f]
            else:
                test_map.digests.pop(f, None)
    return stale


def load(tests_root: Path, jobs: int = 2, log=print, path: Path | None = None,
         scope: list[str] | None = None) -> TestMap:
    """The map at ``path`` (default ``.mutation/testmap.json`` under ``tests_root``; built from the
    ``scope`` test files, default all, when missing; refreshed when tests changed), saved back."""
    path = path or tests_root / MAP_FILE
    test_map = TestMap.from_json(path.read_text()) if path.is_file() else None
    if test_map is not None and test_map.selection != SELECTION:
        log(f"test map: made of the tests {test_map.selection!r}, not {SELECTION!r}: traced again whole")
        test_map = None
    if test_map is not None:
        changed = refresh(test_map, tests_root, jobs)
        if changed:
            log(f"test map: traced again {', '.join(changed)}")
    else:
        log(f"test map: tracing {'the suite' if scope is None else ', '.join(scope)} once "
            f"(several minutes for the suite; kept in {path})")
        test_map = build(tests_root, jobs, scope)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(test_map.to_json())
    return test_map


def ranked(test_map: TestMap, nodeids: list[str], module: str | None = None,
           functions: list[str] | None = None) -> list[str]:
    """The tests likeliest to kill a mutant of ``functions`` of ``module`` first: those that call
    one of them from their own code (unit tests of it), then those that call any function of the
    module so, then any of its package (its public API: ``memory_estimate`` for the ResNet replay),
    then the rest; within each, the focused ones (fewest core functions run, each further case of
    one parametrized test counted as less focused), then the quick ones."""
    direct = test_map.calls_directly(module, functions) if module is not None and functions else set()
    module_direct = test_map.calls_directly(module, None) if module is not None else set()
    package_direct = test_map.calls_package_directly(module) if module is not None else set()
    cases: dict[str, int] = defaultdict(int)
    keys = {}
    for nodeid in sorted(nodeids, key=lambda n: (test_map.breadth(n), test_map.cost(n), n)):
        function = nodeid.split("[", 1)[0]
        tier = 0 if nodeid in direct else 1 if nodeid in module_direct else 2 if nodeid in package_direct else 3
        keys[nodeid] = (tier, test_map.breadth(nodeid) * (1 + cases[function]), test_map.cost(nodeid), nodeid)
        cases[function] += 1
    return sorted(nodeids, key=keys.__getitem__)


def ordered(test_map: TestMap, nodeids: list[str]) -> list[str]:
    """Files with the quickest selected tests first (pytest -x stops at the first failure); within
    a file, the file's own order (tests may build on each other; module fixtures are built once)."""
    by_file: dict[str, list[str]] = defaultdict(list)
    for nodeid in nodeids:
        by_file[nodeid.split("::", 1)[0]].append(nodeid)
    files = sorted(by_file, key=lambda f: (sum(test_map.cost(n) for n in by_file[f]), f))
    return [n for f in files for n in by_file[f]]


def enclosing_function(tree: ast.AST, path: tuple[tuple[str, int | None], ...]) -> str | None:
    """The qualified name (``Class.method``, ``outer.<locals>.inner``) of the innermost ``def``
    on a site's path, as ``code.co_qualname`` spells it; None outside any function."""
    node, names, innermost = tree, [], None
    for field_name, index in path:
        value = getattr(node, field_name)
        node = value if index is None else value[index]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.append(node.name)
            innermost = ".".join(names)
            names.append("<locals>")
        elif isinstance(node, ast.ClassDef):
            names.append(node.name)
    return innermost


def _functions(tree: ast.AST) -> list[tuple[str, ast.AST]]:
    """(qualified name, node) of every ``def`` in a module, as ``code.co_qualname`` spells them."""
    found: list[tuple[str, ast.AST]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((prefix + child.name, child))
                visit(child, f"{prefix}{child.name}.<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def _bound_names(statement: ast.AST) -> set[str]:
    if isinstance(statement, ast.ClassDef):
        return {statement.name}
    targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
    return {n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)}


def users(tree: ast.Module, path: tuple[tuple[str, int | None], ...]) -> list[str]:
    """For a site outside any function: the functions of the module that can see the change,
    the methods of the class it is in and every function that names the class, or the functions
    that read the module-level name it assigns ([] when none does, or the site binds no name)."""
    if not path or path[0][0] != "body" or path[0][1] is None:
        return []
    statement = tree.body[path[0][1]]
    names = _bound_names(statement)
    found = []
    for qualname, node in _functions(tree):
        if isinstance(statement, ast.ClassDef) and qualname.startswith(statement.name + "."):
            found.append(qualname)
        elif any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node)):
            found.append(qualname)
    return found
