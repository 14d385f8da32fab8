"""Sweep files and command-line flags -> a validated :class:`SweepPlan`.

Sweep-file schema (YAML or TOML; every key optional unless marked; unknown keys are errors)::

    name: patch-study            # label of the sweep (default: the file's stem)
    description: text            # free text, copied into the report
    out: results/patch-study     # where `vitbench sweep` stores results (default results/<name>)
    models: [cifar-vit/4]        # REQUIRED (here or in every study): presets or references
                                 # (timm:..., torchvision:...), see `vitbench models`
    grid:                        # spec field -> list of alternatives (a scalar means one value)
      patch_size: [4, 8, 16]
      img_size: [32, 64]         # a non-square size is written "224x160"
      layers: [[2, 2, 2, 2], [3, 4, 6, 3]]   # list-valued fields: a list of lists
    batch_sizes: [1, 8]          # positive integers (default [1])
    stages: [analytic, counters, predict, measured]   # default [analytic]; predict = the time model
    counters: [fvcore, dispatch] # for the counters stage (default both)
    measure:                     # the measured stage: RunSettings fields, under their own names
      device: cpu                # auto | cpu | cuda
      mode: [infer, train]       # one or a list (alternatives: one row each)
      precision: [fp32]          # one or a list
      min_run_time_s: 0.5        # (was `min_time`: now an error naming the new key)
      warmup: 3
      runs: 5                    # fresh worker processes per configuration
      threads: 2                 # ... and every other field of vitbench.settings.RunSettings
    studies:                     # optional: several sub-grids in one sweep
      - name: resolution         # REQUIRED in a study; becomes the `study` column
        models: [vit-b/16, resnet50]
        grid: {img_size: [224, 384, 512]}

A study inherits every top-level key it does not set; ``grid`` and ``measure`` are merged field
by field (the study's value of a field wins), so a top-level ``grid: {img_size: [...]}`` applies
to every study, and a top-level grid field that a study's models do not have is skipped for
that study. A grid field must be a field of at least one of the models (``patch_size`` is
skipped for a ResNet). Errors are one line naming the file, the key and the value
(:class:`SweepFileError`, exit code 2); a file that is not valid YAML/TOML names the line.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from vitbench.errors import SpecError, VitbenchError
from vitbench.input_files import MAX_SWEEP_FILE_BYTES
from vitbench.models.references import overrides_taken, resolve
from vitbench.models.sources.py_factory import check_reference
from vitbench.results import read_input_text
from vitbench.settings import COUNTERS, STAGES, RunSettings
from vitbench.specs import SPEC_TYPES, parse_field_value, spec_fields
from vitbench.specs.model_ref import ModelRef
from vitbench.sweeps.schema import Checker, SweepFileError, parse_text

TOP_KEYS = ("name", "description", "out", "remeasure", "models", "grid", "batch_sizes", "stages", "counters", "measure", "studies")
STUDY_KEYS = ("name", "description", "models", "grid", "batch_sizes", "stages", "counters", "measure")


@dataclass(frozen=True)
class Study:
    """One sub-grid: models x product(grid values) x batch sizes (x modes x precisions).

    ``measure`` holds the measured stage's settings (mode and precision = the first of
    ``modes``/``precisions``, batch size = 1: the grid sets those per configuration)."""

    name: str
    models: tuple[str, ...]
    grid: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    batch_sizes: tuple[int, ...] = (1,)
    stages: tuple[str, ...] = ("analytic",)
    counters: tuple[str, ...] = COUNTERS
    measure: RunSettings = field(default_factory=RunSettings)
    modes: tuple[str, ...] = ("infer",)
    precisions: tuple[str, ...] = ("fp32",)
    description: str = ""
    #: ``models`` parsed, once (:class:`ModelRef`); filled from ``models`` when not given
    refs: tuple[ModelRef, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if tuple(ref.text for ref in self.refs) != tuple(self.models):
            object.__setattr__(self, "refs", tuple(ModelRef.parse(model) for model in self.models))

    @property
    def measured(self) -> bool:
        return "measured" in self.stages

    @property
    def per_step(self) -> bool:
        """Rows per mode and precision: the predict and measured stages are about one step."""
        return "measured" in self.stages or "predict" in self.stages

    def identity(self) -> dict[str, Any]:
        """What determines the study's rows (the fingerprint's input): settings count only for a
        measured study, counters only with the counters stage."""
        data: dict[str, Any] = {
            "name": self.name, "models": list(self.models),
            "grid": [[name, [_plain(v) for v in values]] for name, values in self.grid],
            "batch_sizes": list(self.batch_sizes), "stages": sorted(self.stages),
        }
        if "counters" in self.stages:
            data["counters"] = sorted(self.counters)
        if self.per_step:
            data["modes"], data["precisions"] = list(self.modes), list(self.precisions)
            data["measure"] = measure_identity(self.measure)
        return data


@dataclass(frozen=True)
class SweepPlan:
    name: str
    studies: tuple[Study, ...]
    description: str = ""
    out: str | None = None
    source: str | None = None
    remeasure: float = 0.0  # the unfit measured rows measured again, within this share of their time (sweeps.remeasure)

    @property
    def fingerprint(self) -> str:
        """sha256 (first 16 hex digits) of the definition: the studies' models, grid, batch
        sizes, stages, counters and measure settings; not the names (of the sweep or of its
        studies: ``--name`` renames a sweep without making its store foreign), description or out."""
        identities = [{k: v for k, v in s.identity().items() if k != "name"} for s in self.studies]
        text = json.dumps(identities, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    @property
    def legacy_fingerprint(self) -> str:
        """The fingerprint as vitbench computed it before study names were left out: a store
        written then still resumes."""
        text = json.dumps([s.identity() for s in self.studies], sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def measure_identity(settings: RunSettings) -> dict[str, Any]:
    """Settings that change a measured result, less the per-configuration grid axes."""
    return {k: v for k, v in settings.to_dict().items() if k not in ("mode", "precision", "batch_size")}


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


def _freeze(value: Any) -> Any:
    return tuple(_freeze(v) for v in value) if isinstance(value, (list, tuple)) else value


# --- loading ---------------------------------------------------------------------------------
def load_sweep_file(path: str | os.PathLike) -> SweepPlan:
    """Read and validate a ``.yaml``/``.yml``/``.toml`` sweep file."""
    path = Path(path)

    text = read_input_text(path, f"sweep file={str(path)!r}", SweepFileError, max_bytes=MAX_SWEEP_FILE_BYTES)
    return validate(parse_text(text, path), default_name=path.stem, label=str(path), source=str(path))


# --- validation ------------------------------------------------------------------------------
def _all_fields() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for kind, spec_type in SPEC_TYPES.items():
        for f in fields(spec_type):
            if f.name != "name":
                out.setdefault(f.name, []).append(kind)
    return out


def _list_depth(name: str) -> int | None:
    """How deep one value of spec field ``name`` nests: 0 for a scalar (and ``img_size``), 1 for
    a list (``layers``), 2 for a list of lists (``stages``); None when kinds disagree (Swin's
    ``num_heads`` is a list, a ViT's a number): then a flat list holds alternatives."""
    depths = set()
    for spec_type in SPEC_TYPES.values():
        f = spec_fields(spec_type).get(name)
        if f is not None:
            annotation = str(f.type)
            depths.add(0 if name == "img_size" or not annotation.startswith("tuple") else 2 if annotation.startswith("tuple[tuple") else 1)
    return depths.pop() if len(depths) == 1 else None


def _nesting(value: Any) -> int:
    """How deep ``value`` nests lists; a list of text (the command line's ``--layers
    '2,2,2,2;3,4,6,3'`` gives ['2,2,2,2', '3,4,6,3']) nests one level less: each text is a
    whole value, so the list holds alternatives."""
    depth = 0
    while isinstance(value, (list, tuple)) and value:
        depth += 1
        value = value[0]
    return depth - 1 if isinstance(value, str) and depth else depth


def _is_plain_value(value: Any) -> bool:
    """Text, a number, true/false, none, or a list of them (a TOML date is none of these)."""
    if isinstance(value, (list, tuple)):
        return all(_is_plain_value(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


def _grid(check: Checker, key: str, value: Any) -> dict[str, tuple[Any, ...]]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise check.fail(key, value, "must be a mapping of spec field to a list of values")
    known = _all_fields()
    out: dict[str, tuple[Any, ...]] = {}
    for name, values in value.items():
        where = f"{key}.{name}"
        if name not in known:
            raise check.fail(where, values, f"unknown spec field (fields: {', '.join(sorted(known))})")
        if isinstance(values, Mapping) or values is None:
            raise check.fail(where, values, "must be a value or a list of values")
        single_depth = _list_depth(name)
        if single_depth and _nesting(values) == single_depth:
            alternatives = [values]
        elif isinstance(values, (list, tuple)):
            alternatives = list(values)
        else:
            alternatives = [values]
        if not alternatives:
            raise check.fail(where, values, "must not be empty")
        for alt in alternatives:
            if isinstance(alt, Mapping) or alt is None and name not in ("mlp_hidden_dim", "pos_embed_len") or not _is_plain_value(alt):
                raise check.fail(where, alt, "is not a valid value")
            if single_depth == 0 and isinstance(alt, (list, tuple)) and name != "img_size":
                raise check.fail(where, alt, "must be a scalar (give alternatives as a flat list)")
        out[str(name)] = tuple(dict.fromkeys(_freeze(a) for a in alternatives))
    return out


def model_kinds(check: Checker, key: str, models: Sequence[str], first: Mapping[str, Any]) -> dict[ModelRef, type | None]:
    """Each model parsed once (:class:`ModelRef`, the value the grid carries) -> its preset's
    spec type, None for a reference, through the one model resolution
    (:mod:`vitbench.models.references`). A reference is checked without being built, its
    ``py:`` module imported or its factory called (unknown names, downloads); only a timm model, whose arguments only
    its class shows, is instantiated on the meta device, with the first value of each grid
    field (a factory may need --img-size to have an input size)."""
    out: dict[ModelRef, type | None] = {}
    for model in models:
        try:
            ref = ModelRef.parse(model)
            if ref.is_preset:
                out[ref] = type(resolve(ref).spec)
                continue
            if ref.source == "py":  # checked from its text: its module is imported when the sweep runs

                check_reference(ref.reference, ref.name, ref.typed_args())
                out[ref] = None
                continue
            try:
                overrides_taken(ref, first)
            except SpecError:  # the first grid values may not suit it: its own defaults may
                overrides_taken(ref, {})
        except VitbenchError as exc:  # UnknownModelError, SpecError, a model that fails: keep the hint after the key
            raise check.fail(key, model, str(exc).split(": ", 1)[-1]) from None
        out[ref] = None
    return out


def _check_grid(check: Checker, where: str, grid: dict[str, tuple[Any, ...]], own: set[str], kinds: dict[ModelRef, type | None]) -> dict[str, tuple[Any, ...]]:
    """Keep the fields that apply to a model of the study; a field of the study's own grid that
    applies to none is an error, an inherited one is skipped."""
    types = {t for t in kinds.values() if t is not None}
    references = any(t is None for t in kinds.values())
    kept: dict[str, tuple[Any, ...]] = {}
    for name, values in grid.items():
        applies = [t for t in types if name in spec_fields(t)]
        if not applies and not references:
            if name not in own:
                continue
            raise check.fail(
                f"{where}.{name}", list(values) if len(values) > 1 else values[0],
                f"does not apply to any of the models ({'/'.join(sorted(t.kind for t in types))} models have no such field)",
            )
        for spec_type in applies:
            for value in values:
                try:
                    parse_field_value(spec_type, name, value)
                except SpecError as exc:
                    raise check.fail(f"{where}.{name}", value, exc.reason) from None
        kept[name] = values
    return kept


def _study(check: Checker, data: dict[str, Any], top: dict[str, Any], prefix: str, name: str) -> Study:
    def get(key: str) -> Any:
        return data[key] if key in data else top.get(key)

    models_value = get("models")
    if models_value is None:
        raise check.fail(f"{prefix}models", None, "is required (a list of preset names)")
    models = check.strings(f"{prefix}models", models_value)
    own = _grid(check, f"{prefix}grid", data.get("grid")) if prefix else {}
    inherited = _grid(check, "grid", top.get("grid"))
    merged = {**inherited, **own} if prefix else inherited
    kinds = model_kinds(check, f"{prefix}models", models, {name: values[0] for name, values in merged.items()})
    grid = _check_grid(check, f"{prefix}grid", merged, set(own) if prefix else set(merged), kinds)
    batch_value = get("batch_sizes")
    stages_value = get("stages")
    counters_value = get("counters")
    values = check.measure_values("measure", top.get("measure"))
    where = "measure"
    if prefix and "measure" in data:
        where = f"{prefix}measure"
        values.update(check.measure_values(where, data["measure"]))
    settings, modes, precisions = check.settings(where, values)
    return Study(
        name=name, models=models, grid=tuple(grid.items()),
        batch_sizes=(1,) if batch_value is None else check.positive_ints(f"{prefix}batch_sizes", batch_value),
        stages=("analytic",) if stages_value is None else check.strings(f"{prefix}stages", stages_value, STAGES),
        counters=COUNTERS if counters_value is None else check.strings(f"{prefix}counters", counters_value, COUNTERS),
        measure=settings, modes=modes, precisions=precisions,
        description=check.text(f"{prefix}description", get("description") or ""), refs=tuple(kinds),
    )


def _check_top_models_used(check: Checker, top: Mapping[str, Any], entries: Sequence[Any]) -> None:
    """Refuse top-level ``models`` that every study replaces: the top level is not a study of its
    own, so those models would silently never run."""
    if top.get("models") is not None and all(isinstance(e, Mapping) and "models" in e for e in entries):
        raise check.fail(
            "models", top["models"],
            "is inherited by no study (each study sets its own models), so it would never run: the top level is "
            "not a study of its own; move these models (and their grid) into a study",
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
    check = Checker(label, rename)
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
    description = check.text("description", top.get("description", ""))
    remeasure = check.share("remeasure", top.get("remeasure", 0.0))
    inherited = {k: v for k, v in top.items() if k not in ("name", "out", "studies", "description", "remeasure")}
    if top.get("studies") is None:
        studies: tuple[Study, ...] = (_study(check, {}, inherited, "", name),)
    else:
        entries = check.listof("studies", top["studies"], allow_scalar=False)
        found: list[Study] = []
        for i, entry in enumerate(entries):
            prefix = f"studies[{i}]."
            study_data = check.mapping(f"studies[{i}]", entry, STUDY_KEYS)
            study_name = study_data.get("name")
            if not isinstance(study_name, str) or not study_name.strip():
                raise check.fail(f"{prefix}name", study_name, "is required (a non-empty string)")
            if any(s.name == study_name for s in found):
                raise check.fail(f"{prefix}name", study_name, "is used by two studies")
            found.append(_study(check, study_data, inherited, prefix, study_name))
        studies = tuple(found)
        _check_top_models_used(check, top, entries)
        for field_name, values in _grid(check, "grid", top.get("grid")).items():
            if not any(field_name in dict(s.grid) for s in studies):
                raise check.fail(f"grid.{field_name}", list(values), "does not apply to the models of any study")
    return SweepPlan(name=name.strip(), studies=studies, description=description, out=out, source=source, remeasure=remeasure)


# --- from Python values and flags ------------------------------------------------------------
def plan_from_grid(
    models: Sequence[str] | str,
    grid: Mapping[str, Any] | None = None,
    *,
    batch_sizes: Sequence[int] | int = (1,),
    stages: Sequence[str] | str = ("analytic",),
    counters: Sequence[str] | str = COUNTERS,
    measure: Mapping[str, Any] | None = None,
    name: str = "sweep",
    rename: Callable[[str], str] | None = None,
    label: str = "sweep",
) -> SweepPlan:
    """Build and validate a one-study plan from Python values (or command-line text)."""
    data: dict[str, Any] = {"name": name, "models": models, "batch_sizes": batch_sizes, "stages": stages, "counters": counters}
    if grid:
        data["grid"] = dict(grid)
    if measure:
        data["measure"] = dict(measure)
    return validate(data, default_name=name, label=label, rename=rename)


def apply_overrides(
    plan: SweepPlan,
    *,
    stages: Sequence[str] | str | None = None,
    counters: Sequence[str] | str | None = None,
    batch_sizes: Sequence[int] | int | None = None,
    measure: Mapping[str, Any] | None = None,
    rename: Callable[[str], str] | None = None,
    label: str = "",
) -> SweepPlan:
    """``plan`` with the given settings replaced in every study (None = keep).

    ``measure`` keys are RunSettings field names (``mode``/``precision`` may be lists of
    alternatives); values may be typed or command-line text. This is what ``vitbench sweep FILE
    --device cuda`` and ``vitbench report --threads 1`` do to a sweep file's studies.

    >>> apply_overrides(plan, stages=["analytic", "measured"], measure={"device": "cpu", "runs": 3})  # doctest: +SKIP
    """
    check = Checker(label, rename)
    values = check.measure_values("measure", {k: v for k, v in (measure or {}).items() if v is not None})
    changes: dict[str, Any] = {}
    if stages is not None:
        changes["stages"] = check.strings("stages", stages, STAGES)
    if counters is not None:
        changes["counters"] = check.strings("counters", counters, COUNTERS)
    if batch_sizes is not None:
        changes["batch_sizes"] = check.positive_ints("batch_sizes", batch_sizes)
    if not changes and not values:
        return plan
    studies = []
    for study in plan.studies:
        study = replace(study, **changes)
        if values:
            current = {k: v for k, v in study.measure.to_dict().items() if k not in ("mode", "precision", "batch_size")}
            current.update(mode=study.modes, precision=study.precisions)
            settings, modes, precisions = check.settings("measure", {**current, **values})
            study = replace(study, measure=settings, modes=modes, precisions=precisions)
        studies.append(study)
    return replace(plan, studies=tuple(studies))


def build_plan(
    sweep_file: str | os.PathLike | None = None,
    *,
    models: Sequence[str] | None = None,
    grid: Mapping[str, Sequence[Any]] | None = None,
    batch_sizes: Sequence[Any] | None = None,
    stages: Sequence[str] | None = None,
    counters: Sequence[str] | None = None,
    measure: Mapping[str, Any] | None = None,
    name: str | None = None,
    rename: Callable[[str], str] | None = None,
) -> SweepPlan:
    """What ``vitbench sweep`` runs: a sweep file with the given stages, counters, batch sizes
    and measure settings applied to every study, or models x grid given as values. Keys are
    shown through ``rename`` in errors (the CLI shows its flags)."""
    rename = rename or (lambda key: key)
    grid = {k: v for k, v in (grid or {}).items() if v is not None}
    measure = {k: v for k, v in (measure or {}).items() if v is not None}
    if sweep_file is not None:
        if models or grid:
            key = "models" if models else f"grid.{next(iter(grid))}"
            raise SweepFileError(f"{rename(key)}: give the grid in the sweep file or on the command line, not both")
        plan = load_sweep_file(sweep_file)
        plan = apply_overrides(plan, stages=stages, counters=counters, batch_sizes=batch_sizes, measure=measure, rename=rename)
        return replace(plan, name=name) if name else plan
    if not models:
        raise SweepFileError(f"{rename('models')}: give models (e.g. vit-b/16,resnet50) or a sweep file")
    data: dict[str, Any] = {"name": name or "sweep", "models": list(models), "grid": grid}
    for key, value in (("stages", stages), ("counters", counters), ("batch_sizes", batch_sizes)):
        if value is not None:
            data[key] = value
    if measure:
        data["measure"] = measure
    return validate(data, label="", rename=rename)


def default_study_path() -> Path:
    """The built-in default study (`vitbench report` with no arguments)."""
    return Path(__file__).resolve().parent.parent / "data" / "default_study.yaml"


__all__ = [
    "STAGES",
    "Study",
    "SweepFileError",
    "SweepPlan",
    "apply_overrides",
    "build_plan",
    "default_study_path",
    "load_sweep_file",
    "measure_identity",
    "plan_from_grid",
    "validate",
]
