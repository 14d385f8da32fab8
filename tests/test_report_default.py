"""`vitbench report` with no argument (README command 1): where it writes, what it says first, and
that it leaves a clone of vitbench clean (issue 46: it rewrote ten tracked files under
reports/default). The built-in study is swapped for a one-row analytic study of the same name,
so these tests are about where the files go, not about the study (which takes minutes)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import vitbench.studies
from vitbench.cli import main

TINY_DEFAULT = "name: default\nmodels: [vit-ti/16]\nstages: [analytic]\n"


@pytest.fixture
def tiny_default(tmp_path, monkeypatch):
    """The built-in study replaced by a one-row analytic study named like it; a fake clone of
    vitbench (a tracked reports/default/report.md) as the current folder."""
    study = tmp_path / "data" / "default_study.yaml"
    study.parent.mkdir()
    study.write_text(TINY_DEFAULT)
    monkeypatch.setattr(vitbench.studies, "default_study_path", lambda: study)
    clone = tmp_path / "clone"
    (clone / "reports" / "default").mkdir(parents=True)
    (clone / "reports" / "default" / "report.md").write_text("committed report\n")
    monkeypatch.chdir(clone)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return clone


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
def test_no_argument_writes_vitbench_report_in_the_current_folder_and_nothing_else(tiny_default, capsys):
    before = _tree(tiny_default)
    assert main(["report"]) == 0
    captured = capsys.readouterr()
    after = _tree(tiny_default)
    assert {k: v for k, v in after.items() if k in before} == before  # reports/default untouched
    added = sorted(set(after) - set(before))
    assert added and all(name.startswith("vitbench-report/") for name in added)
    assert "vitbench-report/report.md" in added and "vitbench-report/results.csv" in added
    assert sorted(p.name for p in tiny_default.iterdir()) == ["reports", "vitbench-report"]  # no staging left
    first = captured.err.splitlines()[0]
    assert first.startswith("vitbench: report: the built-in default study -> vitbench-report/ (about ")
    assert "minutes on 2 idle cores" in first
    assert "wrote vitbench-report/report.md" in captured.out
    # the default place: the reproduce line is the bare command
    assert "**Reproduce:** `vitbench report`\n" in (tiny_default / "vitbench-report" / "report.md").read_text()


@pytest.mark.slow  # about 2 s: the default suite stays under 2 minutes on 2 cores
def test_out_writes_the_committed_report_where_it_is_asked(tiny_default, capsys):
    assert main(["report", "--out", "reports/default", "-q"]) == 0
    text = (tiny_default / "reports" / "default" / "report.md").read_text()
    assert "**Reproduce:** `vitbench report --out reports/default`" in text
    assert not (tiny_default / "vitbench-report").exists()
    assert capsys.readouterr().err == ""  # -q: not even the first line


def test_a_clone_ignores_the_default_report_folder():
    ignored = (Path(__file__).resolve().parent.parent / ".gitignore").read_text().splitlines()
    assert "vitbench-report/" in ignored


def _measured(row_id: str, warnings=(), **extra) -> dict:
    return {"id": row_id, "status": "ok", "model": "mnist-vit", "batch_size": 1, "mode": "infer", "precision": "fp32",
            "device": "cpu", "throughput_img_s": 100.0, "latency_p50_s": 0.01, "clock": "cpu", "run_cv": 0.02,
            "machine_busy_cores": 3.0, "machine_cpus": 2, "warnings": list(warnings), **extra}


BUSY = {"code": "busy-machine", "message": "busy machine: other processes use 3.0 of 2 cores"}


def test_the_first_screen_says_why_no_measured_row_is_concluded_from():
    from vitbench.reporting.study.measured import overview

    text = overview([_measured("a", [BUSY]), _measured("b", run_cv=0.3)])
    assert text.startswith("**Measured rows:** none of the 2 is stable enough to conclude from (timed by CPU time)")
    assert "draws no measured conclusion (busy machine: 1, unstable timing: 1)" in text
    assert "median 3.0 of 2 cores busy" in text


def test_the_first_screen_counts_the_stable_and_the_remeasured_rows():
    from vitbench.reporting.study.measured import overview

    assert overview([{"id": "x", "status": "ok", "model": "m", "batch_size": 1}]) is None  # nothing measured
    assert overview([_measured("a"), _measured("b", attempts=2)]) == (
        "**Measured rows:** all 2 are stable enough to conclude from (timed by CPU time); 1 measured twice, the "
        "steadier attempt kept.")
    some = overview([_measured("a"), _measured("b", [BUSY])])
    assert some.startswith("**Measured rows:** 1 of 2 are stable enough to conclude from (timed by CPU time); 1 withheld (busy machine: 1)")


def test_the_measured_rows_line_comes_before_the_summary(tmp_path):
    from vitbench.reporting.study import render_report

    records = [_measured("a", [BUSY]), _measured("b", [BUSY], batch_size=2)]
    text = render_report(records, tmp_path / "r", command="x", plots=False).report.read_text()
    assert text.index("**Measured rows:** none of the 2") < text.index("## Contents")
