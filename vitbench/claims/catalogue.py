"""The claims catalogue (``vitbench/data/claims.yaml``): loading, validation and selection.

A claim names the document line it comes from, the figure as written, the quantity it is about
and the model (a preset, or a spec given field by field, with overrides); ratio claims name a
numerator and a denominator. Every field is checked on loading; a bad one raises :class:`CatalogueError` naming
the claim, the field and the value. The schema is described at the top of the shipped file.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from vitbench.analytic.conventions import OMITTABLE
from vitbench.claims.claim import AlternativeReading, Claim, Config, Counted, frozen
from vitbench.claims.quantities import FAMILY_CONVENTIONS, QUANTITIES
from vitbench.claims.stated import Stated, evaluate_formula, parse_stated
from vitbench.documents import DOCUMENTS, number_of
from vitbench.errors import InputFileError, VitbenchError
from vitbench.input_files import MAX_CATALOGUE_BYTES, read_input_text

CATALOGUE = Path(__file__).resolve().parents[1] / "data" / "claims.yaml"

_CLAIM_FIELDS = {
    "id", "source", "section", "quote", "model", "spec", "overrides", "batch_size", "quantity", "of",
    "versus", "convention", "stated", "tolerance", "tolerance_note", "formula", "omits",
    "alternatives", "counted", "reason", "stand_in", "device", "assumed",
}
_CONFIG_FIELDS = {"model", "spec", "overrides", "batch_size", "of"}
_TEXT_KIND_CONVENTIONS = {
    "compute": ("macs", "flops", "fvcore-flops"),
    "bytes": ("bytes",),
    "ratio": ("ratio",),
    "throughput": ("img_per_s",),
}
#: The quantities of a model vitbench can only count (no spec): the module's own figures.
_COUNT_ONLY = ("params", "macs")
#: What a claim may say the document leaves unsaid (and the catalogue assumes).
ASSUMABLE = ("batch_size", "precision", "optimizer", "attention")
_UNRATIOED = ("ratio", "none", "expression", "measured")


class CatalogueError(VitbenchError):
    """A malformed claims catalogue: names the claim, the field and the bad value."""

    def __init__(self, where: str, field_name: str, value: object, reason: str):
        prefix = f"{field_name}={value!r}: "
        reason = reason[len(prefix):] if reason.startswith(prefix) else reason
        self.where, self.field, self.value, self.reason = where, field_name, value, reason
        super().__init__(f"{where}: {prefix}{reason}")


class UnknownClaimError(VitbenchError):
    def __init__(self, name: str, suggestions: list[str]):
        hint = f"; did you mean {', '.join(repr(s) for s in suggestions)}?" if suggestions else ""
        super().__init__(f"claim={name!r}: unknown claim id{hint} (list them: `vitbench audit --no-counted`)")


# --- configs ---------------------------------------------------------------------------------------
def _check_fields(where: str, fields: Any) -> tuple[tuple[str, Any], ...]:
    if not isinstance(fields, dict) or not isinstance(fields.get("kind"), str) or not isinstance(fields.get("name"), str):
        raise CatalogueError(where, "spec", fields, "must be a mapping of spec fields with a 'kind' and a 'name'")
    return tuple(sorted((k, frozen(v)) for k, v in fields.items()))


def _check_spec(where: str, config: Config) -> None:
    """The config builds a spec of a kind its quantity applies to."""
    q = QUANTITIES[config.quantity]
    if not q.kinds:
        return
    if config.model is None and config.fields is None:
        raise CatalogueError(where, "model", None, f"is required for {config.quantity}")
    try:
        spec = config.spec()
    except (VitbenchError, ValueError, TypeError) as exc:
        name, value = ("spec", dict(config.fields)) if config.fields else ("model", config.model)
        raise CatalogueError(where, name, value, str(exc)) from None
    if spec.kind not in q.kinds:
        raise CatalogueError(where, "quantity", config.quantity,
                             f"does not apply to a {spec.kind} model ({'/'.join(q.kinds)} only)")


def _check_batch(where: str, batch: Any) -> int:
    if isinstance(batch, bool) or not isinstance(batch, int) or batch <= 0:
        raise CatalogueError(where, "batch_size", batch, "must be a positive integer")
    return batch


def _config(where: str, raw: dict[str, Any], quantity: str, base: Config | None = None) -> Config:
    """A Config from claim fields; unset fields inherit from ``base``."""
    model = raw.get("model", base.model if base and "spec" not in raw else None)
    fields = raw.get("spec", base.fields if base and "model" not in raw else None)
    overrides = raw.get("overrides", dict(base.overrides) if base else {})
    batch = raw.get("batch_size", base.batch_size if base else 1)
    if model is not None and fields is not None:
        raise CatalogueError(where, "model", model, "give either model or spec, not both")
    if not isinstance(overrides, dict):
        raise CatalogueError(where, "overrides", overrides, "must be a mapping of spec fields")
    _check_batch(where, batch)
    if fields is not None and not isinstance(fields, tuple):
        fields = _check_fields(where, fields)
    if QUANTITIES.get(quantity) is None:
        known = ", ".join(sorted(k for k, v in QUANTITIES.items() if v.family not in ("ratio", "none")))
        raise CatalogueError(where, "quantity", quantity, f"unknown quantity; known: {known}")
    frozen = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in overrides.items())
    config = Config(quantity=quantity, model=model, overrides=frozen, batch_size=batch, fields=fields)
    _check_spec(where, config)
    return config


def _ratio_configs(where: str, raw: dict[str, Any], versus_raw: Any) -> tuple[Config, Config]:
    if not isinstance(versus_raw, dict) or set(versus_raw) - _CONFIG_FIELDS:
        raise CatalogueError(where, "versus", versus_raw, f"must be a mapping of {', '.join(sorted(_CONFIG_FIELDS))}")
    of = raw["of"]
    if QUANTITIES.get(of) is None or QUANTITIES[of].family in _UNRATIOED:
        known = ", ".join(sorted(k for k, v in QUANTITIES.items() if v.family not in _UNRATIOED))
        raise CatalogueError(where, "of", of, f"unknown quantity for a ratio; known: {known}")
    target = _config(where, raw, of)
    denominator = versus_raw.get("of", of)
    if QUANTITIES.get(denominator) is None or QUANTITIES[denominator].family != QUANTITIES[of].family:
        raise CatalogueError(where, "versus.of", denominator, f"must be a quantity of the same family as {of!r}")
    return target, _config(f"{where} versus", versus_raw, denominator, base=target)


def _ratio_alternatives(where: str, raw: dict[str, Any]) -> tuple[AlternativeReading, ...]:
    out = []
    for i, alt in enumerate(raw.get("alternatives") or []):
        if not isinstance(alt, dict) or not isinstance(alt.get("describe"), str) or "of" not in alt:
            raise CatalogueError(where, f"alternatives[{i}]", alt, "needs 'describe' and 'of'")
        # The reading inherits the claim's configs; only the quantities (and what it names) change.
        numerator = {**{k: v for k, v in raw.items() if k in _CONFIG_FIELDS}, "of": alt["of"]}
        denominator = {**raw["versus"], "of": alt["of"], **(alt.get("versus") or {})}
        t, v = _ratio_configs(f"{where} alternatives[{i}]", numerator, denominator)
        out.append(AlternativeReading(alt["describe"], t, v))
    return tuple(out)


def _targets(where: str, raw: dict[str, Any], family: str) -> tuple[Config | None, Config | None, tuple]:
    """(target, versus, explicit alternatives) of a claim."""
    quantity = raw["quantity"]
    if raw.get("alternatives") and family != "ratio":
        raise CatalogueError(where, "alternatives", raw["alternatives"], "only ratio claims take explicit alternatives")
    if family == "ratio":
        if "of" not in raw or "versus" not in raw:
            raise CatalogueError(where, "quantity", quantity, "a ratio needs 'of' (a quantity) and 'versus' (the denominator)")
        target, versus = _ratio_configs(where, raw, raw["versus"])
        return target, versus, _ratio_alternatives(where, raw)
    if "of" in raw or "versus" in raw:
        name = "of" if "of" in raw else "versus"
        raise CatalogueError(where, name, raw[name], f"only ratio claims have '{name}'")
    if family == "none":
        return None, None, ()
    if family == "expression":
        raw = {k: v for k, v in raw.items() if k in ("model", "overrides", "batch_size")}
    counted = raw.get("counted")
    if "model" not in raw and "spec" not in raw and isinstance(counted, dict) and "model" in counted:
        if quantity not in _COUNT_ONLY:
            raise CatalogueError(where, "quantity", quantity, f"a model vitbench can only count takes {' or '.join(_COUNT_ONLY)}")
        batch = _check_batch(where, raw.get("batch_size", 1))
        return Config(quantity=quantity, batch_size=batch, reference=str(counted["model"])), None, ()
    return _config(where, raw, quantity), None, ()


# --- one claim -----------------------------------------------------------------------------------
def _check_identity(where: str, raw: Any, seen: set[str]) -> tuple[str, str, re.Match]:
    """(id, where, source match) after checking the id, the field names and the source."""
    if not isinstance(raw, dict):
        raise CatalogueError(where, "claim", raw, "must be a mapping")
    cid = raw.get("id")
    if not isinstance(cid, str) or not re.fullmatch(r"[a-z0-9][a-z0-9.-]*", cid):
        raise CatalogueError(where, "id", cid, "must be a lowercase identifier (letters, digits, '.', '-')")
    where = f"claim {cid!r}"
    if cid in seen:
        raise CatalogueError(where, "id", cid, "appears twice")
    seen.add(cid)
    unknown = set(raw) - _CLAIM_FIELDS
    if unknown:
        name = sorted(unknown)[0]
        raise CatalogueError(where, name, raw[name], f"unknown field; fields: {', '.join(sorted(_CLAIM_FIELDS))}")
    for required in ("source", "quote", "quantity", "stated"):
        if required not in raw:
            raise CatalogueError(where, required, None, "is required")
    source = raw["source"]
    match = re.fullmatch(r"(\S+\.txt):(\d+)", source) if isinstance(source, str) else None
    if not match:
        raise CatalogueError(where, "source", source, "must be '<file>.txt:<line>'")
    if not isinstance(raw["quote"], str) or not raw["quote"].strip():
        raise CatalogueError(where, "quote", raw["quote"], "must be a non-empty excerpt")
    section = raw.get("section")
    if section is not None and (not isinstance(section, str) or not section.strip()):
        raise CatalogueError(where, "section", section, "must be the heading the claim is under (text)")
    return cid, where, match


def _stated(where: str, stated_raw: Any) -> Stated:
    if not isinstance(stated_raw, dict) or set(stated_raw) != {"text", "value"}:
        raise CatalogueError(where, "stated", stated_raw, "must be {text: ..., value: ...}")
    try:
        stated = parse_stated(str(stated_raw["text"]))
    except ValueError as exc:
        raise CatalogueError(where, "stated.text", stated_raw["text"], str(exc)) from None
    value = stated_raw["value"]
    values = value if isinstance(value, list) else [value]
    if not values or len(values) > 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise CatalogueError(where, "stated.value", value, "must be a number in base units (or [low, high])")
    expected = [stated.low, stated.high] if stated.is_range else [stated.low]
    if len(values) != len(expected) or not all(math.isclose(a, b, rel_tol=1e-9) for a, b in zip(sorted(values), expected)):
        raise CatalogueError(where, "stated.value", value, f"does not match the text {stated.text!r} ({stated.value})")
    return stated


def _check_convention(where: str, quantity: str, convention: Any, stated: Stated) -> None:
    family = QUANTITIES[quantity].family
    allowed = FAMILY_CONVENTIONS[family]
    if convention not in allowed:
        raise CatalogueError(where, "convention", convention, f"must be one of {', '.join(str(c) for c in allowed)} for {quantity}")
    if family != "none" and stated.kind in _TEXT_KIND_CONVENTIONS and convention not in _TEXT_KIND_CONVENTIONS[stated.kind]:
        raise CatalogueError(where, "convention", convention, f"disagrees with the unit of {stated.text!r}")
    if stated.unit.strip() in ("FLOPs", "MACs") and convention != stated.unit.strip().lower():
        raise CatalogueError(where, "convention", convention, f"disagrees with the unit of {stated.text!r}")
    if convention == "bytes" and stated.kind != "bytes":
        raise CatalogueError(where, "stated.text", stated.text, "a bytes figure needs a unit (B, MB, MiB, GB, ...)")


def _check_formula(where: str, raw: dict[str, Any], family: str) -> None:
    formula = raw.get("formula")
    if formula is not None:
        try:
            evaluate_formula(str(formula))
        except ValueError as exc:
            raise CatalogueError(where, "formula", formula, str(exc)) from None
    if family == "expression" and formula is None:
        raise CatalogueError(where, "formula", None, "an expression claim needs the document's formula")


def _check_omits(where: str, raw: dict[str, Any]) -> tuple[str, ...]:
    omits = raw.get("omits") or []
    if not isinstance(omits, list) or any(o not in OMITTABLE for o in omits):
        raise CatalogueError(where, "omits", omits, f"must list components among {', '.join(OMITTABLE)}")
    if omits and not raw["quantity"].startswith("params"):
        raise CatalogueError(where, "omits", omits, "only parameter counts take 'omits'")
    return tuple(omits)


def _check_tolerance(where: str, raw: dict[str, Any]) -> float | None:
    tolerance = raw.get("tolerance")
    if tolerance is not None:
        if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 < tolerance < 1:
            raise CatalogueError(where, "tolerance", tolerance, "must be a relative tolerance in (0, 1)")
        if not raw.get("tolerance_note"):
            raise CatalogueError(where, "tolerance_note", None, "say why the precision rule does not apply")
    return tolerance


def _check_device(where: str, raw: dict[str, Any], quantity: str) -> str | None:
    """A device names where a claim's figure was (or must be) measured: a GPU model ('A100'),
    or 'GPU' for any CUDA device. Only measurable quantities take one; throughput needs one."""
    q = QUANTITIES[quantity]
    device = raw.get("device")
    if device is None:
        if q.family == "measured":
            raise CatalogueError(where, "device", None, "a measured claim names the device it is about")
        return None
    if not isinstance(device, str) or not device.strip():
        raise CatalogueError(where, "device", device, "must name a device ('GPU' or a GPU model)")
    if q.measured is None:
        raise CatalogueError(where, "device", device, f"{quantity} cannot be measured on a device")
    return device


def _check_assumed(where: str, raw: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    assumed = raw.get("assumed") or {}
    if not isinstance(assumed, dict) or any(
        k not in ASSUMABLE or not isinstance(v, str) or not v.strip() for k, v in assumed.items()
    ):
        raise CatalogueError(where, "assumed", assumed, f"must map settings among {', '.join(ASSUMABLE)} to why")
    if "attention" in assumed and "attention" not in (raw.get("overrides") or {}):
        raise CatalogueError(where, "assumed", assumed, "an assumed attention needs an attention override")
    return tuple(assumed.items())


def _check_counted(where: str, raw: dict[str, Any]) -> Counted | None:
    """``counted: true`` (count the claim's model) or ``{model: REF, module: PATH}``."""
    counted, q = raw.get("counted", False), QUANTITIES[raw["quantity"]]
    if counted is False:
        return None
    if counted is True:
        if q.counted is None:
            raise CatalogueError(where, "counted", counted, f"{q.name} has no counter (counted: {{module: PATH}} counts a part)")
        return Counted()
    if not isinstance(counted, dict) or not counted or set(counted) - {"model", "module"} or not all(
        isinstance(v, str) and v.strip() for v in counted.values()
    ):
        raise CatalogueError(where, "counted", counted, "must be true or {model: REFERENCE, module: PATH}")
    if "module" in counted and q.family != "compute":
        raise CatalogueError(where, "counted", counted, "a module part is counted for MACs only")
    if "module" not in counted and q.counted is None:
        raise CatalogueError(where, "counted", counted, f"{q.name} is counted only on a module part (give module: PATH)")
    return Counted(counted.get("model"), counted.get("module"))


def _check_flags(where: str, raw: dict[str, Any], family: str) -> None:
    if family == "none" and not raw.get("reason"):
        raise CatalogueError(where, "reason", None, "a not_checkable claim needs a reason")
    stand_in = raw.get("stand_in")
    if stand_in is not None and (not isinstance(stand_in, str) or not stand_in.strip() or not raw.get("counted")):
        raise CatalogueError(where, "stand_in", stand_in, "must be the reason (text) why the counted model may differ from the document's, on a counted claim")


def _claim(raw: Any, index: int, seen: set[str]) -> Claim:
    cid, where, source = _check_identity(f"claims[{index}]", raw, seen)
    stated = _stated(where, raw["stated"])
    quantity = raw["quantity"]
    if not isinstance(quantity, str) or quantity not in QUANTITIES:
        raise CatalogueError(where, "quantity", quantity, f"unknown quantity; known: {', '.join(QUANTITIES)}")
    family = QUANTITIES[quantity].family
    target, versus, alternatives = _targets(where, raw, family)
    _check_convention(where, quantity, raw.get("convention"), stated)
    _check_formula(where, raw, family)
    _check_flags(where, raw, family)
    return Claim(
        id=cid, file=source[1], line=int(source[2]), quote=raw["quote"], section=raw.get("section"), quantity=quantity,
        target=target, versus=versus, convention=raw.get("convention"), stated=stated,
        tolerance=_check_tolerance(where, raw), tolerance_note=raw.get("tolerance_note"),
        formula=raw.get("formula"), omits=_check_omits(where, raw), alternatives=alternatives,
        counted=_check_counted(where, raw), reason=raw.get("reason"), stand_in=raw.get("stand_in"),
        device=_check_device(where, raw, quantity), assumed=_check_assumed(where, raw),
    )


# --- the file ------------------------------------------------------------------------------------
def _read_yaml(path: Path) -> Any:
    import yaml

    try:  # the one gate: a FIFO or device refused without blocking, the size capped, UTF-8, not empty
        text = read_input_text(path, "", max_bytes=MAX_CATALOGUE_BYTES)
    except InputFileError as exc:
        reason = str(exc)[2:]
        raise CatalogueError(str(path), "file", str(path), "no such claims file" if reason == "no such file" else reason) from None
    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when built with it: 10x faster
        return yaml.load(text, Loader=loader)  # noqa: S506 (a safe loader)
    except RecursionError:
        raise CatalogueError(path.name, "yaml", str(path), "not valid YAML (nested too deeply)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark else ""
        raise CatalogueError(path.name, "yaml", str(path), f"not valid YAML{at}") from None


def load_catalogue(path: str | Path | None = None) -> list[Claim]:
    """Read and validate a claims file (default: the packaged catalogue)."""
    path = Path(path) if path is not None else CATALOGUE
    data = _read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise CatalogueError(path.name, "claims", type(data).__name__, "the file needs a top-level 'claims' list")
    if data.get("version") != 1:
        raise CatalogueError(path.name, "version", data.get("version"), "must be 1")
    seen: set[str] = set()
    claims = []
    for index, raw in enumerate(data["claims"]):
        try:
            claims.append(_claim(raw, index, seen))
        except CatalogueError as exc:
            raise CatalogueError(f"{path.name}: {exc.where}", exc.field, exc.value, exc.reason) from None
    return claims


def select(
    claims: Sequence[Claim], ids: Iterable[str] | None = None, source: str | None = None
) -> list[Claim]:
    """Claims by id (in the order asked) and/or by document file prefix; unknown ids are an error."""
    chosen = list(claims)
    if ids:
        by_id = {c.id: c for c in claims}
        chosen = []
        for name in ids:
            if name not in by_id:
                raise UnknownClaimError(name, difflib.get_close_matches(name, by_id, n=3, cutoff=0.5))
            chosen.append(by_id[name])
    if source:
        numbers = {short: number for number, (short, _, _) in DOCUMENTS.items()}
        prefix = numbers.get(source.lower(), source)
        chosen = [c for c in chosen if c.file.startswith(prefix)]
        if not chosen:
            known = sorted({f"{DOCUMENTS[number_of(c.file)][0]} ({number_of(c.file)})" for c in claims if number_of(c.file) in DOCUMENTS})
            raise CatalogueError("--source", "source", source, f"matches no claim's document; documents: {', '.join(known)}")
    return chosen
