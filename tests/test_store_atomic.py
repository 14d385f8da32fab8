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


def test_the_new_file_replaces_the_old_whole_with_the_umask_permissions(tmp_path):
    target = tmp_path / "f.csv"
    target.write_bytes(b"old\n")
    old = os.umask(0o027)
    try:
        atomic.write_atomic(target, (b"a" * 70_000, b"b\n"))  # chunks, one larger than one os.write may take
    finally:
        os.umask(old)
    assert target.read_bytes() == b"a" * 70_000 + b"b\n"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
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
