"""Seeded mutants of one module: the places a small change could hide, found on its syntax tree.

Operators (the classic set):

- ``compare``   a comparison flipped at its boundary or negated: < <=, > >=, == !=, in / not in,
                is / is not
- ``arith``     + -, * /, // *, % *, ** *
- ``constant``  a number plus or minus one (True / False swapped)
- ``boolean``   and / or swapped; ``not x`` -> ``x``
- ``return``    ``return EXPR`` -> ``return None``
- ``remove``    a statement replaced by ``pass``

Docstrings, annotations (strings under ``from __future__ import annotations``), f-strings,
``__all__`` and imports are left alone: a change there is no change to what the code does.
A mutant is named by its function, operator and the text before and after, so a reviewed
equivalent mutant keeps its name when lines above it move.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import random
from collections.abc import Iterator
from dataclasses import dataclass

OPERATORS = ("compare", "arith", "constant", "boolean", "return", "remove")

_COMPARE = {
    ast.Lt: (ast.LtE, ast.GtE), ast.LtE: (ast.Lt, ast.Gt), ast.Gt: (ast.GtE, ast.LtE), ast.GtE: (ast.Gt, ast.Lt),
    ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,), ast.In: (ast.NotIn,), ast.NotIn: (ast.In,),
    ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,),
}
_ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Mult,
          ast.Mod: ast.Mult, ast.Pow: ast.Mult}
_SKIPPED_STATEMENTS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Return,
                       ast.Pass, ast.Global, ast.Nonlocal)

Path = tuple[tuple[str, int | None], ...]


@dataclass(frozen=True)
class Site:
    """One possible mutation: the node at ``path`` (fields from the module down) becomes
    ``replacement``."""

    path: Path
    operator: str
    function: str
    line: int
    before: str
    after: str
    replacement: ast.AST
    ordinal: int = 0    # earlier sites of the function with the same text (1 + 1: the second one is #1)

    @property
    def name(self) -> str:
        return f"{self.function}|{self.operator}|{self.before} -> {self.after}" + (f"#{self.ordinal}" if self.ordinal else "")


@dataclass(frozen=True)
class Mutant:
    module: str     # path of the module in the package tree (vitbench/gate/rules.py)
    index: int      # position among the module's sites (replay: --only INDEX)
    site: Site
    source: str     # the mutated module's source

    @property
    def name(self) -> str:
        return self.site.name

    def describe(self) -> str:
        return f"{self.module}:{self.site.line} [{self.index}] {self.site.operator}: {self.site.before} -> {self.site.after}"


def _is_docstring(node: ast.AST, parent: ast.AST | None) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            and parent is not None and getattr(parent, "body", [None])[0] is node)


def _text(node: ast.AST) -> str:
    text = ast.unparse(node).replace("\n", " ")
    return text if len(text) <= 80 else text[:77] + "..."


def _with(node: ast.AST, **fields: object) -> ast.AST:
    new = copy.deepcopy(node)
    for name, value in fields.items():
        setattr(new, name, value)
    return new


def _operator_swaps(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """Comparison, arithmetic and boolean operators swapped."""
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            for other in _COMPARE.get(type(op), ()):
                ops = list(node.ops)
                ops[i] = other()
                yield "compare", _with(node, ops=ops)
    elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _ARITH:
        yield "arith", _with(node, op=_ARITH[type(node.op)]())
    elif isinstance(node, ast.BoolOp):
        yield "boolean", _with(node, op=ast.Or() if isinstance(node.op, ast.And) else ast.And())
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "boolean", copy.deepcopy(node.operand)


def _constants(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield "constant", ast.Constant(not node.value)
    elif isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        yield from (("constant", ast.Constant(node.value + step)) for step in (1, -1))


def _replacements(node: ast.AST, parent: ast.AST | None) -> Iterator[tuple[str, ast.AST]]:
    """(operator, replacement) for every mutation of ``node`` itself."""
    yield from _operator_swaps(node)
    yield from _constants(node)
    if isinstance(node, ast.Return) and node.value is not None and not (
            isinstance(node.value, ast.Constant) and node.value.value is None):
        yield "return", ast.Return(value=ast.Constant(None))
    if isinstance(node, ast.stmt) and not isinstance(node, _SKIPPED_STATEMENTS) and not _is_docstring(node, parent):
        yield "remove", ast.Pass()


def _left_alone(node: ast.AST, parent: ast.AST | None) -> bool:
    """Subtrees no mutation enters: docstrings, annotations, f-strings, imports, ``__all__``."""
    if _is_docstring(node, parent) or isinstance(node, (ast.JoinedStr, ast.Import, ast.ImportFrom)):
        return True
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
        return True
    return False


def _children(node: ast.AST) -> Iterator[tuple[str, int | None, ast.AST]]:
    for field, value in ast.iter_fields(node):
        if field in ("annotation", "returns", "type_comment"):
            continue
        if isinstance(value, list):
            yield from ((field, i, item) for i, item in enumerate(value) if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):
            yield field, None, value


def sites(source: str) -> list[Site]:
    """Every mutation site of a module's source, in source order."""
    found: list[Site] = []

    def visit(node: ast.AST, parent: ast.AST | None, path: Path, function: str) -> None:
        if _left_alone(node, parent):
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            function = f"{function}.{node.name}" if function != "<module>" else node.name
        for operator, replacement in _replacements(node, parent):
            found.append(Site(path, operator, function, getattr(node, "lineno", 0), _text(node),
                              _text(replacement), replacement))
        for field, index, child in _children(node):
            visit(child, node, (*path, (field, index)), function)

    visit(ast.parse(source), None, (), "<module>")
    seen: dict[str, int] = {}
    named = []
    for site in found:
        named.append(dataclasses.replace(site, ordinal=seen.get(site.name, 0)))
        seen[site.name] = seen.get(site.name, 0) + 1
    return named


def apply(source: str, site: Site) -> str:
    """The module's source with ``site`` mutated (formatting normalised by ``ast.unparse``)."""
    tree = ast.parse(source)
    holder: ast.AST = tree
    for field, index in site.path[:-1]:
        value = getattr(holder, field)
        holder = value if index is None else value[index]
    field, index = site.path[-1]
    replacement = copy.deepcopy(site.replacement)
    if index is None:
        setattr(holder, field, replacement)
    else:
        getattr(holder, field)[index] = replacement
    return ast.unparse(ast.fix_missing_locations(tree))


def sample(module: str, source: str, k: int, seed: int, operators: tuple[str, ...] = OPERATORS) -> list[Mutant]:
    """``k`` mutants of the module drawn with ``seed`` (all of them when it has fewer), in source
    order; the same seed and source give the same mutants."""
    candidates = [(i, s) for i, s in enumerate(sites(source)) if s.operator in operators]
    chosen = sorted(random.Random(f"{seed}:{module}").sample(candidates, min(k, len(candidates))), key=lambda c: c[0])
    return [Mutant(module, i, site, apply(source, site)) for i, site in chosen]


def by_index(module: str, source: str, indices: list[int]) -> list[Mutant]:
    """The mutants at the given site positions (replay of a reported survivor)."""
    every = sites(source)
    return [Mutant(module, i, every[i], apply(source, every[i])) for i in indices]
