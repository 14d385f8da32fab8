"""Fault tests of the results store, and proof that they can fail: each check passes on the real
store and FAILS on a store with one safety mechanism removed (tests/_broken_stores.py): a
missing fsync, no repair of a truncated record, no checksum (a flipped byte), no fingerprint
check on resume, no definition check on merge, a non-atomic rewrite; and (issue "hardening")
a reader keeping the first record of an id, temporaries left behind, no CSV export on
interrupt, an unterminated record accepted, merge conflicts not preferring ok rows, no fsync of
the folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _broken_stores as broken
import pytest

from vitbench.store import Store, StoreError, read_store
from vitbench.sweeps.merging import merge

TESTS = Path(__file__).resolve().parent
BIG = 1_438_384_128  # the MACs the truncated CSV kept as 1438


@dataclass(frozen=True)
class Variant:
    store: type = Store
    merge: Callable[..., Any] = merge
    patches: tuple[tuple[str, Any], ...] = ()  # ("module.attribute", broken replacement)

    def apply(self, monkeypatch) -> None:
        for target, replacement in self.patches:
            monkeypatch.setattr(target, replacement)


def _row(i: int, **extra) -> dict:
    return {"id": f"id{i}", "index": i, "model": "vit-b/16", "status": "ok", "macs": BIG + i, **extra}


def _rows(path: Path) -> list[str]:
    return [r["id"] for r in read_store(path)[0]]


# --- the checks ------------------------------------------------------------------------------------
def check_acknowledged_rows_survive_a_power_cut(variant: Variant, tmp_path: Path, monkeypatch) -> None:
    """A power cut keeps of each file what was fsynced (simulated: the file is cut back to its
    size at its last fsync). With ``sync="always"`` a row is on stable storage when add()
    returns; with group commit (the default) every row written before flush() returns is."""
    synced: dict[tuple[int, int], int] = {}
    real = os.fsync

    def fsync(fd):
        real(fd)
        st = os.fstat(fd)
        synced[(st.st_dev, st.st_ino)] = st.st_size

    monkeypatch.setattr(os, "fsync", fsync)
    for policy, flush in (("always", False), ("interval", True)):
        store = variant.store.open(tmp_path / policy, sync=policy, sync_interval_s=3600)
        for i in range(5):
            store.add(_row(i))
        if flush:
            store.flush()
        rows = tmp_path / policy / "rows.jsonl"
        st = os.stat(rows)
        os.truncate(rows, synced.get((st.st_dev, st.st_ino), 0))  # the power cut, before close()
        store.close()
        assert _rows(tmp_path / policy) == [f"id{i}" for i in range(5)], policy


def check_a_truncated_record_is_detected_reported_and_recomputed(variant: Variant, tmp_path: Path, monkeypatch) -> None:
    with variant.store.open(tmp_path) as store:
        for i in range(5):
            store.add(_row(i))
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(rows.read_bytes()[:-30])  # cut inside the last record
    with variant.store.open(tmp_path, resume=True) as store:
        assert set(store.statuses) == {f"id{i}" for i in range(4)}  # the torn one is not done
        assert len(store.problems) == 1 and "line 5" in store.problems[0]  # and it is reported
        store.add(_row(4))  # recomputed
        store.add(_row(5))
    records, info = read_store(tmp_path)
    assert [r["id"] for r in records] == [f"id{i}" for i in range(6)] and info["problems"] == []
    assert [r["macs"] for r in records] == [BIG + i for i in range(6)]


def check_a_flipped_byte_is_detected_reported_and_recomputed(variant: Variant, tmp_path: Path, monkeypatch) -> None:
    with variant.store.open(tmp_path) as store:
        for i in range(5):
            store.add(_row(i))
    rows = tmp_path / "rows.jsonl"
    lines = rows.read_bytes().split(b"\n")
    assert str(BIG + 2).encode() in lines[2]
    lines[2] = lines[2].replace(str(BIG + 2).encode(), str(BIG + 3).encode())  # one digit flipped
    rows.write_bytes(b"\n".join(lines))
    records, info = read_store(tmp_path)  # a reader skips it and says so
    assert "id2" not in [r["id"] for r in records] and "line 3" in info["problems"][0]
    with variant.store.open(tmp_path, resume=True) as store:
        assert "id2" not in store.statuses  # detected: to be recomputed
        assert any("line 3" in p for p in store.problems)  # reported
        store.add(_row(2))
    records = {r["id"]: r for r in read_store(tmp_path)[0]}
    assert sorted(records) == [f"id{i}" for i in range(5)]
    assert records["id2"]["macs"] == BIG + 2


def check_a_foreign_definition_is_refused_on_resume(variant: Variant, tmp_path: Path, monkeypatch) -> None:
    with variant.store.open(tmp_path, sweep={"fingerprint": "a" * 16, "name": "A"}) as store:
        store.add(_row(0))
    try:
        variant.store.open(tmp_path, sweep={"fingerprint": "b" * 16, "name": "B"}, resume=True).close()
    except StoreError as exc:
        assert "another sweep definition" in str(exc) and "--allow-foreign" in str(exc)
    else:
        raise AssertionError("a store of another sweep definition was resumed")
    with variant.store.open(tmp_path, sweep={"fingerprint": "a" * 16, "name": "A"}, resume=True) as store:
        assert set(store.statuses) == {"id0"}  # the same definition resumes


def check_shards_of_different_sweeps_are_refused_on_merge(variant: Variant, tmp_path: Path, monkeypatch) -> None:
    for name, fingerprint, rows in (("a", "a" * 16, [_row(0)]), ("b", "b" * 16, [_row(1)])):
        with Store.open(tmp_path / name, sweep={"fingerprint": fingerprint, "grid_size": 2}) as store:
            for row in rows:
                store.add(row)
    try:
        variant.merge([tmp_path / "a", tmp_path / "b"], tmp_path / "m")
    except StoreError as exc:
        assert "another sweep definition" in str(exc)
    else:
        raise AssertionError("shards of two sweep definitions were merged as one")
    assert not (tmp_path / "m" / "rows.jsonl").exists()


KILL_IN_REWRITE = """
import os, signal, sys
sys.path.insert(0, {tests!r})
import _broken_stores
from vitbench.store import Store
cls = getattr(_broken_stores, {name!r}, Store)
real = os.write
def write(fd, data):  # the first large write (the rewrite of rows.jsonl) dies half-way
    if len(data) > 100:
        real(fd, bytes(data[: len(data) // 2]))
        os.kill(os.getpid(), signal.SIGKILL)
    return real(fd, data)
os.write = write
cls.open({path!r}, resume=True)
"""


def check_a_kill_inside_a_rewrite_loses_no_row(variant: Variant, tmp_path: Path, monkeypatch) -> None:
    """Resuming a store with a damaged record rewrites rows.jsonl once; a kill inside that
    rewrite must leave every good row readable."""
    with Store.open(tmp_path) as store:
        for i in range(5):
            store.add(_row(i))
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(rows.read_bytes()[:-30])
    script = KILL_IN_REWRITE.format(tests=str(TESTS), name=variant.store.__name__, path=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr  # killed inside the write
    assert _rows(tmp_path) == [f"id{i}" for i in range(4)]
    with Store.open(tmp_path, resume=True) as store:  # and the next resume recovers
        assert set(store.statuses) == {f"id{i}" for i in range(4)}


def check_the_last_record_of_an_id_wins(variant: Variant, tmp_path: Path, monkeypatch) -> None:
    """--retry-failed appends a new record for a failed id: readers and resume must keep it."""
    variant.apply(monkeypatch)
    with variant.store.open(tmp_path) as store:
        store.add(_row(0, status="error"))
        store.add(_row(1))
        store.add(_row(0))  # the retry succeeded
    [first, _] = read_store(tmp_path)[0]
    assert first["id"] == "id0" and first["status"] == "ok"
    with variant.store.open(tmp_path, resume=True) as store:
        assert store.statuses["id0"] == "ok"


def check_temporaries_left_by_a_kill_are_removed(variant: Variant, tmp_path: Path, monkeypatch) -> None:
    variant.apply(monkeypatch)
    with variant.store.open(tmp_path) as store:
        store.add(_row(0))
    for name in (".rows.jsonl.999.tmp", ".results.csv.999.tmp", ".sweep.json.999.tmp"):
        (tmp_path / name).write_bytes(b"half")
    variant.store.open(tmp_path, resume=True).close()
    assert sorted(p.name for p in tmp_path.glob(".*.tmp")) == []


def check_an_interrupt_exports_the_rows_saved(variant: Variant, tmp_path: Path, monkeypatch) -> None:
    from vitbench.sweeps import sweep
    from vitbench.sweeps.run import SweepInterrupted

    variant.apply(monkeypatch)
    seen = []

    def on_row(row):
        seen.append(row)
        if len(seen) == 2:
            raise KeyboardInterrupt

    try:
        sweep(models=["cifar-vit/4"], grid={"depth": [1, 2, 3, 4]}, out=tmp_path / "s", on_row=on_row)
    except SweepInterrupted:
        pass
    csv = tmp_path / "s" / "results.csv"
    assert csv.exists() and len(csv.read_text().splitlines()) == 1 + 2


def check_an_unterminated_last_record_is_set_aside(variant: Variant, tmp_path: Path, monkeypatch) -> None:
    """A last record with a valid checksum but no newline (a write cut before its last byte):
    the next append would be glued to it; it is set aside and run again instead."""
    variant.apply(monkeypatch)
    with variant.store.open(tmp_path) as store:
        for i in range(3):
            store.add(_row(i))
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(rows.read_bytes()[:-1])
    with variant.store.open(tmp_path, resume=True) as store:
        assert "id2" not in store.statuses
        store.add(_row(2))
        store.add(_row(3))
    assert _rows(tmp_path) == [f"id{i}" for i in range(4)]


def check_a_merge_prefers_the_ok_row(variant: Variant, tmp_path: Path, monkeypatch) -> None:
    variant.apply(monkeypatch)
    for name, status in (("failed", "error"), ("fine", "ok")):
        with Store.open(tmp_path / name, sweep={"fingerprint": "a" * 16, "grid_size": 1}) as store:
            store.add(_row(0, status=status))
    for order in (["failed", "fine"], ["fine", "failed"]):
        variant.merge([tmp_path / o for o in order], tmp_path / "m", force=True)
        assert [r["status"] for r in read_store(tmp_path / "m")[0]] == ["ok"], order


def check_new_files_are_made_durable_in_their_folder(variant: Variant, tmp_path: Path, monkeypatch) -> None:
    """A new rows.jsonl, and every file renamed into place, needs an fsync of its folder, or a
    power cut can lose the file whatever was fsynced inside it."""
    import stat as stat_module

    variant.apply(monkeypatch)
    folders: list[int] = []
    real = os.fsync

    def fsync(fd):
        real(fd)
        if stat_module.S_ISDIR(os.fstat(fd).st_mode):
            folders.append(os.fstat(fd).st_ino)

    monkeypatch.setattr(os, "fsync", fsync)
    with variant.store.open(tmp_path / "new") as store:
        store.add(_row(0))
    assert os.stat(tmp_path / "new").st_ino in folders


CHECKS = {
    "power cut": check_acknowledged_rows_survive_a_power_cut,
    "truncated record": check_a_truncated_record_is_detected_reported_and_recomputed,
    "flipped byte": check_a_flipped_byte_is_detected_reported_and_recomputed,
    "foreign definition": check_a_foreign_definition_is_refused_on_resume,
    "mismatched shards": check_shards_of_different_sweeps_are_refused_on_merge,
    "kill in a rewrite": check_a_kill_inside_a_rewrite_loses_no_row,
    "last record wins": check_the_last_record_of_an_id_wins,
    "temporaries removed": check_temporaries_left_by_a_kill_are_removed,
    "export on interrupt": check_an_interrupt_exports_the_rows_saved,
    "unterminated record": check_an_unterminated_last_record_is_set_aside,
    "merge prefers ok": check_a_merge_prefers_the_ok_row,
    "folder fsync": check_new_files_are_made_durable_in_their_folder,
}

#: fault -> (the broken store, the check that must catch it)
FAULTS = {
    "missing fsync": (Variant(store=broken.NoFsync), "power cut"),
    "truncated record left in place": (Variant(store=broken.NoTailRepair), "truncated record"),
    "flipped byte believed (no checksum)": (Variant(store=broken.NoChecksum), "flipped byte"),
    "foreign definition on resume": (Variant(store=broken.NoFingerprintCheck), "foreign definition"),
    "mismatched shards on merge": (Variant(merge=broken.merge_without_definition_check), "mismatched shards"),
    "non-atomic write": (Variant(store=broken.InPlaceReplace), "kill in a rewrite"),
    "reader keeps the first record of an id": (
        Variant(patches=(("vitbench.store.reader.latest_rows", broken.latest_rows_keeping_first),)), "last record wins"),
    "temporaries left behind": (Variant(store=broken.KeepsTemporaries), "temporaries removed"),
    "no CSV export on interrupt": (
        Variant(patches=(("vitbench.sweeps.run._export_quietly", broken.no_export_on_interrupt),)), "export on interrupt"),
    "unterminated record accepted": (
        Variant(patches=(("vitbench.store.writer.scan", broken.scan_accepting_unterminated),
                         ("vitbench.store.reader.scan", broken.scan_accepting_unterminated))), "unterminated record"),
    "merge keeps a failed row over an ok one": (
        Variant(patches=(("vitbench.sweeps.merging._prefer", broken.never_prefer),)), "merge prefers ok"),
    "no fsync of the folder": (
        Variant(patches=(("vitbench.store.writer.fsync_dir", broken.no_directory_fsync),
                         ("vitbench.store.atomic.fsync_dir", broken.no_directory_fsync))), "folder fsync"),
}


@pytest.mark.parametrize("name", list(CHECKS))
def test_the_real_store_passes(name, tmp_path, monkeypatch):
    CHECKS[name](Variant(), tmp_path, monkeypatch)


@pytest.mark.parametrize("fault", list(FAULTS))
def test_each_broken_store_fails_its_check(fault, tmp_path, monkeypatch):
    variant, check = FAULTS[fault]
    with pytest.raises(AssertionError):
        CHECKS[check](variant, tmp_path, monkeypatch)


# --- group commit: what an fsync policy promises -------------------------------------------------
def test_group_commit_syncs_by_interval_and_count_not_per_row(tmp_path, monkeypatch):
    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    with Store.open(tmp_path / "n", sync_interval_s=3600, sync_every=10) as store:
        calls.clear()
        for i in range(25):
            store.add(_row(i))
        assert store.syncs == 2 and len(calls) == 2  # at rows 10 and 20, not 25 times
        calls.clear()
    assert len(calls) == 1  # close() syncs the last 5
    with Store.open(tmp_path / "a", sync="always") as store:
        calls.clear()
        for i in range(4):
            store.add(_row(i))
        assert store.syncs == 4 and len(calls) == 4
    with Store.open(tmp_path / "t", sync_interval_s=0) as store:  # an interval of 0: every row
        for i in range(3):
            store.add(_row(i))
        assert store.syncs == 3


@pytest.mark.parametrize("bad", [{"sync": "never"}, {"sync_interval_s": -1}, {"sync_interval_s": float("nan")}, {"sync_every": 0}])
def test_a_bad_sync_policy_is_refused_before_opening(bad, tmp_path):
    with pytest.raises(StoreError):
        Store.open(tmp_path / "s", **bad)
    assert not (tmp_path / "s").exists()


POWER_CUT_CHILD = textwrap.dedent("""
    import json, os, sys
    from vitbench.sweeps import sweep
    out, log = sys.argv[1], sys.argv[2]
    real = os.fsync
    def fsync(fd):  # records, per file, the size that is on stable storage
        real(fd)
        st = os.fstat(fd)
        with open(log, "a") as handle:
            handle.write(json.dumps([st.st_ino, st.st_size]) + "\\n")
    os.fsync = fsync
    done = []
    def on_row(row):
        done.append(row)
        if len(done) == 37:
            os.kill(os.getpid(), 9)  # the machine goes down here
    sweep(models=["cifar-vit/4"], grid={"img_size": [32, 64, 96, 128], "depth": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]},
          batch_sizes=[1, 2], out=out, on_row=on_row, sync_interval_s=3600, sync_every=16)
""")


def test_a_power_cut_leaves_a_valid_store_that_resumes(tmp_path):
    """Group commit under a simulated power failure: the sweep is killed after 37 rows with an
    fsync every 16 records; then every byte written after the last fsync of rows.jsonl is
    dropped, cutting a record in half as a lost page would. The store opens, reports the torn
    record, and --resume rebuilds exactly the rows of an uninterrupted run."""
    from vitbench.sweeps import sweep

    out, log = tmp_path / "cut", tmp_path / "fsyncs.jsonl"
    proc = subprocess.run([sys.executable, "-c", POWER_CUT_CHILD, str(out), str(log)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    rows_file = out / "rows.jsonl"
    inode = os.stat(rows_file).st_ino
    synced = [size for ino, size in map(json.loads, log.read_text().splitlines()) if ino == inode]
    written = os.path.getsize(rows_file)
    assert synced and synced[-1] < written  # rows were written past the last fsync (32 of 37)
    assert len(read_store(out)[0]) == 37  # a process kill alone loses nothing
    os.truncate(rows_file, synced[-1] + 40)  # the power cut: the unsynced tail is lost, one record torn
    kept = read_store(out)[0]
    assert len(kept) == 32 and "damaged" in read_store(out)[1]["problems"][0]
    resumed = sweep(models=["cifar-vit/4"], grid={"img_size": [32, 64, 96, 128], "depth": list(range(1, 13))},
                    batch_sizes=[1, 2], out=out, resume=True)
    assert resumed.skipped == 32 and resumed.ran == 96 - 32
    assert any("damaged record" in p for p in resumed.problems)
    reference = sweep(models=["cifar-vit/4"], grid={"img_size": [32, 64, 96, 128], "depth": list(range(1, 13))},
                      batch_sizes=[1, 2], out=tmp_path / "whole")
    strip = lambda rows: [{k: v for k, v in r.items() if k not in ("completed_at", "elapsed_s")} for r in rows]  # noqa: E731
    assert strip(resumed.records) == strip(reference.records)
    by_id = {r["id"]: r for r in resumed.records}
    assert all(by_id[r["id"]] == r for r in kept)  # the rows that survived were not recomputed
