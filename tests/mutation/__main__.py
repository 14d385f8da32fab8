"""``python -m tests.mutation``: kill rates of seeded mutants of the core modules.

    python -m tests.mutation --core -k 20 --seed 7   # 20 mutants of every module of the core packages
    python -m tests.mutation --core --package analytic --rerun-survivors --seed 7   # after new tests
    python -m tests.mutation --core --path vitbench/timemodel/ops.py --only 12 --seed 7
    python -m tests.mutation --core --summary --seed 7   # the kill rates in the log, nothing run
    python -m tests.mutation                         # 25 mutants of each named target, a new seed
    python -m tests.mutation -k 10 --seed 7 --target gate.rules --target analytic.vit
    python -m tests.mutation --module vitbench/gate/matching.py --tests tests/test_compare.py
    python -m tests.mutation --target gate.rules --only 12,40    # replay two mutants by position
    python -m tests.mutation --root /tmp/base                     # another tree (e.g. git archive HEAD)

Run from the repository root. Every run prints its seed and the command that replays it.
"""

from __future__ import annotations

import argparse
import ast
import random
import sys
from pathlib import Path

from . import testmap
from .core import Settings, modules_for, report, run
from .mutants import OPERATORS, by_index, sample
from .runner import SURVIVED, Outcome, Tally, run_mutants
from .targets import CORE_PACKAGES, EQUIVALENT, TARGETS, Target, module_tests, target


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.mutation", description=__doc__.splitlines()[0])
    parser.add_argument("--target", action="append", choices=[t.name for t in TARGETS],
                        help="a core module (repeatable; default: all)")
    parser.add_argument("--module", help="any module path instead, with --tests")
    parser.add_argument("--tests", help="comma-separated test files for --module")
    parser.add_argument("-k", "--per-module", type=int, default=25, help="mutants per module (default 25)")
    parser.add_argument("--seed", type=int, default=None, help="the sample (default: a new one, printed)")
    parser.add_argument("--only", help="comma-separated site positions to run instead of a sample")
    parser.add_argument("--operators", default=",".join(OPERATORS), help="comma-separated operators")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the tree whose package is mutated")
    parser.add_argument("--tests-root", type=Path, default=None, help="the tree whose tests run (default --root)")
    core = parser.add_argument_group("whole-core mode (--core): every module, the tests that call each mutated function")
    core.add_argument("--core", action="store_true", help="every module of the core packages")
    core.add_argument("--package", action="append", choices=CORE_PACKAGES, help="only these packages (repeatable)")
    core.add_argument("--path", action="append", help="only these module paths (repeatable)")
    core.add_argument("--log", type=Path, help="the JSON-lines log (default .mutation/core-seed<SEED>-k<K>.jsonl); "
                                                "mutants already in it are not run again")
    core.add_argument("--rerun-survivors", action="store_true", help="run the log's survivors again")
    core.add_argument("--no-confirm", action="store_true", help="no second stage for survivors")
    core.add_argument("--budget", type=float, default=60.0,
                      help="seconds of tests (as timed in the map run) a mutant is run against, the most focused "
                           "callers of its function first (default 60)")
    core.add_argument("--confirm-budget", type=float, default=120.0,
                      help="seconds of the module's other tests and named files a survivor is then run against "
                           "(default 120)")
    core.add_argument("--summary", action="store_true", help="print the log's kill rates, run nothing")
    core.add_argument("--shard", default="1/1", help="I/N: run only every N-th module from the I-th (N processes "
                                                      "share one log; the summary reads them all)")
    core.add_argument("--map", type=Path, help="the test map (default .mutation/testmap.json)")
    core.add_argument("--map-only", action="store_true",
                      help="build or refresh the test map, run nothing (before starting shards)")
    core.add_argument("--map-tests", help="comma-separated test files the map is built from (default all)")
    core.add_argument("--jobs", type=int, default=2, help="pytest workers when the map is traced (default 2)")
    return parser.parse_args(argv)


def _core(args: argparse.Namespace, seed: int) -> int:
    tests_root = args.tests_root or args.root
    log = args.log or args.root / ".mutation" / f"core-seed{seed}-k{args.per_module}.jsonl"
    only = tuple(int(i) for i in args.only.split(",")) if args.only else ()
    if only and len(args.path or ()) != 1:
        sys.exit("--only needs exactly one --path")
    settings = Settings(args.root, tests_root, args.per_module, seed, log, args.rerun_survivors,
                        not args.no_confirm, args.budget, args.confirm_budget, only)
    modules = modules_for(args.root, tuple(args.package or ()), tuple(args.path or ()))
    map_scope = args.map_tests.split(",") if args.map_tests else None
    if args.map_only:
        testmap.load(tests_root, args.jobs, print, args.map, map_scope)
    elif args.summary:
        report(settings, modules)
    else:
        shard, shards = (int(n) for n in args.shard.split("/"))
        run(settings, modules[shard - 1::shards], args.jobs, map_path=args.map, map_scope=map_scope)
    return 0


def _targets(args: argparse.Namespace) -> list[Target]:
    if args.module:
        if not args.tests:
            sys.exit("--module needs --tests")
        return [Target(args.module, (args.module,), tuple(args.tests.split(",")))]
    return [target(name) for name in args.target] if args.target else list(TARGETS)


def _print_outcome(outcome: Outcome) -> None:
    mark = {"killed": "killed  ", "timeout": "timeout ", "survived": "SURVIVED", "equivalent": "equiv.  "}[outcome.status]
    print(f"  {mark} {outcome.mutant.describe()}  ({outcome.seconds:.1f} s) {outcome.detail if outcome.status == SURVIVED else ''}",
          flush=True)


def _summary(tally: Tally) -> str:
    rate = "n/a" if tally.kill_rate is None else f"{100 * tally.kill_rate:.0f}%"
    return (f"{tally.module}: killed {tally.killed} of {tally.killed + tally.survived} non-equivalent ({rate}); "
            f"{tally.equivalent} equivalent")


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    tests_root = args.tests_root or args.root
    operators = tuple(args.operators.split(","))
    if args.core and args.map_only:
        return _core(args, seed)
    if args.core:
        print(f"seed {seed} (replay: python -m tests.mutation --core --seed {seed} -k {args.per_module} ...)",
              flush=True)
        return _core(args, seed)
    print(f"seed {seed} (replay: python -m tests.mutation --seed {seed} -k {args.per_module} ...)", flush=True)
    tallies = []
    for t in _targets(args):
        module = t.module(args.root)
        tests = module_tests(t, tests_root)
        if module is None or not tests:
            print(f"{t.name}: skipped (module {t.candidates} or tests {t.tests} not found)")
            continue
        source = (args.root / module).read_text()
        if args.only:
            mutants = by_index(module, source, [int(i) for i in args.only.split(",")])
        else:
            mutants = sample(module, source, args.per_module, seed, operators)
        print(f"{module}: {len(mutants)} mutants, tests {', '.join(str(p.relative_to(tests_root)) for p in tests)}",
              flush=True)
        tally = run_mutants(args.root, mutants, tests, ast.unparse(ast.parse(source)), frozenset(EQUIVALENT),
                            _print_outcome)
        tallies.append(tally)
        print(_summary(tally), flush=True)
    print("\n".join(["", f"seed {seed}", *map(_summary, tallies)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
