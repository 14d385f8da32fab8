"""The store's checks of what it reads (issue "hardening": schema_version "3" or 3.0 accepted,
wrong-typed sweep.json members crashing with TypeError, --name changing the fingerprint, blank
lines reported as damaged records, Parquet turning integers above 2^63 into strings)."""

from __future__ import annotations

import json

import pytest

from vitbench.cli import main
from vitbench.sweeps import read_store, sweep
from vitbench.sweeps.store import Store, StoreError


def _store(tmp_path):
    out = tmp_path / "s"
    sweep(models=["cifar-vit/4"], grid={"depth": [1, 2, 3]}, out=out)
    return out


@pytest.mark.parametrize("version", ["3", 3.0, True, 0, None])  # null too: an earlier vitbench omitted it, never wrote null
def test_a_schema_version_that_is_not_a_whole_number_is_refused(tmp_path, version):
    out = _store(tmp_path)
    definition = json.loads((out / "sweep.json").read_text())
    definition["schema_version"] = version
    (out / "sweep.json").write_text(json.dumps(definition))
    with pytest.raises(StoreError, match="schema_version"):
        read_store(out)


@pytest.mark.parametrize("member, value", [
    ("sweep", "a string"), ("fingerprints", "abc"), ("fingerprints", [1, 2]), ("environment", []),
    ("sweep.grid_size", "many"), ("sweep.name", 3), ("sweep.shard_count", [2]),
])
def test_wrong_typed_members_of_sweep_json_are_one_line_errors(tmp_path, capsys, member, value):
    out = _store(tmp_path)
    definition = json.loads((out / "sweep.json").read_text())
    if member.startswith("sweep."):
        definition["sweep"][member.split(".", 1)[1]] = value
    else:
        definition[member] = value
    (out / "sweep.json").write_text(json.dumps(definition))
    for argv in (["sweep", "--model", "cifar-vit/4", "--depth", "1,2,3", "--out", str(out), "--resume", "-q"],
                 ["merge", str(out), "--out", str(tmp_path / "m")], ["report", str(out), "--out", str(tmp_path / "r")]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and member.split(".")[-1] in err[0] and "Error" not in err[0], err


def test_renaming_a_sweep_keeps_its_store(tmp_path, capsys):
    out = tmp_path / "s"
    argv = ["sweep", "--model", "cifar-vit/4", "--depth", "1,2,3", "--out", str(out), "-q"]
    assert main([*argv, "--name", "first"]) == 0
    assert main([*argv, "--name", "second", "--resume"]) == 0  # not "another sweep definition"
    assert main(["sweep", "--model", "cifar-vit/4", "--depth", "1,2,4", "--out", str(out), "-q", "--resume"]) == 2
    assert "another sweep definition" in capsys.readouterr().err


def test_blank_lines_are_not_damaged_records(tmp_path):
    out = _store(tmp_path)
    rows = out / "rows.jsonl"
    lines = rows.read_bytes().split(b"\n")
    rows.write_bytes(b"\n".join([lines[0], b"", b"   ", *lines[1:]]))
    records, info = read_store(out)
    assert len(records) == 3 and info["problems"] == []
    with Store.open(out, resume=True) as store:
        assert store.problems == [] and len(store.statuses) == 3


def test_parquet_keeps_integers_beyond_int64_as_numbers(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    from vitbench.sweeps.export import export_store

    out = tmp_path / "big"
    with Store.open(out) as store:
        store.add({"id": "a", "status": "ok", "macs": 2**63 + 5})
        store.add({"id": "b", "status": "ok", "macs": 7})
    export_store(out, out, ("csv", "parquet"))
    table = pq.read_table(out / "results.parquet")
    assert str(table.schema.field("macs").type) == "uint64"
    assert table.column("macs").to_pylist() == [2**63 + 5, 7]
