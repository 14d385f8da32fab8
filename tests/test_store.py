"""The results store: durable after every row, never half-written, resumable, mergeable."""

from __future__ import annotations

import errno
import json

import pytest

from vitbench.cli import main
from vitbench.errors import VitbenchError
from vitbench.store import Store, StoreError, read_store
from vitbench.sweeps.merging import merge


def _row(i, **extra):
    return {"id": f"id{i}", "index": i, "model": "m", "status": "ok", "macs": 1000 + i, **extra}


def _lines(path):
    return (path / "rows.jsonl").read_bytes().splitlines()


def test_each_add_is_on_disk_with_samples_in_the_record(tmp_path):
    with Store.open(tmp_path) as store:
        store.add(_row(0, samples_s=[0.5, 0.25], latency_p50_s=0.375))
        assert [r["id"] for r in read_store(tmp_path)[0]] == ["id0"]  # readable before the next row
        store.add(_row(1, unsupported={"aten::foo": 2}))
    records, info = read_store(tmp_path)
    assert [r["id"] for r in records] == ["id0", "id1"]
    assert "_crc32" not in records[0]  # the checksum is the store's, not a column
    assert records[1]["unsupported"] == {"aten::foo": 2}
    assert records[0]["samples_s"] == [0.5, 0.25]  # raw samples, exactly, in the record
    assert records[0]["latency_p50_s"] == 0.375
    assert records[1]["macs"] == 1001 and isinstance(records[1]["macs"], int)
    assert info["schema_version"] == 2 and info["problems"] == []


class _DiskFull(Store):
    """A store whose disk fills up after ``room`` bytes (the failure injected at the write)."""

    room = 1 << 40

    def _append(self, fd, data):
        import os

        if self._size + len(data) > self.room:
            os.write(fd, data[: max(0, self.room - self._size)])  # a partial line, then ENOSPC
            raise OSError(errno.ENOSPC, "No space left on device")
        super()._append(fd, data)


def test_a_failed_write_is_one_line_and_leaves_the_previous_complete_rows(tmp_path):
    store = _DiskFull.open(tmp_path)
    store.add(_row(0))
    before = (tmp_path / "rows.jsonl").read_bytes()
    store.room = len(before) + 20
    with pytest.raises(StoreError) as caught:
        store.add(_row(1))
    message = str(caught.value)
    assert "No space left on device" in message and "1 rows are saved" in message and "--resume" in message
    assert "\n" not in message
    assert (tmp_path / "rows.jsonl").read_bytes() == before  # the partial line was taken back
    store.close()
    assert not list(tmp_path.glob(".*.tmp"))


def test_existing_rows_need_resume_or_force(tmp_path):
    with Store.open(tmp_path) as store:
        store.add(_row(0))
    with pytest.raises(StoreError, match="--resume"):
        Store.open(tmp_path)
    with Store.open(tmp_path, resume=True) as store:
        assert set(store.statuses) == {"id0"}
        store.add(_row(1))
    assert [r["id"] for r in read_store(tmp_path)[0]] == ["id0", "id1"]
    with Store.open(tmp_path, force=True) as store:
        assert store.statuses == {}
    assert read_store(tmp_path)[0] == []


def test_resume_keeps_old_records_byte_for_byte(tmp_path):
    with Store.open(tmp_path) as store:
        store.add(_row(0, ratio=0.1 + 0.2, note=None))
    first_line = _lines(tmp_path)[0]
    with Store.open(tmp_path, resume=True) as store:
        store.add(_row(1, ratio=0.5, note=None))
    assert _lines(tmp_path)[0] == first_line
    assert b"0.30000000000000004" in first_line  # full float precision, never rounded


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
    data = json.loads((tmp_path / "sweep.json").read_text())
    data["schema_version"] = 99
    (tmp_path / "sweep.json").write_text(json.dumps(data))
    with pytest.raises(StoreError, match="schema_version 99"):
        read_store(tmp_path)


def _shard(path, rows, index, count, fingerprint="f" * 16):
    meta = {"fingerprint": fingerprint, "name": "s", "grid_size": 4, "shard_index": index, "shard_count": count}
    with Store.open(path, sweep=meta) as store:
        for row in rows:
            store.add(row)


def test_merge_is_a_sorted_deduplicated_union_and_warns_on_conflicts(tmp_path):
    _shard(tmp_path / "a", [_row(2), _row(0, samples_s=[1.0])], 1, 2)
    _shard(tmp_path / "b", [_row(1), _row(2, status="error", macs=None), _row(3)], 2, 2)
    result = merge([tmp_path / "b", tmp_path / "a"], tmp_path / "m")
    records, info = read_store(tmp_path / "m")
    assert [r["id"] for r in records] == ["id0", "id1", "id2", "id3"]
    assert records[2]["status"] == "ok"  # the ok row wins over the failed duplicate
    assert records[0]["samples_s"] == [1.0]
    assert len(result.warnings) == 1 and "id2" in result.warnings[0]
    assert info["sweep"]["merged_from"] == [str(tmp_path / "b"), str(tmp_path / "a")]
    assert info["fingerprint"] == "f" * 16 and result.missing == 0
    assert (tmp_path / "m" / "results.csv").exists()


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


def test_merge_checks_coverage_even_when_shard_sizes_differ(tmp_path, capsys):
    # Issue 13: the missing-shard check was skipped when the shards' grid sizes differed. Two
    # shards of one 4-point grid split 1/2 and 2/4: indices 0, 2 (shard 1/2) and 1 (shard 2/4).
    _shard(tmp_path / "a", [_row(0), _row(2)], 1, 2)
    _shard(tmp_path / "b", [_row(1)], 2, 4)
    result = merge([tmp_path / "a", tmp_path / "b"], tmp_path / "m")
    assert result.missing == 1 and "1 of 4 configurations" in result.warnings[-1]


def test_merge_refuses_shards_of_another_sweep_in_one_line(tmp_path, capsys):
    _shard(tmp_path / "a", [_row(0)], 1, 2, fingerprint="a" * 16)
    _shard(tmp_path / "b", [_row(1)], 2, 2, fingerprint="b" * 16)
    assert main(["merge", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "another sweep definition" in err[0] and "--allow-foreign" in err[0]
    assert not (tmp_path / "m").exists()
    assert main(["merge", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "m"), "--allow-foreign", "-q"]) == 0
    assert [r["id"] for r in read_store(tmp_path / "m")[0]] == ["id0", "id1"]


def test_resuming_a_shard_store_with_another_shard_is_refused(tmp_path):
    meta = {"fingerprint": "f" * 16, "shard_index": 1, "shard_count": 3}
    with Store.open(tmp_path, sweep=meta) as store:
        store.add(_row(0))
    with pytest.raises(StoreError, match="holds shard 1/3 of this sweep, not shard 2/3"):
        Store.open(tmp_path, sweep={**meta, "shard_index": 2}, resume=True)
    Store.open(tmp_path, sweep=meta, resume=True).close()


def test_merge_refuses_another_sweep_given_as_its_results_csv(tmp_path, capsys):
    """Issue: "merging a foreign definition given as its results.csv merges with only a warning".
    A store's own results.csv carries its store's definition (the sweep.json beside it); a CSV
    with no definition at all cannot be checked, so it needs --allow-foreign beside a store."""
    import shutil

    _shard(tmp_path / "a", [_row(0)], 1, 2, fingerprint="a" * 16)
    _shard(tmp_path / "b", [_row(1)], 2, 2, fingerprint="b" * 16)
    _shard(tmp_path / "a2", [_row(1)], 2, 2, fingerprint="a" * 16)
    for store in ("a", "b", "a2"):
        assert main(["merge", str(tmp_path / store), "--out", str(tmp_path / f"{store}-export"), "-q"]) == 0  # writes results.csv
    capsys.readouterr()
    foreign = tmp_path / "b-export" / "results.csv"
    assert main(["merge", str(tmp_path / "a"), str(foreign), "--out", str(tmp_path / "m1")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "another sweep definition" in err[0] and "b" * 16 in err[0]
    assert not (tmp_path / "m1").exists()

    loose = tmp_path / "loose.csv"  # the same rows away from their store: nothing says which sweep
    shutil.copy(foreign, loose)
    assert main(["merge", str(tmp_path / "a"), str(loose), "--out", str(tmp_path / "m2")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "records no sweep definition" in err[0] and "--allow-foreign" in err[0]
    assert main(["merge", str(tmp_path / "a"), str(loose), "--out", str(tmp_path / "m2"), "--allow-foreign", "-q"]) == 0
    assert [r["id"] for r in read_store(tmp_path / "m2")[0]] == ["id0", "id1"]

    # the other shard of the same sweep, given as its results.csv, merges as its folder would
    result = merge([tmp_path / "a", tmp_path / "a2-export" / "results.csv"], tmp_path / "m3")
    assert result.rows == 2 and not any("definition" in w for w in result.warnings)
    assert read_store(tmp_path / "m3")[1]["fingerprint"] == "a" * 16
    # CSVs alone (no definition anywhere) merge with a warning: there is nothing to check against
    result = merge([loose], tmp_path / "m4")
    assert result.rows == 1 and "records no sweep definition" in result.warnings[0]


def test_the_lock_file_names_the_writing_process(tmp_path):
    import os

    with Store.open(tmp_path):
        assert (tmp_path / ".lock").read_text() == f"{os.getpid()}\n"


def test_closing_a_closed_store_again_never_releases_the_next_writers_lock(tmp_path):
    first = Store.open(tmp_path)
    first.close()
    with Store.open(tmp_path, resume=True):
        first.close()  # a second close of the first writer
        assert (tmp_path / ".lock").exists()
        with pytest.raises(VitbenchError, match="another vitbench sweep"):
            Store.open(tmp_path, resume=True)


@pytest.mark.parametrize(("every", "accepted"), [(1, True), (0, False), (True, False)])
def test_sync_every_is_a_positive_number_of_records(tmp_path, every, accepted):
    if accepted:
        Store.open(tmp_path, sync="interval", sync_every=every).close()
    else:
        with pytest.raises(StoreError, match="sync_every"):
            Store.open(tmp_path, sync="interval", sync_every=every)


class _FailingWrite(Store):
    """A store whose every append writes ten bytes of the line, then fails (a full disk)."""

    def _append(self, fd, data):
        import os

        os.write(fd, data[:10])
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_failed_write_after_resuming_takes_back_only_its_own_partial_line(tmp_path):
    with Store.open(tmp_path) as store:
        store.add(_row(0))
        store.add(_row(1))
    before = (tmp_path / "rows.jsonl").read_bytes()
    store = _FailingWrite.open(tmp_path, resume=True)
    with pytest.raises(StoreError, match="No space left on device"):
        store.add(_row(2))
    store.close()
    assert (tmp_path / "rows.jsonl").read_bytes() == before  # the rows written before resuming stay


def test_a_results_csv_from_an_earlier_vitbench_is_kept_unless_forced(tmp_path):
    (tmp_path / "results.csv").write_text("model,macs\nm,1\n")
    with pytest.raises(StoreError, match="results.csv from an earlier vitbench"):
        Store.open(tmp_path)
    assert (tmp_path / "results.csv").read_text() == "model,macs\nm,1\n"
    Store.open(tmp_path, force=True).close()


def test_saved_counts_each_configuration_once_across_a_resume(tmp_path):
    with Store.open(tmp_path) as store:
        store.add(_row(0))
        store.add(_row(1))
        assert store.saved == 2
    with Store.open(tmp_path, resume=True) as store:
        assert store.saved == 2
        store.add(_row(2))
        store.add(_row(3))
        store.add(_row(1, status="error"))  # a configuration already saved, run again
        assert store.saved == 4


@pytest.mark.parametrize(("interval", "accepted"), [(0, True), (3600, True), (3600.5, False), (-0.1, False)])
def test_the_sync_interval_is_zero_to_an_hour(tmp_path, interval, accepted):
    if accepted:
        Store.open(tmp_path, sync_interval_s=interval).close()
    else:
        with pytest.raises(StoreError, match="sync-interval"):
            Store.open(tmp_path, sync_interval_s=interval)


def test_closing_twice_touches_no_file_descriptor_again(tmp_path):
    import os

    store = Store.open(tmp_path)
    store.add(_row(0))
    store.close()
    # the two numbers the store held (rows and lock) are the lowest free ones: these reuse them
    others = [os.open(tmp_path / f"other{i}", os.O_WRONLY | os.O_CREAT) for i in range(2)]
    try:
        store.close()
        assert [os.write(fd, b"still open") for fd in others] == [10, 10] and store.problems == []
    finally:
        for fd in others:
            os.close(fd)
