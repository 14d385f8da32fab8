"""``py:package.module:factory``: a user's own factory returning an ``nn.Module``; the module is
imported from the path or the current directory, or given as a file: ``py:./models.py:tiny``.

Keyword arguments in the reference are passed to the factory (``pretrained``/``weights`` are
refused: nothing is downloaded); override flags are passed when the factory names them as
parameters (``--img-size`` also sets the input size). Input size:
--img-size, else the module's own metadata (timm ``pretrained_cfg``, an ``image_size`` or
``img_size`` attribute, an hf ``config.image_size``), else a one-line error.

What runs, and when, is :mod:`vitbench.models.sources.py_contract`'s contract: nothing of the
user's is imported before the reference passes its checks from the text alone, nor called
before the factory passes its own. Which keyword parameters a factory takes (for a sweep's
grid ids) is read from its source with :mod:`ast` when the factory is a plain top-level ``def``
(or a class with its own ``__init__``) of the module's file, without importing it
(:func:`static_parameters`); else from its signature once imported.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import re
import sys
from typing import Any

from vitbench.errors import ModelBuildError, SpecError, foreign_call, model_code
from vitbench.models.inputs import library_of, module_input_size
from vitbench.models.sources.common import accepted, finish, key_of, probe, typed
from vitbench.models.sources.py_contract import (
    check_factory,
    check_import_allowed,
    check_module,
    check_static,
)
from vitbench.models.target import input_size_of, no_network, unknown

_MODULE = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*")
_ATTRIBUTE = re.compile(r"[A-Za-z_][\w]*")


def import_namespace(reference: str, module_path: str) -> Any:
    """The module a ``py:`` reference names: a dotted module importable from ``sys.path`` or,
    failing that, from the current directory (``vitbench`` run as a console script does not
    put it on the path); or a ``.py`` file by its path (relative to the current directory)."""
    check_import_allowed(reference)
    if module_path.endswith(".py"):
        path = os.path.abspath(module_path)
        if not os.path.isfile(path):
            raise SpecError("model", reference, f"no such file: {module_path!r}")
        name = "vitbench_py_" + re.sub(r"\W", "_", path)
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, path)
        namespace = importlib.util.module_from_spec(spec)
        sys.modules[name] = namespace
        try:
            with model_code(lambda exc: ModelBuildError("model", reference, f"cannot import {module_path!r}: {type(exc).__name__}: {exc}")):
                spec.loader.exec_module(namespace)  # the user's file: its failure is one line
        except BaseException:
            del sys.modules[name]
            raise
        return namespace
    if not _MODULE.fullmatch(module_path):
        raise SpecError("model", reference, "must be py:package.module:factory or py:path/to/file.py:factory")
    try:
        return importlib.import_module(module_path)
    except ModuleNotFoundError as exc:
        here = os.getcwd()
        if exc.name != module_path.split(".")[0] or here in sys.path:
            raise SpecError("model", reference, f"cannot import {module_path!r}: {exc}") from None
        sys.path.insert(0, here)
        try:
            return importlib.import_module(module_path)
        except ImportError as again:
            raise SpecError("model", reference, f"cannot import {module_path!r} (also looked in {here}): {again}") from None
        finally:
            sys.path.remove(here)
    except ImportError as exc:
        raise SpecError("model", reference, f"cannot import {module_path!r}: {exc}") from None


def _split(reference: str, name: str) -> tuple[str, str]:
    module_path, _, attribute = name.rpartition(":")
    if not module_path or not _ATTRIBUTE.fullmatch(attribute):
        raise SpecError("model", reference, "must be py:package.module:factory or py:path/to/file.py:factory")
    if not module_path.endswith(".py") and not _MODULE.fullmatch(module_path):
        raise SpecError("model", reference, "must be py:package.module:factory or py:path/to/file.py:factory")
    return module_path, attribute


def check_reference(reference: str, name: str, kwargs: dict[str, Any]) -> str:
    """Everything a ``py:`` reference's text and the file system tell, imported nothing: its
    syntax, a module that exists and is the user's own code (the allow-list of
    :func:`~vitbench.models.sources.py_contract.check_static`), no download asked for. Returns
    the module's source file."""
    module_path, attribute = _split(reference, name)
    for key in ("pretrained", "weights"):  # the usual names for downloaded weights
        if kwargs.get(key) not in (None, False):
            raise no_network(reference, f"{key}={kwargs[key]}")
    return check_static(reference, module_path, attribute)


def _factory(reference: str, name: str, kwargs: dict[str, Any]) -> Any:
    """The factory a ``py:`` reference names, checked before its module is imported
    (:func:`check_reference`) and before it is ever called
    (:func:`~vitbench.models.sources.py_contract.check_factory`)."""
    check_reference(reference, name, kwargs)
    module_path, attribute = _split(reference, name)
    namespace = import_namespace(reference, module_path)
    check_module(reference, module_path, namespace)
    factory = getattr(namespace, attribute, None)
    if not callable(factory):
        public = [n for n in dir(namespace) if not n.startswith("_") and callable(getattr(namespace, n))]
        raise unknown(reference, f"factory in {module_path}", public, f"py:{module_path}:", attribute)
    check_factory(reference, factory)
    return factory


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


def _taken(factory: Any, overrides: dict[str, Any]) -> set[str]:
    takes = accepted(factory) or set()
    return {field for field in overrides if field in takes or field == "img_size"}


def taken(reference: str, name: str, kwargs: dict[str, Any], overrides: dict[str, Any]) -> set[str]:
    """The override names ``resolve`` would apply, from the factory's signature: read from the
    module's source when it tells (nothing imported), else the module is imported; the factory
    is never called."""
    path = check_reference(reference, name, kwargs)
    names = static_parameters(path, _split(reference, name)[1])
    if names is not None:
        return {field for field in overrides if field in names or field == "img_size"}
    return _taken(_factory(reference, name, kwargs), overrides)


def resolve(reference: str, name: str, kwargs: dict[str, Any], overrides: dict[str, Any], used: set[str]):
    factory = _factory(reference, name, kwargs)
    takes = accepted(factory) or set()
    shown = dict(kwargs)
    applied = _taken(factory, overrides)
    for field, value in overrides.items():
        if field in applied:
            shown[field] = typed(value)
            used.add(field)
    final = {k: v for k, v in shown.items() if k != "img_size" or k in takes}

    def build():
        return foreign_call(factory, **final)  # the user's factory: an unexpected keyword is theirs

    module = probe(reference, key_of("py", name, final), build)
    default = module_input_size(module)
    channels = final.get("in_chans", default[0] if default else 3)
    img_size = shown.get("img_size")
    if img_size is None and default is not None:
        img_size = default[1:]
    if img_size is None:
        raise SpecError("img_size", None, f"{reference} does not say its input size: give --img-size")
    size = input_size_of(img_size, channels)
    return finish(reference, "py", module, build, size, shown, library=library_of(module))
