"""Every example in the README runs verbatim (issue 12), in README order, in one scratch folder.

The examples run the real `vitbench` command of this environment; they take minutes (the default
study, sweeps, measurements), so they are marked slow: `pytest tests/ -m slow` (CI runs it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from readme_examples import README, examples

EXAMPLES = examples()
TIMEOUT_S = 1800


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """A scratch folder standing in for the repository root: the examples' own files are written
    there, and ``benchmarks/`` (the committed baselines the gate example reads) is the repository's."""
    folder = tmp_path_factory.mktemp("readme")
    (folder / "benchmarks").symlink_to(README.parent / "benchmarks")
    return folder


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(CI="true", MPLBACKEND="Agg", PYTHONUNBUFFERED="1")
    return env


def test_the_readme_has_examples_and_every_skip_says_why():
    assert len([e for e in EXAMPLES if e.action == "run"]) >= 10
    for example in EXAMPLES:
        if example.action in ("skip", "file"):
            assert example.argument, f"README line {example.line}: a {example.action} marker needs a reason or a name"


@pytest.mark.slow
@pytest.mark.unsampled  # each example builds on the files the ones before it wrote
@pytest.mark.parametrize("example", EXAMPLES, ids=[e.label for e in EXAMPLES])
def test_readme_example_runs_verbatim(example, scratch):
    if example.action == "skip":
        pytest.skip(f"README line {example.line}: {example.argument}")
    if example.action == "file":
        (scratch / example.argument).write_text(example.code, encoding="utf-8")
        return
    if example.language == "bash":
        argv = ["bash", "-euo", "pipefail", "-c", example.code]
    else:
        argv = [sys.executable, "-c", example.code]
    proc = subprocess.run(
        argv, cwd=scratch, env=_environment(), capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert proc.returncode == example.exit_code, (
        f"{README.name} line {example.line} exited {proc.returncode} (expected {example.exit_code}):\n"
        f"--- stdout ---\n{proc.stdout[-3000:]}\n--- stderr ---\n{proc.stderr[-3000:]}"
    )
