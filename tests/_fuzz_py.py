"""The fuzzer's ``py:`` references (issue 45): module paths and factory names drawn from the
installed distributions, found without importing any of them (each distribution's RECORD for
its modules, each module's source read with :mod:`ast` for its public names), in the forms an
attacker would give them (a dotted module, the module's file by its absolute or relative path,
keyword arguments carrying a payload). tests/test_fuzz.py asserts that each is refused in one
line (exit 2) and that no module of them is imported, nor any factory obtained or called."""

from __future__ import annotations

import ast
import csv
import functools
import importlib.machinery
import os
from importlib import metadata

from hypothesis import strategies as st

LIBRARY_FOLDERS = ("site-packages", "dist-packages")


def _in_library_folder(path: str) -> bool:
    return any(part in LIBRARY_FOLDERS for part in os.path.realpath(path).split(os.sep))


def _modules_of(dist: metadata.Distribution) -> dict[str, str]:
    """Dotted module name -> source file, for each ``.py`` file the distribution's RECORD names."""
    try:
        text = dist.read_text("RECORD") or ""
    except OSError:
        return {}
    base = str(dist.locate_file(""))
    out = {}
    for row in csv.reader(text.splitlines()):
        if not row or not row[0].endswith(".py") or row[0].startswith(".."):
            continue
        parts = row[0][:-3].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and all(p.isidentifier() for p in parts):
            out[".".join(parts)] = os.path.join(base, row[0])
    return out


def _found_in_a_library_folder(top: str) -> bool:
    spec = importlib.machinery.PathFinder.find_spec(top)
    if spec is None:
        return False
    where = spec.origin if spec.has_location else next(iter(spec.submodule_search_locations or ()), None)
    return where is not None and _in_library_folder(where)


@functools.lru_cache(maxsize=1)
def library_modules() -> tuple[tuple[str, str], ...]:
    """(module, file) of every module the installed distributions recorded whose top-level
    package Python's path finder finds in a library folder (what an import of the name would
    load: a name the user's folders shadow is theirs, not a library's), sorted."""
    modules: dict[str, str] = {}
    for dist in metadata.distributions():
        modules.update(_modules_of(dist))
    tops: dict[str, bool] = {}
    for name in modules:
        top = name.split(".")[0]
        if top not in tops:
            tops[top] = _found_in_a_library_folder(top)
    return tuple(sorted((name, path) for name, path in modules.items() if tops[name.split(".")[0]] and os.path.isfile(path)))


@functools.lru_cache(maxsize=4096)
def public_names(path: str) -> tuple[str, ...]:
    """The names a module's source defines or imports at its top level (its functions, classes
    and re-exports), read with ast: nothing imported."""
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read(1_000_000))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            names.update((a.asname or a.name) for a in node.names if a.name != "*")
    # a name holding "Traceback" would trip the property "no traceback on stderr" when echoed
    return tuple(sorted(n for n in names if not n.startswith("_") and "Traceback" not in n))


#: issue 45's modules (drawn more often than their share)
ISSUE_MODULES = ("sympy", "sympy.parsing.sympy_parser", "markdown", "fsspec", "pip", "pytest", "jinja2.utils",
                 "setuptools._distutils.spawn", "torch", "torch.hub", "numpy", "_distutils_hack")
#: names that exist in many libraries and do harm when called with a payload
USUAL_NAMES = ("main", "load", "open", "run", "system", "install", "sympify", "parse_expr", "import_string", "eval", "exec")
PAYLOADS = (
    "", "+x=1", "+a=__import__('os').system('touch PWNED')", "+args=--version", "+f=/etc/passwd", "+path=.",
    "+s=open('PWNED','w')", "+weights_only=false", "+source=local",
)


@st.composite
def library_references(draw) -> tuple[str, str]:
    """(a ``py:`` reference naming an installed library's function, the module it names)."""
    modules = library_modules()
    known = [m for m in modules if m[0] in ISSUE_MODULES or m[0].startswith("__editable__")]
    module, path = draw(st.one_of(st.integers(0, len(modules) - 1).map(modules.__getitem__), st.sampled_from(known or modules)))
    names = public_names(path) or USUAL_NAMES
    name = draw(st.one_of(st.sampled_from(names), st.sampled_from(USUAL_NAMES)))
    form = draw(st.sampled_from(("dotted", "absolute", "relative")))
    where = module if form == "dotted" else path if form == "absolute" else os.path.relpath(path)
    return f"py:{where}:{name}{draw(st.sampled_from(PAYLOADS))}", module
