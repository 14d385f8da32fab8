"""The one atomic file write (vitbench.store.atomic): a crash or a failed check leaves the old file
or the new one, never half of one, never a temporary file, never a write through a symlink; the
rename is followed by a folder fsync; and no other module renames files into place."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

import vitbench
import vitbench.store.atomic as atomic
from vitbench.results import atomic_write_text


@pytest.mark.parametrize("umask, mode", [(0o027, 0o640), (0o022, 0o644), (0, 0o666)])
def test_the_new_file_replaces_the_old_whole_with_the_umask_permissions(tmp_path, umask, mode):
    target = tmp_path / "f.csv"
    target.write_bytes(b"old\n")
    old = os.umask(umask)
    try:
        atomic.write_atomic(target, (b"a" * 70_000, b"b\n"))  # chunks, one larger than one os.write may take
    finally:
        os.umask(old)
    assert target.read_bytes() == b"a" * 70_000 + b"b\n"
    assert stat.S_IMODE(os.stat(target).st_mode) == mode  # a new file's usual 0o666, less the umask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.csv"]


def test_a_failed_check_before_the_rename_keeps_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "f.csv"
    target.write_bytes(b"old\n")

    def refuse() -> None:
        raise RuntimeError("the target changed")

    with pytest.raises(RuntimeError, match="the target changed"):
        atomic.write_atomic(target, b"new\n", before_replace=refuse)
    assert target.read_bytes() == b"old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.csv"]


def test_a_symlink_at_the_target_is_replaced_never_written_through(tmp_path):
    kept = tmp_path / "kept.txt"
    kept.write_bytes(b"keep me\n")
    link = tmp_path / "f.csv"
    link.symlink_to(kept)
    atomic.write_atomic(link, b"new\n")
    assert kept.read_bytes() == b"keep me\n"
    assert not link.is_symlink() and link.read_bytes() == b"new\n"


def test_the_folder_is_synced_after_the_rename(tmp_path, monkeypatch):
    target = tmp_path / "f.csv"
    seen = []
    monkeypatch.setattr(atomic, "fsync_dir", lambda folder: seen.append((Path(folder), target.read_bytes())))
    atomic.write_atomic(target, b"new\n")
    assert seen == [(tmp_path, b"new\n")]


def test_results_files_are_written_through_the_one_atomic_write(tmp_path, monkeypatch):
    calls = []
    real = atomic.write_atomic
    monkeypatch.setattr(atomic, "write_atomic", lambda path, data, **kw: calls.append(Path(path)) or real(path, data, **kw))
    atomic_write_text(tmp_path / "r.json", "{}\n")
    assert calls == [tmp_path / "r.json"] and (tmp_path / "r.json").read_text() == "{}\n"


def test_no_other_module_renames_a_file_into_place():
    """Folders swapped whole (a study's staging folder) are not file writes."""
    package = Path(vitbench.__file__).parent
    renaming = sorted(
        str(p.relative_to(package)) for p in package.rglob("*.py")
        if re.search(r"\bos\.(replace|rename)\(", p.read_text(encoding="utf-8"))
    )
    assert renaming == ["store/atomic.py", "studies.py"]


def test_the_new_bytes_are_fsynced_before_the_rename_and_no_descriptor_stays_open(tmp_path, monkeypatch):
    """A power cut after the rename must find the new bytes on disk, not an empty file."""
    target = tmp_path / "f.csv"
    target.write_bytes(b"old\n")
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}") if os.path.isdir("/proc/self/fd") else fd))
        real_fsync(fd)

    def replace(source, destination):
        events.append(("replace", str(source), target.read_bytes()))
        real_replace(source, destination)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(atomic, "fsync_dir", lambda folder: None)
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    atomic.write_atomic(target, b"new\n")
    (fsynced, temporary), (renamed, source, old) = events
    assert fsynced == "fsync" and renamed == "replace" and old == b"old\n"
    assert str(temporary) == source and Path(source).name.startswith(".f.csv.") and source.endswith(".tmp")
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) == before
    assert target.read_bytes() == b"new\n"


def test_the_write_leaves_the_processs_umask_and_descriptors_as_they_were(tmp_path):
    old = os.umask(0o027)
    try:
        before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
        atomic.write_atomic(tmp_path / "a", b"a")
        atomic.fsync_dir(tmp_path)
        assert os.umask(0o027) == 0o027  # still the caller's
        if before is not None:
            assert len(os.listdir("/proc/self/fd")) == before
        with open(tmp_path / "b", "w"):
            pass
        assert stat.S_IMODE(os.stat(tmp_path / "b").st_mode) == 0o640
    finally:
        os.umask(old)


def test_moving_a_file_aside_never_replaces_one_and_moves_a_link_itself(tmp_path):
    source, taken, fresh = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    source.write_text("measured")
    taken.write_text("another's")
    with pytest.raises(FileExistsError):
        atomic.move_without_replacing(source, taken)
    assert (source.read_text(), taken.read_text()) == ("measured", "another's")
    atomic.move_without_replacing(source, fresh)
    assert not source.exists() and fresh.read_text() == "measured"
    link = tmp_path / "link.json"
    link.symlink_to(fresh)
    atomic.move_without_replacing(link, tmp_path / "moved.json")
    assert (tmp_path / "moved.json").is_symlink() and not link.is_symlink() and fresh.read_text() == "measured"
