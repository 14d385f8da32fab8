"""What a store promises by default (:mod:`vitbench.store.layout`, :mod:`vitbench.store.options`):
the permissions of the files it writes, group commit every second or 10,000 records, a busy
store as exit 2, and the options a sweep opens its store with (a new store, no other sweep's
rows, failed rows kept on resume)."""

from __future__ import annotations

import dataclasses
import os
import stat
from types import SimpleNamespace

import pytest

from vitbench.cli import main
from vitbench.store import Store, StoreError, StoreOptions, read_store
from vitbench.store import writer as writer_module


def _row(i, status="ok"):
    return {"id": f"id{i}", "index": i, "model": "m", "status": status}


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_every_file_the_store_writes_is_rw_r_r_less_the_umask(tmp_path, umask_022):
    from vitbench.store.export import export_store

    with Store.open(tmp_path) as store:
        store.add(_row(0))
        assert stat.S_IMODE(os.stat(tmp_path / ".lock").st_mode) == 0o644
    with open(tmp_path / "rows.jsonl", "ab") as handle:
        handle.write(b'{"torn"\n')
    Store.open(tmp_path, resume=True).close()  # sets the damaged line aside
    export_store(tmp_path, tmp_path)
    for name in ("rows.jsonl", "sweep.json", "rows.damaged.jsonl", "results.csv"):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o644, name


def test_by_default_rows_are_fsynced_every_second_or_every_10000_records(tmp_path, monkeypatch):
    now = [0.0]
    monkeypatch.setattr(writer_module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    with Store.open(tmp_path / "clock") as store:
        now[0] = 0.99
        store.add(_row(0))
        assert store.syncs == 0
        now[0] = 1.0
        store.add(_row(1))
        assert store.syncs == 1
    with Store.open(tmp_path / "count") as store:
        store.add_many([_row(i) for i in range(9_999)])
        assert store.syncs == 0
        store.add(_row(9_999))
        assert store.syncs == 1


def test_a_store_another_process_writes_is_exit_2_in_one_line(tmp_path, capsys):
    with Store.open(tmp_path / "a") as store:
        store.add(_row(0))
    with Store.open(tmp_path / "m"):
        assert main(["merge", str(tmp_path / "a"), "--out", str(tmp_path / "m"), "-q"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "another vitbench sweep is writing this directory" in lines[0]


# --------------------------------------------------------------------------- StoreOptions


def test_store_options_are_a_frozen_record():
    options = StoreOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.resume = True  # type: ignore[misc]
    assert hash(options) == hash(StoreOptions())


def test_default_options_open_a_new_store_and_refuse_one_holding_rows(tmp_path):
    with StoreOptions().open(tmp_path / "s", {"fingerprint": "f1"}) as store:
        assert isinstance(store, Store) and store.statuses == {}
        store.add(_row(0))
    with pytest.raises(StoreError, match="already holds 1 result rows"):
        StoreOptions().open(tmp_path / "s", {"fingerprint": "f1"})
    assert [r["id"] for r in read_store(tmp_path / "s")[0]] == ["id0"]  # not started over


def test_resuming_options_keep_the_rows_and_refuse_another_sweeps(tmp_path):
    with StoreOptions().open(tmp_path / "s", {"fingerprint": "f1"}) as store:
        store.add(_row(0, status="error"))
    with StoreOptions(resume=True).open(tmp_path / "s", {"fingerprint": "f1"}) as store:
        assert store.statuses == {"id0": "error"}
    with pytest.raises(StoreError, match="another sweep definition"):
        StoreOptions(resume=True).open(tmp_path / "s", {"fingerprint": "f2"})
    with StoreOptions(resume=True, allow_foreign=True).open(tmp_path / "s", {"fingerprint": "f2"}) as store:
        assert store.statuses == {"id0": "error"}
    with StoreOptions(force=True).open(tmp_path / "s", {"fingerprint": "f2"}) as store:
        assert store.statuses == {}


def test_options_open_the_store_with_their_fsync_policy(tmp_path):
    with StoreOptions(sync="always", sync_interval_s=5.0, sync_every=3).open(tmp_path / "s", {}) as store:
        assert (store.sync_policy, store.sync_interval_s, store.sync_every) == ("always", 5.0, 3)
        store.add(_row(0))
        assert store.syncs == 1


def test_a_resumed_sweep_keeps_its_failed_rows_unless_asked_to_retry_them(tmp_path):
    from vitbench.sweeps.run import execute, resolve_plan

    plan = resolve_plan(None, models=["cifar-vit/4"], grid={"depth": [1, 2]})
    given = []

    def compute(configs):  # every configuration fails (what the runner gives the store)
        for config in configs:
            given.append(config.id)
            yield {"id": config.id, "index": config.index, "model": "cifar-vit/4", "status": "error"}

    out = tmp_path / "s"
    execute(plan, out, options=StoreOptions(export=("csv",)), compute=compute, yes=True)
    assert len(given) == 2
    given.clear()
    execute(plan, out, options=StoreOptions(resume=True), compute=compute, yes=True)
    assert given == []
    execute(plan, out, options=StoreOptions(resume=True, retry_failed=True), compute=compute, yes=True)
    assert len(given) == 2


def test_without_o_nofollow_the_store_opens_files_with_no_extra_flag(monkeypatch):
    """Where the OS has no O_NOFOLLOW the flag the store adds to every open is 0 (a plain open),
    not a bit pattern that would make every open fail."""
    import runpy

    from vitbench.store import layout

    monkeypatch.delattr(os, "O_NOFOLLOW")
    assert runpy.run_path(layout.__file__)["NOFOLLOW"] == 0
    monkeypatch.undo()
    assert layout.NOFOLLOW == os.O_NOFOLLOW != 0
