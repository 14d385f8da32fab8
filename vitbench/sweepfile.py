"""Sweep files: a grid of model configurations in YAML or TOML, validated into a :class:`SweepPlan`.

Schema (every key optional unless marked; unknown keys are errors)::

    name: patch-study            # label of the sweep (default: the file's stem)
    description: text            # free text, copied into the report
    out: results/patch-study     # where `vitbench sweep` stores results (default results/<name>)
    models: [cifar-vit/4]        # REQUIRED (here or in every study): preset names, see `vitbench models`
    grid:                        # spec field -> list of alternatives (a scalar means one value)
      patch_size: [4, 8, 16]
      img_size: [32, 64]         # a non-square size is written "224x160"
      layers: [[2, 2, 2, 2], [3, 4, 6, 3]]   # list-valued fields: a list of lists
    batch_sizes: [1, 8]          # positive integers (default [1])
    stages: [analytic, counters, measured]   # default [analytic]
    counters: [fvcore, dispatch] # for the counters stage (default both)
    measure:                     # for the measured stage
      device: cpu                # auto | cpu | cuda (default auto)
      mode: [infer, train]       # infer | train, one or a list (default infer)
      precision: [fp32]          # fp32 | bf16 | fp16, one or a list (default fp32)
      min_time: 0.5              # seconds of timed steps per configuration (> 0)
      warmup: 3                  # warm-up steps (>= 0)
      threads: 2                 # CPU threads (default: torch's)
      channels_last: false
      compile: false
      attention: sdpa            # sdpa | math (default: the spec's)
      optimizer: adamw           # adamw | sgd (train mode)
      memory: true               # run the separate peak-memory pass
      isolate: false             # one subprocess per configuration
    studies:                     # optional: several sub-grids in one sweep
      - name: resolution         # REQUIRED in a study; becomes the `study` column
        models: [vit-b/16, resnet50]
        grid: {img_size: [224, 384, 512]}
        # any top-level key above except name/out/studies; missing keys are inherited
        # (a study's `measure` is merged key by key over the top-level one)

A grid field must be a field of at least one of the models (a field that does not apply to a
model kind is skipped for that model: ``patch_size`` for a ResNet). TOML files use the same keys
(``[grid]``, ``[measure]``, ``[[studies]]``). Errors are one line naming the file, the key and the
value (:class:`SweepFileError`, exit code 2); a file that is not valid YAML/TOML names the line.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from vitbench.errors import InputFileError
from vitbench.results import read_input_text
from vitbench.specs import SPEC_TYPES, spec_fields

from vitbench.settings import ATTENTIONS, COUNTERS, DEVICES, MODES, OPTIMIZERS, PRECISIONS, STAGES

TOP_KEYS = ("name", "description", "out", "models", "grid", "batch_sizes", "stages", "counters", "measure", "studies")
STUDY_KEYS = ("name", "description", "models", "grid", "batch_sizes", "stages", "counters", "measure")
#: spec fields whose single value is itself a list (alternatives are then a list of lists)
LIST_FIELDS = {"layers": 1, "widths": 1, "fc_dims": 1, "stages": 2}


class SweepFileError(InputFileError):
    """A sweep file (or command-line grid) that is malformed or invalid."""


@dataclass(frozen=True)
class MeasureSettings:
    """Measured-stage settings of a study. ``modes``/``precisions`` multiply the grid."""

    device: str = "auto"
    modes: tuple[str, ...] = ("infer",)
    precisions: tuple[str, ...] = ("fp32",)
    min_time: float | None = None
    warmup: int | None = None
    threads: int | None = None
    channels_last: bool = False
    compile: bool = False
    attention: str | None = None
    optimizer: str = "adamw"
    memory: bool = True
    isolate: bool = False

    def identity(self) -> dict[str, Any]:
        """Settings that change a measured result (everything but the grid axes)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("modes", "precisions")}


@dataclass(frozen=True)
class Study:
    """One sub-grid: models x product(grid values) x batch sizes (x modes x precisions)."""

    name: str
    models: tuple[str, ...]
    grid: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    batch_sizes: tuple[int, ...] = (1,)
    stages: tuple[str, ...] = ("analytic",)
    counters: tuple[str, ...] = COUNTERS
    measure: MeasureSettings = field(default_factory=MeasureSettings)
    description: str = ""


@dataclass(frozen=True)
class SweepPlan:
    name: str
    studies: tuple[Study, ...]
    description: str = ""
    out: str | None = None
    source: str | None = None


# --- loading ---------------------------------------------------------------------------------
def load_sweep_file(path: str | os.PathLike) -> SweepPlan:
    """Read and validate a ``.yaml``/``.yml``/``.toml`` sweep file."""
    path = Path(path)
    text = read_input_text(path, f"sweep file={str(path)!r}", SweepFileError)
    data = parse_text(text, path)
    return validate(data, default_name=path.stem, label=str(path), source=str(path))


def parse_text(text: str, path: Path) -> Any:
    if path.suffix.lower() == ".toml":
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            import tomli as tomllib  # type: ignore[no-redef]
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise SweepFileError(f"{path}: invalid TOML: {exc}") from None
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise SweepFileError(f"file={str(path)!r}: a sweep file must end in .yaml, .yml or .toml")
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        problem = " ".join(str(exc.problem or exc.context or "syntax error").split())
        raise SweepFileError(f"{path}: invalid YAML at {where}: {problem}") from None
    except yaml.YAMLError as exc:
        raise SweepFileError(f"{path}: invalid YAML: {' '.join(str(exc).split())}") from None


# --- validation ------------------------------------------------------------------------------
class _Checker:
    """Builds one-line errors: '<label>: <key>=<value>: <reason>' (key renamed for the CLI)."""

    def __init__(self, label: str, rename: Callable[[str], str] | None = None):
        self.label = label
        self.rename = rename or (lambda key: key)

    def fail(self, key: str, value: Any, reason: str) -> SweepFileError:
        prefix = f"{self.label}: " if self.label else ""
        return SweepFileError(f"{prefix}{self.rename(key)}={value!r}: {reason}")

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
        items = self.listof(key, value)
        out = []
        for item in items:
            if not isinstance(item, str) or not item.strip():
                raise self.fail(key, item, "must be a non-empty string")
            item = item.strip()
            if choices is not None and item not in choices:
                raise self.fail(key, item, f"must be one of {', '.join(choices)}")
            if item not in out:
                out.append(item)
        return tuple(out)

    def positive_ints(self, key: str, value: Any) -> tuple[int, ...]:
        out = []
        for item in self.listof(key, value):
            if isinstance(item, str) and item.strip().isdigit():
                item = int(item.strip())
            if isinstance(item, bool) or not isinstance(item, int) or item <= 0:
                raise self.fail(key, item, "must be a positive integer")
            if item not in out:
                out.append(item)
        return tuple(out)

    def choice(self, key: str, value: Any, choices: tuple[str, ...]) -> str:
        if value not in choices:
            raise self.fail(key, value, f"must be one of {', '.join(choices)}")
        return value

    def boolean(self, key: str, value: Any) -> bool:
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no", "1", "0"):
            return value.strip().lower() in ("true", "yes", "1")
        if not isinstance(value, bool):
            raise self.fail(key, value, "must be true or false")
        return value

    def number(self, key: str, value: Any, *, integer: bool, minimum: float, strict: bool) -> Any:
        if isinstance(value, str):
            try:
                value = int(value) if integer else float(value)
            except ValueError:
                raise self.fail(key, value, f"must be {'an integer' if integer else 'a number'}") from None
        kinds = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise self.fail(key, value, f"must be {'an integer' if integer else 'a number'}")
        if value < minimum or (strict and value == minimum):
            raise self.fail(key, value, f"must be {'>' if strict else '>='} {minimum:g}")
        return value if integer else float(value)


def _all_fields() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for kind, spec_type in SPEC_TYPES.items():
        for f in fields(spec_type):
            if f.name != "name":
                out.setdefault(f.name, []).append(kind)
    return out


def _nesting(value: Any) -> int:
    depth = 0
    while isinstance(value, (list, tuple)) and value:
        depth += 1
        value = value[0]
    return depth


def _grid(check: _Checker, key: str, value: Any) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise check.fail(key, value, "must be a mapping of spec field to a list of values")
    known = _all_fields()
    out = []
    for name, values in value.items():
        where = f"{key}.{name}"
        if name not in known:
            raise check.fail(where, values, f"unknown spec field (fields: {', '.join(sorted(known))})")
        if isinstance(values, Mapping) or values is None:
            raise check.fail(where, values, "must be a value or a list of values")
        single_depth = LIST_FIELDS.get(name, 0)
        if single_depth and _nesting(values) == single_depth:
            alternatives = [values]
        elif isinstance(values, (list, tuple)):
            alternatives = list(values)
        else:
            alternatives = [values]
        if not alternatives:
            raise check.fail(where, values, "must not be empty")
        for alt in alternatives:
            if isinstance(alt, Mapping) or alt is None and name not in ("mlp_hidden_dim", "pos_embed_len"):
                raise check.fail(where, alt, "is not a valid value")
            if not single_depth and isinstance(alt, (list, tuple)) and name != "img_size":
                raise check.fail(where, alt, "must be a scalar (give alternatives as a flat list)")
        frozen = tuple(_freeze(a) for a in alternatives)
        unique = tuple(dict.fromkeys(frozen))
        out.append((str(name), unique))
    return tuple(out)


def _freeze(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def _measure(check: _Checker, key: str, value: Any, base: MeasureSettings) -> MeasureSettings:
    if value is None:
        return base
    allowed = (
        "device", "mode", "precision", "min_time", "warmup", "threads", "channels_last",
        "compile", "attention", "optimizer", "memory", "isolate",
    )
    data = check.mapping(key, value, allowed)
    changes: dict[str, Any] = {}
    for name, item in data.items():
        where = f"{key}.{name}"
        if name == "device":
            changes["device"] = check.choice(where, item, DEVICES)
        elif name == "mode":
            changes["modes"] = check.strings(where, item, MODES)
        elif name == "precision":
            changes["precisions"] = check.strings(where, item, PRECISIONS)
        elif name == "min_time":
            changes["min_time"] = check.number(where, item, integer=False, minimum=0, strict=True)
        elif name == "warmup":
            changes["warmup"] = check.number(where, item, integer=True, minimum=0, strict=False)
        elif name == "threads":
            changes["threads"] = None if item is None else check.number(where, item, integer=True, minimum=0, strict=True)
        elif name in ("channels_last", "compile", "memory", "isolate"):
            changes[name] = check.boolean(where, item)
        elif name == "attention":
            changes["attention"] = None if item is None else check.choice(where, item, ATTENTIONS)
        elif name == "optimizer":
            changes["optimizer"] = check.choice(where, item, OPTIMIZERS)
    from dataclasses import replace

    return replace(base, **changes)


def _study(check: _Checker, data: dict[str, Any], defaults: dict[str, Any], prefix: str, name: str) -> Study:
    def get(key: str) -> Any:
        return data[key] if key in data else defaults.get(key)

    def where(key: str) -> str:
        return f"{prefix}{key}"

    models_value = get("models")
    if models_value is None:
        raise check.fail(where("models"), None, "is required (a list of preset names)")
    models = check.strings(where("models"), models_value)
    from vitbench.presets import get_preset

    kinds = set()
    for model in models:
        try:
            kinds.add(get_preset(model).spec.kind)
        except Exception as exc:  # UnknownModelError: keep its "did you mean" hint
            raise check.fail(where("models"), model, str(exc).split(": ", 1)[-1]) from None
    grid = _grid(check, where("grid"), get("grid"))
    known = _all_fields()
    for field_name, values in grid:
        if not kinds.intersection(known[field_name]):
            raise check.fail(
                f"{where('grid')}.{field_name}",
                list(values) if len(values) > 1 else values[0],
                f"does not apply to any of the models ({'/'.join(sorted(kinds))} models have no such field)",
            )
    from vitbench.errors import SpecError
    from vitbench.specs import parse_field_value

    for field_name, values in grid:
        for spec_type in {type(get_preset(m).spec) for m in models}:
            if field_name not in spec_fields(spec_type):
                continue
            for value in values:
                try:
                    parse_field_value(spec_type, field_name, value)
                except SpecError as exc:
                    raise check.fail(f"{where('grid')}.{field_name}", value, exc.reason) from None
    batch_value = get("batch_sizes")
    batch_sizes = (1,) if batch_value is None else check.positive_ints(where("batch_sizes"), batch_value)
    stages_value = get("stages")
    stages = ("analytic",) if stages_value is None else check.strings(where("stages"), stages_value, STAGES)
    counters_value = get("counters")
    counters = COUNTERS if counters_value is None else check.strings(where("counters"), counters_value, COUNTERS)
    measure = _measure(check, "measure", defaults.get("measure"), MeasureSettings())
    if "measure" in data:
        measure = _measure(check, where("measure"), data["measure"], measure)
    description = get("description") or ""
    if not isinstance(description, str):
        raise check.fail(where("description"), description, "must be a string")
    return Study(
        name=name, models=models, grid=grid, batch_sizes=batch_sizes, stages=stages,
        counters=counters, measure=measure, description=description,
    )


def validate(
    data: Any,
    *,
    default_name: str = "sweep",
    label: str = "sweep file",
    source: str | None = None,
    rename: Callable[[str], str] | None = None,
) -> SweepPlan:
    """Check a parsed sweep file (or the equivalent dict built from command-line flags)."""
    check = _Checker(label, rename)
    if data is None:
        raise SweepFileError(f"{label}: the file is empty (expected a mapping with at least 'models')")
    if not isinstance(data, Mapping):
        raise SweepFileError(f"{label}: the top level must be a mapping of keys (got a {type(data).__name__})")
    top = check.mapping("", data, TOP_KEYS)
    name = top.get("name", default_name)
    if not isinstance(name, str) or not name.strip() or "/" in name:
        raise check.fail("name", name, "must be a non-empty string without '/'")
    out = top.get("out")
    if out is not None and (not isinstance(out, str) or not out.strip()):
        raise check.fail("out", out, "must be a directory path")
    description = top.get("description", "")
    if not isinstance(description, str):
        raise check.fail("description", description, "must be a string")
    defaults = {k: v for k, v in top.items() if k not in ("name", "out", "studies", "description")}
    if top.get("studies") is None:
        studies = (_study(check, defaults, {}, "", name),)
    else:
        entries = check.listof("studies", top["studies"], allow_scalar=False)
        studies_list = []
        seen: set[str] = set()
        for i, entry in enumerate(entries):
            prefix = f"studies[{i}]."
            study_data = check.mapping(f"studies[{i}]", entry, STUDY_KEYS)
            study_name = study_data.get("name")
            if not isinstance(study_name, str) or not study_name.strip():
                raise check.fail(f"{prefix}name", study_name, "is required (a non-empty string)")
            if study_name in seen:
                raise check.fail(f"{prefix}name", study_name, "is used by two studies")
            seen.add(study_name)
            studies_list.append(_study(check, study_data, defaults, prefix, study_name))
        studies = tuple(studies_list)
    return SweepPlan(name=name.strip(), studies=studies, description=description, out=out, source=source)


def default_study_path() -> Path:
    """The built-in default study (`vitbench report` with no arguments)."""
    return Path(__file__).parent / "data" / "default_study.yaml"


__all__ = [
    "SweepFileError",
    "MeasureSettings",
    "Study",
    "SweepPlan",
    "load_sweep_file",
    "validate",
    "default_study_path",
    "STAGES",
]
