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
    env = {**os.environ, "COMMAND": f"{sys.executable} -m vitbench analyze py:./model.py:build --format csv -o current.csv",
           "RESULTS": "current.csv", "RULES": "macs:0,params:0", "GATE_DIR": "gate", "GITHUB_STEP_SUMMARY": str(summary),
           "VITBENCH": f"{sys.executable} -m vitbench", **extra}
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
