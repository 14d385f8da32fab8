"""Fault tests of the results store, and proof that they can fail: each check passes on the real
store and FAILS on a store with one safety mechanism removed (tests/_broken_stores.py): a
missing fsync, no repair of a truncated record, no checksum (a flipped byte), no fingerprint
check on resume, no definition check on merge, a non-atomic rewrite."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

import _broken_stores as broken
from vitbench.sweeps.merging import merge
from vitbench.sweeps.store import Store, StoreError, read_store

TESTS = Path(__file__).resolve().parent
BIG = 1_438_384_128  # the MACs the truncated CSV kept as 1438


@dataclass(frozen=True)
class Variant:
    store: type = Store
    merge: Callable[..., Any] = merge


def _row(i: int, **extra) -> dict:
    return {"id": f"id{i}", "index": i, "model": "vit-b/16", "status": "ok", "macs": BIG + i, **extra}


def _rows(path: Path) -> list[str]:
    return [r["id"] for r in read_store(path)[0]]


# --- the checks ------------------------------------------------------------------------------------
def check_acknowledged_rows_survive_a_power_cut(variant: Variant, tmp_path: Path, monkeypatch) -> None:
    """After add() returns, the row is on stable storage: a power cut keeps of each file what was
    fsynced (simulated: the file is cut back to its size at its last fsync)."""
    synced: dict[tuple[int, int], int] = {}
    real = os.fsync

    def fsync(fd):
        real(fd)
        st = os.fstat(fd)
        synced[(st.st_dev, st.st_ino)] = st.st_size

    monkeypatch.setattr(os, "fsync", fsync)
    store = variant.store.open(tmp_path)
    for i in range(5):
        store.add(_row(i))
    rows = tmp_path / "rows.jsonl"
    st = os.stat(rows)
    store.close()
    os.truncate(rows, synced.get((st.st_dev, st.st_ino), 0))  # the power cut
    assert _rows(tmp_path) == [f"id{i}" for i in range(5)]


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
from vitbench.sweeps.store import Store
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


CHECKS = {
    "power cut": check_acknowledged_rows_survive_a_power_cut,
    "truncated record": check_a_truncated_record_is_detected_reported_and_recomputed,
    "flipped byte": check_a_flipped_byte_is_detected_reported_and_recomputed,
    "foreign definition": check_a_foreign_definition_is_refused_on_resume,
    "mismatched shards": check_shards_of_different_sweeps_are_refused_on_merge,
    "kill in a rewrite": check_a_kill_inside_a_rewrite_loses_no_row,
}

#: fault -> (the broken store, the check that must catch it)
FAULTS = {
    "missing fsync": (Variant(store=broken.NoFsync), "power cut"),
    "truncated record left in place": (Variant(store=broken.NoTailRepair), "truncated record"),
    "flipped byte believed (no checksum)": (Variant(store=broken.NoChecksum), "flipped byte"),
    "foreign definition on resume": (Variant(store=broken.NoFingerprintCheck), "foreign definition"),
    "mismatched shards on merge": (Variant(merge=broken.merge_without_definition_check), "mismatched shards"),
    "non-atomic write": (Variant(store=broken.InPlaceReplace), "kill in a rewrite"),
}


@pytest.mark.parametrize("name", list(CHECKS))
def test_the_real_store_passes(name, tmp_path, monkeypatch):
    CHECKS[name](Variant(), tmp_path, monkeypatch)


@pytest.mark.parametrize("fault", list(FAULTS))
def test_each_broken_store_fails_its_check(fault, tmp_path, monkeypatch):
    variant, check = FAULTS[fault]
    with pytest.raises(AssertionError):
        CHECKS[check](variant, tmp_path, monkeypatch)
