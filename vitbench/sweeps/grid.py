"""The grid of a plan, expanded as a stream: configurations, their ids, counting and shards.

Grid = for each study: models x product(grid field values) x batch sizes, and for a measured
study x modes x precisions. A grid field a model does not have is skipped for that model
(``patch_size`` for a ResNet); configurations that come out identical are kept once (the first).
Nothing is materialised: :func:`iter_configs` yields one :class:`Config` at a time and
:func:`count_configs` counts a 10^6-point grid in seconds, holding only the set of ids seen.

A configuration's ``id`` (32 hex digits: the first 128 bits of a SHA-1, so that two different
configurations never share one: at 10^7 configurations the chance is 10^-25; stores written
before kept 12 digits, and a sweep resumed into one keeps using them) hashes what determines its row,
as the text ``SPEC_KEY + "\n" + SETTINGS``: SPEC_KEY is :func:`vitbench.specs.spec_key` of the
spec (the preset's with the overrides applied; a reference's name and overrides), SETTINGS the
compact, key-sorted JSON of the batch size, the stages, the counters (counters stage) and the
RunSettings (measured stage). Not its study, name or position: the same configuration in two
studies runs once. SPEC_KEY is assembled from per-field JSON fragments prepared once per model,
so an id costs a string join and a SHA-1, not the construction and validation of a spec (that
happens when the row runs: a combination the spec rejects becomes a row with status
``invalid``).

``--shard I/N`` keeps the configurations whose position in the full, ordered grid is
``I-1`` modulo ``N``.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import math
import operator
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from vitbench.errors import SpecError
from vitbench.models.references import overrides_taken, resolve
from vitbench.settings import RunSettings
from vitbench.specs import format_overrides, key_data, omitted_from_key, parse_field_value, spec_fields
from vitbench.specs.model_ref import ModelRef, model_ref
from vitbench.sweeps.plan import Study, SweepPlan, measure_identity
from vitbench.sweeps.schema import SweepFileError

#: hex digits of a configuration id (128 bits); LEGACY_ID_DIGITS: stores of vitbench <= 0.x
ID_DIGITS = 32
LEGACY_ID_DIGITS = 12


@dataclass(frozen=True)
class Config:
    """One row to compute: a model with grid overrides, a batch size, stage settings."""

    index: int
    id: str
    study: str
    model: str
    overrides: tuple[tuple[str, Any], ...]
    batch_size: int
    stages: tuple[str, ...]
    counters: tuple[str, ...]
    mode: str | None = None
    precision: str | None = None
    measure: RunSettings | None = None  # the study's settings (measured stage only)
    ref: ModelRef | None = field(default=None, compare=False, repr=False)  # ``model`` parsed (the grid's)

    @property
    def overrides_text(self) -> str:
        return format_overrides(dict(self.overrides))

    def __getstate__(self) -> dict[str, Any]:  # the resolved model (a module builder) stays behind
        return {k: v for k, v in self.__dict__.items() if k != "_resolved"}

    @functools.cached_property
    def _resolved(self) -> tuple[Any, str | None]:
        return build_config(self.ref or self.model, self.overrides)

    @property
    def target(self) -> Any:
        """The resolved model (:class:`vitbench.models.target.Target`), None when invalid."""
        return self._resolved[0]

    @property
    def spec(self) -> Any:
        """The analytic spec, None when invalid (or a reference without one)."""
        return None if self.target is None else self.target.spec

    @property
    def invalid(self) -> str | None:
        """Why the spec rejects this combination (``patch_size=32: does not divide ...``)."""
        return self._resolved[1]

    @property
    def run_settings(self) -> RunSettings:
        """The measurement's RunSettings (measured configurations)."""
        base = self.measure or RunSettings()
        return base.replace(mode=self.mode or base.mode, precision=self.precision or base.precision, batch_size=self.batch_size)


@functools.lru_cache(maxsize=512)
def _base(ref: ModelRef) -> Any:
    return resolve(ref)


def build_config(model: str | ModelRef, overrides: tuple[tuple[str, Any], ...]) -> tuple[Any, str | None]:
    """(Target, None) or (None, reason) for a model (text, or parsed once: the grid's
    :class:`ModelRef`) with grid overrides."""
    try:
        ref = model_ref(model)
        return (resolve(ref, dict(overrides)) if overrides else _base(ref)), None
    except SpecError as exc:
        return None, str(exc)


# --- ids -------------------------------------------------------------------------------------
def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _normalize(spec_type: type, base: Any, name: str, value: Any) -> Any:
    """The value the spec will hold for ``name`` (224 -> (224, 224), 4 -> 4.0), found by
    replacing the field of the base spec; when that combination is itself invalid, by the
    field's type."""
    try:
        return getattr(dataclasses.replace(base, **{name: value}), name)
    except (SpecError, TypeError, ValueError):
        annotation = str(spec_fields(spec_type)[name].type)
        if name == "img_size" and isinstance(value, int):
            return (value, value)
        if annotation.startswith("float") and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if annotation.startswith("tuple") and isinstance(value, int):
            return (value,)
        return value


def _plain(value: Any) -> Any:
    """Tuples -> lists, as :func:`vitbench.specs.spec_key` writes field values."""
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


def _fragment(value: Any) -> str:
    return _dumps(_plain(value))


def _spec_choices(spec_type: type, spec: Any, name: str, alternatives: tuple[Any, ...]) -> dict[Any, bytes]:
    """A grid field's distinct normalized values -> the member of the key's JSON object with its
    leading comma; nothing for a field the key leaves out at this value (see spec_key)."""
    choices: dict[Any, bytes] = {}
    for value in alternatives:
        parsed = _normalize(spec_type, spec, name, parse_field_value(spec_type, name, value))
        member = b"" if omitted_from_key(spec_type, name, parsed) else f",{_dumps(name)}:{_fragment(parsed)}".encode()
        choices.setdefault(parsed, member)
    return choices


def _reference_takes(model: ModelRef, overrides: dict[str, Any]) -> set[str]:
    """The grid fields a reference applies (they make its configurations distinct): from its
    signature or config (a ``py:`` factory is not called; timm builds on meta); every field
    when the reference is invalid (its rows say why)."""
    try:
        return overrides_taken(model, overrides)
    except SpecError:
        return set(overrides)


class _ModelGrid:
    """The grid of one model of one study, ready to enumerate: the identity text of every
    combination is one ``template % fragments`` (C-level), fragments prepared once per value."""

    def __init__(self, study: Study, ref: ModelRef):
        self.study, self.ref, self.model = study, ref, ref.text
        base = _base(ref) if ref.is_preset else None
        self.spec_type = type(base.spec) if base is not None else None
        if base is not None:
            self._spec_axes(base.spec)
        else:
            self._reference_axes()

    def _spec_axes(self, spec: Any) -> None:
        """A preset: each grid field's values normalized as the spec holds them, and spec_key's
        text, keys sorted, with a %b where each grid field's member goes; every member starts
        with a comma, and the first one is dropped when a text is made."""
        spec_type = type(spec)
        known = spec_fields(spec_type)
        self.names = [n for n, _ in self.study.grid if n in known]
        self.values, self.fragments = [], []
        for name, alternatives in self.study.grid:
            if name in known:
                choices = _spec_choices(spec_type, spec, name, alternatives)
                self.values.append(list(choices))
                self.fragments.append(list(choices.values()))
        data = key_data(spec)
        slot = {n: i for i, n in enumerate(self.names)}
        order = sorted(set(data) | set(slot))
        parts = ["%b" if k in slot else f",{_dumps(k)}:{_dumps(data[k])}".replace("%", "%%") for k in order]
        self.template = "".join(parts).encode()
        self.order = [slot[k] for k in order if k in slot]  # text order -> axis index

    def _reference_axes(self) -> None:
        """A reference: overrides are builder arguments, the hash is of their text."""
        grid = self.study.grid
        used = _reference_takes(self.ref, {n: vs[0] for n, vs in grid})
        self.names = [n for n, _ in grid if n in used]
        self.values = [list(vs) for n, vs in grid if n in used]
        self.fragments = [[_dumps([n, str(v)]).encode() for v in vs] for n, vs in grid if n in used]
        head = '{{"reference":{},"overrides":['.format(_dumps(self.model).replace("%", "%%"))
        self.template = head.encode() + b",".join([b"%b"] * len(self.values)) + b"]}"
        self.order = list(range(len(self.values)))

    def points(self) -> Iterator[tuple[tuple[Any, ...], bytes]]:
        """(grid values, identity text) for every combination, in grid order (the first grid
        field varies slowest)."""
        template = self.template
        if self.spec_type is None:  # a reference: the template is the whole text
            if not self.names:
                yield (), template
                return
            pick = operator.itemgetter(*self.order) if len(self.order) > 1 else (lambda combo: combo)
            for values, combo in zip(itertools.product(*self.values), itertools.product(*self.fragments)):
                yield values, template % pick(combo)
            return
        if not self.names:
            yield (), b"{" + template.replace(b"%%", b"%")[1:] + b"}"
            return
        pick = operator.itemgetter(*self.order) if len(self.order) > 1 else (lambda combo: combo)
        for values, combo in zip(itertools.product(*self.values), itertools.product(*self.fragments)):
            yield values, b"{" + (template % pick(combo))[1:] + b"}"


def _settings(study: Study) -> list[tuple[int, str | None, str | None, bytes]]:
    """(batch size, mode, precision, the settings part of the hashed text) of each row of a
    combination: ``\n{"batch_size":B,"counters":[...],"measure":{...},"stages":[...]}``."""
    out = []
    modes = study.modes if study.per_step else (None,)
    precisions = study.precisions if study.per_step else (None,)
    for batch in study.batch_sizes:
        for mode in modes:
            for precision in precisions:
                data: dict[str, Any] = {"batch_size": batch, "stages": sorted(study.stages)}
                if "counters" in study.stages:
                    data["counters"] = sorted(study.counters)
                if study.per_step:
                    data["measure"] = {"mode": mode, "precision": precision, **measure_identity(study.measure)}
                out.append((batch, mode, precision, ("\n" + _dumps(data)).encode()))
    return out


def _points(plan: SweepPlan, keys_only: bool = False) -> Iterator[Any]:
    """(SHA-1 digest, study, model grid, grid values, batch, mode, precision), de-duplicated,
    in grid order (only the digests with ``keys_only``). The digest is SHA-1(identity +
    settings text), the id its first ``digits`` hex digits; with several settings per
    combination the identity's hash state is computed once and copied for each.

    Within one model's grid the points are distinct by construction (each axis holds distinct
    normalized values, and the settings are distinct), so a plan of one model in one study
    streams with no memory per point; with several, a configuration met again (the same spec
    reached from two presets or two studies) is dropped by its full digest."""
    grids = sum(len(study.models) for study in plan.studies)
    seen: set[bytes] = set()
    add = seen.add
    sha1 = hashlib.sha1
    for study in plan.studies:
        settings = _settings(study)
        for ref in study.refs:
            grid = _ModelGrid(study, ref)
            for values, identity in grid.points():
                base = sha1(identity)
                for batch, mode, precision, text in settings:
                    digest = base.copy()
                    digest.update(text)
                    full = digest.digest()
                    if grids > 1:
                        if full in seen:
                            continue
                        add(full)
                    yield full if keys_only else (full, study, grid, values, batch, mode, precision)


def iter_configs(plan: SweepPlan, shard: tuple[int, int] | None = None, digits: int | None = None) -> Iterator[Config]:
    """The grid (or one shard of it) in deterministic order, one configuration at a time, with
    ids of ``digits`` hex digits (default :data:`ID_DIGITS`)."""
    digits = digits or ID_DIGITS
    for index, (key, study, grid, values, batch, mode, precision) in enumerate(_points(plan)):
        if shard is not None and index % shard[1] != shard[0] - 1:
            continue
        yield Config(
            index=index, id=key.hex()[:digits], study=study.name, model=grid.model, overrides=tuple(zip(grid.names, values)), batch_size=batch,
            stages=study.stages, counters=study.counters, mode=mode, precision=precision,
            measure=study.measure if study.per_step else None, ref=grid.ref,
        )


def expand(plan: SweepPlan) -> list[Config]:
    """The whole grid as a list (small grids; tests). Checks that some configuration is valid."""
    check_valid(plan)
    return list(iter_configs(plan))


@dataclass(frozen=True)
class Tally:
    grid: int  # configurations in the whole grid
    selected: int  # in this shard
    done: int  # of those, already in the store


def tally(plan: SweepPlan, shard: tuple[int, int] | None = None, done: Mapping[str, Any] | None = None) -> Tally:
    """Count the grid, the shard and what the store already holds (ids of any length: a store
    of an earlier vitbench has 12-digit ids), in one streaming pass."""
    if not done:
        grid = _arithmetic_size(plan)
        if grid is None:
            grid = sum(1 for _ in _points(plan, keys_only=True))
        selected = grid if shard is None else max(0, (grid - (shard[0] - 1) + shard[1] - 1) // shard[1])
        return Tally(grid, selected, 0)
    lengths = {len(k) for k in (done or {}) if len(k) % 2 == 0}
    done_keys = {bytes.fromhex(k) for k in (done or {}) if len(k) in lengths and _is_hex(k)}
    grid = selected = already = 0
    for index, key in enumerate(_points(plan, keys_only=True)):
        grid += 1
        if shard is None or index % shard[1] == shard[0] - 1:
            selected += 1
            already += any(key[: n // 2] in done_keys for n in lengths)
    return Tally(grid, selected, already)


def _arithmetic_size(plan: SweepPlan) -> int | None:
    """The grid's size without enumerating it, where that is exact: a plan of one model in one
    study (its points are distinct by construction; see :func:`_points`), the product of its
    axes' sizes and its settings. None for several models or studies (duplicates between them
    are only found by enumerating)."""
    if sum(len(study.models) for study in plan.studies) != 1:
        return None
    [study] = plan.studies
    return study_sizes(plan)[study.name]


def _is_hex(text: str) -> bool:
    try:
        bytes.fromhex(text)
    except ValueError:
        return False
    return True


def study_sizes(plan: SweepPlan) -> dict[str, int]:
    """Configurations of each study before de-duplication (products of the axes' sizes), for
    weighting per-row estimates; no configuration is enumerated."""
    out: dict[str, int] = {}
    for study in plan.studies:
        rows = len(study.batch_sizes) * (len(study.modes) * len(study.precisions) if study.per_step else 1)
        out[study.name] = rows * sum(math.prod(len(v) for v in _ModelGrid(study, ref).values) for ref in study.refs)
    return out


def count_configs(plan: SweepPlan, shard: tuple[int, int] | None = None) -> int:
    """How many configurations the grid (or a shard) has, without building any of them."""
    return tally(plan, shard).selected


def is_reference(model: str | ModelRef) -> bool:
    """A ``timm:``/``torchvision:``/``hf:``/``py:`` reference (built to be known), not a preset.
    Give the study's parsed :attr:`Study.refs` where there is one: text is parsed again."""
    return not model_ref(model).is_preset


#: Combinations the validity check tries per model before it gives up (a grid with more, none
#: of them valid among those tried, runs: each invalid row says why). A preset's point costs
#: about 60 us; a reference's is a build on the meta device.
VALIDITY_TRIES = {"preset": 2_000, "reference": 32}


def _probe_points(lengths: list[int], tries: int) -> Iterator[tuple[int, ...]]:
    """Index tuples of a grid with axes of ``lengths``: every one, in grid order, when there are
    at most ``tries``; else ``tries`` of them spread over it. First the diagonal (the i-th value
    of every axis together, so each axis's values all appear within its length), then a seeded
    random sample, since an invalid region may fill the start of the grid order."""
    if math.prod(lengths) <= tries:
        yield from itertools.product(*(range(n) for n in lengths))
        return
    longest = max(lengths, default=1)
    for i in range(min(longest, tries // 2)):
        yield tuple(i % n for n in lengths)
    pick = random.Random(0)
    for _ in range(tries - min(longest, tries // 2)):
        yield tuple(pick.randrange(n) for n in lengths)


def check_valid(plan: SweepPlan, build: bool = True) -> None:
    """A study in which every combination is invalid is a usage error (raised before any row
    runs). Stops at the first valid combination of each study, so it is cheap for real grids;
    tries at most :data:`VALIDITY_TRIES` combinations of a model, spread over its grid, and
    refuses only what it tried whole (a larger grid with no valid point among those tried
    runs, and its rows say why each is invalid).
    ``build=False`` (a dry run) takes references as valid: only building them could tell."""
    for study in plan.studies:
        first, whole = None, True
        for ref in study.refs:
            reference = not ref.is_preset
            if not build and reference:
                break
            grid = _ModelGrid(study, ref)
            tries = VALIDITY_TRIES["reference" if reference else "preset"]
            lengths = [len(values) for values in grid.values]
            for indices in _probe_points(lengths, tries):
                values = tuple(axis[i] for axis, i in zip(grid.values, indices))
                invalid = build_config(ref, tuple(zip(grid.names, values)))[1]
                if invalid is None:
                    break
                first = first or (ref.text, invalid)
            else:
                whole = whole and math.prod(lengths) <= tries
                continue
            break
        else:
            if first is not None and whole:
                where = f"study {study.name!r}: " if len(plan.studies) > 1 else ""
                raise SweepFileError(f"{where}every configuration of the grid is invalid (first: {first[0]}: {first[1]})")


def parse_shard(text: str | tuple[int, int] | None) -> tuple[int, int] | None:
    """'I/N' (1-based) -> (I, N); None stays None."""
    if text is None:
        return None
    if isinstance(text, tuple):
        index, count = text
    else:
        parts = str(text).split("/")
        try:
            index, count = (int(p) for p in parts) if len(parts) == 2 else (0, 0)
        except ValueError:
            index, count = 0, 0
    if count < 1 or not 1 <= index <= count:
        raise SweepFileError(f"--shard={text!r}: must be I/N with 1 <= I <= N (for example 1/4)")
    return index, count


def select_shard(configs: list[Config], shard: tuple[int, int] | None) -> list[Config]:
    """The configurations of one shard of an expanded grid."""
    if shard is None:
        return list(configs)
    index, count = shard
    return [c for c in configs if c.index % count == index - 1]


__all__ = [
    "Config",
    "Tally",
    "build_config",
    "check_valid",
    "count_configs",
    "expand",
    "iter_configs",
    "parse_shard",
    "select_shard",
    "study_sizes",
    "tally",
]
