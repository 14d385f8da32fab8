"""`vitbench calibrate` never loses a finished calibration (issue 45): when the cache, ``--save``
or ``--output`` cannot be written (a file where the cache folder should be, a full disk), the
calibration is still printed and kept (``--save``, or a fallback file the message names), and the
failure is one line, exit 2. The real 35 s measurement is replaced by a synthetic calibration."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path

import pytest
from _calibrations import synthetic

from vitbench.cli import main
from vitbench.timemodel.calibration import worker
from vitbench.timemodel.calibration.cache import load
from vitbench.timemodel.calibration.schema import Calibration


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """The calibration replaced by a synthetic one; the cache, temp folder and cwd in tmp_path."""
    made = synthetic()
    monkeypatch.setattr(worker, "calibrate", lambda device, threads, precisions, on_step=None: made)
    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.chdir(tmp_path)
    return made


def _full_disk(monkeypatch, *where: Path) -> None:
    """Every atomic write into a folder under one of ``where`` fails with ENOSPC."""
    from vitbench.store import atomic

    real = atomic.write_atomic

    def write(path, data, **kwargs):
        if any(Path(path).resolve().is_relative_to(w.resolve()) for w in where):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, data, **kwargs)

    monkeypatch.setattr(atomic, "write_atomic", write)


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def _printed(out: str) -> dict:
    [row] = json.loads(out)["records"]
    return row


def _fallback(tmp_path: Path, line: str) -> Path:
    [path] = list((tmp_path / "tmp").glob("vitbench-calibration-*.json"))
    assert str(path) in line
    return path


def test_the_cache_and_save_written_exit_0(fake, tmp_path, capsys):
    assert main(["calibrate", "--save", str(tmp_path / "cal.json"), "--format", "json", "-q"]) == 0
    out, err = capsys.readouterr()
    row = _printed(out)
    assert Path(row["path"]).parent == tmp_path / "cache" / "calibrations"
    assert load(row["path"]) == fake and load(tmp_path / "cal.json") == fake and err == ""


def test_a_cache_folder_that_is_a_file_keeps_the_calibration_in_save(fake, tmp_path, capsys):
    (tmp_path / "cache").write_text("a file")
    assert main(["calibrate", "--save", str(tmp_path / "cal.json"), "--format", "json", "-q"]) == 2
    out, err = capsys.readouterr()
    line = _one_error_line(err)
    assert "cache" in line and "not saved" in line and str(tmp_path / "cal.json") in line
    row = _printed(out)
    assert row["gemm_peak_macs_per_s"] == 1e10 and row["path"] == str(tmp_path / "cal.json")
    assert load(tmp_path / "cal.json") == fake


def test_a_cache_folder_that_is_a_file_without_save_keeps_it_in_a_fallback_it_names(fake, tmp_path, capsys):
    (tmp_path / "cache").write_text("a file")
    assert main(["calibrate", "--format", "json", "-q"]) == 2
    out, err = capsys.readouterr()
    line = _one_error_line(err)
    kept = _fallback(tmp_path, line)
    assert load(kept) == fake and _printed(out)["path"] == str(kept)
    assert "--calibration" in line  # how to use it


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_cache_folder_keeps_the_calibration(fake, tmp_path, capsys):
    (tmp_path / "cache" / "calibrations").mkdir(parents=True)
    os.chmod(tmp_path / "cache" / "calibrations", 0o500)
    try:
        assert main(["calibrate", "--save", str(tmp_path / "cal.json"), "--format", "json", "-q"]) == 2
    finally:
        os.chmod(tmp_path / "cache" / "calibrations", 0o700)
    out, err = capsys.readouterr()
    assert "cache" in _one_error_line(err) and load(tmp_path / "cal.json") == fake and _printed(out)


def test_a_full_disk_under_the_cache_keeps_the_calibration_in_save(fake, tmp_path, monkeypatch, capsys):
    _full_disk(monkeypatch, tmp_path / "cache")
    (tmp_path / "out").mkdir()
    assert main(["calibrate", "--save", str(tmp_path / "out" / "cal.json"), "--format", "json", "-q"]) == 2
    out, err = capsys.readouterr()
    line = _one_error_line(err)
    assert os.strerror(errno.ENOSPC) in line and "cache" in line
    assert load(tmp_path / "out" / "cal.json") == fake and _printed(out)["path"] == str(tmp_path / "out" / "cal.json")


def test_a_full_disk_under_the_cache_and_save_keeps_it_in_a_fallback(fake, tmp_path, monkeypatch, capsys):
    (tmp_path / "out").mkdir()
    _full_disk(monkeypatch, tmp_path / "cache", tmp_path / "out")
    assert main(["calibrate", "--save", str(tmp_path / "out" / "cal.json"), "--format", "json", "-q"]) == 2
    out, err = capsys.readouterr()
    line = _one_error_line(err)
    assert "--save" in line and "cache" in line
    assert load(_fallback(tmp_path, line)) == fake and _printed(out)["gemm_peak_macs_per_s"] == 1e10
    assert not (tmp_path / "out" / "cal.json").exists()


def test_nowhere_to_write_still_prints_the_calibration_whole(fake, tmp_path, monkeypatch, capsys):
    """With the cache, --save and the fallback all full, the printed JSON is the calibration."""
    (tmp_path / "out").mkdir()
    _full_disk(monkeypatch, tmp_path)
    assert main(["calibrate", "--save", str(tmp_path / "out" / "cal.json"), "--format", "json", "-q"]) == 2
    out, err = capsys.readouterr()
    assert "not saved" in _one_error_line(err)
    row = _printed(out)
    assert row["path"] is None and Calibration.from_json(json.dumps(row["calibration"])) == fake


def test_an_output_that_fails_after_the_run_says_where_the_calibration_is(fake, tmp_path, monkeypatch, capsys):
    (tmp_path / "out").mkdir()
    _full_disk(monkeypatch, tmp_path / "out")
    assert main(["calibrate", "-o", str(tmp_path / "out" / "row.csv"), "-q"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "--output" in line and str(tmp_path / "cache" / "calibrations") in line
    assert load(next((tmp_path / "cache" / "calibrations").glob("*.json"))) == fake


@pytest.mark.parametrize("save", ["dir", "fifo"])
def test_a_save_path_that_is_no_file_is_refused_before_the_run(save, fake, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(worker, "calibrate", lambda *a, **k: pytest.fail("calibrated before the --save check"))
    target = tmp_path / "target"
    target.mkdir() if save == "dir" else os.mkfifo(target)
    assert main(["calibrate", "--save", str(target), "-q"]) == 2
    assert "--save" in _one_error_line(capsys.readouterr().err)


# --- a calibration's device kind against the command's (issue 45) -------------------------------
@pytest.mark.parametrize("device", ["h100", "mps", "a100", ""])
def test_a_cpu_calibration_file_for_another_device_is_refused_for_device_cpu(device, tmp_path, capsys):
    from dataclasses import asdict

    path = tmp_path / "cal.json"
    path.write_text(json.dumps({**asdict(synthetic()), "device": device}))
    for argv in (["predict", "mnist-vit", "--calibration", str(path)],
                 ["predict", "mnist-vit", "--device", "cpu", "--calibration", str(path)]):
        assert main(argv) == 2
        line = _one_error_line(capsys.readouterr().err)
        assert f"device={device!r}" in line and "for device 'cpu'" in line


def test_a_cpu_calibration_record_for_another_device_is_refused_by_the_api():
    import vitbench
    from vitbench.timemodel.calibration.schema import CalibrationError

    with pytest.raises(CalibrationError, match="^device='h100': a CPU calibration is for device 'cpu'"):
        vitbench.predict("mnist-vit", calibration=synthetic(device="h100"))
