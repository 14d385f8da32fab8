"""Checking the values of a sweep file (or of the equivalent command-line flags): one-line errors
``<file>: <key>=<value>: <reason>``, and the measured stage's settings, which are
:class:`vitbench.settings.RunSettings` fields under their own names."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from vitbench.errors import InputFileError, SpecError, shown
from vitbench.settings import MAX_BATCH_SIZE, MODES, PRECISIONS, RunSettings

#: sweep-file keys of earlier versions -> the RunSettings field that replaced them
RENAMED_SETTINGS = {"min_time": "min_run_time_s"}
#: RunSettings fields that are not a sweep's `measure:` keys (the batch size is a grid axis)
NOT_MEASURE_KEYS = ("batch_size",)


class SweepFileError(InputFileError):
    """A sweep file (or command-line grid) that is malformed or invalid."""


def measure_keys() -> tuple[str, ...]:
    """The keys of a sweep's ``measure:`` mapping: every RunSettings field but the batch size
    (``mode`` and ``precision`` take a list of alternatives, one row each)."""
    return tuple(f.name for f in fields(RunSettings) if f.name not in NOT_MEASURE_KEYS)


class Checker:
    """Builds one-line errors: '<label>: <key>=<value>: <reason>' (key renamed for the CLI)."""

    def __init__(self, label: str, rename: Callable[[str], str] | None = None):
        self.label = label
        self.rename = rename or (lambda key: key)

    def fail(self, key: str, value: Any, reason: str) -> SweepFileError:
        prefix = f"{self.label}: " if self.label else ""
        return SweepFileError(f"{prefix}{self.rename(key)}={shown(value)}: {reason}")

    def mapping(self, key: str, value: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(key, value, "must be a mapping of keys to values")
        for name in value:
            if name not in allowed:
                where = f"{key}.{name}" if key else str(name)
                raise self.fail(where, value[name], f"unknown key (allowed: {', '.join(allowed)})")
        return dict(value)

    def listof(self, key: str, value: Any, *, allow_scalar: bool = True) -> list[Any]:
        if isinstance(value, (list, tuple)):
            items = list(value)
        elif allow_scalar and value is not None and not isinstance(value, Mapping):
            items = [value]
        else:
            raise self.fail(key, value, "must be a list")
        if not items:
            raise self.fail(key, value, "must not be empty")
        return items

    def strings(self, key: str, value: Any, choices: tuple[str, ...] | None = None) -> tuple[str, ...]:
        out: list[str] = []
        for item in self.listof(key, value):
            if not isinstance(item, str) or not item.strip():
                raise self.fail(key, item, "must be a non-empty string")
            item = item.strip()
            if choices is not None and item not in choices:
                raise self.fail(key, item, f"must be one of {', '.join(choices)}")
            if item not in out:
                out.append(item)
        return tuple(out)

    def positive_ints(self, key: str, value: Any) -> tuple[int, ...]:
        out: list[int] = []
        for item in self.listof(key, value):
            if isinstance(item, str) and item.strip().isascii() and item.strip().isdigit() and len(item.strip()) <= 30:
                item = int(item.strip())
            if isinstance(item, bool) or not isinstance(item, int) or item <= 0:
                raise self.fail(key, item, "must be a positive integer")
            if item > MAX_BATCH_SIZE:
                raise self.fail(key, item, f"must be at most {MAX_BATCH_SIZE:,}")
            if item not in out:
                out.append(item)
        return tuple(out)

    def share(self, key: str, value: Any, most: float = 10.0) -> float:
        """A number from 0 to ``most`` (a share of a time: 0.5 = half of it)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= most:
            raise self.fail(key, value, f"must be a number from 0 to {most:g}")
        return float(value)

    def text(self, key: str, value: Any) -> str:
        if not isinstance(value, str):
            raise self.fail(key, value, "must be a string")
        return value

    # -- the measured stage -----------------------------------------------------------------
    def measure_values(self, key: str, value: Any) -> dict[str, Any]:
        """A ``measure:`` mapping with values coerced to the RunSettings field types (text from
        the command line included); ``mode``/``precision`` become tuples of alternatives.
        ``None`` values are left out (they mean "not given")."""
        if value is None:
            return {}
        if isinstance(value, Mapping):
            for old, new in RENAMED_SETTINGS.items():
                if old in value:
                    raise self.fail(f"{key}.{old}", value[old], f"renamed to {self.rename(f'{key}.{new}')} (the RunSettings field)")
        data = self.mapping(key, value, measure_keys())
        types = {f.name: str(f.type) for f in fields(RunSettings)}
        out: dict[str, Any] = {}
        for name, item in data.items():
            where = f"{key}.{name}"
            if item is None:
                continue
            if name in ("mode", "precision"):
                out[name] = self.strings(where, item, MODES if name == "mode" else PRECISIONS)
            else:
                out[name] = self._typed(where, item, types[name])
        return out

    def _typed(self, where: str, value: Any, annotation: str) -> Any:
        optional = annotation.endswith("None")
        if isinstance(value, str):
            text = value.strip()
            if optional and text.lower() in ("none", "null", ""):
                return None
            if annotation.startswith("bool"):
                lowered = text.lower()
                if lowered not in ("true", "false"):
                    raise self.fail(where, value, "must be true or false")
                return lowered == "true"
            if annotation.startswith(("int", "float")):
                try:
                    return int(text) if annotation.startswith("int") else float(text)
                except ValueError:
                    kind = "an integer" if annotation.startswith("int") else "a number"
                    raise self.fail(where, value, f"must be {kind}") from None
            return text
        if annotation.startswith("float") and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if annotation.startswith(("int", "float")) and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise self.fail(where, value, f"must be {'an integer' if annotation.startswith('int') else 'a number'}")
        return value

    def settings(self, key: str, values: Mapping[str, Any]) -> tuple[RunSettings, tuple[str, ...], tuple[str, ...]]:
        """RunSettings (mode/precision = the first alternative) and the mode and precision
        alternatives; every combination is validated by RunSettings itself."""
        values = dict(values)
        modes = tuple(values.pop("mode", ("infer",)))
        precisions = tuple(values.pop("precision", ("fp32",)))
        settings = None
        for mode in modes:
            for precision in precisions:
                try:
                    built = RunSettings(mode=mode, precision=precision, **values)
                except SpecError as exc:
                    raise self.fail(f"{key}.{exc.field}", exc.value, exc.reason) from None
                settings = settings or built
        assert settings is not None
        return settings, modes, precisions


#: a sweep file's YAML, expanded: at most this many values and this many levels
MAX_YAML_VALUES = 1_000_000
MAX_YAML_DEPTH = 64


def check_yaml_shape(root: Any, path: Path) -> None:
    """Refuse, on the composed node graph (aliases not yet expanded), a document that would
    expand to more than MAX_YAML_VALUES values (an alias bomb: 539 bytes became gigabytes),
    nest deeper than MAX_YAML_DEPTH, or repeat a key in a mapping (YAML keeps the last one
    silently)."""
    import yaml

    if root is None:
        return
    sizes: dict[int, int] = {}
    stack: list[tuple[Any, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, children_done = stack.pop()
        if id(node) in sizes:
            continue
        if depth > MAX_YAML_DEPTH:
            raise SweepFileError(f"{path}: invalid YAML at line {node.start_mark.line + 1}: nested deeper than {MAX_YAML_DEPTH} levels")
        if isinstance(node, yaml.ScalarNode):
            sizes[id(node)] = 1
            continue
        children = [v for pair in node.value for v in pair] if isinstance(node, yaml.MappingNode) else list(node.value)
        if not children_done:
            if isinstance(node, yaml.MappingNode):
                seen: set[str] = set()
                for key, _ in node.value:
                    if isinstance(key, yaml.ScalarNode):
                        if key.value in seen:
                            raise SweepFileError(f"{path}: invalid YAML at line {key.start_mark.line + 1}: duplicate key {key.value!r}")
                        seen.add(key.value)
            stack.append((node, depth, True))
            stack.extend((child, depth + 1, False) for child in children if id(child) not in sizes)
            continue
        total = 1 + sum(sizes.get(id(child), 1) for child in children)
        if total > MAX_YAML_VALUES:
            raise SweepFileError(
                f"{path}: invalid YAML at line {node.start_mark.line + 1}: expands to more than {MAX_YAML_VALUES:,} values "
                "(YAML aliases repeating aliases)"
            )
        sizes[id(node)] = total


__all__ = ["MAX_YAML_DEPTH", "MAX_YAML_VALUES", "RENAMED_SETTINGS", "Checker", "SweepFileError", "check_yaml_shape", "measure_keys"]


def parse_text(text: str, path: Path) -> Any:
    """A sweep file's text as data, by its suffix (``.toml``, ``.yaml``/``.yml``): one line
    naming the position for invalid syntax, the YAML's shape checked before it is built."""
    if path.suffix.lower() == ".toml":
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            import tomli as tomllib  # type: ignore[no-redef]
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise SweepFileError(f"{path}: invalid TOML: {exc}") from None
        except RecursionError:
            raise SweepFileError(f"{path}: invalid TOML: nested too deeply") from None
        except ValueError:  # an integer of more digits than Python reads (4,300)
            raise SweepFileError(f"{path}: invalid TOML: a number of more than 4,300 digits") from None
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise SweepFileError(f"file={str(path)!r}: a sweep file must end in .yaml, .yml or .toml")
    import yaml

    try:
        # parsed once (composed, its shape checked, then built), by libyaml where installed: the
        # pure-Python parser took 70 s, twice, for a 1 MB file of 500,000 values
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
        try:
            node = loader.get_single_node()
            check_yaml_shape(node, path)
            return None if node is None else loader.construct_document(node)
        finally:
            loader.dispose()
    except RecursionError:
        raise SweepFileError(f"{path}: invalid YAML: nested too deeply") from None
    except ValueError:  # an integer of more digits than Python reads (4,300)
        raise SweepFileError(f"{path}: invalid YAML: a number of more than 4,300 digits") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        problem = " ".join(str(exc.problem or exc.context or "syntax error").split())
        problem = "nested too deeply" if "nesting depth" in problem else problem  # libyaml's words
        raise SweepFileError(f"{path}: invalid YAML at {where}: {problem}") from None
    except yaml.YAMLError as exc:
        raise SweepFileError(f"{path}: invalid YAML: {' '.join(str(exc).split())}") from None
