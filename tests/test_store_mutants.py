"""The store's writer where seeded mutants of it survived the other store tests: a failing fsync,
a flush with nothing to sync, the interval clock of group commit, and damaged records set aside
(their exact bytes, fsynced before rows.jsonl is rewritten, the file closed, the line numbers
reported). Each test here fails on one or more mutants of vitbench/store/writer.py
(``python -m tests.mutation --target store``)."""

from __future__ import annotations

import errno
import os
from types import SimpleNamespace

import pytest

from vitbench.errors import VitbenchError
from vitbench.store import Store, StoreError, read_store
from vitbench.store import writer as writer_module


def _row(i, **extra):
    return {"id": f"id{i}", "index": i, "model": "m", "status": "ok", **extra}


def _ids(path):
    return [r["id"] for r in read_store(path)[0]]


def _store_with(tmp_path, n):
    with Store.open(tmp_path) as store:
        for i in range(n):
            store.add(_row(i))
    return tmp_path / "rows.jsonl"


def _flip(line: bytes) -> bytes:
    """The record with one value changed behind its checksum's back."""
    assert b'"ok"' in line
    return line.replace(b'"ok"', b'"no"')


# --- fsync failures ------------------------------------------------------------------------------
def _failing_fsync(fd):
    raise OSError(errno.EIO, "Input/output error")


def test_a_failed_fsync_is_one_line_naming_the_rows_saved_and_loses_none(tmp_path, monkeypatch):
    store = Store.open(tmp_path, sync="always")
    store.add(_row(0))
    monkeypatch.setattr(os, "fsync", _failing_fsync)
    with pytest.raises(StoreError) as caught:
        store.add(_row(1))  # written, then its fsync fails
    message = str(caught.value)
    assert "\n" not in message
    assert message == (f"out={str(tmp_path)!r}: cannot sync rows.jsonl (Input/output error): 2 rows are saved; "
                       "fix the path and rerun with --resume")
    monkeypatch.undo()
    store.close()
    assert _ids(tmp_path) == ["id0", "id1"]  # the row whose fsync failed is kept


def test_a_failed_fsync_on_close_is_noted_not_raised(tmp_path, monkeypatch):
    store = Store.open(tmp_path, sync="interval", sync_interval_s=3600)
    store.add(_row(0))  # pending: fsynced on close
    monkeypatch.setattr(os, "fsync", _failing_fsync)
    store.close()
    monkeypatch.undo()
    assert len(store.problems) == 1 and "cannot sync rows.jsonl (Input/output error): 1 rows are saved" in store.problems[0]
    assert _ids(tmp_path) == ["id0"]


# --- flush and group commit ----------------------------------------------------------------------
def test_flush_with_nothing_pending_does_not_fsync_and_a_closed_store_flushes_nothing(tmp_path, monkeypatch):
    store = Store.open(tmp_path, sync="always")
    store.add(_row(0))
    assert store.syncs == 1
    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    store.flush()  # the row is already fsynced
    assert calls == [] and store.syncs == 1
    store.close()
    store.flush()  # closed: nothing to do, no error
    assert store.syncs == 1


def test_the_sync_interval_counts_from_the_last_fsync(tmp_path, monkeypatch):
    now = [0.0]
    monkeypatch.setattr(writer_module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    store = Store.open(tmp_path, sync="interval", sync_interval_s=1.0, sync_every=1000)
    syncs = []
    for t in (0.5, 2.0, 2.5, 3.1):  # fsyncs at 2.0 (2 s after opening) and 3.1 (1.1 s after that)
        now[0] = t
        store.add(_row(len(syncs)))
        syncs.append(store.syncs)
    store.close()
    assert syncs == [0, 1, 1, 2]


# --- damaged records on resume -------------------------------------------------------------------
def test_damaged_records_are_set_aside_with_their_exact_bytes(tmp_path):
    rows = _store_with(tmp_path, 3)
    first, second, third = rows.read_bytes().splitlines(keepends=True)
    flipped, torn = _flip(second), third[:-12]  # a changed value; a last line cut by a crash
    rows.write_bytes(first + flipped + torn)
    with Store.open(tmp_path, resume=True) as store:
        assert set(store.statuses) == {"id0"}
    assert (tmp_path / "rows.damaged.jsonl").read_bytes() == flipped + torn + b"\n"
    assert rows.read_bytes() == first
    # a second resume with new damage adds to the set-aside records, it does not replace them
    rows.write_bytes(first + _flip(first))
    Store.open(tmp_path, resume=True).close()
    assert (tmp_path / "rows.damaged.jsonl").read_bytes() == flipped + torn + b"\n" + _flip(first)


def test_the_damaged_records_are_fsynced_before_rows_jsonl_is_rewritten(tmp_path, monkeypatch):
    rows = _store_with(tmp_path, 2)
    first, second = rows.read_bytes().splitlines(keepends=True)
    rows.write_bytes(first + _flip(second))
    synced = []  # (inode, rows.jsonl still holds the damaged record) per fsync
    real = os.fsync

    def fsync(fd):
        synced.append((os.fstat(fd).st_ino, _flip(second) in rows.read_bytes()))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    Store.open(tmp_path, resume=True).close()
    monkeypatch.undo()
    damaged = os.stat(tmp_path / "rows.damaged.jsonl").st_ino
    assert (damaged, True) in synced


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd to count open files")
def test_setting_damaged_records_aside_leaves_no_file_open(tmp_path):
    rows = _store_with(tmp_path, 2)
    first, second = rows.read_bytes().splitlines(keepends=True)
    rows.write_bytes(first + _flip(second))
    before = len(os.listdir("/proc/self/fd"))
    Store.open(tmp_path, resume=True).close()
    assert (tmp_path / "rows.damaged.jsonl").exists()
    assert len(os.listdir("/proc/self/fd")) == before


@pytest.mark.parametrize("count", [10, 11])
def test_the_problem_names_the_first_ten_damaged_lines(tmp_path, count):
    rows = _store_with(tmp_path, count + 1)
    lines = rows.read_bytes().splitlines(keepends=True)
    rows.write_bytes(b"".join(_flip(line) for line in lines[:count]) + lines[count])
    with Store.open(tmp_path, resume=True) as store:
        assert set(store.statuses) == {f"id{count}"}
    numbers = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10" + (" ..." if count == 11 else "")
    assert store.problems == [
        f"{count} damaged record(s) in rows.jsonl (line {numbers}: checksum mismatch or torn write) "
        "moved to rows.damaged.jsonl; their configurations run again"
    ]


# --- opening and closing -------------------------------------------------------------------------
def test_a_store_holding_rows_is_refused_with_their_count(tmp_path):
    _store_with(tmp_path, 3)
    with pytest.raises(StoreError) as caught:
        Store.open(tmp_path)
    assert f"out={str(tmp_path)!r}: already holds 3 result rows; pass --resume" in str(caught.value)


def _open_fds():
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.isdir("/proc/self/fd"), reason="needs FIFOs and /proc")
def test_rows_jsonl_that_is_no_regular_file_when_opened_is_refused_and_left_closed(tmp_path, monkeypatch):
    """A FIFO put in place of rows.jsonl after it was read (simulated: nothing read), with a
    reader at its other end so that opening it for writing succeeds."""
    os.mkfifo(tmp_path / "rows.jsonl")
    reader = os.open(tmp_path / "rows.jsonl", os.O_RDONLY | os.O_NONBLOCK)
    try:
        monkeypatch.setattr(Store, "_read_rows", lambda self: (0, []))
        before = _open_fds()
        with pytest.raises(StoreError, match=r"rows\.jsonl is not a regular file; vitbench appends only to a regular file"):
            Store.open(tmp_path)
        assert _open_fds() == before
    finally:
        os.close(reader)


def test_closing_a_store_closes_its_lock_file(tmp_path):
    import gc
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store = Store.open(tmp_path)
        store.close()
        del store
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []
    assert not (tmp_path / ".lock").exists()


def test_a_directory_that_cannot_be_created_is_one_line_naming_it(tmp_path, monkeypatch):
    from pathlib import Path

    out = tmp_path / "results"

    def mkdir(self, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(Path, "mkdir", mkdir)
    with pytest.raises(StoreError) as caught:
        Store.open(out)
    assert str(caught.value) == f"out={str(out)!r}: cannot create results (Permission denied); nothing was run"


# --- what a failed write says --------------------------------------------------------------------
@pytest.mark.parametrize("code, hint", [
    (errno.ENOSPC, "free some space"), (errno.EDQUOT, "free some space"), (errno.EROFS, "use a writable --out"),
    (errno.EIO, "fix the path"),
])
def test_a_failed_write_says_what_to_do_and_how_many_rows_are_saved(tmp_path, code, hint):
    from pathlib import Path

    error = OSError(code, os.strerror(code))
    message = str(writer_module.fs_error("append to", Path("/s/rows.jsonl"), error, 3, Path("/s")))
    assert message == f"out='/s': cannot append to rows.jsonl ({os.strerror(code)}): 3 rows are saved; {hint} and rerun with --resume"


def test_a_failed_write_before_any_row_says_nothing_was_run(tmp_path):
    from pathlib import Path

    loop = writer_module.fs_error("create", Path("/s/.lock"), OSError(errno.ELOOP, "Too many levels"), None, Path("/s"))
    assert str(loop) == "out='/s': cannot create .lock (it is a symlink; vitbench writes only regular files); nothing was run"
    bare = writer_module.fs_error("write", Path("/s/sweep.json"), PermissionError(), 0, Path("/s"))
    assert str(bare) == ("out='/s': cannot write sweep.json (PermissionError): 0 rows are saved; fix the path and "
                         "rerun with --resume")


def test_a_lock_file_that_cannot_be_created_is_one_line_and_opens_nothing(tmp_path, monkeypatch):
    real = os.open

    def refuse_lock(path, *args, **kwargs):
        if str(path).endswith(".lock"):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse_lock)
    before = _open_fds()
    with pytest.raises(StoreError) as caught:
        Store.open(tmp_path)
    assert str(caught.value) == f"out={str(tmp_path)!r}: cannot create .lock (Permission denied); nothing was run"
    assert _open_fds() == before and not (tmp_path / "rows.jsonl").exists()


def test_appending_a_row_that_fails_with_the_disk_full_names_the_fix(tmp_path, monkeypatch):
    store = Store.open(tmp_path)
    store.add(_row(0))

    def full(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(store, "_append", full)
    with pytest.raises(StoreError) as caught:
        store.add(_row(1))
    assert str(caught.value).endswith(": 1 rows are saved; free some space and rerun with --resume")
    monkeypatch.undo()
    store.close()


# --- the definition beside the rows --------------------------------------------------------------
def _definition(path):
    import json

    return json.loads((path / "sweep.json").read_text())


def test_sweep_json_records_when_the_store_was_created_and_last_opened(tmp_path):
    from datetime import datetime, timedelta

    with Store.open(tmp_path, sweep={"fingerprint": "f1", "name": "first", "environment": {"torch": "2"}}):
        pass
    first = _definition(tmp_path)
    created = datetime.fromisoformat(first["created_at"])
    assert created.utcoffset() == timedelta(0) and len(first["created_at"]) == len("2026-01-01T00:00:00.000000+00:00")
    assert abs(datetime.now(created.tzinfo) - created) < timedelta(minutes=5)
    with Store.open(tmp_path, sweep={"fingerprint": "f2", "name": "second", "environment": {"torch": "3"}}, resume=True,
                    allow_foreign=True):
        pass
    second = _definition(tmp_path)
    assert second["created_at"] == first["created_at"]
    assert datetime.fromisoformat(second["updated_at"]) >= datetime.fromisoformat(first["updated_at"])
    assert second["fingerprint"] == "f2" and second["fingerprints"] == ["f1", "f2"]
    assert second["environment"] == {"torch": "2"}  # where the store began


def test_resuming_keeps_the_definition_and_adds_each_new_fingerprint_once(tmp_path):
    sweep = {"fingerprint": "f1", "legacy_fingerprint": "old", "name": "s", "grid_size": 4, "environment": {"torch": "2"}}
    with Store.open(tmp_path, sweep=sweep) as store:
        store.add(_row(0))
    first = _definition(tmp_path)
    assert {k: first[k] for k in ("format", "schema_version", "fingerprint", "fingerprints", "sweep", "environment")} == {
        "format": "vitbench-store", "schema_version": 2, "fingerprint": "f1", "fingerprints": ["f1"],
        "sweep": {"name": "s", "grid_size": 4}, "environment": {"torch": "2"}}
    with Store.open(tmp_path, sweep={**sweep, "environment": {"torch": "3"}}, resume=True):
        pass
    with Store.open(tmp_path, sweep={"fingerprint": "f2", "name": "t"}, resume=True, allow_foreign=True):
        pass
    last = _definition(tmp_path)
    assert last["fingerprints"] == ["f1", "f2"] and last["fingerprint"] == "f2"
    assert last["sweep"] == {"name": "t"} and last["environment"] == {"torch": "2"}  # the first run's environment
    with Store.open(tmp_path, resume=True):  # no definition given: the stored one stays
        pass
    kept = _definition(tmp_path)
    assert (kept["fingerprint"], kept["fingerprints"], kept["sweep"]) == ("f2", ["f1", "f2"], {"name": "t"})
    assert kept["created_at"] == first["created_at"]


def test_a_legacy_fingerprint_resumes_and_another_shard_is_refused(tmp_path):
    with Store.open(tmp_path, sweep={"fingerprint": "old", "shard_index": 1, "shard_count": 2}) as store:
        store.add(_row(0))
    with Store.open(tmp_path, sweep={"fingerprint": "new", "legacy_fingerprint": "old", "shard_index": 1, "shard_count": 2},
                    resume=True) as store:
        assert set(store.statuses) == {"id0"}
    with pytest.raises(StoreError) as caught:
        Store.open(tmp_path, sweep={"fingerprint": "new", "shard_index": 2, "shard_count": 2}, resume=True)
    assert str(caught.value) == (f"out={str(tmp_path)!r}: holds shard 1/2 of this sweep, not shard 2/2: give each "
                                 "shard its own --out (or --allow-foreign to add to it anyway)")
    with pytest.raises(StoreError, match="holds shard 1/2 of this sweep, not the whole grid"):
        Store.open(tmp_path, sweep={"fingerprint": "new"}, resume=True)
    with pytest.raises(StoreError, match=r"another sweep definition \(\?, fingerprint new; this one is other\)"):
        Store.open(tmp_path, sweep={"fingerprint": "other"}, resume=True)


# --- appending -----------------------------------------------------------------------------------
def test_saved_counts_configurations_and_a_rerun_row_updates_its_status(tmp_path):
    with Store.open(tmp_path) as store:
        store.add_many([_row(0, status="error"), _row(1)])
        store.add_many([])
        assert store.saved == 2
    with Store.open(tmp_path, resume=True) as store:
        assert store.statuses == {"id0": "error", "id1": "ok"}
        store.add(_row(0))
        store.add(_row(2))
        assert store.saved == 3 and store.statuses == {"id0": "ok", "id1": "ok"}
    store.close()
    with pytest.raises(StoreError, match="the store is closed"):
        store.add(_row(3))


@pytest.mark.parametrize("interval, every, accepted", [
    (0, 1, True), (3600, 1, True), (3600.5, 1, False), (True, 1, False), ("1", 1, False), (1, 1.0, False),
])
def test_the_sync_interval_is_0_to_3600_seconds_and_the_count_an_integer(interval, every, accepted):
    if accepted:
        assert writer_module.check_sync("interval", interval, every) == ("interval", float(interval), every)
    else:
        with pytest.raises(StoreError):
            writer_module.check_sync("interval", interval, every)


def test_starting_over_removes_every_file_of_the_old_store(tmp_path):
    with Store.open(tmp_path) as store:
        store.add(_row(0))
    for name in ("rows.damaged.jsonl", "results.csv", "results.parquet", "results.json", "notes.txt"):
        (tmp_path / name).write_text("old")
    with Store.open(tmp_path, force=True, sweep={"fingerprint": "new"}) as store:
        assert store.statuses == {} and store.saved == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "rows.jsonl", "sweep.json"]
    assert (tmp_path / "rows.jsonl").read_bytes() == b""


def test_only_an_earlier_vitbenchs_results_without_a_definition_are_refused(tmp_path):
    (tmp_path / "results.csv").write_text("model\nm\n")
    with pytest.raises(StoreError) as caught:
        Store.open(tmp_path)
    assert str(caught.value) == (f"out={str(tmp_path)!r}: holds a results.csv from an earlier vitbench (no rows.jsonl); "
                                 "use another --out, or --force to start over")
    with Store.open(tmp_path / "s"):  # a store of this vitbench exports a results.csv beside its rows
        pass
    (tmp_path / "s" / "results.csv").write_text("model\n")
    Store.open(tmp_path / "s").close()  # its sweep.json says it is a store: no rows, nothing to refuse


def test_a_store_is_created_with_its_missing_parent_folders_and_refused_over_a_file(tmp_path):
    with Store.open(tmp_path / "a" / "b" / "c") as store:
        store.add(_row(0))
    assert _ids(tmp_path / "a" / "b" / "c") == ["id0"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(VitbenchError) as caught:
        Store.open(tmp_path / "file")
    assert str(caught.value) == f"out={str(tmp_path / 'file')!r}: exists and is not a directory"


def test_a_lock_file_removed_by_the_previous_holder_while_locking_is_locked_again(tmp_path, monkeypatch):
    """The previous writer unlinks .lock on close: a file locked just before that unlink is no
    lock; the store locks the new file instead (here the first stat finds none)."""
    real_stat = os.stat
    gone = []

    def stat(path, *args, **kwargs):
        if str(path).endswith(".lock") and not gone:
            gone.append(path)
            raise FileNotFoundError(errno.ENOENT, "No such file or directory")
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    with Store.open(tmp_path) as store:
        monkeypatch.undo()
        assert gone and (tmp_path / ".lock").read_text() == f"{os.getpid()}\n"
        with pytest.raises(VitbenchError, match="another vitbench sweep"):
            Store.open(tmp_path, resume=True)
        store.add(_row(0))
    assert _ids(tmp_path) == ["id0"]


def test_rows_jsonl_turned_into_a_symlink_after_the_check_is_still_refused(tmp_path, monkeypatch):
    """A symlink put in place of rows.jsonl between the first check and the open (simulated:
    the first check sees none) is refused by the open itself (O_NOFOLLOW), in the same words."""
    (tmp_path / "elsewhere.jsonl").write_bytes(b"")
    (tmp_path / "rows.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    monkeypatch.setattr(os.path, "islink", lambda path: False)
    with pytest.raises(StoreError) as caught:
        Store.open(tmp_path)
    assert str(caught.value) == (f"out={str(tmp_path)!r}: rows.jsonl is a symlink; vitbench appends only to a "
                                 "regular file")
    assert (tmp_path / "elsewhere.jsonl").read_bytes() == b""
