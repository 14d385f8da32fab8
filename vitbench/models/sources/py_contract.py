"""What a ``py:`` reference may name, checked before anything of it runs.

A ``py:`` reference is code: vitbench imports its module (running the module's top level) and
calls its factory. The contract:

* **before any import**, from the text alone: the module is not one of Python's standard library
  (``sys.stdlib_module_names``, or a file under the standard library's folders outside
  site-packages) nor of vitbench itself, and it can be found (a ``.py`` file that exists, a
  module some finder knows); :func:`check_static`. The commands check every other argument,
  path and setting before they resolve a model, so a mistake anywhere is reported before the
  user's module is imported; a dry run imports nothing (:func:`imports_refused`).
* **after the import, before the call**: the factory is an ``nn.Module`` class or a plain Python
  function (a method or ``functools.partial`` of one) whose code is not in the standard library
  or vitbench: a built-in (``os.system``), another class (``subprocess.Popen``) or a standard
  library function re-exported by the user's module (``from shutil import rmtree``) is refused
  without being called (:func:`check_factory`); so is a function of a well-known library
  (:data:`LIBRARY_PACKAGES`: ``torch.load`` unpickles, ``torch.hub.load`` runs a hubconf.py),
  while that library's ``nn.Module`` classes stay allowed.
* **after the call**: what it returned is an ``nn.Module``, else refused
  (:func:`vitbench.models.sources.common.probe`).

Which keyword parameters a factory takes (for a sweep's grid ids) is read from its source with
:mod:`ast` when the factory is a plain top-level ``def`` (or a class with its own ``__init__``)
of the module's file, without importing it; else from its signature once imported.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import os
import sys
from collections.abc import Iterator
from typing import Any

from vitbench.errors import SpecError

_IMPORTS_REFUSED: contextvars.ContextVar[bool] = contextvars.ContextVar("vitbench_py_imports_refused", default=False)


@contextlib.contextmanager
def imports_refused() -> Iterator[None]:
    """Within this block no ``py:`` module is imported (a dry run): what only the import could
    tell raises :class:`NotImported` (a :class:`SpecError`) instead."""
    token = _IMPORTS_REFUSED.set(True)
    try:
        yield
    finally:
        _IMPORTS_REFUSED.reset(token)


class NotImported(SpecError):
    """Only importing the ``py:`` module could tell, and imports are refused here."""


def check_import_allowed(reference: str) -> None:
    if _IMPORTS_REFUSED.get():
        raise NotImported("model", reference, "not imported here (a dry run imports no py: module)")


def _real(path: str) -> str:
    return os.path.realpath(path)


def _under(path: str, folders: tuple[str, ...]) -> bool:
    path = _real(path)
    return any(path == folder or path.startswith(folder.rstrip(os.sep) + os.sep) for folder in folders)


def _site_folders() -> tuple[str, ...]:
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    folders = [paths.get("purelib"), paths.get("platlib")]
    with contextlib.suppress(AttributeError):
        folders += site.getsitepackages()
    with contextlib.suppress(AttributeError):
        folders.append(site.getusersitepackages())
    folders += [p for p in sys.path if os.path.basename(p.rstrip(os.sep)) in ("site-packages", "dist-packages")]
    return tuple(_real(f) for f in folders if f)


def _stdlib_folders() -> tuple[str, ...]:
    import sysconfig

    paths = sysconfig.get_paths()
    return tuple(_real(paths[k]) for k in ("stdlib", "platstdlib") if paths.get(k))


def _vitbench_folder() -> str:
    return _real(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def forbidden_file(path: str | None) -> str | None:
    """Why code from the file ``path`` is not a factory's (None when it may be): the standard
    library's folders (site-packages excepted) or vitbench's own package; no file at all (a
    built-in or frozen module)."""
    if not path:
        return "is built into Python (no source file)"
    if _under(path, (_vitbench_folder(),)):
        return "is vitbench's own code, not a model factory (vitbench's models are presets: `vitbench models`)"
    if _under(path, _stdlib_folders()) and not _under(path, _site_folders()):
        return "is in Python's standard library, not a model factory"
    return None


def _refuse(reference: str, why: str) -> SpecError:
    return SpecError("model", reference, f"{why}; py: names your own factory returning an nn.Module (nothing was imported or run)")


def _find_top(reference: str, module_path: str) -> Any:
    """The spec of the top-level module ``top`` (its finders run; nothing is imported), also
    looked for in the current directory as :func:`~vitbench.models.sources.py_factory.import_namespace`
    does; a one-line error when none finds it."""
    import importlib.machinery
    import importlib.util

    top = module_path.split(".")[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        spec = None
    here = os.getcwd()
    if spec is None and here not in sys.path:
        spec = importlib.machinery.PathFinder.find_spec(top, [here])
        if spec is None:
            raise SpecError("model", reference, f"cannot import {module_path!r} (also looked in {here}): No module named {top!r}")
    if spec is None:
        raise SpecError("model", reference, f"cannot import {module_path!r}: No module named {top!r}")
    return spec


def locate(reference: str, module_path: str) -> str | None:
    """The source file of a ``py:`` module, found without importing anything (None when only the
    import can tell: a package a custom finder serves)."""
    import importlib.machinery

    if module_path.endswith(".py"):
        return os.path.abspath(module_path)
    loaded = sys.modules.get(module_path)
    if loaded is not None:
        return getattr(loaded, "__file__", None) or ""
    parts = module_path.split(".")
    spec = _find_top(reference, module_path)
    for depth in range(1, len(parts)):
        locations = spec.submodule_search_locations
        if not locations:
            return None
        spec = importlib.machinery.PathFinder.find_spec(".".join(parts[: depth + 1]), list(locations))
        if spec is None:
            return None
    origin = spec.origin
    if origin in (None, "namespace") and spec.submodule_search_locations:
        return None  # a namespace package: no file of its own
    return origin if origin not in ("built-in", "frozen") else ""


def check_static(reference: str, module_path: str) -> str | None:
    """Refuse, from the reference's text and the file system alone, a ``py:`` module that is
    not the user's own (standard library, vitbench) or that does not exist. Returns the module's
    source file when found (None when only the import can tell). Imports nothing."""
    if module_path.endswith(".py"):
        path = os.path.abspath(module_path)
        if not os.path.isfile(path):
            raise SpecError("model", reference, f"no such file: {module_path!r}")
    else:
        top = module_path.split(".")[0]
        if top in sys.stdlib_module_names or top in sys.builtin_module_names or top == "__main__":
            raise _refuse(reference, f"{top!r} is a module of Python's standard library, not a model factory")
        if top == "vitbench":
            raise _refuse(reference, "vitbench's own modules are not model factories (its models are presets: `vitbench models`)")
        path = locate(reference, module_path)
        if path is None:
            return None
    why = forbidden_file(path)
    if why is not None:
        raise _refuse(reference, f"{module_path!r} {why}")
    return path


def check_module(reference: str, module_path: str, namespace: Any) -> None:
    """After the import: the module's own file is not the standard library's or vitbench's
    (a module a custom finder served, that :func:`check_static` could not place)."""
    if module_path.endswith(".py"):
        return
    why = forbidden_file(getattr(namespace, "__file__", None))
    if why is not None:
        raise _refuse(reference, f"{module_path!r} {why}")


#: Well-known libraries whose *functions* are never a ``py:`` factory: they load pickles
#: (torch.load, numpy.load, joblib, dill), run downloaded or local code (torch.hub.load) or do
#: anything but build a model. Matched on the top-level package of the function's
#: ``__module__``; their ``nn.Module`` classes (``py:torch.nn:Linear``) stay allowed.
LIBRARY_PACKAGES = (
    "torch", "torchvision", "timm", "transformers", "huggingface_hub", "safetensors", "numpy", "scipy", "pandas",
    "joblib", "dill", "cloudpickle", "yaml", "fvcore", "iopath", "matplotlib", "PIL", "submitit", "pyarrow",
    "tabulate",
)


def _code_file(function: Any) -> str | None:
    code = getattr(function, "__code__", None)
    return getattr(code, "co_filename", None)


def check_factory(reference: str, factory: Any) -> None:
    """Before the call: an ``nn.Module`` class, or a plain Python function (a method or a
    ``functools.partial`` of one) whose code is not the standard library's or vitbench's."""
    import functools
    import inspect

    inner = factory
    while isinstance(inner, functools.partial):
        inner = inner.func
    if inspect.ismethod(inner):
        inner = inner.__func__
    if isinstance(inner, type):
        from torch import nn

        if not issubclass(inner, nn.Module):
            raise SpecError("model", reference, f"is the class {inner.__qualname__}, not an nn.Module class or a factory "
                                                "function; it was not called")
        return
    if not inspect.isfunction(inner):
        raise SpecError("model", reference, f"is a {type(inner).__name__}, not a Python factory function or nn.Module "
                                            "class; it was not called")
    why = forbidden_file(_code_file(inner))
    if why is not None:
        raise SpecError("model", reference, f"is {inner.__module__}.{inner.__qualname__}, which {why}; it was not called")
    top = str(getattr(inner, "__module__", None) or "").split(".")[0]
    if top in LIBRARY_PACKAGES:
        raise SpecError("model", reference, f"is {inner.__module__}.{inner.__qualname__}, a function of the library {top!r}, "
                                            "not a model factory (it was not called): name a library's models with "
                                            "torchvision:, timm: or hf:, or give your own module's factory")


# --- the factory's parameters, read from its source ------------------------------------------
def _names(arguments: ast.arguments, skip_first: bool) -> set[str]:
    positional = list(arguments.args)
    if skip_first and (arguments.posonlyargs or positional):
        if arguments.posonlyargs:
            return {a.arg for a in positional} | {a.arg for a in arguments.kwonlyargs}
        positional = positional[1:]
    return {a.arg for a in positional} | {a.arg for a in arguments.kwonlyargs}


def _bound_names(node: ast.stmt) -> set[str]:
    """Names a top-level statement (other than a def or class) binds."""
    names: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            names.add(sub.id)
        elif isinstance(sub, ast.alias):
            names.add((sub.asname or sub.name).split(".")[0])
    return names


def static_parameters(path: str | None, attribute: str) -> set[str] | None:
    """The keyword parameters of ``attribute`` in the module file ``path`` as its source says:
    a top-level ``def`` without decorators (or a class with its own undecorated ``__init__``
    that takes no ``**kwargs``), bound once; None when only its signature once imported can
    tell (the name bound twice, decorated, imported from elsewhere, no such file)."""
    if not path or not path.endswith(".py") or not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as handle:
            source = handle.read(2_000_001)
        if len(source) > 2_000_000:
            return None
        tree = ast.parse(source)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == attribute:
                found.append(node)
        elif attribute in _bound_names(node):
            return None
    if len(found) != 1 or found[0].decorator_list:
        return None
    node = found[0]
    if isinstance(node, ast.AsyncFunctionDef):
        return None
    if isinstance(node, ast.FunctionDef):
        return _names(node.args, skip_first=False)
    inits = [n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
    if len(inits) != 1 or inits[0].decorator_list or inits[0].args.kwarg is not None:
        return None
    return _names(inits[0].args, skip_first=True)


__all__ = [
    "LIBRARY_PACKAGES", "NotImported", "check_factory", "check_import_allowed", "check_module", "check_static", "forbidden_file",
    "imports_refused", "locate", "static_parameters",
]
