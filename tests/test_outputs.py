"""`-o` writes only regular files, with the usual permissions, and refuses anything else in one
line (exit 2) before any work is done (issue: `-o ./n` turned a device node into a regular file;
as root, `-o /dev/null` would break the machine; outputs were created 0600)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from vitbench.cli import main


def _refused(capsys, argv, *fragments) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and all(f in err[0] for f in fragments), err


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root")
def test_a_device_node_is_refused_and_left_alone(tmp_path, capsys):
    node = tmp_path / "n"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    _refused(capsys, ["analyze", "mnist-vit", "--format", "csv", "-o", str(node)], "--output=", "is a device, not a regular file")
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def test_a_fifo_a_folder_and_a_symlink_are_refused(tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    _refused(capsys, ["analyze", "mnist-vit", "-o", str(fifo)], "is a FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    _refused(capsys, ["plan", "mnist-vit", "-o", str(tmp_path)], "is a folder")
    target = tmp_path / "elsewhere.csv"
    target.write_text("keep me\n")
    (tmp_path / "link.csv").symlink_to(target)
    _refused(capsys, ["analyze", "mnist-vit", "-o", str(tmp_path / "link.csv")], "is a symlink")
    assert target.read_text() == "keep me\n" and (tmp_path / "link.csv").is_symlink()


def test_outputs_get_the_umask_permissions_not_0600(tmp_path, capsys):
    old = os.umask(0o022)
    try:
        assert main(["analyze", "mnist-vit", "--format", "csv", "-o", str(tmp_path / "x.csv")]) == 0
        assert main(["compare", str(tmp_path / "x.csv"), str(tmp_path / "x.csv"), "-o", str(tmp_path / "c.md")]) == 0
    finally:
        os.umask(old)
    for name in ("x.csv", "c.md"):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o644, name


def test_profile_checks_its_output_before_measuring(tmp_path):
    # --min-time 60 would take a minute: refused at once, the subprocess never gets near its timeout
    done = subprocess.run(
        [sys.executable, "-m", "vitbench", "profile", "mnist-vit", "--min-time", "60", "--runs", "1", "-o", str(tmp_path)],
        capture_output=True, text=True, timeout=45,
    )
    assert done.returncode == 2 and "is a folder" in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("name, kind", [("base.csv", "csv"), ("base.JSON", "json"), ("base.md", "markdown"), ("base.txt", "table")])
def test_the_output_file_suffix_picks_the_format_unless_format_is_given(tmp_path, capsys, name, kind):
    """`analyze ... -o base.csv` wrote a terminal table into base.csv, which `compare` then
    refused ("no 'model' column"): the suffix now names the format; --format still wins."""
    import csv
    import json

    out = tmp_path / name
    assert main(["analyze", "mnist-vit", "resnet18", "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    if kind == "csv":
        assert [r["model"] for r in csv.DictReader(text.splitlines())] == ["mnist-vit", "resnet18"]
    elif kind == "json":
        assert [r["model"] for r in json.loads(text)["records"]] == ["mnist-vit", "resnet18"]
    elif kind == "markdown":
        assert text.startswith("| model") and "|---" in text.replace(" ", "")
    else:
        assert text.split()[0] == "model" and "----" in text.splitlines()[1]
    if kind in ("csv", "json"):  # results files: the gate reads them back
        assert main(["compare", str(out), str(out), "--fail-on", "params:0"]) == 0
    assert main(["analyze", "mnist-vit", "--format", "table", "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").split()[0] == "model" and "," not in out.read_text(encoding="utf-8").splitlines()[0]
    capsys.readouterr()


def test_compare_report_format_follows_its_output_suffix(tmp_path, capsys):
    base = tmp_path / "base.csv"
    assert main(["analyze", "mnist-vit", "-o", str(base)]) == 0
    assert main(["compare", str(base), str(base), "--fail-on", "params:0", "-o", str(tmp_path / "gate.md")]) == 0
    assert (tmp_path / "gate.md").read_text(encoding="utf-8").startswith("### vitbench compare: PASS")
    assert main(["compare", str(base), str(base), "--fail-on", "params:0", "-o", str(tmp_path / "gate.txt")]) == 0
    assert not (tmp_path / "gate.txt").read_text(encoding="utf-8").startswith("###")
    capsys.readouterr()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_standard_output_that_cannot_be_written_is_one_line_and_exit_2():
    """A full disk behind standard output (``> /dev/full``) or a closed one (``>&-``): one line
    naming standard output, exit 2 (it was an internal error, exit 3)."""
    command = [sys.executable, "-m", "vitbench", "models"]
    with open("/dev/full", "w") as full:
        done = subprocess.run(command, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["vitbench: error: standard output: cannot be written (No space left on device)"]
    closed = subprocess.run(command, stderr=subprocess.PIPE, text=True, timeout=120, preexec_fn=lambda: os.close(1))
    assert closed.returncode == 2 and len(closed.stderr.strip().splitlines()) == 1
    assert closed.stderr.startswith("vitbench: error: standard output: cannot be written")
