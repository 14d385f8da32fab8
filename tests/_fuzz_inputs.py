"""The fuzzer's inputs (tests/test_fuzz.py): hostile values, numbers as text, and documents of
every kind vitbench reads (results CSV and JSON, a store's rows.jsonl and sweep.json, sweep files
in YAML and TOML, calibrations) as hypothesis strategies: mostly plausible documents with a few
hostile spots, so that the checks past the first are reached, and some hostile throughout."""

from __future__ import annotations

import csv
import io
import json
import math
import zlib
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from vitbench.timemodel.calibration.schema import SCHEMA_VERSION

# --------------------------------------------------------------------------- hostile values
#: text a user's (or an attacker's) file may hold where a number, a name or a list belongs
HOSTILE_TEXT = (
    "", " ", "1e9999999", "-1e9999999", "1e-9999999", "9" * 4301, "-" + "9" * 4400, "1" + "0" * 400, "1e400",
    "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e308", "1e309", "4.9e-324", "1e-400", "0", "-0", "-1",
    "0.0", "1.5", "0x1F", "1_000", "\u0661\u0662\u0663", "\uff11\uff12", "\u00b2", "true", "false", "TRUE", "None",
    "null", "[]", "[1, 2]", "[1e9999999]", "[" + "9" * 5000 + "]", "[" * 300 + "]" * 300, '[{"a": 1}]', "{}", "[1,",
    "=cmd|' /C calc'!A0", '+HYPERLINK("http://x","y")', "-2+3+cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1", "\r=1+1", '"', '""', "'", ",", "\n", "\r\n", "\x00", "\x1b[31mred\x1b[0m", "\x1b]0;title\x07",
    "\x07", "\x7f", "\x9b31m", "\u202eevil", "\ufeff", "<script>alert(1)</script>", "<img src=x onerror=alert(1)>",
    "[x](javascript:alert(1))", "| a | b |", "`code`", "**bold**", "# head", "a" * 3000, "mnist-vit", "ok",
    "error", "refused", "infer", "train", "fp32", "cpu", "x",
)

hostile_text = st.one_of(
    st.sampled_from(HOSTILE_TEXT),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=12),
)

#: numbers as a command line carries them
number_text = st.one_of(
    st.sampled_from((
        "0", "-0", "-1", "1", "2", "3", "7", "16", "28", "64", "1.5", "0.5", "1e3", "1e-3", "1E2", "2.0", "+3", " 3",
        "3 ", "1e309", "-1e309", "1e-400", "1e308", "nan", "NaN", "inf", "-inf", "infinity", "9" * 400, "9" * 5000,
        "1" + "0" * 40, "10000000000000000000000", "1e9999999", "0x10", "0o7", "0b1", "1_000", "\u0663",
        "\u0661\u0662", "\uff12\uff18", "\u00b2", "\u2167", "1,2", "1;2", "", " ", "-", "--", "1/2", "1e", ".", "\x00",
        "\x1b[31m1", "1\n2", "abc", "[1]", "true", "100000", "1000000", "1e6", "1e9", "4096", "65536", "3000", "1e12",
        "1000000000000", "2e4", "1e15", "12345678901234567890", "1e-9", "1e-300", "1e300", "5e-324",
    )),
    st.integers(min_value=-(10**25), max_value=10**25).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.decimals(allow_nan=True, allow_infinity=True).map(str),
    st.text(alphabet=st.characters(categories=["Nd", "No", "Nl"]), min_size=1, max_size=4),
)


class Raw(str):
    """A token written into JSON as it is (``1e9999999``, an integer of 5,000 digits, NaN)."""


raw_number = st.one_of(
    st.sampled_from(("1e9999999", "-1e9999999", "1e-9999999", "9" * 4301, "-" + "9" * 5000, "NaN", "Infinity",
                     "-Infinity", "1e308", "1e309", "4.9e-324", "0", "-0", "0.0", "1" + "0" * 40, "-1", "1" + "0" * 400,
                     "1" + "0" * 309, "-" + "1" + "0" * 400, "1e-320", "1e300")),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
).map(Raw)

json_scalar = st.one_of(
    st.none(), st.booleans(), raw_number, st.integers(), st.floats(allow_nan=True, allow_infinity=True), hostile_text,
)


def json_values(leaves: st.SearchStrategy = json_scalar, max_leaves: int = 12) -> st.SearchStrategy:
    return st.recursive(
        leaves,
        lambda children: st.one_of(st.lists(children, max_size=4),
                                   st.dictionaries(st.one_of(hostile_text, st.sampled_from(RESULT_COLUMNS)), children, max_size=4)),
        max_leaves=max_leaves,
    )


def json_text(value: Any) -> str:
    """JSON with :class:`Raw` tokens written as they are and NaN/Infinity allowed."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k))}:{json_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(json_text(v) for v in value) + "]"
    return json.dumps(value)


# --------------------------------------------------------------------------- results files
#: columns that the readers and the commands give a meaning to
RESULT_COLUMNS = (
    "model", "kind", "spec_key", "img_size", "patch_size", "batch_size", "params", "macs", "flops", "tokens", "id",
    "index", "study", "overrides", "stages", "status", "error", "source", "mode", "precision", "device", "threads",
    "latency_p50_s", "latency_p90_s", "latency_cv", "throughput_img_s", "peak_memory_bytes", "samples_s",
    "run_medians_s", "runs", "warnings", "env_torch_version", "elapsed_s", "completed_at", "pred_latency_s",
)
_CELL_FOR = {
    "model": st.sampled_from(("mnist-vit", "cifar-vit/4", "=cmd|' /C calc'!A0", "<script>alert(1)</script>",
                              "[x](javascript:alert(1))", "\x1b]0;pwn\x07", "+SUM(1)", "@x", "a|b", "mnist-vit\n")),
    "status": st.sampled_from(("ok", "error", "refused", "skipped", "", "OK", "\x1b[2J")),
    "mode": st.sampled_from(("infer", "train", "", "x")),
    "precision": st.sampled_from(("fp32", "bf16", "", "x")),
    "device": st.sampled_from(("cpu", "cuda", "h100", "")),
}


def cell_for(column: str) -> st.SearchStrategy:
    own = _CELL_FOR.get(column)
    return st.one_of(own, hostile_text) if own is not None else hostile_text


def measured_record(model: str = "mnist-vit", batch: int = 1) -> dict[str, Any]:
    """A plausible measured row (profile's columns): what hostile cells are put into."""
    return {
        "model": model, "overrides": "", "kind": "vit", "img_size": 28, "patch_size": 4, "batch_size": batch,
        "params": 212_234, "macs": 3_412_352 * batch, "mode": "infer", "precision": "fp32", "device": "cpu", "threads": 1,
        "status": "ok", "latency_p50_s": 0.0012 * batch, "latency_p90_s": 0.0013 * batch, "latency_cv": 0.02,
        "throughput_img_s": 800.0, "peak_memory_bytes": 10_000_000, "samples_s": [0.0012, 0.0013],
        "run_medians_s": [0.0012, 0.00121], "runs": 2,
    }


@st.composite
def hostile_records(draw, cells: st.SearchStrategy) -> list[dict[str, Any]]:
    """One to four plausible rows, one to three of their cells (or new columns) hostile."""
    records = [measured_record(draw(st.sampled_from(("mnist-vit", "mnist-vit", "cifar-vit/4"))), draw(st.sampled_from((1, 1, 4))))
               for _ in range(draw(st.integers(1, 4)))]
    for _ in range(draw(st.integers(1, 3))):
        record = draw(st.sampled_from(records))
        column = draw(st.one_of(st.sampled_from(sorted(record)), st.sampled_from(RESULT_COLUMNS), hostile_text))
        if draw(st.integers(0, 5)):
            record[column] = draw(cells)
        else:
            record.pop(column, None)
    return records


def _csv_cell(value: Any) -> str:
    if isinstance(value, list):
        return json.dumps(value)
    return "" if value is None else str(value)


@st.composite
def csv_documents(draw) -> bytes:
    """A results CSV: plausible rows with hostile cells, or a header of real and hostile column
    names over rows of hostile cells (some of another length); written by csv or by hand, with or
    without a BOM, CRLF or a torn end."""
    if draw(st.integers(0, 2)):
        records = draw(hostile_records(st.one_of(hostile_text, st.sampled_from(HOSTILE_TEXT))))
        names = list(dict.fromkeys(k for r in records for k in r))
        rows = [[_csv_cell(r.get(k)) for k in names] for r in records]
    else:
        names = draw(st.lists(st.one_of(st.sampled_from(RESULT_COLUMNS), hostile_text), min_size=1, max_size=7))
        if draw(st.booleans()) and "model" not in names:
            names = ["model", *names]
        rows = []
        for _ in range(draw(st.integers(0, 4))):
            width = len(names) if draw(st.integers(0, 5)) else draw(st.integers(0, len(names) + 2))
            rows.append([draw(cell_for(names[i] if i < len(names) else "")) for i in range(width)])
    newline = draw(st.sampled_from(("\n", "\r\n", "\r")))
    if draw(st.integers(0, 3)):
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator=newline,
                   quoting=draw(st.sampled_from((csv.QUOTE_MINIMAL, csv.QUOTE_ALL, csv.QUOTE_NONNUMERIC)))).writerows([names, *rows])
        text = buffer.getvalue()
    else:
        text = newline.join(",".join(row) for row in [names, *rows])
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    if not draw(st.integers(0, 6)):
        data = data + draw(st.binary(max_size=8))
    return data


@st.composite
def json_documents(draw) -> bytes:
    """A results JSON: random values, or the document's shape with hostile members and records."""
    kind = draw(st.integers(0, 5))
    if kind == 0:
        value = draw(json_values())
    elif kind >= 4:
        records = draw(hostile_records(st.one_of(json_scalar, json_values(max_leaves=4))))
        value = records if kind == 4 else {"schema_version": 1, "records": records}
    else:
        records = draw(st.lists(st.dictionaries(st.sampled_from(RESULT_COLUMNS), json_values(max_leaves=3), max_size=6), max_size=4))
        for record in records:
            if draw(st.booleans()):
                record["model"] = draw(st.one_of(_CELL_FOR["model"], json_scalar))
        if kind == 1:
            value = records
        else:
            version = draw(st.one_of(st.just(1), json_scalar))
            value = {"schema_version": version, "records": records if kind == 2 else draw(json_values())}
    return json_text(value).encode("utf-8", "surrogatepass")


def crc_line(body: str) -> bytes:
    """A store line (vitbench.store.format) around any JSON object text, checksum right."""
    body_bytes = body.encode("utf-8", "surrogatepass")
    crc = zlib.crc32(body_bytes)
    return body_bytes[:-1] + f',"_crc32":"{crc:08x}"}}\n'.encode("ascii")


@st.composite
def store_rows(draw, valid: Sequence[dict[str, Any]] = ()) -> bytes:
    """A store's rows.jsonl: checksummed records (past the checksum, so the reader's later checks
    are reached): the valid store's rows or measured rows with hostile cells, records of
    hostile cells only; damaged and torn lines."""
    lines = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.integers(0, 6))
        if valid and draw(st.integers(0, 2)):
            record = dict(draw(st.sampled_from(list(valid))))
            record.update(draw(hostile_records(st.one_of(json_scalar, json_values(max_leaves=4))))[0] if draw(st.booleans()) else {})
            for _ in range(draw(st.integers(1, 3))):
                record[draw(st.one_of(st.sampled_from(sorted(record)), st.sampled_from(RESULT_COLUMNS)))] = draw(
                    st.one_of(json_scalar, json_values(max_leaves=4)))
        else:
            record = draw(st.dictionaries(st.sampled_from(RESULT_COLUMNS), json_values(max_leaves=3), min_size=1, max_size=6))
        if draw(st.integers(0, 3)) == 0:
            record["id"] = draw(st.one_of(st.sampled_from(("0" * 32, "1" * 32, "a" * 32)), json_scalar))
        record.pop("_crc32", None)
        body = json_text(record)
        if kind <= 4:
            lines.append(crc_line(body))
        elif kind == 5:
            lines.append(draw(st.binary(max_size=40)) + b"\n")
        else:
            lines.append(crc_line(body)[: draw(st.integers(0, len(body)))])
    return b"".join(lines)


@st.composite
def store_definitions(draw, valid: dict[str, Any]) -> bytes:
    """A store's sweep.json: the valid one with some members (top level or under ``sweep``)
    replaced by hostile values, or random JSON."""
    if not draw(st.integers(0, 5)):
        return json_text(draw(json_values())).encode("utf-8", "surrogatepass")
    data = json.loads(json.dumps(valid))
    for _ in range(draw(st.integers(1, 3))):
        target = data["sweep"] if draw(st.booleans()) and isinstance(data.get("sweep"), dict) else data
        key = draw(st.sampled_from(sorted(target) + ["grid_size", "id_hex_digits", "shard_count", "shard_index"]))
        target[key] = draw(st.one_of(json_values(max_leaves=4), st.sampled_from((10**12, 10**400, -1, 0, 2**63)).map(lambda n: Raw(str(n)))))
    return json_text(data).encode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------- sweep files
#: models a fuzzed sweep file may name: presets are checked without building a module; never a
#: ``py:`` reference (that is code) nor a remote one
SWEEP_MODELS = ("mnist-vit", "cifar-vit/4", "nosuch-model", "", " ", "=cmd|' /C calc'!A0", "\x1b[31mx", "mnist-vit+depth=2")
GRID_FIELDS = ("depth", "embed_dim", "img_size", "patch_size", "num_heads", "mlp_ratio", "num_classes", "in_chans",
               "pool", "qkv_bias", "layers", "dropout", "nosuchfield")
sweep_value = st.one_of(
    json_scalar.filter(lambda v: not isinstance(v, Raw)),
    st.sampled_from((10**23, -(10**23), 10**400, float("inf"), float("nan"), 1e300, -1, 0, 1, 2, 3, 2**63, 4, 0.5)),
    st.sampled_from(SWEEP_MODELS),
)


def _sweep_values(draw, key: str) -> Any:
    if key == "models":
        return draw(st.one_of(st.lists(st.sampled_from(SWEEP_MODELS), min_size=0, max_size=3), st.sampled_from(SWEEP_MODELS), sweep_value))
    if key == "grid":
        return draw(st.one_of(
            st.dictionaries(st.sampled_from(GRID_FIELDS), st.one_of(st.lists(sweep_value, max_size=4), sweep_value), max_size=3),
            sweep_value))
    if key == "measure":
        from vitbench.sweeps.schema import measure_keys

        return draw(st.one_of(st.dictionaries(st.sampled_from((*measure_keys(), "min_time", "nosuch")), st.one_of(sweep_value, st.lists(sweep_value, max_size=3)), max_size=3), sweep_value))
    if key in ("batch_sizes", "stages", "counters"):
        options = {"stages": ("analytic", "counters", "predict", "measured", "nosuch"), "counters": ("fvcore", "dispatch", "x")}.get(key, ())
        return draw(st.one_of(st.lists(st.one_of(sweep_value, st.sampled_from(options or (1, 2, 10**23))), max_size=4), sweep_value))
    return draw(sweep_value)


@st.composite
def sweep_documents(draw) -> dict[str, Any]:
    """A sweep file's data: the real schema's keys (and a stranger) with hostile values; models
    mostly cheap presets, so that the dry run's checks are reached; sometimes studies."""
    from vitbench.sweeps.plan import STUDY_KEYS, TOP_KEYS

    data: dict[str, Any] = {"models": ["mnist-vit"]} if draw(st.integers(0, 3)) else {}
    if draw(st.booleans()):  # a plausible sweep, one value of it hostile
        data.update({"grid": {"depth": [1, 2], "embed_dim": [32, 64]}, "batch_sizes": [1, 4],
                     "stages": ["analytic", "predict"], "measure": {"threads": 1, "mode": ["infer", "train"]}})
        section = draw(st.sampled_from(("grid", "measure", "batch_sizes", "stages")))
        if isinstance(data[section], dict):
            field = draw(st.sampled_from(GRID_FIELDS if section == "grid" else ("threads", "mode", "precision", "runs", "timeout_s",
                                                                               "min_run_time_s", "warmup", "device", "memory_limit_bytes")))
            data[section][field] = draw(st.one_of(sweep_value, st.lists(sweep_value, min_size=1, max_size=3)))
        else:
            data[section] = [*data[section], draw(sweep_value)]
        return data
    for key in draw(st.lists(st.sampled_from((*TOP_KEYS, "nosuchkey")), max_size=4, unique=True)):
        if key == "studies":
            data[key] = draw(st.one_of(
                st.lists(st.fixed_dictionaries({"name": st.one_of(st.sampled_from(("a", "b")), sweep_value)}), max_size=2),
                sweep_value))
            if isinstance(data[key], list):
                for study in data[key]:
                    for sub in draw(st.lists(st.sampled_from(STUDY_KEYS), max_size=3, unique=True)):
                        study[sub] = _sweep_values(draw, sub)
        elif key == "out":
            data[key] = draw(st.one_of(sweep_value, st.just("{tmp}/out")))
        else:
            data[key] = _sweep_values(draw, key)
    return data


def yaml_text(data: Any) -> str | None:
    """YAML of ``data``, or None where PyYAML cannot write it."""
    import yaml

    try:
        return yaml.safe_dump(data, allow_unicode=True)
    except (yaml.YAMLError, ValueError, UnicodeError):
        return None


def toml_text(data: dict[str, Any]) -> str | None:
    """TOML of ``data``, or None where TOML cannot say it (null, mixed nesting)."""
    lines, tables = [], []

    def value(v: Any) -> str:
        if v is None:
            raise ValueError("TOML has no null")
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, Raw):
            return str(v)
        if isinstance(v, int):
            return str(v)
        if isinstance(v, float):
            return "nan" if v != v else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{json.dumps(str(k))} = {value(x)}" for k, x in v.items()) + "}"
        raise ValueError(type(v).__name__)

    try:
        for key, item in data.items():
            if isinstance(item, list) and item and all(isinstance(x, dict) for x in item):
                for entry in item:
                    tables.append(f"\n[[{json.dumps(key)}]]\n" + "".join(f"{json.dumps(str(k))} = {value(x)}\n" for k, x in entry.items()))
            else:
                lines.append(f"{json.dumps(key)} = {value(item)}\n")
    except ValueError:
        return None
    return "".join(lines) + "".join(tables)


#: TOML-only values: dates and times (a TOML date became exit 3)
toml_specials = st.sampled_from(("1979-05-27", "1979-05-27T07:32:00Z", "07:32:00", "1979-05-27 07:32:00", "inf", "-inf",
                                 "nan", "0x10", "0o7", "0b11", "1_000", "9" * 30, "1e400"))


# --------------------------------------------------------------------------- calibrations
def calibration_document(torch_version: str) -> dict[str, Any]:
    """A valid CPU calibration (vitbench/timemodel/calibration/schema.py), built by hand: every
    product at 1e10 MAC/s on a 2x2x2 grid, 1 GB/s, 1 us per operator."""
    rows = [[m, k, n, 1e10] for m in (1, 10**6) for k in (1, 10**6) for n in (1, 10**6)]
    return {
        "device": "cpu", "device_name": "synthetic", "threads": 1, "torch": torch_version, "basis": "calibration",
        "gemm": {"float32": rows}, "efficiency": {"conv": [[1, 1, 1, 0.5]], "attention": [[1, 1, 1, 0.25]]},
        "ops": {"gelu": [2e-6, 5e8]}, "overhead_s": 1e-6, "bandwidth_bytes_s": 1e9,
        "framework_s": {"infer": 3e-6, "train": 4e-6, "optimizer": 5e-7}, "in_step_factor": 1.0, "seconds": 0.0,
        "schema_version": SCHEMA_VERSION, "notes": {},
    }


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += _paths(item, (*prefix, i))
    return out


calibration_value = st.one_of(
    raw_number,
    st.sampled_from((0, -1, 1e-320, 1e-300, 1e300, 1.7e308, 7, 10**6, True, False, None, "x", "", [], {}, [1, 2, 3, 4],
                     "\x1b[31mred\x07", "=cmd|' /C calc'!A0", "<script>x</script>", "2.0", "cuda", "datasheet")),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(),
    hostile_text,
)


@st.composite
def calibration_documents(draw, valid: dict[str, Any]) -> bytes:
    """The valid calibration with one to three changes: a value replaced by a hostile one, a
    member removed, a stranger added, a GEMM row dropped (a hole in the grid) or duplicated."""
    data = json.loads(json.dumps(valid))
    paths = _paths(data)[1:]
    for _ in range(draw(st.integers(1, 3))):
        change = draw(st.integers(0, 5))
        path = draw(st.sampled_from(paths))
        parent = data
        try:
            for step in path[:-1]:
                parent = parent[step]
            last = path[-1]
            if change <= 2:
                parent[last] = draw(calibration_value)
            elif change == 3 and isinstance(parent, dict):
                del parent[last]
            elif change == 3 and isinstance(parent, list) and last < len(parent):
                del parent[last]
            elif change == 4 and isinstance(parent, (dict, list)):
                if isinstance(parent, dict):
                    parent[draw(st.one_of(hostile_text, st.sampled_from(("float16", "bfloat16", "linear", "conv", "train"))))] = draw(calibration_value)
                else:
                    parent.append(draw(calibration_value))
            else:
                parent[last] = draw(json_values(max_leaves=4))
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed the way there
    return json_text(data).encode("utf-8", "surrogatepass")
