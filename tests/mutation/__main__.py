"""``python -m tests.mutation``: kill rates of seeded mutants of the core modules.

    python -m tests.mutation                         # 25 mutants of each core module, a new seed
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

from .mutants import OPERATORS, by_index, sample
from .runner import SURVIVED, Outcome, Tally, run_mutants
from .targets import EQUIVALENT, TARGETS, Target, module_tests, target


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
    return parser.parse_args(argv)


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
