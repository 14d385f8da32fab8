"""The layers of the pipeline, bottom to top: a module imports only from its own layer or the
ones below, lazy imports and ``TYPE_CHECKING`` blocks included (issue: seven arrows pointed up,
all lazy, and one circle hid under TYPE_CHECKING)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import vitbench

PACKAGE = Path(vitbench.__file__).parent

#: bottom to top. A module belongs to the longest prefix listed. The store (its rows, checksummed
#: lines, atomic writes, reader, exports) sits with the records: it imports only errors, lazy and
#: results, and the one results reader reads stores too.
LAYERS = (
    ("vitbench.errors", "vitbench.lazy", "vitbench.units", "vitbench.documents", "vitbench.row_warnings",
     "vitbench.procfs", "vitbench.escape", "vitbench.input_files"),
    ("vitbench.results", "vitbench.csv_records", "vitbench.csv_columns", "vitbench.record_schema", "vitbench.reading",
     "vitbench.store"),
    ("vitbench.specs", "vitbench.settings"),
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


def layer_of(module: str) -> int:
    best, level = "", None
    for index, members in enumerate(LAYERS):
        for prefix in members:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, level = prefix, index
    if level is None:
        raise AssertionError(f"{module}: in no layer; add it to LAYERS")
    return level


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> list[tuple[str, int]]:
    """Every ``vitbench.*`` module a file imports, wherever the import statement is."""
    found = []
    inside = path.is_relative_to(PACKAGE)
    package = "" if not inside else module_name(path) if path.name == "__init__.py" else module_name(path).rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            found.append((target, node.lineno))
    return [(name, line) for name, line in found if name == "vitbench" or name.startswith("vitbench.")]


SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if module_name(p) != "vitbench")


def test_every_module_has_a_layer():
    assert [m for m in map(module_name, SOURCES) if not any(m == p or m.startswith(p + ".") for ms in LAYERS for p in ms)] == []


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_import_from_a_higher_layer(path):
    own = layer_of(module_name(path))
    upward = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
        for name, line in imports_of(path)
        if name != "vitbench" and layer_of(name) > own
    ]
    assert upward == []


def test_the_checker_sees_lazy_and_type_checking_imports(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from vitbench.cli import main\n"
        "def f():\n    import vitbench.api\n    from vitbench.gate import compare\n"
    )
    names = [name for name, _ in imports_of(sample)]
    assert names == ["vitbench.cli", "vitbench.api", "vitbench.gate"]
    assert [layer_of(n) for n in names] == [13, 12, 10]


def test_no_circle_between_the_modules_of_a_package():
    """Within a layer, imports form no circle (a TYPE_CHECKING import counts)."""
    graph = {module_name(p): {n for n, _ in imports_of(p)} for p in SOURCES}
    graph = {m: {n for n in targets if n in graph and n != m} for m, targets in graph.items()}
    # a package's __init__ re-exporting its modules is not a circle: drop edges into a package
    packages = {module_name(p) for p in SOURCES if p.name == "__init__.py"}
    graph = {m: {n for n in targets if n not in packages} for m, targets in graph.items()}
    state: dict[str, int] = {}
    circles = []

    def visit(module: str, trail: list[str]) -> None:
        state[module] = 1
        for nxt in sorted(graph[module]):
            if state.get(nxt) == 1:
                circles.append(" -> ".join([*trail[trail.index(nxt):], nxt]))
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert circles == []


RECORDS = ("vitbench.results", "vitbench.reading", "vitbench.store")


def test_the_store_is_in_the_bottom_records_layer():
    assert {layer_of(m) for m in ("vitbench.store", "vitbench.store.writer", "vitbench.store.atomic", *RECORDS)} == {1}


@pytest.mark.parametrize("path", [p for p in SOURCES if module_name(p).startswith(RECORDS)], ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_records_layer_imports_nothing_from_sweeps(path):
    """The store, the record format and the one reader import nothing from sweeps, lazily or not."""
    assert [f"{name} (line {line})" for name, line in imports_of(path) if name == "vitbench.sweeps" or name.startswith("vitbench.sweeps.")] == []
