"""Whole-core mode (``python -m tests.mutation --core -k 20 --seed N``): ``k`` mutants of every
module of the core packages, each run against the tests that can see it, results written as they
come to a JSON-lines log, so a run that stops resumes where it stopped.

The tests of a mutant come from the test map (:mod:`tests.mutation.testmap`): stage 1, the tests
that call the mutated function (for a module constant or class attribute, the callers of the
functions that read it), the most focused first (fewest core functions run, then quickest), as
many as fit ``budget_s`` of map time; pytest ``-x`` stops at the first failure. A survivor is run
in stage 2 against the module's other tests and the files named for it
(:func:`~tests.mutation.targets.extra_tests`: code a subprocess runs, that the map cannot see),
within ``confirm_budget_s``. A test that kills a mutant is then run alone unmutated: one that fails
there could kill nothing honestly; it is left out and the mutant run again. Before a module's
mutants, its best-ranked tests must fail when the module cannot be imported (they test the copy).
Equivalent mutants (:func:`~tests.mutation.targets.equivalent_reason`) are decided when the log is
read, so listing one needs no new run.
"""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from . import forkrun, testmap
from .mutants import Mutant, by_index, sample
from .runner import Workspace
from .targets import CORE_PACKAGES, core_modules, equivalent_reason, extra_tests

BROKEN = "raise ImportError('mutation harness: the copy is what is tested')\n"


@dataclass(frozen=True)
class Settings:
    root: Path              # the tree whose package is mutated
    tests_root: Path        # the tree whose tests run
    per_module: int
    seed: int
    log: Path
    rerun_survivors: bool = False
    confirm: bool = True    # stage 2 for survivors
    budget_s: float = 60.0           # stage 1: the best-ranked callers whose map time fits (seconds)
    confirm_budget_s: float = 120.0  # stage 2
    only: tuple[int, ...] = ()


def module_mutants(settings: Settings, module: str) -> list[Mutant]:
    """The module's sample (or the mutants at ``settings.only``)."""
    source = (settings.root / module).read_text()
    if settings.only:
        return by_index(module, source, list(settings.only))
    return sample(module, source, settings.per_module, settings.seed)


def _record_key(record: dict) -> tuple[str, int, str]:
    return record["module"], record["index"], record["name"]


def read_log(path: Path) -> dict[tuple[str, int, str], dict]:
    """The latest record of every mutant in a log (a missing log is empty)."""
    records: dict[tuple[str, int, str], dict] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                if record.get("event") == "mutant":
                    records[_record_key(record)] = record
    return records


class Log:
    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, record: dict) -> None:
        with self.path.open("a") as out:
            out.write(json.dumps(record) + "\n")


@dataclass
class ModuleRun:
    """One module's mutants against their tests, in one workspace."""

    settings: Settings
    module: str
    test_map: testmap.TestMap
    log: Log
    say: Callable[[str], None]

    def __post_init__(self) -> None:
        self.source = (self.settings.root / self.module).read_text()
        self.tree = ast.parse(self.source)
        self.round_trip = ast.unparse(self.tree)
        self.excluded: set[str] = set()
        self.passing: set[str] = set()
        self.named = extra_tests(self.module, self.settings.tests_root)  # read once: fixed for the run

    def candidates(self, mutant: Mutant) -> tuple[list[str], list[str]]:
        """The tests that call the mutated function (stage 1), then the named tests
        (:func:`~tests.mutation.targets.extra_tests`, in their order) and the module's other tests
        (stage 2, ranked by :func:`testmap.ranked`), failing ones left out."""
        function = testmap.enclosing_function(self.tree, mutant.site.path)
        functions = [function] if function is not None else testmap.users(self.tree, mutant.site.path)
        found = {n for f in functions for n in self.test_map.for_function(self.module, f)}
        # a module constant or class attribute nothing reads in the module: every test of the module
        first = sorted(found) if found or function is not None else self.test_map.for_module(self.module)
        first = [n for n in first if n not in self.excluded]
        named = [f for f in self.named if f not in self.excluded]
        seen = set(first) | self.excluded | set(named)
        rest = [n for n in self.test_map.for_module(self.module) if n not in seen]
        return (testmap.ranked(self.test_map, first, self.module, functions),
                named + testmap.ranked(self.test_map, rest, self.module, functions))

    def _within(self, ranked: list[str], budget: float) -> list[str]:
        """The first of ``ranked`` whose map time fits ``budget`` (the first always)."""
        chosen, spent = [], 0.0
        for nodeid in ranked:
            cost = self.test_map.cost(nodeid)
            if chosen and spent + cost > budget:
                break
            chosen.append(nodeid)
            spent += cost
        return chosen

    def _run(self, space: Workspace, source: str, nodeids: list[str]) -> forkrun.Result:
        space.write(source)
        forkrun.forget_bytecode(space.target)
        timeout = 3 * sum(self.test_map.cost(n) for n in nodeids) + 60
        try:
            return forkrun.run_tests(space.root, self.settings.tests_root, testmap.ordered(self.test_map, nodeids),
                                     timeout)
        finally:
            space.write(space.original)
            forkrun.forget_bytecode(space.target)

    def check_copy(self, space: Workspace, nodeids: list[str]) -> None:
        """Raises when the tests pass with a module that cannot be imported (they do not see the copy)."""
        if nodeids and self._run(space, BROKEN + self.round_trip, nodeids).status != forkrun.KILLED:
            raise RuntimeError(f"{self.module}: the tests pass with a module that cannot be imported: "
                               "they do not import the copy")

    def _passes_unmutated(self, space: Workspace, detail: str) -> bool:
        """The test that killed a mutant passes unmutated (else it is left out from then on)."""
        nodeid = detail.rsplit(" (", 1)[0]  # the last: a parametrized id may hold " ("
        if "::" not in nodeid or nodeid in self.passing:
            return True   # a collection error or a crash: the unmutated module imports and runs (the map run)
        if self._run(space, self.round_trip, [nodeid]).status == forkrun.SURVIVED:
            self.passing.add(nodeid)
            return True
        self.say(f"  left out (fails unmutated): {nodeid}")
        self.excluded.add(nodeid)
        return False

    def _stage(self, space: Workspace, mutant: Mutant, stage: int,
               ran: tuple[str, ...] = ()) -> tuple[forkrun.Result, list[str], int]:
        """(result, tests run, tests there were) of one stage; stage 2 runs the named tests (a
        module's own unit tests: the map ranks a test by how few core functions it runs, and these
        may come late among many callers), then the callers stage 1 left out for its budget, then
        the module's other tests. A kill by a test that fails unmutated is run again without it."""
        for _ in range(4):
            first, second = self.candidates(mutant)
            if stage == 1:
                ranked, budget = first, self.settings.budget_s
            else:
                named = [n for n in second if n in self.named]
                ranked = ([n for n in named if n not in ran] + [n for n in first if n not in ran and n not in named]
                          + second[len(named):])
                budget = self.settings.confirm_budget_s
            chosen = self._within(ranked, budget)
            result = self._run(space, mutant.source, chosen)
            if result.status != forkrun.KILLED or self._passes_unmutated(space, result.detail):
                return result, chosen, len(ranked)
        raise RuntimeError(f"{self.module}: more than three of its tests fail unmutated")

    def run_one(self, space: Workspace, mutant: Mutant) -> dict:
        result, chosen, available = self._stage(space, mutant, 1)
        stage, seconds, ran = 1, result.seconds, len(chosen)
        if result.status in (forkrun.SURVIVED, forkrun.NO_TESTS) and self.settings.confirm:
            second, more, more_available = self._stage(space, mutant, 2, tuple(chosen))
            seconds += second.seconds
            ran, available = ran + len(more), max(available, len(chosen) + more_available)
            if second.status in (forkrun.KILLED, forkrun.TIMEOUT):
                result, stage = second, 2
            elif second.status == forkrun.SURVIVED:
                result = second
        return {"event": "mutant", "seed": self.settings.seed, "module": self.module, "index": mutant.index,
                "name": mutant.name, "line": mutant.site.line, "operator": mutant.site.operator,
                "before": mutant.site.before, "after": mutant.site.after, "status": result.status,
                "stage": stage, "tests": ran, "of": available, "seconds": round(seconds, 2), "detail": result.detail}

    def run(self, done: dict[tuple[str, int, str], dict]) -> None:
        todo = []
        for mutant in module_mutants(self.settings, self.module):
            record = done.get((self.module, mutant.index, mutant.name))
            if equivalent_reason(self.module, mutant.name) is not None:
                continue
            if record is None or (self.settings.rerun_survivors and record["status"] in (forkrun.SURVIVED,
                                                                                          forkrun.NO_TESTS)):
                todo.append(mutant)
        if not todo:
            return
        space = Workspace(self.settings.root, self.module)
        try:
            union = testmap.ranked(self.test_map, list({n for m in todo for n in self.candidates(m)[0]}), self.module)
            self.check_copy(space, union[:3])
            self.say(f"{self.module}: {len(todo)} mutants to run")
            for mutant in todo:
                record = self.run_one(space, mutant)
                self.log.write(record)
                done[_record_key(record)] = record
                self.say(describe(record))
        finally:
            space.close()


def describe(record: dict) -> str:
    mark = {"killed": "killed  ", "timeout": "timeout ", "survived": "SURVIVED", "no tests": "NO TESTS"}
    stage = " (stage 2)" if record.get("stage") == 2 and record["status"] in ("killed", "timeout") else ""
    text = (f"  {mark.get(record['status'], record['status'])} {record['module']}:{record['line']} [{record['index']}] "
            f"{record['operator']}: {record['before']} -> {record['after']}  "
            f"({record['seconds']:.1f} s, {record['tests']} of {record.get('of', record['tests'])} tests){stage}")
    return text + (f" {record['detail']}" if record["status"] in ("killed", "timeout") and stage else "")


@dataclass
class Tally:
    killed: int = 0
    survived: int = 0
    equivalent: int = 0

    @property
    def live(self) -> int:
        return self.killed + self.survived

    def rate(self) -> str:
        return f"{100 * self.killed / self.live:.1f}%" if self.live else "n/a"

    def line(self, name: str) -> str:
        return f"{name:<48} killed {self.killed:>3} of {self.live:>3} non-equivalent ({self.rate():>6}); " \
               f"{self.equivalent} equivalent"


def summarise(records: Iterable[dict], modules: list[str]) -> tuple[dict[str, Tally], dict[str, Tally], list[dict]]:
    """Per module and per package tallies of the modules' records, and the survivors."""
    by_module = {m: Tally() for m in modules}
    survivors = []
    for record in records:
        tally = by_module.get(record["module"])
        if tally is None:
            continue
        if equivalent_reason(record["module"], record["name"]) is not None:
            tally.equivalent += 1
        elif record["status"] in (forkrun.KILLED, forkrun.TIMEOUT):
            tally.killed += 1
        else:
            tally.survived += 1
            survivors.append(record)
    by_package: dict[str, Tally] = {}
    for module, tally in by_module.items():
        package = by_package.setdefault(module.split("/")[1], Tally())
        package.killed += tally.killed
        package.survived += tally.survived
        package.equivalent += tally.equivalent
    return by_module, by_package, survivors


def report(settings: Settings, modules: list[str], say: Callable[[str], None] = print) -> dict[str, Tally]:
    """Print the tallies of the sampled mutants of ``modules`` found in the log; the per-package ones."""
    records = read_log(settings.log)
    chosen = []
    for module in modules:
        for mutant in module_mutants(settings, module):
            if equivalent_reason(module, mutant.name) is not None:
                chosen.append({"module": module, "index": mutant.index, "name": mutant.name, "status": "equivalent"})
            elif (module, mutant.index, mutant.name) in records:
                chosen.append(records[(module, mutant.index, mutant.name)])
    by_module, by_package, survivors = summarise(chosen, modules)
    say(f"\nseed {settings.seed}, {settings.per_module} mutants a module (log {settings.log})")
    for module, tally in by_module.items():
        say(tally.line(module))
    say("")
    for package, tally in by_package.items():
        say(tally.line(package + "/"))
    for record in sorted(survivors, key=lambda r: (r["module"], r["index"])):
        say(f"survivor: {record['module']}:{record['line']} [{record['index']}] {record['name']}")
    return by_package


def modules_for(root: Path, packages: tuple[str, ...], paths: tuple[str, ...]) -> list[str]:
    if paths:
        return list(paths)
    return [m for m in core_modules(root) if m.split("/")[1] in (packages or CORE_PACKAGES)]


def run(settings: Settings, modules: list[str], jobs: int = 2, say: Callable[[str], None] = print,
        map_path: Path | None = None, map_scope: list[str] | None = None) -> dict[str, Tally]:
    """Run the modules' samples not yet in the log (and its survivors again with
    ``rerun_survivors``), then print the tallies; the per-package ones."""
    forkrun.preload()
    test_map = testmap.load(settings.tests_root, jobs, say, map_path, map_scope)
    log = Log(settings.log)
    done = read_log(settings.log)
    start = time.monotonic()
    for module in modules:
        ModuleRun(settings, module, test_map, log, say).run(done)
    say(f"\nwall time {time.monotonic() - start:.0f} s")
    return report(settings, modules, say)
