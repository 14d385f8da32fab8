"""The CI gate, `vitbench gate` (vitbench/cli/gate.py), as CI runs it: the GitHub Action's steps
(action.yml) and docs/gate.md's GitLab job run as a runner would (tests/_ci_runner.py) on a
scratch repository of two commits, the second adding a block to the model: the first commit only
records (no baseline yet), the second fails on a predicted-time regression, compared with the
first through the history, with a bisect hint naming it. By default with the interpreter the tests
run in (pip recorded, not run); under -m slow from a clean virtual environment with no vitbench in
it. Then ci/gate_action.sh, the thin wrapper, end to end and failing closed (issue 45)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tests._ci_runner import gh_shim, log, run_action, run_gitlab, shims

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "ci" / "gate_action.sh"
DOCS = (ROOT / "docs" / "gate.md").read_text()
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


@pytest.mark.parametrize("code", [1, 2, 7])
def test_a_failing_command_fails_the_gate_with_exit_3(tmp_path, code):
    """A command that fails is "a run failed" (3), whatever its own code: before, its exit 1 was
    the gate's, read as a regression."""
    done = _gate(tmp_path, tmp_path / "summary.md", COMMAND=f"exit {code}")
    assert done.returncode == 3 and f"the command failed (exit {code})" in done.stderr


def test_the_action_runs_vitbench_gate_with_the_inputs_it_declares():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    gate = [s for s in action["runs"]["steps"] if s.get("id") == "gate"][0]
    assert "python -m vitbench gate" in gate["run"] and "ci/gate_action.sh" not in gate["run"]
    assert {"command", "results", "baseline", "rules", "history", "install", "extras"} <= set(action["inputs"])
    assert action["inputs"]["install"]["default"] == ""  # vitbench is on no package index: never `pip install vitbench`
    used = {v.split("inputs.")[1].split()[0].rstrip("}") for s in action["runs"]["steps"] for v in (s.get("env") or {}).values()
            if "inputs." in str(v)}
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


@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
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



def test_vitbench_gate_takes_flags_over_the_environment(tmp_path, monkeypatch, capsys):
    """`vitbench gate` is the gate, in the package: flags configure it (each over the environment
    variable of its name), and a bad value is one line naming the flag, exit 2."""
    from vitbench.cli import main

    repo, _ = _repo(tmp_path)
    monkeypatch.chdir(repo)
    for name, value in {"COMMAND": "exit 5", "RESULTS": "elsewhere.csv", "RULES": "bogus", "GATE_DIR": "wrong"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    (repo / "bigger.csv").write_text(ROW.format(params=100, macs=2000))
    argv = ["gate", "--command=cp bigger.csv ./-o.csv", "--results=-o.csv", "--baseline=base.csv", "--rules=macs:0",
            "--add-to-history=false", "--gate-dir=g"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert "FAIL" in captured.out and (repo / "g" / "gate.md").read_text() == captured.out
    assert not (repo / "wrong").exists() and not (repo / "vitbench-history").exists()
    assert main([*argv, "--pr-number=7;id"]) == 2
    assert capsys.readouterr().err == "vitbench gate: --pr-number='7;id': must be a pull request's number\n"
    assert main(["gate", "--command=exit 4", "--results=x.csv"]) == 3  # the command failed: neither 1 nor 2
    assert capsys.readouterr().err.endswith("vitbench gate: the command failed (exit 4)\n")

# --------------------------------------------------------------------------- as a runner runs it (issue 46)
#: names the gate reads from the environment: none may leak in from the one the tests run in
GATE_VARIABLES = ("COMMAND", "RESULTS", "BASELINE", "RULES", "HISTORY", "TARGET_BRANCH", "GATE_DIR", "ADD_TO_HISTORY",
                  "PR_NUMBER", "COMMENT", "VIRTUAL_ENV")


def _docs_yaml(marker: str):
    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", DOCS, re.S) if marker in b]
    return yaml.safe_load(block)


def _action_inputs() -> dict:
    """The `with:` of docs/gate.md's workflow, as a user copies it."""
    workflow = _docs_yaml("uses: OWNER/vitbench@")
    (step,) = [s for s in workflow["jobs"]["gate"]["steps"] if str(s.get("uses", "")).startswith("OWNER/vitbench@")]
    return step["with"]


class Scratch:
    """A scratch repository: `main` holds models.py, a ViT of two blocks; then a pull request's
    branch adds a third."""

    def __init__(self, folder: Path):
        self.repo = folder / "repo"
        self.repo.mkdir(parents=True)
        _git(self.repo, "init", "-q", "-b", "main")
        (self.repo / "models.py").write_text(MODEL.format(depth=2))
        _git(self.repo, "add", "models.py")
        _git(self.repo, "commit", "-q", "-m", "two blocks")
        self.first = _git(self.repo, "rev-parse", "HEAD")
        self.second = ""

    def add_a_block(self) -> None:
        _git(self.repo, "checkout", "-q", "-b", "feature")
        (self.repo / "models.py").write_text(MODEL.format(depth=3))
        _git(self.repo, "commit", "-q", "-am", "three blocks")
        self.second = _git(self.repo, "rev-parse", "HEAD")


def _environment(tmp_path: Path, path: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_")) and k not in GATE_VARIABLES}
    return {**env, "PATH": path, "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}


def _action_flow(scratch: Scratch, env: dict[str, str], action_path: Path):
    """The action on a push of main's commit, then on the pull request that adds a block."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    push = {"action_path": str(action_path), "base_ref": "", "head_ref": "", "ref_name": "main", "sha": scratch.first,
            "token": "t0ken", "event": {"repository": {"default_branch": "main"}}}
    first = run_action(action, _action_inputs(), push, scratch.repo, env)
    scratch.add_a_block()
    pull = {**push, "base_ref": "main", "head_ref": "feature", "sha": scratch.second,
            "event": {**push["event"], "pull_request": {"number": 7}}}
    return first, run_action(action, _action_inputs(), pull, scratch.repo, env)


def _gitlab_flow(scratch: Scratch, env: dict[str, str]):
    """docs/gate.md's GitLab job on main's commit, then on the merge request that adds a block."""
    job = _docs_yaml("vitbench-gate:")["vitbench-gate"]
    first, _ = run_gitlab(job, scratch.repo, env)
    scratch.add_a_block()
    second, _ = run_gitlab(job, scratch.repo, {**env, "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main"})
    return first, second


def _fails_on_predicted_time_naming_the_commit(scratch: Scratch, gate_dir: str) -> str:
    """The second commit's gate: pred_latency_s failed in the JUnit XML, and the report holds the
    bisect hint naming the commit that added the block; the report."""
    suite = ET.parse(scratch.repo / gate_dir / "gate.xml").getroot().find("testsuite")
    failures = {c.get("name") for c in suite.findall("testcase") if c.find("failure") is not None}
    assert "pred_latency_s" in failures, failures
    report = (scratch.repo / gate_dir / "gate.md").read_text()
    assert "FAIL" in report
    (hint,) = [line for line in report.splitlines() if line.startswith("- pred_latency_s of ")]
    assert f"at `{scratch.second[:10]}` (three blocks)" in hint and f"`git bisect start {scratch.second} {scratch.first}`" in hint
    return report


@pytest.mark.slow
def test_the_action_as_a_runner_runs_it_fails_a_predicted_time_regression_with_a_bisect_hint(tmp_path):
    """action.yml's steps, with docs/gate.md's inputs: the install step asks pip for the action's
    own checkout (before: `pip install vitbench`, which no index has), then `vitbench gate`."""
    pip, gh = tmp_path / "pip.txt", tmp_path / "gh.txt"
    path = shims(tmp_path / "bin", sys.executable, pip)["PATH"]
    env = _environment(tmp_path, f"{gh_shim(tmp_path / 'gh', gh)}{os.pathsep}{path}")
    scratch = Scratch(tmp_path / "action")
    first, second = _action_flow(scratch, env, ROOT)
    assert not first.failed, log(first)
    assert [s.name for s in first.steps if s.ran] == ["Install vitbench", "Gate"]
    assert pip.read_text().splitlines() == [f"install {ROOT}"] * 2, "the action's own checkout, never an index"
    assert second.failed and second.step("Gate").code == 0 and second.step("Fail on a regression").code == 1, log(second)
    report = _fails_on_predicted_time_naming_the_commit(scratch, "vitbench-gate")
    assert report in (tmp_path / "summary.md").read_text()
    (commented,) = gh.read_text().splitlines()  # the pull request's run, not the push's
    assert re.fullmatch(r"pr comment 7 --body-file=\S+/gate\.md", commented), commented


@pytest.mark.slow
def test_the_gitlab_recipe_as_a_runner_runs_it_fails_a_predicted_time_regression_with_a_bisect_hint(tmp_path):
    """docs/gate.md's GitLab job: pip installs vitbench from its repository pinned to a commit
    (before: `pip install vitbench` and `bash ci/gate_action.sh`, a file of vitbench's repository)."""
    job = _docs_yaml("vitbench-gate:")["vitbench-gate"]
    assert re.fullmatch(r"git\+https://github\.com/OWNER/vitbench@COMMIT", job["variables"]["VITBENCH_GIT"])
    pip = tmp_path / "pip.txt"
    env = _environment(tmp_path, shims(tmp_path / "bin", sys.executable, pip)["PATH"])
    scratch = Scratch(tmp_path / "gitlab")
    first, second = _gitlab_flow(scratch, env)
    assert first.returncode == 0, log(first)
    assert "no baseline yet" in first.stdout
    assert pip.read_text().splitlines() == [f"install vitbench @ {job['variables']['VITBENCH_GIT']}"] * 2
    assert second.returncode == 1, log(second)
    assert f"vitbench gate: baseline: commit {scratch.first} of vitbench-history" in second.stderr  # the merge base
    _fails_on_predicted_time_naming_the_commit(scratch, "gate")


def _checkout_of_this_tree(folder: Path) -> tuple[Path, str]:
    """This working tree (tracked files and untracked ones git does not ignore) as a one-commit
    git repository: what a pinned reference to vitbench names; its commit."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, folder / name)
    _git(folder, "init", "-q", "-b", "main")
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "-m", "vitbench")
    return folder, _git(folder, "rev-parse", "HEAD")


@pytest.fixture
def venv(tmp_path):
    """A folder for a fresh venv, removed after the test: torch and its CUDA libraries are about
    6 GB, and pytest keeps the last runs' temporary folders (CI ran out of disk)."""
    folder = tmp_path / "venv"
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow  # about 7 minutes on a busy 2-core machine: pip installs vitbench, torch and the rest into a fresh venv
@pytest.mark.fresh_venv  # .ci/run runs it alone, from a venv without torch: two torch installs ran CI out of disk
def test_from_a_clean_venv_the_gitlab_recipe_and_the_action_install_vitbench_and_gate(tmp_path, venv):
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    python = str(venv / "bin" / "python")
    assert subprocess.run([python, "-c", "import vitbench"], cwd=tmp_path, capture_output=True).returncode != 0
    checkout, commit = _checkout_of_this_tree(tmp_path / "vitbench")
    outside = [p for p in os.environ["PATH"].split(os.pathsep) if not p.startswith(sys.prefix)]  # not this venv's bin
    path = os.pathsep.join([str(venv / "bin"), str(gh_shim(tmp_path / "gh", tmp_path / "gh.txt")), *outside])
    env = {**_environment(tmp_path, path), "VITBENCH_TRACE_DIR": str(tmp_path / "traces")}

    gitlab = Scratch(tmp_path / "gitlab")
    first, second = _gitlab_flow(gitlab, {**env, "VITBENCH_GIT": f"git+file://localhost{checkout}@{commit}"})
    assert first.returncode == 0 and second.returncode == 1, log(first) + log(second)
    _fails_on_predicted_time_naming_the_commit(gitlab, "gate")
    where = subprocess.run([python, "-c", "import vitbench; print(vitbench.__file__)"], cwd=tmp_path, capture_output=True,
                           text=True, check=True).stdout
    assert where.startswith(str(venv)), where  # the installed copy, not this tree

    subprocess.run([python, "-m", "pip", "uninstall", "-q", "-y", "vitbench"], check=True, env=env)
    scratch = Scratch(tmp_path / "action")
    first, second = _action_flow(scratch, env, checkout)
    assert not first.failed and first.step("Install vitbench").code == 0, log(first)
    assert second.failed and second.step("Fail on a regression").code == 1, log(second)
    _fails_on_predicted_time_naming_the_commit(scratch, "vitbench-gate")
