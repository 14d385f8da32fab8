"""docs/layout.md tells the truth: its tree names every module of the package, and the modules
that print or exit outside cli/ are exactly the exceptions it lists (issue: the tree omitted 10
modules and the exceptions to "only cli/ prints")."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import vitbench

PACKAGE = Path(vitbench.__file__).parent
LAYOUT = (PACKAGE.parent / "docs" / "layout.md").read_text()
TREE = LAYOUT.split("```", 2)[1]
PRINTING_EXCEPTIONS = {"measure/worker.py", "measure/children.py", "timemodel/calibration/worker.py", "sweeps/progress.py"}


def test_the_tree_names_every_module_and_package():
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", TREE))
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.stem if path.name != "__init__.py" else path.parent.name
        if name in ("__main__",) or (path.name == "__init__.py" and path.parent == PACKAGE):
            continue
        if name not in words:
            missing.append(str(path.relative_to(PACKAGE)))
    assert missing == []


def _prints_or_exits(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in ("print", "exit"):
                return True
            if isinstance(func, ast.Attribute) and ast.unparse(func) in (
                    "sys.exit", "sys.stdout.write", "sys.stderr.write", "os._exit"):
                return True
    return False


def test_only_cli_and_the_listed_exceptions_print_or_exit():
    printing = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                if p.relative_to(PACKAGE).parts[0] not in ("cli",) and p.name != "__main__.py" and _prints_or_exits(p)}
    assert printing == PRINTING_EXCEPTIONS
    for exception in PRINTING_EXCEPTIONS:
        assert f"`{exception}`" in LAYOUT


def test_the_checker_sees_a_print(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("import sys\ndef f():\n    sys.stderr.write('x')\n")
    assert _prints_or_exits(sample)
    sample.write_text("def f(stream):\n    stream.write('x')\n")
    assert not _prints_or_exits(sample)


def test_no_module_is_over_500_lines():
    # docs/layout.md promises it: a module that grows past it is doing more than one job
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 500}
    assert long == {}
