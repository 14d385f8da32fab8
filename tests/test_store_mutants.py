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
