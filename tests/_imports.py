"""vitbench's import graph, read from the source (nothing is imported): every import statement,
wherever it is (module level, in a function, under ``TYPE_CHECKING``), every module named to
``importlib.import_module`` and every lazy export (:func:`vitbench.lazy.lazy_exports`), and the
package edges Python adds: importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first.

Used by ``tests/test_layers.py`` (no circle, no arrow up, function-local imports only of what is
heavy) and by ``python tests/_imports.py`` (the function-local imports, counted by kind)."""

from __future__ import annotations

import ast
import sys
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = "vitbench"
CLI = "vitbench.cli."
PACKAGE = Path(__file__).resolve().parent.parent / ROOT

#: kinds of import site: a statement at module level (run when the module is imported), in a
#: function (run when it is called), under ``if TYPE_CHECKING`` (never run), a module named to
#: ``importlib.import_module``, a package's lazy export (imported on first use of the name)
TOP, LOCAL, TYPING, IMPORTLIB, LAZY = "top", "local", "typing", "importlib", "lazy"

#: standard-library modules a function may import where it needs them: costly to import
#: (multiprocessing, ctypes, xml, decimal), or present only on some Pythons and platforms
#: (tomllib before 3.11; fcntl and resource outside Windows)
STDLIB_LOCAL = frozenset({"multiprocessing", "ctypes", "xml", "decimal", "tomllib", "fcntl", "resource", "msvcrt", "winreg"})


@dataclass(frozen=True)
class Site:
    source: str  # the importing module
    target: str  # the imported module (a from-import of a submodule names the submodule)
    line: int
    kind: str


def module_name(path: Path) -> str:
    parts = list(path.resolve().relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def sources() -> tuple[Path, ...]:
    return tuple(sorted(PACKAGE.rglob("*.py")))


@cache
def modules() -> frozenset[str]:
    return frozenset(module_name(p) for p in sources())


@cache
def packages() -> frozenset[str]:
    return frozenset(module_name(p) for p in sources() if p.name == "__init__.py")


def ancestors(module: str) -> list[str]:
    """``a.b.c`` -> ``a``, ``a.b``: the packages Python imports first."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement with its kind (TOP, LOCAL or TYPING)."""
    found: list[tuple[ast.Import | ast.ImportFrom, str]] = []

    def walk(node: ast.AST, kind: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append((child, kind))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                walk(child, LOCAL if kind == TOP else kind)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for part in child.body:
                    walk(ast.Module(body=[part], type_ignores=[]), TYPING)
                for part in child.orelse:
                    walk(ast.Module(body=[part], type_ignores=[]), kind)
            else:
                walk(child, kind)

    walk(tree, TOP)
    return found


def _targets(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    """The modules one statement imports: ``from a import b`` is ``a.b`` when that is a module
    of vitbench; when ``b`` is a lazy export of ``a``, both ``a`` (its namespace) and the module
    that defines ``b``; else ``a``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
        module = f"{base}.{node.module}" if node.module else base
    else:
        module = node.module or ""
    named = [f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in modules()]
    lazy = [lazy_table(module)[alias.name] for alias in node.names if alias.name in lazy_table(module)]
    rest = [alias.name for alias in node.names if f"{module}.{alias.name}" not in modules()]
    return named + lazy + ([module] if rest or not named else [])


@cache
def lazy_table(package: str) -> dict[str, str]:
    """A package's lazy exports (name -> defining module): the dict its ``lazy_exports`` call is
    given, a literal at module level of its ``__init__``."""
    if package not in packages():
        return {}
    tree = ast.parse(_path(package).read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if _called(n, "lazy_exports")]
    if not calls:
        return {}
    table = calls[0].args[1]
    if isinstance(table, ast.Name):
        [table] = [n.value for n in tree.body if isinstance(n, ast.Assign) and [ast.unparse(t) for t in n.targets] == [table.id]]
    return dict(ast.literal_eval(table))


def _named_modules(tree: ast.Module) -> list[tuple[str, int]]:
    """Every string constant naming a vitbench module (``"vitbench.cli.analyze"``), and every
    f-string that starts with a package's name (``f"vitbench.cli.{name}"``: all its modules)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in modules():
            found.append((node.value, node.lineno))
        elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            prefix = str(node.values[0].value)
            if prefix.endswith(".") and prefix[:-1] in packages():
                found += [(m, node.lineno) for m in sorted(modules()) if m.startswith(prefix)]
    return found


def _called(node: ast.AST, name: str) -> bool:
    """Whether ``node`` is a call of ``name`` or ``something.name``."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id == name) or (isinstance(func, ast.Attribute) and func.attr == name)


def _calls(tree: ast.Module, name: str) -> bool:
    return any(_called(n, name) for n in ast.walk(tree))


@cache
def sites_of(path: Path) -> tuple[Site, ...]:
    """Every module ``path`` imports, however (see the module docstring)."""
    return sites_in(module_name(path), path.read_text(encoding="utf-8"), path.name == "__init__.py")


def sites_in(source: str, text: str, is_package: bool = False) -> tuple[Site, ...]:
    """Every module the code ``text`` of module ``source`` imports."""
    package = source if is_package else source.rsplit(".", 1)[0]
    tree = ast.parse(text)
    found = [Site(source, target, node.lineno, kind) for node, kind in _statements(tree) for target in _targets(node, package)]
    for call, kind in (("import_module", IMPORTLIB), ("lazy_exports", LAZY)):
        if call in text and _calls(tree, call):
            found += [Site(source, target, line, kind) for target, line in _named_modules(tree)]
    return tuple(found)


def runs(source: str, sites: tuple[Site, ...]) -> list[tuple[Site, str]]:
    """(site, vitbench module it makes run) for each import of ``source``: the target and the
    packages above it (importing ``a.b.c`` runs ``a`` and ``a.b``), but not the packages above
    ``source`` (they ran before it) nor a package's lazy table (it runs nothing when imported:
    a from-import of one of its names is an edge to the defining module, :func:`_targets`)."""
    own = set(ancestors(source))
    return [(site, module) for site in sites if site.kind != LAZY and is_vitbench(site.target) and site.target in modules()
            for module in (site.target, *(p for p in ancestors(site.target) if p not in own)) if module != source]


def is_vitbench(module: str) -> bool:
    return module == ROOT or module.startswith(ROOT + ".")


@cache
def graph() -> dict[str, frozenset[str]]:
    """Module -> the vitbench modules it may import, every kind of edge: its import sites and
    the packages above each target (importing ``a.b.c`` runs ``a`` and ``a.b``), except the
    packages above the module itself (they have run before it starts)."""
    out = {}
    for path in sources():
        source = module_name(path)
        out[source] = frozenset(module for _, module in runs(source, sites_of(path)))
    return out


def third_party(module: str) -> bool:
    top = module.split(".")[0]
    return not is_vitbench(module) and top not in sys.stdlib_module_names and top != "__future__"


@cache
def heavy(module: str) -> bool:
    """Whether importing ``module`` imports a package outside the standard library (torch,
    numpy, pandas, tqdm...): its own or its packages' module-level imports, followed."""
    if not is_vitbench(module):
        return third_party(module)
    seen: set[str] = set()
    todo = [module]
    while todo:
        current = todo.pop()
        if current in seen or current not in modules():
            continue
        seen.add(current)
        todo += ancestors(current)
        for site in sites_of(_path(current)):
            if site.kind != TOP:
                continue
            if not is_vitbench(site.target):
                if third_party(site.target):
                    return True
                continue
            todo.append(site.target)
    return False


@cache
def _path(module: str) -> Path:
    relative = Path(*module.split("."))
    package = PACKAGE.parent / relative / "__init__.py"
    return package if package.exists() else (PACKAGE.parent / relative).with_suffix(".py")


def local_imports() -> list[Site]:
    return [s for p in sources() for s in sites_of(p) if s.kind == LOCAL]


def needless_local(site: Site) -> bool:
    """A function-local import of what costs nothing to import at the top: a vitbench module that
    imports no third-party package when imported, or the standard library (bar
    :data:`STDLIB_LOCAL`). Two exceptions: the root package imports everything on first use,
    since importing any vitbench module runs it; a command of the CLI imports its work (the
    modules outside ``vitbench.cli``) when it runs, since ``vitbench --help`` imports every
    command to build the parser (hoisted, they made it load 211 modules, not 65: 2.7 times as
    long)."""
    if site.source == ROOT or site.target == "__future__":
        return False
    if site.source.startswith(CLI) and is_vitbench(site.target) and not site.target.startswith(CLI):
        return False  # a command's work, imported when it runs: the parser imports every command module
    if is_vitbench(site.target):
        return not heavy(site.target)
    top = site.target.split(".")[0]
    return top in sys.stdlib_module_names and top not in STDLIB_LOCAL


def kind_of(site: Site) -> str:
    if site.source.startswith(CLI) and is_vitbench(site.target) and not site.target.startswith(CLI):
        return "vitbench, a command's work (in cli/)"
    if is_vitbench(site.target):
        return "vitbench, importing a third-party package" if heavy(site.target) else "vitbench, light"
    if third_party(site.target):
        return f"third-party: {site.target.split('.')[0]}"
    return "standard library" + ("" if needless_local(site) else " (costly or platform-specific)")


def main() -> None:
    found = local_imports()
    counts = Counter(kind_of(s) for s in found)
    print(f"{len(found)} function-local imports")
    for kind, count in counts.most_common():
        print(f"{count:5d}  {kind}")


if __name__ == "__main__":
    main()
