"""A GPU calibration loses nothing it measured: each configuration is kept as it is measured, a
calibration killed part-way is resumed by the next one, and a fit that fails keeps the steps.
The GPU, the measurement and the fit are stood in for (no GPU here); the files are real."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vitbench.timemodel.calibration.schema import CalibrationError

DEVICE_NAME = "NVIDIA H100 80GB HBM3"
SUITE = [(model, "infer", 8, "bf16") for model in "abcd"]
TIMES = {"a": 0.002, "b": 0.003, "c": 0.004, "d": 0.005}


@pytest.fixture
def card(monkeypatch, tmp_path):
    """This process as a machine with an H100 whose steps take TIMES; returns the models measured."""
    import torch

    from vitbench.timemodel import gpu_calibration
    from vitbench.timemodel.gpu_calibration import CardFit

    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *args: DEVICE_NAME)
    measured: list[str] = []

    def measure_step(model, *args):
        measured.append(model)
        return {"status": "ok", "latency_p50_s": TIMES.get(model, 0.01)}

    def fit_on_card(observations, start):
        seconds = [s for _, s in observations]
        return CardFit(start.params, seconds, seconds, 1.0, 0.01, 0.02, 0.2, 0.05, 0.06, 0)

    monkeypatch.setattr(gpu_calibration, "measure_step", measure_step)
    monkeypatch.setattr(gpu_calibration, "observation", lambda model, mode, batch, precision, seconds, spec: (model, seconds))
    monkeypatch.setattr(gpu_calibration, "fit_on_card", fit_on_card)
    return measured


def _progress() -> Path:
    import torch

    from vitbench.timemodel.gpu_calibration import progress_path

    return progress_path(DEVICE_NAME, torch.__version__)


def _write_progress(rows: list[tuple[str, float]], **changed) -> Path:
    """A progress file as a calibration stopped after measuring ``rows`` would have left it."""
    import torch

    from vitbench.timemodel.gpu_calibration_files import measurements_document

    path = _progress()
    path.parent.mkdir(parents=True, exist_ok=True)
    measured = [dict(model=m, mode="infer", batch_size=8, precision="bf16", measured_s=s) for m, s in rows]
    text = measurements_document("h100", DEVICE_NAME, torch.__version__, measured, min_run_time_s=0.3, started=0.0)
    document = {**json.loads(text), **changed}
    path.write_text(json.dumps(document))
    return path


def _calibrate_cli(monkeypatch, capsys, fit_on_card) -> tuple[int, str]:
    """`vitbench calibrate --device cuda --quiet` on SUITE with ``fit_on_card`` standing in for
    the fit: its exit code and standard error."""
    from vitbench.cli import main
    from vitbench.timemodel import gpu_calibration

    monkeypatch.setattr(gpu_calibration, "fit_on_card", fit_on_card)
    monkeypatch.setattr(gpu_calibration.calibrate_gpu, "__defaults__", (SUITE, 0.3, None, True))
    code = main(["calibrate", "--device", "cuda", "--quiet"])
    return code, capsys.readouterr().err


def _refuse(observations, start):
    raise CalibrationError("the fit predicts its 4 configurations no better")


KILLED = textwrap.dedent("""
    import sys, time
    import torch
    from vitbench.cli import main
    from vitbench.timemodel import gpu_calibration

    torch.cuda.is_available = lambda: True
    torch.cuda.get_device_name = lambda *args: {name!r}
    calls = []

    def measure_step(model, mode, batch, precision, *args):
        calls.append(model)
        if len(calls) == 3:  # the third configuration never finishes: the job is killed during it
            print("measuring the third", flush=True)
            time.sleep(600)
        return {{"status": "ok", "latency_p50_s": 0.001 * len(calls)}}

    gpu_calibration.measure_step = measure_step
    gpu_calibration.observation = lambda model, mode, batch, precision, seconds, spec: (model, seconds)
    sys.exit(main(["calibrate", "--device", "cuda"]))
""")


def test_a_calibration_killed_part_way_is_resumed_by_the_next_without_measuring_again(card, tmp_path):
    """`vitbench calibrate --device cuda` killed (SIGKILL) while measuring its third
    configuration: the two it had measured are on disk, readable as recorded measurements, and
    the next calibration measures only the other configurations, saying which it kept."""
    import torch

    from vitbench.timemodel.gpu_calibration import SUITE as FULL_SUITE
    from vitbench.timemodel.gpu_calibration import calibrate_gpu
    from vitbench.timemodel.gpu_records import read_file

    env = {**os.environ, "VITBENCH_CACHE_DIR": str(tmp_path / "cache")}
    job = subprocess.Popen([sys.executable, "-c", KILLED.format(name=DEVICE_NAME)], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        assert job.stdout.readline() == "measuring the third\n", job.stderr.read() if job.poll() is not None else ""
    finally:
        job.send_signal(signal.SIGKILL)
        job.communicate(timeout=60)
    progress = _progress()
    rows = read_file(progress, "vm", "h100", "calibration")
    first_two = [(m, mo, b, p) for m, mo, b, p in FULL_SUITE[:2]]
    assert [(r.model, r.mode, r.batch_size, r.precision) for r in rows] == first_two
    assert [r.measured_s for r in rows] == [0.001, 0.002]

    said: list[str] = []
    calibration = calibrate_gpu(on_progress=said.append)
    assert card == [model for model, *_ in FULL_SUITE[2:]]  # measured: only what the killed job had not
    assert [o["measured_s"] for o in calibration.observations[:2]] == [0.001, 0.002]
    assert len(calibration.observations) == len(FULL_SUITE)
    assert said[0].startswith(f"[1/{len(FULL_SUITE)}] {FULL_SUITE[0][0]} ") and said[0].endswith(
        f"1.000 ms (measured before, kept in {str(progress)!r})")
    assert "measured before" not in said[2]
    assert not progress.exists() and calibration.torch == torch.__version__


def _set_aside(said: list[str]) -> Path:
    """The file an earlier calibration's measurements were set aside as, from the line that says so."""
    import re

    found = re.search(r"; it is set aside as '(.+\.set-aside-\d{8}T\d{6}\.json)'$", said[0])
    assert found, said[0]
    return Path(found.group(1))


def test_fresh_measures_every_configuration_again_and_sets_the_earlier_steps_aside(card):
    from vitbench.timemodel.gpu_calibration import calibrate_gpu

    before = _write_progress([("a", 0.1), ("b", 0.1)]).read_text()
    said: list[str] = []
    calibration = calibrate_gpu(SUITE, resume=False, on_progress=said.append)
    assert card == ["a", "b", "c", "d"]
    assert [o["measured_s"] for o in calibration.observations] == [TIMES[m] for m in "abcd"]
    assert said[0].startswith("an earlier calibration's measurements are not resumed (fresh); it is set aside as '")
    assert _set_aside(said).read_text() == before


@pytest.mark.parametrize("changed", [{"vitbench": "0.0.1"}, {"torch": "2.0.0"}, {"min_run_time_s": 1.0},
                                     {"device_name": "NVIDIA H200"}, {"refused": "no better"},
                                     {"observations": [{"model": "a"}]}, "not JSON"])
def test_measurements_another_calibration_made_are_not_resumed(card, changed):
    """Steps measured with another vitbench, torch, run time or card, a refused calibration's
    (refitting them would be refused again), or a damaged file: said in one line, every
    configuration measured, and the file set aside untouched (this calibration's steps do not
    replace it)."""
    import re

    import torch

    from vitbench.timemodel.gpu_calibration import calibrate_gpu, resumable

    if changed == "not JSON":
        path = _write_progress([("a", 0.1)])
        path.write_text("{ damaged")
    else:
        path = _write_progress([("a", 0.1), ("b", 0.1)], **changed)
    before = path.read_text()
    with pytest.raises(CalibrationError, match=rf"^{re.escape(repr(str(path)))}"):
        resumable(path, DEVICE_NAME, torch.__version__, 0.3)
    said: list[str] = []
    calibrate_gpu(SUITE, on_progress=said.append)
    assert card == ["a", "b", "c", "d"]
    assert said[0].startswith("not resumed from an earlier calibration's measurements (") and "\n" not in said[0]
    assert "): every configuration is measured; it is set aside as '" in said[0]
    assert _set_aside(said).read_text() == before


def test_a_progress_file_that_is_a_link_is_not_resumed(card, tmp_path):
    """A symbolic link where the progress file goes (a file that is not the calibration's own):
    not read, set aside (the link, not its target), every configuration measured and kept."""
    from vitbench.timemodel.gpu_calibration import calibrate_gpu

    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(_write_progress([("a", 0.1)]).read_text())
    _progress().unlink()
    _progress().symlink_to(elsewhere)
    said: list[str] = []
    calibrate_gpu(SUITE, on_progress=said.append)
    assert card == ["a", "b", "c", "d"]
    assert f"({str(_progress())!r}: not a regular file)" in said[0]
    assert _set_aside(said).is_symlink() and elsewhere.read_text().count('"model"') == 1


def test_a_cache_folder_that_cannot_be_looked_in_costs_no_measurement(card, monkeypatch):
    """An earlier calibration's file that cannot be looked for (permission denied): said in one
    line, and every configuration measured (before, that stopped the calibration, exit 3)."""
    from vitbench.timemodel import gpu_calibration_files
    from vitbench.timemodel.gpu_calibration import calibrate_gpu

    lstat = os.lstat

    def denied(path, *args, **kwargs):  # the progress file's folder may not be searched (as for a user not root)
        if Path(path).parent == _progress().parent:
            raise PermissionError(13, "Permission denied")
        return lstat(path, *args, **kwargs)

    monkeypatch.setattr(gpu_calibration_files.os, "lstat", denied)
    said: list[str] = []
    calibration = calibrate_gpu(SUITE, on_progress=said.append)
    assert len(calibration.observations) == 4
    assert said[0] == (f"cannot look for an earlier calibration's measurements in {str(_progress())!r} (Permission denied): "
                       "every configuration is measured")


def test_only_the_suites_configurations_are_taken_from_the_progress_file(card):
    from vitbench.timemodel.gpu_calibration import calibrate_gpu

    _write_progress([("a", 0.1), ("z", 0.1)])
    calibration = calibrate_gpu(SUITE)
    assert card == ["b", "c", "d"]
    assert [(o["model"], o["measured_s"]) for o in calibration.observations] == [("a", 0.1), ("b", 0.003), ("c", 0.004),
                                                                                   ("d", 0.005)]


def test_a_fit_that_fails_keeps_the_steps_for_the_next_calibration(card, monkeypatch):
    """A fault in the fit (vitbench's own bug: its traceback is kept) loses no measurement: the
    progress file holds every step, the error says where, and the next calibration fits them
    without measuring again."""
    from vitbench.timemodel import gpu_calibration
    from vitbench.timemodel.gpu_calibration import calibrate_gpu

    fit_on_card = gpu_calibration.fit_on_card

    def broken(observations, start):
        raise ZeroDivisionError("a bug in the fit")

    monkeypatch.setattr(gpu_calibration, "fit_on_card", broken)
    said: list[str] = []
    with pytest.raises(ZeroDivisionError) as caught:
        calibrate_gpu(SUITE, on_progress=said.append)
    note = f"the 4 measured step times are kept in {str(_progress())!r}; the next calibration resumes from them"
    if sys.version_info >= (3, 11):
        assert caught.value.__notes__ == [note] and note not in said
    else:
        assert said[-1] == note
    monkeypatch.setattr(gpu_calibration, "fit_on_card", fit_on_card)
    card.clear()
    calibration = calibrate_gpu(SUITE)
    assert card == [] and [o["measured_s"] for o in calibration.observations] == [TIMES[m] for m in "abcd"]


def test_a_progress_file_that_cannot_be_written_is_said_and_the_calibration_goes_on(card, tmp_path, monkeypatch):
    from vitbench.timemodel.gpu_calibration import calibrate_gpu

    (tmp_path / "cache").write_text("a file where the cache folder should be")
    said: list[str] = []
    calibration = calibrate_gpu(SUITE, on_progress=said.append)
    assert len(calibration.observations) == 4
    warnings = [line for line in said if line.startswith("the measurements are not kept as they come (")]
    assert len(warnings) == 1 and warnings[0].endswith("): a calibration stopped now loses them")


def test_the_cli_names_the_file_a_refused_calibration_kept(card, monkeypatch, capsys, tmp_path):
    """The one line of a refused `calibrate --device cuda` names the file calibrate_gpu kept the
    steps in; the progress file is gone, and the next calibration measures afresh."""
    import re

    code, err = _calibrate_cli(monkeypatch, capsys, _refuse)
    assert code == 2
    kept = re.fullmatch(r"vitbench: error: the fit predicts its 4 configurations no better; its 4 measured step times "
                        r"are kept in '(.+\.refused-\d{8}T\d{6}\.json)'\n", err)
    assert kept, err
    assert Path(kept.group(1)).parent == tmp_path / "cache" / "calibrations" and not _progress().exists()
    card.clear()
    assert _calibrate_cli(monkeypatch, capsys, _refuse)[0] == 2
    assert card == ["a", "b", "c", "d"]


def test_fresh_is_for_a_gpu_calibration(capsys):
    from vitbench.cli import main

    assert main(["calibrate", "--device", "cpu", "--fresh"]) == 2
    assert capsys.readouterr().err == ("vitbench: error: fresh=True: is for --device cuda (a CPU calibration is measured "
                                       "whole in one worker)\n")


def test_the_progress_file_is_beside_the_cards_cache_entry(monkeypatch, tmp_path):
    from vitbench.timemodel.gpu_calibration import progress_path

    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path))
    assert progress_path(DEVICE_NAME, "2.15.0+cu132") == (
        tmp_path / "calibrations" / "cuda-NVIDIA-H100-80GB-HBM3-torch2.15.0.measuring.json")


def test_a_refused_calibration_whose_file_cannot_be_written_names_the_progress_file(card, monkeypatch, capsys):
    """The refused steps' own file cannot be written (a full disk): the one line names the
    progress file, which holds them, and says the next calibration fits them again."""
    from vitbench.errors import OutputFileError
    from vitbench.timemodel import gpu_calibration

    def full(refused, path=None):
        raise OutputFileError("file='x': cannot be written (No space left on device)")

    monkeypatch.setattr(gpu_calibration, "save_measurements", full)
    assert _calibrate_cli(monkeypatch, capsys, _refuse) == (2,
        f"vitbench: error: the fit predicts its 4 configurations no better; its 4 measured step times are kept in "
        f"{str(_progress())!r}, which the next calibration fits again (--fresh measures them again)\n")
    assert [r["model"] for r in json.loads(_progress().read_text())["observations"]] == ["a", "b", "c", "d"]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes are Python 3.11's")
def test_a_fault_in_the_fit_is_one_line_that_says_where_the_steps_are(card, monkeypatch, capsys):
    """vitbench's own bug in the fit: exit 3, one line naming the exception and the file that
    keeps the measured steps (the traceback under VITBENCH_DEBUG=1)."""
    def broken(observations, start):
        raise ZeroDivisionError("a bug in the fit")

    monkeypatch.delenv("VITBENCH_DEBUG", raising=False)
    assert _calibrate_cli(monkeypatch, capsys, broken) == (3,
        f"vitbench: error: internal error: ZeroDivisionError: a bug in the fit; the 4 measured step times are kept in "
        f"{str(_progress())!r}; the next calibration resumes from them (set VITBENCH_DEBUG=1 for a traceback)\n")
