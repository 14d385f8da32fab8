"""The results store: durable after every row, never half-written, resumable, mergeable."""

from __future__ import annotations

import json
import os

import pytest

from vitbench.cli import main
from vitbench.errors import VitbenchError
from vitbench.store import Store, StoreError, load_results, merge, read_raw_csv


def _row(i, **extra):
    return {"id": f"id{i}", "index": i, "model": "m", "status": "ok", "macs": 1000 + i, **extra}


def test_each_add_is_on_disk_with_samples_in_the_sidecar(tmp_path):
    with Store.open(tmp_path) as store:
        store.add(_row(0, samples_s=[0.5, 0.25], latency_p50_s=0.375))
        assert [r["id"] for r in read_raw_csv(tmp_path / "results.csv")] == ["id0"]
        store.add(_row(1, unsupported={"aten::foo": 2}))
    raw = read_raw_csv(tmp_path / "results.csv")
    assert [r["id"] for r in raw] == ["id0", "id1"]
    assert "samples_s" not in raw[0]  # raw samples live in the JSON sidecar, not the CSV
    assert json.loads(raw[1]["unsupported"]) == {"aten::foo": 2}
    records, sidecar = load_results(tmp_path)
    assert records[0]["samples_s"] == [0.5, 0.25]
    assert records[0]["latency_p50_s"] == 0.375
    assert records[1]["macs"] == 1001 and isinstance(records[1]["macs"], int)
    assert sidecar["schema_version"] == 1


def test_a_failed_write_leaves_the_previous_complete_file(tmp_path, monkeypatch):
    store = Store.open(tmp_path)
    store.add(_row(0))
    before = (tmp_path / "results.csv").read_text()

    def crash(src, dst):
        raise OSError("disk vanished")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        store.add(_row(1))
    monkeypatch.undo()
    assert (tmp_path / "results.csv").read_text() == before
    assert not list(tmp_path.glob(".results.*.tmp"))  # the temporary file was cleaned up
    store.close()


def test_existing_rows_need_resume_or_force(tmp_path):
    with Store.open(tmp_path) as store:
        store.add(_row(0))
    with pytest.raises(StoreError, match="--resume"):
        Store.open(tmp_path)
    with Store.open(tmp_path, resume=True) as store:
        assert store.completed_ids() == {"id0"}
        store.add(_row(1))
    assert [r["id"] for r in read_raw_csv(tmp_path / "results.csv")] == ["id0", "id1"]
    with Store.open(tmp_path, force=True) as store:
        assert store.rows == []
        store.flush()
    assert read_raw_csv(tmp_path / "results.csv") == []


def test_resume_keeps_old_cells_byte_for_byte(tmp_path):
    with Store.open(tmp_path) as store:
        store.add(_row(0, ratio=0.1 + 0.2, note=None))
    first_line = (tmp_path / "results.csv").read_text().splitlines()[1]
    with Store.open(tmp_path, resume=True) as store:
        store.add(_row(1, ratio=0.5, note=None))
    assert (tmp_path / "results.csv").read_text().splitlines()[1] == first_line
    assert "0.30000000000000004" in first_line  # full float precision, never rounded


def test_two_writers_cannot_share_a_store(tmp_path):
    with Store.open(tmp_path):
        assert (tmp_path / ".lock").exists()
        with pytest.raises(VitbenchError, match="another vitbench sweep"):
            Store.open(tmp_path, resume=True)
    Store.open(tmp_path, resume=True).close()  # released on close
    assert not (tmp_path / ".lock").exists()  # and no stray lock file is left behind


def test_newer_schema_is_refused(tmp_path):
    with Store.open(tmp_path) as store:
        store.add(_row(0))
    data = json.loads((tmp_path / "results.json").read_text())
    data["schema_version"] = 99
    (tmp_path / "results.json").write_text(json.dumps(data))
    with pytest.raises(StoreError, match="schema_version 99"):
        load_results(tmp_path)


def _shard(path, rows, index, count):
    with Store.open(path) as store:
        store.meta = {"name": "s", "grid_size": 4, "shard_index": index, "shard_count": count}
        for row in rows:
            store.add(row)


def test_merge_is_a_sorted_deduplicated_union_and_warns_on_conflicts(tmp_path):
    _shard(tmp_path / "a", [_row(2), _row(0, samples_s=[1.0])], 1, 2)
    _shard(tmp_path / "b", [_row(1), _row(2, status="error", macs=None)], 2, 2)
    result = merge([tmp_path / "b", tmp_path / "a"], tmp_path / "m")
    records, sidecar = load_results(tmp_path / "m")
    assert [r["id"] for r in records] == ["id0", "id1", "id2"]
    assert records[2]["status"] == "ok"  # the ok row wins over the failed duplicate
    assert records[0]["samples_s"] == [1.0]
    assert len(result.warnings) == 1 and "id2" in result.warnings[0]
    assert sidecar["sweep"]["merged_from"] == [str(tmp_path / "b"), str(tmp_path / "a")]


def test_merge_reports_missing_shards_and_bad_sources(tmp_path, capsys):
    _shard(tmp_path / "a", [_row(0)], 1, 3)
    _shard(tmp_path / "c", [_row(2)], 3, 3)
    assert main(["merge", str(tmp_path / "a"), str(tmp_path / "c"), "--out", str(tmp_path / "m")]) == 0
    captured = capsys.readouterr()
    assert "shards missing from the merge: 2/3" in captured.err
    assert "2 rows" in captured.out
    assert main(["merge", str(tmp_path / "nothing"), "--out", str(tmp_path / "m2")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no results.csv" in err[0]
    # merging again into a store that has rows needs --force
    assert main(["merge", str(tmp_path / "a"), "--out", str(tmp_path / "m")]) == 2
    assert main(["merge", str(tmp_path / "a"), "--out", str(tmp_path / "m"), "--force", "-q"]) == 0
