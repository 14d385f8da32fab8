"""File-system failures are one line and exit code 2, say how many rows are saved and how to
resume; output paths are checked before anything runs."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import textwrap

import pytest

from vitbench.cli import main
from vitbench.store import read_store

GRID = ["--model", "cifar-vit/4", "--img-size", "32,64", "--patch-size", "4,8,16", "--batch-size", "1,2"]  # 12 rows


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("vitbench: error: ")
    return err[0]


def test_an_unwritable_out_fails_before_anything_is_measured(capsys):
    # /sys refuses new folders even to root; a measured stage would take seconds per row
    rc = main(["sweep", *GRID, "--stages", "analytic,measured", "--device", "cpu", "--out", "/sys/vitbench-store", "-q"])
    line = _one_line(capsys)
    assert rc == 2 and "cannot create" in line and "nothing was run" in line


def test_an_out_that_is_a_file(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    assert main(["sweep", *GRID, "--out", str(tmp_path / "f"), "-q"]) == 2
    assert "exists and is not a directory" in _one_line(capsys)


def test_a_path_that_is_not_utf8(tmp_path, capsys):
    name = os.fsdecode(os.fsencode(str(tmp_path)) + b"/caf\xe9")  # latin-1 bytes: a lone surrogate
    assert main(["sweep", *GRID, "--out", name, "-q"]) == 2
    line = _one_line(capsys)
    assert "not valid UTF-8" in line
    assert not os.path.exists(os.fsencode(str(tmp_path)) + b"/caf\xe9")


FAIL_AFTER = """
import errno, os, sys
import vitbench.store.writer as store
count = []
real = store.Store._append
def append(self, fd, data):
    count.append(1)
    if len(count) > 3:
        raise OSError(errno.{name}, os.strerror(errno.{name}))
    real(self, fd, data)
store.Store._append = append
from vitbench.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("name", ["ENOSPC", pytest.param("EROFS", marks=pytest.mark.slow)])
def test_disk_full_or_read_only_mid_sweep_says_what_is_saved_and_resume_finishes(tmp_path, name):
    out = tmp_path / "s"
    failed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(FAIL_AFTER.format(name=name)), "sweep", *GRID, "--out", str(out), "-q"],
        capture_output=True, text=True, timeout=120,
    )
    lines = failed.stderr.strip().splitlines()
    assert failed.returncode == 2 and len(lines) == 1, failed.stderr
    assert os.strerror(getattr(__import__("errno"), name)) in lines[0]
    assert "3 rows are saved" in lines[0] and "--resume" in lines[0]
    assert len(read_store(out)[0]) == 3
    resumed = subprocess.run([sys.executable, "-m", "vitbench", "sweep", *GRID, "--out", str(out), "--resume", "-q"], capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert len(read_store(out)[0]) == 12


def _file_size_limit(limit: int):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.slow
def test_a_real_write_refused_by_the_kernel_mid_sweep(tmp_path):
    """No injection: the kernel refuses writes past a file-size limit (RLIMIT_FSIZE), as a full
    disk refuses them; the partial line is taken back."""
    out = tmp_path / "s"
    failed = subprocess.run(
        [sys.executable, "-m", "vitbench", "sweep", *GRID, "--out", str(out), "-q"],
        capture_output=True, text=True, timeout=120, preexec_fn=_file_size_limit(5000),
    )
    lines = failed.stderr.strip().splitlines()
    assert failed.returncode == 2 and len(lines) == 1, failed.stderr
    assert "File too large" in lines[0] and "rows are saved" in lines[0] and "--resume" in lines[0]
    saved = int(lines[0].split("): ")[1].split(" rows")[0])
    rows, info = read_store(out)
    assert len(rows) == saved >= 1 and info["problems"] == []  # no torn line left behind
    assert (out / "rows.jsonl").stat().st_size <= 5000


@pytest.mark.parametrize("name", [".lock", "rows.jsonl", "rows.damaged.jsonl"])
def test_the_store_never_writes_through_a_symlink(name, tmp_path):
    """A symlink planted in a store (its .lock, rows.jsonl, rows.damaged.jsonl) is refused in
    one line; the file it points to is never truncated, overwritten or appended to."""
    from vitbench.store import Store, StoreError

    out = tmp_path / "store"
    with Store.open(out) as store:
        store.add({"id": "a", "status": "ok"})
    if name == "rows.damaged.jsonl":  # the damaged-record file is written when a bad line is set aside
        with open(out / "rows.jsonl", "ab") as handle:
            handle.write(b'{"id":"torn"\n')
    target = tmp_path / "precious.txt"
    target.write_text("precious\n")
    link = out / name
    if link.exists():
        if name == "rows.jsonl":
            target.write_bytes(link.read_bytes())  # the same rows, behind a link
        link.unlink()
    link.symlink_to(target)
    before = target.read_bytes()
    # what to do, in the words of each file's own refusal
    expected = {".lock": r"\.lock is a symlink; remove it", "rows.jsonl": "rows.jsonl is a symlink; vitbench appends only to a regular file",
                "rows.damaged.jsonl": "it is a symlink; vitbench writes only regular files"}[name]
    definition = (out / "sweep.json").read_bytes()
    with pytest.raises(StoreError, match=expected):
        Store.open(out, resume=True).close()
    assert target.read_bytes() == before and link.is_symlink()
    if name == "rows.jsonl":  # refused before anything is written: sweep.json (its updated_at) untouched
        assert (out / "sweep.json").read_bytes() == definition
