"""The core modules measured, each with its own test files, and the reviewed equivalent mutants.

A module is named by the first of its candidate paths that exists (modules move: the store from
``vitbench/sweeps/`` to ``vitbench/store/``, the calibration into schema / fitting / worker
modules); ``--module PATH --tests FILE,...`` measures any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Target:
    name: str
    candidates: tuple[str, ...]     # module paths in the package tree, the first that exists is used
    tests: tuple[str, ...]          # test files, relative to the repository root (fast, focused ones first:
                                    # pytest -x stops at the first failure)

    def module(self, root: Path) -> str | None:
        return next((c for c in self.candidates if (root / c).is_file()), None)


TARGETS = (
    Target("analytic.vit", ("vitbench/analytic/vit.py",),
           ("tests/test_analytic_vit.py", "tests/test_analytic.py")),
    Target("gate.rules", ("vitbench/gate/rules.py",),
           ("tests/test_gate_rules.py", "tests/test_gate_boundaries.py", "tests/test_compare.py")),
    Target("gate.verdicts", ("vitbench/gate/verdicts.py",),
           ("tests/test_gate_boundaries.py", "tests/test_compare.py", "tests/test_compare_gate.py",
            "tests/test_gate_hardening.py")),
    Target("timemodel.model", ("vitbench/timemodel/model.py",), ("tests/test_predict.py", "tests/test_timemodel_pricing.py")),
    Target("timemodel.calibration",
           ("vitbench/timemodel/calibration/fitting.py", "vitbench/timemodel/calibration_fitting.py",
            "vitbench/timemodel/calibration.py"),
           ("tests/test_predict.py", "tests/test_calibration.py")),
    Target("store", ("vitbench/store/writer.py", "vitbench/sweeps/store.py"),
           ("tests/test_store.py", "tests/test_store_checks.py", "tests/test_store_fs.py", "tests/test_store_atomic.py",
            "tests/test_store_options.py", "tests/test_store_faults.py", "tests/test_store_formats.py",
            "tests/test_store_mutants.py")),
)

#: Mutants read and judged equivalent (no test can tell them apart from the module): by name
#: (function|operator|before -> after), each with the reason.
EQUIVALENT: dict[str, str] = {
    "_spread_duplicates|compare|len(values) > 1 -> len(values) >= 1":
        "one value: max / min is 1, never over 1 + DUPLICATE_SPREAD",
    "_spread_duplicates|constant|1 -> 0":
        "len(values) > 0 admits one value: max / min is 1, never over 1 + DUPLICATE_SPREAD",
    "_step_time_margin|compare|rule.failing_direction() > 0 -> rule.failing_direction() >= 0":
        "a rule with a boundary fails one way: failing_direction() is never 0 there",
    "_step_time_margin|compare|rule.failing_direction() < 0 -> rule.failing_direction() <= 0":
        "a rule with a boundary fails one way: failing_direction() is never 0 there",
    "_step_time_margin|constant|0 -> 1#2": "failing_direction() is +1 or -1 there: < 1 is < 0",
    "_step_time_margin|constant|0 -> -1#3": "failing_direction() is +1 or -1 there: > -1 is > 0",
    "_step_time_margin|compare|baseline <= 0 -> baseline < 0":
        "a timing baseline of 0 is INVALID before any margin is computed (impossible())",
    "_spread_duplicates|remove|if len(grouped.rows) < 2:     continue -> pass":
        "one row gives at most one value per metric: max / min is 1, never a spread",
    "_spread_duplicates|remove|continue -> pass":
        "one row gives at most one value per metric: max / min is 1, never a spread",
    "Store.__init__|constant|0 -> 1#3":
        "_size is set from the rows file's fstat when it is opened, before any write reads it",
    "Store.__init__|constant|0 -> -1#3":
        "_size is set from the rows file's fstat when it is opened, before any write reads it",
    "Store._load|constant|1 -> 2":
        "sweep.json's indentation: every reader parses the JSON, none reads its layout",
    "Store._open_rows|constant|0 -> 1":
        "getattr(os, 'O_NONBLOCK', 0): the default is read only where os has no O_NONBLOCK (not POSIX)",
    "Store._open_rows|constant|0 -> -1":
        "getattr(os, 'O_NONBLOCK', 0): the default is read only where os has no O_NONBLOCK (not POSIX)",
    "fit_affine|constant|1 -> 2":
        "every weight 2 / t^2 instead of 1 / t^2: least squares is the same under one common scale of its weights",
}


def target(name: str) -> Target:
    for t in TARGETS:
        if t.name == name:
            return t
    raise KeyError(f"no target {name!r}; known: {', '.join(t.name for t in TARGETS)}")


def module_tests(target_: Target, root: Path) -> list[Path]:
    """The target's test files that exist under ``root`` (a missing one is skipped)."""
    return [root / t for t in target_.tests if (root / t).is_file()]
