"""The GitHub Action's gate script (ci/gate_action.sh, what action.yml runs), end to end on a
two-commit git repository made here: the first commit only records (no baseline yet), the second
changes the model and is compared with the first through the history: exit 1, the markdown in
the step summary, JUnit XML naming the regression, both commits in the history."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "ci" / "gate_action.sh"
MODEL = """from vitbench.specs import ViTSpec

def build():
    from vitbench import build_model
    return build_model(ViTSpec(name="m", img_size=32, patch_size=8, embed_dim=64, depth={depth}, num_heads=2, num_classes=10))
"""


def _git(repo, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


def _gate(repo, summary, **extra):
    """Run the script in ``repo``; a value of None in ``extra`` leaves that variable unset."""
    env = {**os.environ, "COMMAND": f"{sys.executable} -m vitbench analyze py:./model.py:build --format csv -o current.csv",
           "RESULTS": "current.csv", "RULES": "macs:0,params:0", "GATE_DIR": "gate", "GITHUB_STEP_SUMMARY": str(summary),
           "VITBENCH": f"{sys.executable} -m vitbench", **extra}
    env = {k: v for k, v in env.items() if v is not None}
    return subprocess.run(["bash", str(SCRIPT)], cwd=repo, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow  # about 8 s: ten vitbench processes; CI's slow phase runs it
def test_two_commits_through_the_action_script(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "model.py").write_text(MODEL.format(depth=2))
    _git(repo, "add", "model.py")
    _git(repo, "commit", "-q", "-m", "two blocks")
    first = _git(repo, "rev-parse", "HEAD")
    summary = tmp_path / "summary.md"

    done = _gate(repo, summary)
    assert done.returncode == 0, done.stderr
    assert "no baseline yet" in (repo / "gate" / "gate.md").read_text()

    (repo / "model.py").write_text(MODEL.format(depth=3))
    _git(repo, "commit", "-q", "-am", "three blocks")
    second = _git(repo, "rev-parse", "HEAD")
    done = _gate(repo, summary)
    assert done.returncode == 1, done.stderr
    assert f"baseline: commit {first}" in done.stderr
    report = (repo / "gate" / "gate.md").read_text()
    assert "FAIL" in report and report in summary.read_text()
    suite = ET.parse(repo / "gate" / "gate.xml").getroot().find("testsuite")
    failures = {c.get("name") for c in suite.findall("testcase") if c.find("failure") is not None}
    assert failures == {"macs", "params"}
    listed = subprocess.run([sys.executable, "-m", "vitbench", "history", "list", "--store", "vitbench-history",
                             "--format", "csv"], cwd=repo, capture_output=True, text=True, check=True).stdout
    assert [line.split(",")[0] for line in listed.splitlines()[1:]] == [first, second]
    assert [line.split(",")[3] for line in listed.splitlines()[1:]] == ["two blocks", "three blocks"]


def test_a_failing_command_fails_the_gate_with_its_code(tmp_path):
    done = _gate(tmp_path, tmp_path / "summary.md", COMMAND="exit 3")
    assert done.returncode == 3 and "the command failed (exit 3)" in done.stderr


def test_the_action_runs_the_script_with_the_inputs_it_declares():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    gate = [s for s in action["runs"]["steps"] if s.get("id") == "gate"][0]
    assert "ci/gate_action.sh" in gate["run"]
    assert {"command", "results", "baseline", "rules", "history"} <= set(action["inputs"])
    used = {v.split("inputs.")[1].split()[0].rstrip("}") for v in gate["env"].values() if "inputs." in v}
    assert used <= set(action["inputs"])


# --------------------------------------------------------------------------- fails closed (issue 45)
ROW = "model,img_size,batch_size,status,params,macs\nm,32,1,ok,{params},{macs}\n"


def _repo(tmp_path):
    """A one-commit repository holding base.csv; its HEAD."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "base.csv").write_text(ROW.format(params=100, macs=1000))
    _git(repo, "add", "base.csv")
    _git(repo, "commit", "-q", "-m", "base")
    return repo, _git(repo, "rev-parse", "HEAD")


@pytest.mark.parametrize("unset", [{"COMMAND": None}, {"COMMAND": ""}, {"RESULTS": None}, {"RESULTS": ""}])
def test_missing_configuration_exits_2_naming_the_variable(tmp_path, unset):
    done = _gate(tmp_path, tmp_path / "summary.md", **unset)
    (name,) = unset
    assert done.returncode == 2, done.stderr  # 1 would read as a regression
    assert f"vitbench gate: {name} is not set" in done.stderr


@pytest.mark.parametrize("bad", [{"TARGET_BRANCH": "--output=x"}, {"PR_NUMBER": "1;touch PWNED"},
                                 {"ADD_TO_HISTORY": "yes"}])
def test_malformed_configuration_exits_2_before_running_anything(tmp_path, bad):
    done = _gate(tmp_path, tmp_path / "summary.md", COMMAND="touch ran; exit 3", **bad)
    (name,) = bad
    assert done.returncode == 2 and f"vitbench gate: {name}=" in done.stderr, done.stderr
    assert not (tmp_path / "ran").exists() and not (tmp_path / "PWNED").exists()


def test_values_starting_with_a_dash_are_files_not_options(tmp_path):
    """RESULTS=-o.csv and BASELINE=--help: before, `compare --help current.csv` printed the help
    and exited 0, a gate that compared nothing and passed."""
    repo, head = _repo(tmp_path)
    (repo / "--help").write_text(ROW.format(params=100, macs=1000))
    done = _gate(repo, tmp_path / "summary.md", COMMAND="cp base.csv ./-o.csv", RESULTS="-o.csv", BASELINE="--help",
                 HISTORY="-h")
    assert done.returncode == 0, done.stderr
    report = (repo / "gate" / "gate.md").read_text()
    assert "PASS" in report and "2 comparisons" in report and "usage" not in report
    listed = subprocess.run([sys.executable, "-m", "vitbench", "history", "list", "--store=-h", "--format", "csv"],
                            cwd=repo, capture_output=True, text=True, check=True).stdout
    assert listed.splitlines()[1].split(",")[0] == head  # `history add -- -o.csv` added the results
    (repo / "--help").write_text(ROW.format(params=100, macs=2000))
    done = _gate(repo, tmp_path / "summary.md", COMMAND="cp base.csv ./-o.csv", RESULTS="-o.csv", BASELINE="--help",
                 RULES="macs:0", ADD_TO_HISTORY="false")
    assert done.returncode == 1, done.stderr  # the file named --help is the baseline: a regression


def test_nothing_an_earlier_run_left_in_gate_dir_is_read_back(tmp_path):
    """An earlier run's baseline.csv (another commit's rows) was taken as this run's baseline when
    the history held no other commit; an earlier gate.md was reported when compare wrote none."""
    from vitbench.history import add

    repo, head = _repo(tmp_path)
    add(repo / "vitbench-history", repo / "base.csv", commit=head, date="2026-11-01T00:00:00+00:00")
    stale = repo / "gate"
    stale.mkdir()
    (stale / "baseline.csv").write_text(ROW.format(params=100, macs=999))
    (stale / "gate.md").write_text("### stale PASS\n")
    done = _gate(repo, tmp_path / "summary.md", COMMAND="cp base.csv current.csv", ADD_TO_HISTORY="false")
    assert done.returncode == 0, done.stderr  # the history holds this commit only: nothing to compare with
    assert "no baseline yet" in (stale / "gate.md").read_text() and not (stale / "baseline.csv").exists()
    (stale / "gate.md").write_text("### stale PASS\n")
    done = _gate(repo, tmp_path / "summary.md", COMMAND="cp base.csv current.csv", BASELINE="missing.csv",
                 ADD_TO_HISTORY="false")
    assert done.returncode == 2, done.stderr
    assert (stale / "gate.md").read_text() == "### vitbench gate: compare failed with exit code 2 (no report)\n"


def test_results_the_command_did_not_write_are_refused(tmp_path):
    """current.csv left by an earlier run, and a command that writes nothing: before, the stale
    file was compared (and passed)."""
    repo, _ = _repo(tmp_path)
    (repo / "current.csv").write_text(ROW.format(params=100, macs=1000))
    done = _gate(repo, tmp_path / "summary.md", COMMAND="true", BASELINE="base.csv", ADD_TO_HISTORY="false")
    assert done.returncode == 2 and "RESULTS=current.csv: the command did not write it" in done.stderr, done.stderr
    done = _gate(repo, tmp_path / "summary.md", COMMAND="cp base.csv current.csv", BASELINE="base.csv", ADD_TO_HISTORY="false")
    assert done.returncode == 0, done.stderr
