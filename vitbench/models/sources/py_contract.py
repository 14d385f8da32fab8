"""What a ``py:`` reference may name, checked before anything of it runs: the user's own code,
by allow-list.

A ``py:`` reference is code: vitbench imports its module (running the module's top level) and
calls its factory. The contract:

* **before any import**, from the text and the file system alone (:func:`check_static`): the
  module is a ``.py`` file the user names, or a module found (by the path finder and editable
  installs' finders, a dotted name walked folder by folder: ``find_spec`` of a dotted name
  would import its parents) whose file, and every package ``__init__.py`` above it, is the
  user's own code (:func:`not_user_code`): not built in, not vitbench's, not in a library folder
  (site-packages, dist-packages), not a standard library's, not a file an installed
  distribution recorded. Everything else is refused, imported nothing. An editable install of
  the user's project (``pip install -e .``) is the user's code: its files stay in their folder
  and the installation records only its finder (``__editable___*_finder``, in site-packages,
  refused) and a ``.pth``. The commands check every model and every other argument, path and
  setting before the first ``py:`` module is imported; a dry run imports nothing
  (:func:`imports_refused`).
* **after the import, before the call** (:func:`check_factory`): the factory is an ``nn.Module``
  class whose module file is the user's, or a plain Python function whose code
  (``__code__.co_filename``, through ``functools.partial``, bound methods and decorators'
  ``__wrapped__``) is the user's: a built-in (``os.system``), another class, or a library's
  callable re-exported by the user's module (``from sympy import sympify as f``) is refused
  without being called.
* **after the call**: what it returned is an ``nn.Module``, else refused
  (:func:`vitbench.models.sources.common.probe`).

Which keyword parameters a factory takes (for a sweep's grid ids) is read from its source
(:func:`vitbench.models.sources.py_factory.static_parameters`), without importing it.
"""

from __future__ import annotations

import contextlib
import contextvars
import csv
import functools
import importlib.machinery
import importlib.machinery as machinery
import inspect
import os
import site
import sys
import sysconfig
from collections.abc import Iterator
from importlib import metadata
from typing import Any

from vitbench.errors import SpecError, model_code

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
    return any(path == folder or path.startswith(folder.rstrip(os.sep) + os.sep) for folder in folders)


#: folders that hold installed code, whatever their prefix (a venv, conda, Debian, PEP 582)
LIBRARY_FOLDER_NAMES = ("site-packages", "dist-packages", "__pypackages__")


@functools.lru_cache(maxsize=1)
def _site_folders() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    folders = [paths.get("purelib"), paths.get("platlib")]
    with contextlib.suppress(AttributeError):
        folders += site.getsitepackages()
    with contextlib.suppress(AttributeError):
        folders.append(site.getusersitepackages())
    return tuple(_real(f) for f in folders if f)


@functools.lru_cache(maxsize=1)
def _stdlib_folders() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple(_real(paths[k]) for k in ("stdlib", "platstdlib") if paths.get(k))


def _vitbench_folder() -> str:
    return _real(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _in_library_folder(path: str) -> bool:
    return any(part in LIBRARY_FOLDER_NAMES for part in path.split(os.sep)) or _under(path, _site_folders())


def _in_a_standard_library(path: str) -> bool:
    """Under this Python's standard library folders, or under a folder that is another Python's
    (it holds ``os.py`` and ``_collections_abc.py``)."""
    if _under(path, _stdlib_folders()):
        return True
    folder = os.path.dirname(path)
    while folder and folder != os.path.dirname(folder):
        if os.path.isfile(os.path.join(folder, "os.py")) and os.path.isfile(os.path.join(folder, "_collections_abc.py")):
            return True
        folder = os.path.dirname(folder)
    return False


def _recorded(dist: Any) -> tuple[str, list[str]] | None:
    """The folder a distribution's recorded files are relative to, and those files: its RECORD
    (dist-info) or installed-files.txt (an installed egg-info). A development egg-info's
    SOURCES.txt (the project's own sources) is not an installation's record."""
    with contextlib.suppress(Exception):
        text = dist.read_text("RECORD")
        if text:
            return str(dist.locate_file("")), [row[0] for row in csv.reader(text.splitlines()) if row]
        text = dist.read_text("installed-files.txt")
        if text and getattr(dist, "_path", None) is not None:
            return str(dist._path), [line.strip() for line in text.splitlines() if line.strip()]
    return None


@functools.lru_cache(maxsize=1)
def _distribution_files() -> dict[str, str]:
    """Real path -> distribution name of every file an installed distribution recorded outside
    the library folders (those are refused as a whole): ``pip install --target``, data files,
    scripts. An editable install records only its finder and ``.pth`` (in site-packages): the
    project's own folder is the user's code."""
    out: dict[str, str] = {}
    for dist in metadata.distributions():
        recorded = _recorded(dist)
        if recorded is None:
            continue
        base, entries = recorded
        name = str(dist.metadata.get("Name") or "?")
        for entry in entries:
            path = os.path.normpath(os.path.join(base, entry))
            if path.endswith((".py", ".pyc", ".pyw", ".so", ".pyd")) and not _in_library_folder(path):
                out[_real(path)] = name
    return out


#: how :func:`not_user_code`'s reasons for an installed library's code begin
INSTALLED = ("is in an installed library's folder", "is a file of the installed distribution")


def not_user_code(path: str | None) -> str | None:
    """Why code from the file ``path`` is not the user's own (None when it is): no file (a
    built-in, frozen or made at run time), vitbench's own package, a library folder
    (site-packages, dist-packages), a standard library, a file an installed distribution
    recorded. What is left is the user's: a file they gave, their folders, an editable install
    of their project (see docs/models.md)."""
    if not path or path.startswith("<") or not os.path.exists(path):
        return "is not in a file of its own (built into Python, frozen or made at run time)"
    real = _real(path)
    if _under(real, (_vitbench_folder(),)):
        return "is vitbench's own code, not a model factory (vitbench's models are presets: `vitbench models`)"
    if _in_library_folder(real) or _in_library_folder(os.path.abspath(path)):
        return f"{INSTALLED[0]} ({real!r}), not your own"
    if _in_a_standard_library(real):
        return "is in Python's standard library, not a model factory"
    dist = _distribution_files().get(real)
    if dist is not None:
        return f"{INSTALLED[1]} {dist!r}, not your own code"
    return None


def _refuse(reference: str, why: str) -> SpecError:
    return SpecError("model", reference, f"{why}; py: names your own factory returning an nn.Module (nothing was imported or run)")


def _loaded(module_path: str, attribute: str | None) -> str | None:
    """``module.qualname`` of the function or class ``attribute`` when its module is loaded
    already: a plain lookup in the module's namespace (no import, no module ``__getattr__``)."""
    module = sys.modules.get(module_path)
    namespace = getattr(module, "__dict__", None) if module is not None else None
    found = namespace.get(attribute) if isinstance(namespace, dict) and attribute else None
    if not (inspect.isfunction(found) or inspect.isclass(found) or inspect.isbuiltin(found)):
        return None
    return f"{found.__module__}.{found.__qualname__}"


def _library(reference: str, module_path: str, attribute: str | None, why: str) -> SpecError:
    top = module_path.split(".")[0]
    name = _loaded(module_path, attribute)
    if name is not None:
        what = f"is {name}, a function of the library {top!r} ({module_path!r} {why})"
    elif attribute:
        what = f"{module_path!r} {why}: {attribute!r} would be a function of the library {top!r}"
    else:
        what = f"{module_path!r} {why}: it is the library {top!r}"
    return SpecError("model", reference, f"{what}, not a model factory; name a library's models with torchvision:, timm: or "
                                         "hf:, or give your own module's factory (nothing was imported: not called)")


# --- where a module is, found without importing it -------------------------------------------
def _finders() -> list[Any]:
    """The finders consulted, in ``sys.meta_path``'s order: the path finder and editable installs'
    finders (a lookup in a table: they run nothing). Any other finder is not asked: a module only
    it serves is not found (a finder may run code: setuptools' distutils shim imports)."""
    path_finder = importlib.machinery.PathFinder
    finders = [f for f in sys.meta_path if f is path_finder or str(getattr(f, "__module__", "")).startswith("__editable__")]
    return finders if path_finder in finders else [path_finder, *finders]


def _of_module(module: Any) -> tuple[str | None, list[str] | None]:
    """(file, package folders) of a loaded module: no file and no folders is "" (built in, made
    at run time, or blocked: ``sys.modules[name] = None``), refused as not in a file."""
    locations = getattr(module, "__path__", None)
    origin = getattr(module, "__file__", None)
    if origin is None and locations is None:
        origin = ""
    return origin, (list(locations) if locations is not None else None)


def _folders(locations: Any) -> list[str]:
    """A package's folders; a namespace package's as found (listing a ``_NamespacePath`` again
    looks its parent up in ``sys.modules``, where a parent found without importing is not)."""
    try:
        return [str(folder) for folder in locations]
    except (KeyError, AttributeError):
        return [str(folder) for folder in getattr(locations, "_path", ())]


def _of_spec(spec: Any) -> tuple[str | None, list[str] | None]:
    locations = spec.submodule_search_locations
    origin = spec.origin if spec.has_location else None
    if origin is None and locations is None:
        origin = ""  # built in or frozen
    return origin, (_folders(locations) if locations is not None else None)


def _top(reference: str, module_path: str) -> tuple[str | None, list[str] | None]:
    """(file, package folders) of the top-level module: loaded already, or found by
    :func:`_finders` on ``sys.path`` and then in the current directory, as
    :func:`~vitbench.models.sources.py_factory.import_namespace` imports it; nothing executed."""
    top = module_path.split(".")[0]
    if top in sys.modules:
        return _of_module(sys.modules[top])
    for finder in _finders():
        with contextlib.suppress(ImportError, ValueError, AttributeError, TypeError, OSError):
            spec = finder.find_spec(top, None)
            if spec is not None:
                return _of_spec(spec)
    here = os.getcwd()
    if here not in sys.path:
        spec = importlib.machinery.PathFinder.find_spec(top, [here])
        if spec is not None:
            return _of_spec(spec)
        raise SpecError("model", reference, f"cannot import {module_path!r} (also looked in {here}): No module named {top!r}")
    raise SpecError("model", reference, f"cannot import {module_path!r}: No module named {top!r}")


def _find_below(name: str, folders: list[str]) -> tuple[str | None, list[str] | None] | None:
    """(file, package folders) of the submodule ``name`` in its package's ``folders``, as the
    path finder's file finders see them (a module, a package, or the portions of a namespace
    package); ``PathFinder.find_spec`` itself looks a namespace package's parent up in
    ``sys.modules``, where a parent found without importing is not."""
    loaders = ((machinery.ExtensionFileLoader, machinery.EXTENSION_SUFFIXES),
               (machinery.SourceFileLoader, machinery.SOURCE_SUFFIXES),
               (machinery.SourcelessFileLoader, machinery.BYTECODE_SUFFIXES))
    portions: list[str] = []
    for folder in folders:
        spec = machinery.FileFinder(folder, *loaders).find_spec(name)
        if spec is None:
            continue
        if spec.loader is not None:
            return _of_spec(spec)
        portions += _folders(spec.submodule_search_locations or ())
    return (None, portions) if portions else None


def _levels(reference: str, module_path: str) -> list[tuple[str, str | None]]:
    """(name, file) of each module importing ``module_path`` runs, outermost first: its packages
    (their ``__init__.py``) and itself, found on the file system (``find_spec`` of a dotted name
    would import its parents); a namespace package has no file (None)."""
    parts = module_path.split(".")
    origin, locations = _top(reference, module_path)
    levels = [(parts[0], origin)]
    for depth in range(1, len(parts)):
        name = ".".join(parts[: depth + 1])
        found = _of_module(sys.modules[name]) if name in sys.modules else _find_below(name, locations or [])
        if found is None:
            raise SpecError("model", reference, f"cannot import {module_path!r}: No module named {name!r} (looked for "
                                                "its file, nothing imported)")
        origin, locations = found
        levels.append((name, origin))
    return levels


def locate(reference: str, module_path: str) -> str | None:
    """The source file of a ``py:`` module, found without importing anything (None: a
    namespace package)."""
    if module_path.endswith(".py"):
        return os.path.abspath(module_path)
    return _levels(reference, module_path)[-1][1]


def check_static(reference: str, module_path: str, attribute: str | None = None) -> str:
    """Refuse, from the reference's text and the file system alone, a ``py:`` module that is not
    the user's own code or that does not exist; returns the module's source file. Imports
    nothing: the module and every package above it (whose ``__init__.py`` the import runs)
    must be in a file that is the user's (:func:`not_user_code`)."""
    if module_path.endswith(".py"):
        path = os.path.abspath(module_path)
        if not os.path.isfile(path):
            raise SpecError("model", reference, f"no such file: {module_path!r}")
        why = not_user_code(path)
        if why is not None:
            raise _refuse(reference, f"{module_path!r} {why}")
        return path
    top = module_path.split(".")[0]
    if top in sys.stdlib_module_names or top in sys.builtin_module_names or top == "__main__":
        raise _refuse(reference, f"{top!r} is a module of Python's standard library, not a model factory")
    if top == "vitbench":
        raise _refuse(reference, "vitbench's own modules are not model factories (its models are presets: `vitbench models`)")
    # a finder's own failure (another package's import hook) is refused: fail closed
    with model_code(lambda exc: _refuse(reference, f"{module_path!r} cannot be located without importing it ({type(exc).__name__})")):
        levels = _levels(reference, module_path)
    for name, origin in levels:
        if origin is None:  # a namespace package: no code of its own
            continue
        why = not_user_code(origin)
        if why is not None and why.startswith(INSTALLED):
            raise _library(reference, module_path, attribute, why)
        if why is not None:
            raise _refuse(reference, f"{module_path!r} {why}" if name == module_path else f"{module_path!r}: {name!r} {why}")
    origin = levels[-1][1]
    if origin is None:
        raise _refuse(reference, f"{module_path!r} is a namespace package, with no file of its own")
    return origin


def check_module(reference: str, module_path: str, namespace: Any) -> None:
    """After the import: the module's own file is the user's (a finder that was not asked may
    have served another module than the one :func:`check_static` found)."""
    why = not_user_code(getattr(namespace, "__file__", None))
    if why is not None:
        raise SpecError("model", reference, f"{module_path!r} imported as a module that {why}; nothing of it was called")


def _layers(factory: Any) -> list[Any]:
    """What calling ``factory`` runs, outermost first: ``functools.partial`` and bound methods
    unwrapped, then each ``__wrapped__`` (decorators)."""
    layers = [factory]
    inner = factory
    for _ in range(100):
        if isinstance(inner, functools.partial):
            inner = inner.func
        elif inspect.ismethod(inner):
            inner = inner.__func__
        elif not isinstance(inner, type) and getattr(inner, "__wrapped__", None) is not None:
            inner = inner.__wrapped__
        else:
            break
        layers.append(inner)
    return layers


def _class_file(cls: type) -> str | None:
    module = sys.modules.get(getattr(cls, "__module__", None) or "")
    return getattr(module, "__file__", None)


def _refuse_factory(reference: str, layers: list[Any], layer: Any, why: str) -> SpecError:
    def name(obj: Any) -> str:
        return f"{getattr(obj, '__module__', None)}.{getattr(obj, '__qualname__', type(obj).__name__)}"

    top = str(getattr(layer, "__module__", None) or "?").split(".")[0]
    kind = "class" if isinstance(layer, type) else "function"
    if layer is not layers[-1]:  # a decorator's wrapper, a partial's or a method's function
        what = f"called through a wrapper whose code {why}"
    elif why.startswith(INSTALLED):
        what = f"a {kind} of the library {top!r}, whose code {why}"
    else:
        what = f"which {why}"
    return SpecError("model", reference, f"is {name(layers[-1])}, {what}; it was not called: name a library's models with "
                                         "torchvision:, timm: or hf:, or give your own module's factory")


def check_factory(reference: str, factory: Any) -> None:
    """Before the call: an ``nn.Module`` class or a plain Python function whose code (every
    layer of it: a ``functools.partial``, a bound method, a decorator's wrapper) is the user's
    own (:func:`not_user_code`): no built-in, no other class, no re-exported library callable."""
    layers = _layers(factory)
    inner = layers[-1]
    if isinstance(inner, type):
        from torch import nn

        if not issubclass(inner, nn.Module):
            raise SpecError("model", reference, f"is the class {inner.__qualname__}, not an nn.Module class or a factory "
                                                "function; it was not called")
        why = not_user_code(_class_file(inner))
        if why is not None:
            raise _refuse_factory(reference, layers, inner, why)
    elif not inspect.isfunction(inner):
        raise SpecError("model", reference, f"is a {type(inner).__name__}, not a Python factory function or nn.Module "
                                            "class; it was not called")
    for layer in layers:
        code = layer if inspect.isfunction(layer) else None
        if code is None and not isinstance(layer, type):  # a callable object: its class's __call__ runs
            call = type(layer).__call__ if callable(layer) else None
            code = call if inspect.isfunction(call) else None
        why = not_user_code(code.__code__.co_filename) if code is not None else None
        if why is not None:
            raise _refuse_factory(reference, layers, layer, why)


__all__ = [
    "LIBRARY_FOLDER_NAMES", "NotImported", "check_factory", "check_import_allowed", "check_module", "check_static",
    "imports_refused", "locate", "not_user_code",
]
