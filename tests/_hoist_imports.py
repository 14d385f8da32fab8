"""Move every needless function-local import (:func:`_imports.needless_local`: a light vitbench
module, the standard library) to the top of its module, then sort the imports with ruff:
``python tests/_hoist_imports.py [FILE...]`` (default: every module of vitbench). An import it
cannot move safely (inside a ``try``, or binding a name the module or the builtins already have)
or naming a name a test replaces in its defining module, :func:`patched_names`) is left where it
is and listed; ``tests/test_layers.py`` then says which remain."""

from __future__ import annotations

import ast
import builtins
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import _imports

TESTS = Path(__file__).resolve().parent
_ALIAS = re.compile(r"^\s*(?:import (vitbench[\w.]*) as (\w+)|from (vitbench[\w.]*) import ([\w, ]+))", re.M)
_SETATTR = re.compile(r"(?:monkeypatch\.setattr|_capture\(monkeypatch)\(?\s*,?\s*([A-Za-z_][\w.]*)\s*,\s*\"(\w+)\"")
_DOTTED = re.compile(r"\"(vitbench(?:\.\w+)+)\.(\w+)\"")


@cache
def patched_names() -> frozenset[tuple[str, str]]:
    """(module, name) a test replaces in its defining module (``monkeypatch.setattr``): a caller
    that imported the name at its top would not see the replacement, and the test would pass
    whatever the code does. Such an import is not moved: call the name through its module."""
    found = set()
    for test in TESTS.rglob("*.py"):
        text = test.read_text(encoding="utf-8")
        aliases = {}
        for match in _ALIAS.finditer(text):
            if match.group(1):
                aliases[match.group(2)] = match.group(1)
            else:
                for part in match.group(4).split(","):
                    name, _, alias = part.strip().partition(" as ")
                    aliases[alias or name] = f"{match.group(3)}.{name}"
        found |= {(aliases.get(m.group(1), m.group(1)), m.group(2)) for m in _SETATTR.finditer(text)}
        found |= {(m.group(1), m.group(2)) for m in _DOTTED.finditer(text)}
    return frozenset(found)


def _bound_at_top(tree: ast.Module) -> set[str]:
    """Names the module binds at module level (definitions, assignments, imports)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        else:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
    return names


def _top_imports(tree: ast.Module) -> dict[str, str]:
    """Name -> the top-level import statement (unparsed) that binds it."""
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                out[(alias.asname or alias.name).split(".")[0]] = _statement(node, alias)
    return out


def _statement(node: ast.Import | ast.ImportFrom, alias: ast.alias) -> str:
    one = ast.Import(names=[alias]) if isinstance(node, ast.Import) else ast.ImportFrom(module=node.module, names=[alias], level=node.level)
    return ast.unparse(one)


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _movable(path: Path, tree: ast.Module) -> tuple[list[ast.AST], list[str], list[str]]:
    """(statements to remove, statements to add at the top, reasons some stay)."""
    needless = {(s.line, s.target) for s in _imports.sites_of(path) if s.kind == _imports.LOCAL and _imports.needless_local(s)}
    lines = {line for line, _ in needless}
    parents = _parents(tree)
    bound, top = _bound_at_top(tree), _top_imports(tree)
    remove, add, kept = [], [], []
    planned: dict[str, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or node.lineno not in lines:
            continue
        package = _imports.module_name(path) if path.name == "__init__.py" else _imports.module_name(path).rsplit(".", 1)[0]
        if not all((node.lineno, t) in needless for t in _imports._targets(node, package)):
            kept.append(f"{path}:{node.lineno}: imports something costly too")
            continue
        guard = _import_guard(node, parents)
        if guard is not None:
            kept.append(f"{path}:{node.lineno}: guarded by a try that catches {guard}")
            continue
        replaced = [a.name for a in node.names if isinstance(node, ast.ImportFrom) and (_imports_module(node, package), a.name) in patched_names()]
        if replaced:
            kept.append(f"{path}:{node.lineno}: a test replaces {', '.join(replaced)} in its module: call it through the module")
            continue
        statements = [_statement(node, alias) for alias in node.names]
        names = [(alias.asname or alias.name).split(".")[0] for alias in node.names]
        clash = [n for n, s in zip(names, statements)
                 if (n in bound and top.get(n) != s) or hasattr(builtins, n) or planned.get(n, s) != s]
        if clash:
            kept.append(f"{path}:{node.lineno}: would rebind {', '.join(clash)} at module level")
            continue
        planned.update(zip(names, statements))
        remove.append(node)
        add += [s for n, s in zip(names, statements) if top.get(n) != s]
    return remove, list(dict.fromkeys(add)), kept


def _import_guard(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> str | None:
    """The ImportError a ``try`` around ``node`` (in the same function) catches, if any: an
    import that may fail on purpose stays where it is."""
    child, parent = node, parents.get(node)
    while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)):
        if isinstance(parent, ast.Try) and child in parent.body:
            caught = " ".join(ast.unparse(h.type) for h in parent.handlers if h.type is not None)
            if "ImportError" in caught or "ModuleNotFoundError" in caught or any(h.type is None for h in parent.handlers):
                return caught or "everything"
        child, parent = parent, parents.get(parent)
    return None


def _block_of(node: ast.AST, parent: ast.AST) -> list[ast.AST]:
    """The list of statements ``node`` is in (a body, an else, a finally, a handler's body)."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and node in block:
            return block
    raise AssertionError(f"line {getattr(node, 'lineno', '?')}: not in a block of its parent")


def _imports_module(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    return f"{base}.{node.module}" if node.module else base


def _insert_at(tree: ast.Module) -> int:
    """The line after the module's first block of imports (after the docstring when none)."""
    last = 0
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            last = node.end_lineno
        elif last == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            last = node.end_lineno
        elif last:
            break
    return last


def hoist(path: Path) -> list[str]:
    """Move the needless local imports of ``path`` to its top; the reasons some stay."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    remove, add, kept = _movable(path, tree)
    if not remove:
        return kept
    lines = text.splitlines(keepends=True)
    parents = _parents(tree)
    removed = set(remove)
    drop: set[int] = set()
    for node in remove:
        drop |= set(range(node.lineno - 1, node.end_lineno))
        if all(n in removed for n in _block_of(node, parents[node])):
            lines[node.lineno - 1] = " " * node.col_offset + "pass\n"  # the body was only imports
            drop.discard(node.lineno - 1)
    for node in sorted(remove, key=lambda n: n.lineno):  # the blank line that set the imports apart goes too
        after, before = node.end_lineno, node.lineno - 2
        while before in drop:
            before -= 1
        previous = lines[before].rstrip() if before >= 0 else ""
        if after < len(lines) and after not in drop and not lines[after].strip() and (not previous or previous.endswith((":", '"""', "\'\'\'"))):
            drop.add(after)
    kept_lines = [line for i, line in enumerate(lines) if i not in drop]
    at = _insert_at(tree)
    at -= sum(1 for i in drop if i < at)
    kept_lines[at:at] = [s + "\n" for s in add]
    path.write_text("".join(kept_lines), encoding="utf-8")
    return kept


def main(argv: list[str]) -> int:
    paths = [Path(a).resolve() for a in argv] or list(_imports.sources())
    kept = []
    changed = []
    for path in paths:
        before = path.read_text(encoding="utf-8")
        kept += hoist(path)
        if path.read_text(encoding="utf-8") != before:
            changed.append(str(path))
    if changed:
        subprocess.run(["ruff", "check", "--fix", "--select", "I", "--quiet", *changed], check=False)
    print(f"{len(changed)} files changed")
    print("\n".join(kept))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
