"""The core modules measured and the reviewed equivalent mutants.

Whole-core mode (``--core``) measures every module of :data:`CORE_PACKAGES` (:func:`core_modules`),
each mutant against the tests the test map finds for its function, then, for a survivor, the
module's named test files (:func:`extra_tests`: its :data:`TARGETS` entry and
:data:`EXTRA_TESTS`). The named targets (``--target``) run whole test files: a module is named by
the first of its candidate paths that exists (modules move: the store from ``vitbench/sweeps/`` to
``vitbench/store/``, the calibration into schema / fitting / worker modules);
``--module PATH --tests FILE,...`` measures any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .equivalents import EQUIVALENT_BY_MODULE

#: the packages whose every module is a target of the whole-core mode
CORE_PACKAGES = ("gate", "timemodel", "store", "analytic", "counters")


@dataclass(frozen=True)
class Target:
    name: str
    candidates: tuple[str, ...]     # module paths in the package tree, the first that exists is used
    tests: tuple[str, ...]          # test files, relative to the repository root (fast, focused ones first:
                                    # pytest -x stops at the first failure)

    def module(self, root: Path) -> str | None:
        return next((c for c in self.candidates if (root / c).is_file()), None)


#: the gate's fast test files (the columnar gate's are slower: its own targets)
_GATE_TESTS = ("tests/test_compare.py", "tests/test_gate_boundaries.py", "tests/test_compare_gate.py",
               "tests/test_gate_hardening.py")

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
    Target("store.writer", ("vitbench/store/writer.py", "vitbench/sweeps/store.py"),
           ("tests/test_store_mutants.py", "tests/test_store_defaults.py", "tests/test_store.py",
            "tests/test_store_checks.py", "tests/test_store_fs.py", "tests/test_store_atomic.py",
            "tests/test_store_options.py", "tests/test_store_faults.py", "tests/test_store_formats.py")),
    # the rest of gate/ and store/: every module a target (issue 47); gate/__init__.py has no
    # mutation site (imports and __all__ only)
    *(Target(f"gate.{name}", (f"vitbench/gate/{name}.py",), tests) for name, tests in (
        ("matching", ("tests/test_gate_matching.py", *_GATE_TESTS)),
        ("result", ("tests/test_gate_result.py", *_GATE_TESTS)),
        ("comparing", ("tests/test_gate_comparing.py", "tests/test_compare.py", "tests/test_gate_columnar.py")),
        ("columnar", ("tests/test_gate_columnar_paths.py", "tests/test_gate_columnar.py")),
        ("array_verdicts", ("tests/test_gate_columnar_paths.py", "tests/test_gate_columnar.py")),
    )),
    *(Target(f"store.{name}", (f"vitbench/store/{name}.py",), tests) for name, tests in (
        ("__init__", ("tests/test_store.py",)),
        ("atomic", ("tests/test_store_atomic.py", "tests/test_store.py", "tests/test_store_faults.py")),
        ("format", ("tests/test_store_lines.py", "tests/test_input_files.py", "tests/test_store.py",
                    "tests/test_store_faults.py", "tests/test_store_formats.py")),
        ("layout", ("tests/test_store_defaults.py", "tests/test_store.py", "tests/test_store_fs.py")),
        ("reader", ("tests/test_store_reader.py", "tests/test_input_files.py", "tests/test_store.py",
                    "tests/test_store_checks.py", "tests/test_store_faults.py", "tests/test_store_formats.py")),
        ("export", ("tests/test_store_export.py", "tests/test_store_reader.py", "tests/test_store_formats.py",
                    "tests/test_store_checks.py", "tests/test_store.py")),
        ("options", ("tests/test_store_defaults.py", "tests/test_store_options.py")),
    )),
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


#: gate/ and store/ (issue 47): mutants read and judged equivalent, with the reason
EQUIVALENT.update({
    "Group.value|constant|0 -> -1": "one value: values[0] and values[-1] are the same element",
    "_Side.status_failed|remove|if column.kind != 'values':     raise Fallback('status of many values') -> pass":
        "a status column of another kind (numbers typed by Arrow) then gives the record path's verdicts on columns, "
        "or an error that falls back to it (compare_files): the same result either way",
    "_Side.status_failed|remove|raise Fallback('status of many values') -> pass":
        "the same as removing the whole if (listed above): only the raise, with the same outcome",
    "_Comparison._key_columns.everywhere|return|return False -> return None":
        "read by an if: None is as false as False",
    **{f"_umask|constant|0 -> {n}": "the umask is read by setting a temporary one and restoring it: any "
       "temporary value reads the same mask" for n in (1, -1)},
    "_readline|constant|1 -> 2":
        "at the apparent end of a regular file os.read gives b'' whatever the count; a read that would block "
        "raises whatever the count",
    **{f"_skip_line|constant|{before} -> {after}": "the size of each read skipping the rest of an overlong line: "
       "any positive size reads on to the same newline" for before, after in ((1, 2), (20, 21), (20, 19))},
    "stream_latest|constant|True -> False": "streamed from the file or read back by offset: the same rows, in the "
                                            "same order (only the memory held differs)",
    "_read_legacy|constant|1 -> 0": "a sidecar without schema_version: 0 and 1 are both versions this vitbench reads",
    "_read_legacy|constant|1 -> 2": "a sidecar without schema_version: 1 and 2 are both versions this vitbench reads",
    "StoreBusyError|remove|exit_code = 2 -> pass": "VitbenchError's exit code is 2 already",
    **{f"fs_error|constant|0 -> {n}": "an OSError without an errno: 0, 1 (EPERM) and -1 are none of the errors "
       "with a hint of their own ('fix the path' either way)" for n in (1, -1)},
    "Store.__init__|remove|self.info: dict[str, Any] = {} -> pass":
        "info is set by _load, which open() runs before it returns a store (and nothing reads it on a failed open)",
    "Store._load|constant|1 -> 0": "sweep.json's indentation: every reader parses the JSON, none reads its layout",
    "Store._load|constant|True -> False": "sweep.json's key order: every reader parses the JSON",
    "Store._acquire|constant|0 -> 1":
        "the pid is written from the start of the lock file: truncated to 0 or 1 byte, the file holds the same text",
    **{f"{function}|constant|10000 -> {n}": "the chunk size changes how the CSV text is built, never its bytes"
       for function in ("csv_bytes", "_streamed_csv") for n in (9999, 10001)},
})


#: test files run whole for a module's survivors (stage 2), beyond the tests the map finds: code
#: that runs only in a subprocess the tests start, or that the tests read as data
EXTRA_TESTS: dict[str, tuple[str, ...]] = {}


def core_modules(root: Path) -> list[str]:
    """Every module of the core packages (paths in the package tree, sorted)."""
    return sorted(p.relative_to(root).as_posix() for package in CORE_PACKAGES
                  for p in (root / "vitbench" / package).rglob("*.py"))


def extra_tests(module: str, tests_root: Path) -> list[str]:
    """The test files named for ``module`` (its target's and :data:`EXTRA_TESTS`') that exist."""
    named = [t for target_ in TARGETS if target_.module(tests_root) == module for t in target_.tests]
    named += EXTRA_TESTS.get(module, ())
    return [t for t in dict.fromkeys(named) if (tests_root / t).is_file()]


def equivalent_reason(module: str, name: str) -> str | None:
    """Why the mutant ``name`` of ``module`` is equivalent, None when it is not listed."""
    return EQUIVALENT_BY_MODULE.get(module, {}).get(name) or EQUIVALENT.get(name)
