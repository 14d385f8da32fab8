"""``py:package.module:factory``: a user's own factory returning an ``nn.Module``; the module is
imported from the path or the current directory, or given as a file: ``py:./models.py:tiny``.

Keyword arguments in the reference are passed to the factory (``pretrained``/``weights`` are
refused: nothing is downloaded); override flags are passed when the factory names them as
parameters (``--img-size`` also sets the input size). Input size:
--img-size, else the module's own metadata (timm ``pretrained_cfg``, an ``image_size`` or
``img_size`` attribute, an hf ``config.image_size``), else a one-line error.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from typing import Any

from vitbench.errors import SpecError
from vitbench.models.sources.common import accepted, finish, key_of, probe, typed
from vitbench.models.target import input_size_of, no_network, unknown

_MODULE = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*")
_ATTRIBUTE = re.compile(r"[A-Za-z_][\w]*")


def import_namespace(reference: str, module_path: str) -> Any:
    """The module a ``py:`` reference names: a dotted module importable from ``sys.path`` or,
    failing that, from the current directory (``vitbench`` run as a console script does not
    put it on the path); or a ``.py`` file by its path (relative to the current directory)."""
    import os
    import sys

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
            spec.loader.exec_module(namespace)
        except Exception as exc:  # noqa: BLE001 - the user's file failed: say so in one line
            del sys.modules[name]
            raise SpecError("model", reference, f"cannot import {module_path!r}: {type(exc).__name__}: {exc}") from None
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


def _factory(reference: str, name: str, kwargs: dict[str, Any]) -> Any:
    """The factory a ``py:`` reference names, checked before it is ever called: a Python
    function (or method, or ``functools.partial``) or an ``nn.Module`` class. A built-in such as
    ``os.system`` or another class is refused, so naming one runs nothing."""
    import functools
    import inspect

    module_path, _, attribute = name.rpartition(":")
    if not module_path or not _ATTRIBUTE.fullmatch(attribute):
        raise SpecError("model", reference, "must be py:package.module:factory or py:path/to/file.py:factory")
    namespace = import_namespace(reference, module_path)
    factory = getattr(namespace, attribute, None)
    if not callable(factory):
        public = [n for n in dir(namespace) if not n.startswith("_") and callable(getattr(namespace, n))]
        raise unknown(reference, f"factory in {module_path}", public, f"py:{module_path}:", attribute)
    if isinstance(factory, type):
        from torch import nn

        if not issubclass(factory, nn.Module):
            raise SpecError("model", reference, f"is the class {factory.__qualname__}, not an nn.Module class or a factory function")
    elif not (inspect.isfunction(factory) or inspect.ismethod(factory) or isinstance(factory, functools.partial)):
        raise SpecError("model", reference, f"is a {type(factory).__name__}, not a Python factory function or nn.Module class; it was not called")
    for key in ("pretrained", "weights"):  # the usual names for downloaded weights
        if kwargs.get(key) not in (None, False):
            raise no_network(reference, f"{key}={kwargs[key]}")
    return factory


def _taken(factory: Any, overrides: dict[str, Any]) -> set[str]:
    takes = accepted(factory) or set()
    return {field for field in overrides if field in takes or field == "img_size"}


def taken(reference: str, name: str, kwargs: dict[str, Any], overrides: dict[str, Any]) -> set[str]:
    """The override names ``resolve`` would apply, from the factory's signature: the module is
    imported, the factory is not called."""
    return _taken(_factory(reference, name, kwargs), overrides)


def resolve(reference: str, name: str, kwargs: dict[str, Any], overrides: dict[str, Any], used: set[str]):
    from vitbench.models.inputs import library_of, module_input_size

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
        return factory(**final)

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
