"""The store's checks of what it reads (issue "hardening": schema_version "3" or 3.0 accepted,
wrong-typed sweep.json members crashing with TypeError, --name changing the fingerprint, blank
lines reported as damaged records, Parquet turning integers above 2^63 into strings)."""

from __future__ import annotations

import json

import pytest

from vitbench.cli import main
from vitbench.store import Store, StoreError, read_store
from vitbench.sweeps import sweep


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
    from vitbench.store.export import export_store

    out = tmp_path / "big"
    with Store.open(out) as store:
        store.add({"id": "a", "status": "ok", "macs": 2**63 + 5})
        store.add({"id": "b", "status": "ok", "macs": 7})
    export_store(out, out, ("csv", "parquet"))
    table = pq.read_table(out / "results.parquet")
    assert str(table.schema.field("macs").type) == "uint64"
    assert table.column("macs").to_pylist() == [2**63 + 5, 7]


# --- resuming a store whose sweep.json an earlier vitbench or definition wrote -----------------
ARGV = ["sweep", "--model", "cifar-vit/4", "--depth", "1,2,3", "-q"]


def _recorded(tmp_path, capsys, **members):
    """A store of ARGV with its last row dropped (so a resume has one configuration to run) and
    its sweep.json rewritten as an earlier vitbench or definition left it: ``members`` set, a
    member given as None removed. Returns (out, the current fingerprint, the dropped id)."""
    out = tmp_path / "s"
    assert main([*ARGV, "--out", str(out)]) == 0
    definition = json.loads((out / "sweep.json").read_text())
    current = _fingerprint()
    assert definition["fingerprint"] == current and definition["fingerprints"] == [current]  # as this vitbench writes it
    for key, value in members.items():
        if value is None:
            definition.pop(key, None)
        else:
            definition[key] = value
    (out / "sweep.json").write_text(json.dumps(definition))
    lines = (out / "rows.jsonl").read_bytes().splitlines(keepends=True)
    assert len(lines) == 3
    (out / "rows.jsonl").write_bytes(b"".join(lines[:2]))
    capsys.readouterr()
    return out, current, json.loads(lines[2])["id"]


def _plan():
    """The plan the command line builds from ARGV."""
    from vitbench.cli import build_parser
    from vitbench.cli.sweep import build_plan

    return build_plan(build_parser().parse_args(ARGV))


def _fingerprint() -> str:
    return _plan().fingerprint


def _legacy_fingerprint() -> str:
    return _plan().legacy_fingerprint


def _resumes(out, capsys, dropped):
    before = (out / "rows.jsonl").read_bytes()
    assert main([*ARGV, "--out", str(out), "--resume"]) == 0
    assert capsys.readouterr().err == ""
    after = (out / "rows.jsonl").read_bytes()
    assert after.startswith(before) and after.count(b"\n") == 3  # the two kept, the dropped one run again
    assert [r["id"] for r in read_store(out)[0]][-1] == dropped
    return json.loads((out / "sweep.json").read_text())


def _refused(out, capsys, message):
    rows, definition = (out / "rows.jsonl").read_bytes(), (out / "sweep.json").read_bytes()
    assert main([*ARGV, "--out", str(out), "--resume"]) == 2
    assert capsys.readouterr().err == f"vitbench: error: out={str(out)!r}: {message}\n"
    assert (out / "rows.jsonl").read_bytes() == rows and (out / "sweep.json").read_bytes() == definition


def test_a_store_recorded_under_the_earlier_fingerprint_resumes(tmp_path, capsys):
    """A store written before study names left the fingerprint (its sweep.json holds the
    legacy fingerprint only) resumes, and from then on knows both fingerprints."""
    legacy = _legacy_fingerprint()
    out, current, dropped = _recorded(tmp_path, capsys, fingerprint=legacy, fingerprints=[legacy])
    assert legacy != current
    definition = _resumes(out, capsys, dropped)
    assert definition["fingerprint"] == current and definition["fingerprints"] == [legacy, current]


def test_every_fingerprint_the_store_recorded_is_its_own(tmp_path, capsys):
    """The latest fingerprint is not the only one: a definition the store took earlier resumes."""
    out, current, dropped = _recorded(tmp_path, capsys, fingerprint="0" * 16, fingerprints=[_fingerprint(), "0" * 16])
    definition = _resumes(out, capsys, dropped)
    assert definition["fingerprint"] == current and definition["fingerprints"] == [current, "0" * 16]


def test_a_sweep_json_without_fingerprints_resumes_its_own_sweep(tmp_path, capsys):
    """An earlier vitbench wrote ``fingerprint`` alone: it is the store's one fingerprint."""
    out, current, dropped = _recorded(tmp_path, capsys, fingerprints=None)
    definition = _resumes(out, capsys, dropped)
    assert definition["fingerprint"] == current and definition["fingerprints"] == [current]


def test_a_sweep_json_without_fingerprints_refuses_another_sweep(tmp_path, capsys):
    out, current, _ = _recorded(tmp_path, capsys, fingerprint="0" * 16, fingerprints=None)
    _refused(out, capsys, f"holds rows of another sweep definition (sweep, fingerprint {'0' * 16}; this one is {current}): "
             "use another --out, --force to start over, or --allow-foreign to add to it anyway")


def test_a_sweep_json_that_records_no_fingerprint_is_refused(tmp_path, capsys):
    out, current, _ = _recorded(tmp_path, capsys, fingerprint=None, fingerprints=None)
    _refused(out, capsys, f"holds rows of another sweep definition (sweep, fingerprint none recorded; this one is {current}): "
             "use another --out, --force to start over, or --allow-foreign to add to it anyway")


def test_allow_foreign_adds_to_a_store_without_fingerprints(tmp_path, capsys):
    out, current, dropped = _recorded(tmp_path, capsys, fingerprint="0" * 16, fingerprints=None)
    assert main([*ARGV, "--out", str(out), "--resume", "--allow-foreign"]) == 0
    assert [r["id"] for r in read_store(out)[0]][-1] == dropped
    definition = json.loads((out / "sweep.json").read_text())
    assert definition["fingerprint"] == current and definition["fingerprints"] == [current]
