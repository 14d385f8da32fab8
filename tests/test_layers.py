"""The layers of the pipeline, bottom to top: a module imports only from its own layer or the
ones below, and no import circles back, every kind of import counted (:mod:`_imports`): lazy
imports and ``TYPE_CHECKING`` blocks (issue: seven arrows pointed up, all lazy, and one circle
hid under TYPE_CHECKING), modules named to ``importlib.import_module`` and lazy exports, and
package edges (importing ``a.b.c`` runs ``a`` and ``a.b``; issue 47: a circle through importlib
and the root package's arrows up were not seen). A function imports inside itself only what is
costly to import (issue 47: 765 function-local imports, 133 of torch-free bottom modules)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import _imports
import pytest
from _imports import IMPORTLIB, LOCAL, ROOT, TOP, TYPING, Site, graph, module_name, sites_in, sites_of, sources

#: bottom to top. A module belongs to the longest prefix listed. The store (its rows, checksummed
#: lines, atomic writes, reader, exports) sits with the records: it imports only errors, lazy and
#: results, and the one results reader reads stores too. The package root is the public API's
#: facade (its lazy exports name the API's functions), at the top with api.py; importing any
#: module runs it, so what it imports at module level is of the bottom layer
#: (:func:`test_importing_any_module_runs_only_bottom_modules_of_the_root`).
LAYERS = (
    ("vitbench.errors", "vitbench.lazy", "vitbench.units", "vitbench.documents", "vitbench.row_warnings", "vitbench.row_status",
     "vitbench.procfs", "vitbench.escape", "vitbench.input_files", "vitbench.hooks", "vitbench.version"),
    ("vitbench.results", "vitbench.csv_records", "vitbench.csv_columns", "vitbench.record_schema", "vitbench.reading",
     "vitbench.store", "vitbench.typed_rows"),
    ("vitbench.specs", "vitbench.settings", "vitbench.report_defaults"),
    ("vitbench.presets",),
    ("vitbench.analytic",),
    ("vitbench.models",),
    ("vitbench.counters",),
    ("vitbench.measure",),
    ("vitbench.timemodel",),
    ("vitbench.sweeps",),
    ("vitbench.gate", "vitbench.claims", "vitbench.history"),
    ("vitbench.reporting",),
    ("vitbench.api", "vitbench.studies"),
    ("vitbench.cli", "vitbench.__main__"),
)
API_LAYER = 12


def layer_of(module: str) -> int:
    if module == ROOT:
        return API_LAYER
    best, level = "", None
    for index, members in enumerate(LAYERS):
        for prefix in members:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, level = prefix, index
    if level is None:
        raise AssertionError(f"{module}: in no layer; add it to LAYERS")
    return level


def edges_of(path: Path) -> list[tuple[Site, str]]:
    return _imports.runs(module_name(path), sites_of(path))


def test_every_module_has_a_layer():
    assert [m for m in map(module_name, sources()) if m != ROOT and not any(m == p or m.startswith(p + ".") for ms in LAYERS for p in ms)] == []


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(_imports.PACKAGE)))
def test_no_import_from_a_higher_layer(path):
    own = layer_of(module_name(path))
    upward = [f"{path.relative_to(_imports.PACKAGE.parent)}:{site.line} ({site.kind}) imports {module}"
              for site, module in edges_of(path) if layer_of(module) > own]
    assert upward == []


def test_importing_any_module_runs_only_bottom_modules_of_the_root():
    """``import vitbench.errors`` runs ``vitbench/__init__.py`` first: what it imports when it
    runs is of the bottom layer (its lazy exports and display functions load on first use)."""
    root = _imports.PACKAGE / "__init__.py"
    ran = {site.target for site in sites_of(root) if site.kind == TOP and _imports.is_vitbench(site.target)}
    assert ran and {m: layer_of(m) for m in ran if layer_of(m) != 0} == {}
    code = "import sys, vitbench.errors; print(sorted(m for m in sys.modules if m.startswith('vitbench')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert sorted(eval(loaded)) == sorted({ROOT, "vitbench.errors", *ran})  # noqa: S307 - a list of names we printed


def test_no_circle():
    """No module imports back into one that imports it, whatever the kind of import (a package's
    lazy table runs nothing: a from-import of one of its names is an edge to its module)."""
    edges = graph()
    state: dict[str, int] = {}
    circles = []

    def visit(module: str, trail: list[str]) -> None:
        state[module] = 1
        for nxt in sorted(edges[module]):
            if state.get(nxt) == 1:
                circles.append(" -> ".join([*trail[trail.index(nxt):], nxt]))
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert circles == []


SAMPLE = """\
import importlib
from typing import TYPE_CHECKING
from vitbench import errors, analyze
from vitbench.timemodel.calibration import schema
if TYPE_CHECKING:
    from vitbench.cli import main
def f():
    import vitbench.api
    from vitbench.store import Store
    from vitbench.sweeps.grid import Config
    return importlib.import_module("vitbench.studies"), importlib.import_module(f"vitbench.cli.{f}")
"""


def test_the_checker_sees_every_kind_of_import():
    found = sites_in("vitbench.sweeps.sample", SAMPLE)
    assert {(s.target, s.kind) for s in found} >= {
        ("vitbench.errors", TOP), ("vitbench.api", TOP), (ROOT, TOP), ("vitbench.timemodel.calibration.schema", TOP),
        ("vitbench.cli", TYPING), ("vitbench.api", LOCAL), ("vitbench.store.writer", LOCAL), ("vitbench.store", LOCAL),
        ("vitbench.sweeps.grid", LOCAL), ("vitbench.studies", IMPORTLIB), ("vitbench.cli.analyze", IMPORTLIB),
    }
    assert _imports.lazy_table(ROOT)["analyze"] == "vitbench.api"  # `from vitbench import analyze`: the root's name


def test_an_import_runs_the_packages_above_its_target_but_not_the_importers_own():
    made = {module for _, module in _imports.runs("vitbench.sweeps.sample", sites_in("vitbench.sweeps.sample", SAMPLE))}
    assert {"vitbench.timemodel", "vitbench.timemodel.calibration", "vitbench.timemodel.calibration.schema", "vitbench.store"} <= made
    assert "vitbench.sweeps" not in made  # above the importer: it ran first
    assert ROOT in made  # named: `from vitbench import analyze` reads the root's namespace
    assert layer_of(ROOT) > layer_of("vitbench.sweeps.sample")  # ... which is an arrow up from sweeps


def test_function_local_imports_are_only_of_costly_modules():
    """A function imports inside itself only a third-party package, a vitbench module that imports
    one when imported (so that ``import vitbench`` and ``vitbench --help`` stay light), or a
    standard-library module that is costly or platform-specific; the rest is imported at the top
    (``python tests/_imports.py`` counts them)."""
    needless = [f"{s.source}:{s.line} imports {s.target}" for s in _imports.local_imports() if _imports.needless_local(s)]
    assert needless == []


def test_import_vitbench_and_the_help_import_no_third_party_package():
    """``vitbench --help`` builds the parser of every command: no third-party package, and few of
    vitbench's modules (the choices the parsers offer are in settings; with every command's work
    imported at the top of its cli/ module, 211 modules loaded, 2.7 times as long as 65)."""
    code = ("import sys; before = set(sys.modules); import vitbench; from vitbench.cli import build_parser; "
            "build_parser().format_help(); new = set(sys.modules) - before; "
            "print(sorted({m.split('.')[0] for m in new} - set(sys.stdlib_module_names) - {'vitbench'}), "
            "len([m for m in new if m.startswith('vitbench')]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "[]" and int(out[1]) < 80, out


RECORDS = ("vitbench.results", "vitbench.reading", "vitbench.store")


def test_the_store_is_in_the_bottom_records_layer():
    assert {layer_of(m) for m in ("vitbench.store", "vitbench.store.writer", "vitbench.store.atomic", *RECORDS)} == {1}


@pytest.mark.parametrize("path", [p for p in sources() if module_name(p).startswith(RECORDS)], ids=lambda p: str(p.relative_to(_imports.PACKAGE)))
def test_the_records_layer_imports_nothing_from_sweeps(path):
    """The store, the record format and the one reader import nothing from sweeps, lazily or not."""
    assert [f"{module} (line {site.line})" for site, module in edges_of(path) if module.startswith("vitbench.sweeps")] == []
