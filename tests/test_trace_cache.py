"""The trace cache is read like any input (issue 45): a damaged or tampered entry is refused
with a warning and traced again, never priced. Each case damages the entry a real prediction
wrote, then predicts again: the same prediction as from a fresh trace, one warning line, and a
valid entry written back."""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path

import pytest
from _calibrations import synthetic

import vitbench
from vitbench.timemodel import run, trace_cache


def _predict() -> dict:
    run._OPS_CACHE.clear()  # the in-process memo would hide the disk cache
    [row] = vitbench.predict("mnist-vit", calibration=synthetic())
    return row


def _entry(tmp_path: Path) -> Path:
    [path] = list((tmp_path / "traces").iterdir())
    return path


def _rewrite(path: Path, change) -> None:
    data = json.loads(gzip.decompress(path.read_bytes()))
    change(data)
    path.write_bytes(gzip.compress(json.dumps(data).encode()))


def _all_fields_text(data):
    data["ops"] = [[str(v) if not isinstance(v, list) else "".join(map(str, v)) for v in op] for op in data["ops"]]


def _numbers_as_text(data):
    data["ops"] = [[op[0], op[1], str(op[2]), str(op[3]), [str(d) for d in op[4]], *op[5:7], str(op[7])] for op in data["ops"]]


def _negated(data):
    data["ops"] = [[op[0], op[1], -op[2], -op[3], op[4], *op[5:]] for op in data["ops"]]


def _huge(data):
    data["ops"] = [[op[0], op[1], 10**900, op[3], op[4], *op[5:]] for op in data["ops"]]


def _doubled_macs(data):  # a mismatch with the stored checksum
    data["ops"] = [[op[0], op[1], 2 * op[2], *op[3:]] for op in data["ops"]]


def _no_checksum(data):
    data.pop("sha256", None)


def _aliases_true(data):
    data["ops"] = [[*op[:7], True] for op in data["ops"]]


def _unknown_component(data):
    data["ops"] = [[op[0], "nothing", *op[2:]] for op in data["ops"]]


def _bool_macs(data):
    data["ops"] = [[op[0], op[1], bool(op[2]), *op[3:]] for op in data["ops"]]


def _float_bytes(data):
    data["ops"] = [[op[0], op[1], op[2], op[3] + 0.5, *op[4:]] for op in data["ops"]]


def _long_shape(data):
    data["ops"] = [[*op[:4], [1, 2, 3, 4, 5], *op[5:]] for op in data["ops"]]


def _unknown_dtype(data):
    data["ops"] = [[*op[:5], "float128", *op[6:]] for op in data["ops"]]


def _ops_an_object(data):
    data["ops"] = {"0": data["ops"][0]}


def _short_op(data):
    data["ops"] = [op[:7] for op in data["ops"]]


def _extra_field(data):
    data["note"] = 1


DAMAGE = [_all_fields_text, _numbers_as_text, _negated, _huge, _doubled_macs, _no_checksum, _aliases_true,
          _unknown_component, _bool_macs, _float_bytes, _long_shape, _unknown_dtype, _ops_an_object, _short_op, _extra_field]


@pytest.mark.parametrize("damage", DAMAGE, ids=[d.__name__.strip("_") for d in DAMAGE])
@pytest.mark.slow
def test_a_damaged_trace_cache_entry_is_traced_again_with_a_warning(damage, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("VITBENCH_TRACE_DIR", raising=False)
    fresh = _predict()
    path = _entry(tmp_path)
    assert trace_cache.read(path.name.split(".")[0]) is not None  # what was written reads back
    capsys.readouterr()
    _rewrite(path, damage)
    again = _predict()
    err = capsys.readouterr().err
    assert again["status"] == "ok" and again["pred_latency_s"] == fresh["pred_latency_s"]
    assert all(again[k] >= 0 for k in again if k.startswith("pred_") and k.endswith("_s"))
    # the row says so (warnings as data), once; a library call prints nothing
    refused = [w for w in again["warnings"] if w["code"] == "trace-cache-refused"]
    assert len(refused) == 1 and refused[0]["message"].startswith("trace cache entry ") and "\n" not in refused[0]["message"]
    assert err == ""
    assert trace_cache.read(path.name.split(".")[0]) is not None  # and written back valid
    assert not [w for w in _predict()["warnings"] if w["code"] == "trace-cache-refused"]


def test_on_the_command_line_a_tampered_entry_exits_0_with_the_fresh_prediction(tmp_path, monkeypatch, capsys):
    from vitbench.cli import main
    from vitbench.timemodel.calibration.cache import save

    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("VITBENCH_TRACE_DIR", raising=False)
    calibration = save(synthetic(), tmp_path / "cal.json")
    argv = ["predict", "mnist-vit", "--calibration", str(calibration), "--format", "json", "-q"]
    run._OPS_CACHE.clear()
    assert main(argv) == 0
    fresh = json.loads(capsys.readouterr().out)
    _rewrite(_entry(tmp_path), _all_fields_text)
    run._OPS_CACHE.clear()
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["records"][0]["pred_latency_s"] == fresh["records"][0]["pred_latency_s"]
    assert "traced again" in captured.err


def test_an_absent_entry_is_no_warning(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VITBENCH_TRACE_DIR", str(tmp_path))
    assert trace_cache.read("0" * 40) is None
    assert capsys.readouterr().err == ""


def test_an_entry_round_trips_and_carries_its_checksum(tmp_path, monkeypatch):
    from vitbench.timemodel.ops import Op

    monkeypatch.setenv("VITBENCH_TRACE_DIR", str(tmp_path))
    ops = [Op("addmm", "linear", 10, 20, (1, 2, 3), "float32", "gemm"), Op("add", "elementwise", 0, 5, (), "bfloat16", "add", True)]
    assert trace_cache.write("k", ops)
    data = json.loads(gzip.decompress((tmp_path / "k.json.gz").read_bytes()))
    assert set(data) == {"format", "key", "ops", "sha256"} and len(data["sha256"]) == 64
    assert trace_cache.read("k") == ops
    assert os.stat(tmp_path / "k.json.gz").st_size < 1000


def test_a_refusal_met_outside_a_prediction_is_not_carried_into_the_next_predictions_rows(tmp_path, monkeypatch):
    """A refused entry read by another caller (one that never takes its warnings) is not this
    prediction's: its rows carry only what their own trace refused (seen: a FIFO read by one test
    showed up in the rows of the next test's predictions in the same process)."""
    import vitbench
    from vitbench.timemodel import trace_cache

    monkeypatch.setenv("VITBENCH_TRACE_DIR", str(tmp_path))
    os.mkfifo(tmp_path / "elsewhere.json.gz")
    assert trace_cache.read("elsewhere") is None  # refused, its warning left for nobody
    rows = list(vitbench.predict("mnist-vit", device="h100,l4", batch_size=2, trace_cache=True))
    assert [w["message"] for r in rows for w in r["warnings"] if w["code"] == "trace-cache-refused"] == []


# --- an entry's checks, one by one (trace_cache.load_entry) ------------------------------------------

OP = ["addmm", "linear", 64, 1024, [4, 8, 2], "float32", "gemm", 0]


def _stored(tmp_path: Path, ops, key: str = "k", **fields) -> Path:
    entry = {"format": trace_cache.FORMAT, "key": key, "ops": ops, "sha256": trace_cache.checksum(key, ops), **fields}
    path = tmp_path / f"{key}.json.gz"
    path.write_bytes(gzip.compress(json.dumps(entry).encode()))
    return path


def test_an_entry_of_valid_operators_reads_back_as_they_were(tmp_path):
    from vitbench.timemodel.ops import Op

    ops = [OP, ["convolution", "conv", 9, 99, [2, 3, 4, 8], "bfloat16", "conv_grouped", 0],
           ["view", "elementwise", 0, 0, [], "float16", "", 1]]
    read = trace_cache.load_entry(_stored(tmp_path, ops), "k")
    assert read == [Op("addmm", "linear", 64, 1024, (4, 8, 2), "float32", "gemm", False),
                    Op("convolution", "conv", 9, 99, (2, 3, 4, 8), "bfloat16", "conv_grouped", False),
                    Op("view", "elementwise", 0, 0, (), "float16", "", True)]


@pytest.mark.parametrize("op, message", [
    (OP[:7], "an operator is not a list of 8 fields"),
    ([*OP[:2], -1, *OP[3:]], "an operator's macs=-1 is not valid"),
    ([*OP[:3], 1.5, *OP[4:]], "an operator's bytes=1.5 is not valid"),
    ([*OP[:2], 2**62 + 1, *OP[3:]], "an operator's macs=4611686018427387905 is not valid"),
    ([*OP[:4], [1, 2, 3, 4, 5], *OP[5:]], "an operator's shape=[1, 2, 3, 4, 5] is not valid"),
    ([*OP[:7], 2], "an operator's aliases=2 is not valid"),
    ([*OP[:7], True], "an operator's aliases=True is not valid"),
])
def test_an_operator_that_is_not_valid_is_refused_naming_its_field(tmp_path, op, message):
    with pytest.raises(trace_cache.StaleEntry, match=f"^{re.escape(message)}$"):
        trace_cache.load_entry(_stored(tmp_path, [OP, op]), "k")


def test_an_entry_of_another_key_or_format_or_nested_too_deep_is_refused(tmp_path):
    with pytest.raises(trace_cache.StaleEntry, match=r"^format or key is not this one's \(format \d+\)$"):
        trace_cache.load_entry(_stored(tmp_path, [OP], key="other"), "k")
    old = {"format": trace_cache.FORMAT - 1, "key": "k", "ops": [OP], "sha256": trace_cache.checksum("k", [OP])}
    (tmp_path / "old.json.gz").write_bytes(gzip.compress(json.dumps(old).encode()))
    with pytest.raises(trace_cache.StaleEntry, match=r"^format or key is not this one's"):
        trace_cache.load_entry(tmp_path / "old.json.gz", "k")
    deep = [*OP[:4], [[4], 8, 2], *OP[5:]]  # a fifth level: the entry, its ops, an operator, its shape, a list in it
    with pytest.raises(trace_cache.StaleEntry, match="nested|deep") as caught:
        trace_cache.load_entry(_stored(tmp_path, [deep]), "k")
    assert "shape" not in str(caught.value)  # refused by the parser, before any operator is read


def test_the_cache_key_is_40_hex_digits():
    from vitbench.models.references import resolve

    key = trace_cache.cache_key(resolve("mnist-vit"), 1, "infer", "fp32", "adamw", "cpu", False)
    assert re.fullmatch(r"[0-9a-f]{40}", key)


def test_an_entry_over_64_mib_on_disk_or_512_mib_unpacked_is_refused(tmp_path, monkeypatch):
    assert trace_cache.MAX_ENTRY_BYTES == 64 * 2**20
    sparse = tmp_path / "big.json.gz"
    with sparse.open("wb") as handle:  # holes: no disk used
        handle.truncate(64 * 2**20 + 1)
    from vitbench.errors import InputFileError

    with pytest.raises(InputFileError, match=r"^trace: 67,108,865 bytes, over the 67,108,864-byte limit"):
        trace_cache.load_entry(sparse, "k")
    with sparse.open("r+b") as handle:
        handle.truncate(64 * 2**20)  # at the bound: read, and refused for what it holds
    with pytest.raises(trace_cache.StaleEntry, match="^not gzip data$"):
        trace_cache.load_entry(sparse, "k")
    monkeypatch.setattr(trace_cache, "MAX_ENTRY_BYTES", 1000)
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * 8001))
    with pytest.raises(trace_cache.StaleEntry, match="^over 8,000 bytes unpacked$"):
        trace_cache.load_entry(bomb, "k")
