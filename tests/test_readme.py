"""Every example in the README and in docs/*.md runs verbatim (issue 12), in reading order, in one
scratch folder.

The examples run the real `vitbench` command of this environment; they take minutes (the default
study, sweeps, measurements), so they are marked slow: `pytest tests/ -m slow` (CI runs it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from readme_examples import DOCS_INDEX, README, ROOT, all_examples, pages

EXAMPLES = all_examples()
TIMEOUT_S = 1800


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """A scratch folder standing in for the repository root: the examples' own files are written
    there, and ``benchmarks/`` (the committed baselines the gate example reads) is the repository's."""
    folder = tmp_path_factory.mktemp("readme")
    (folder / "benchmarks").symlink_to(ROOT / "benchmarks")
    return folder


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(CI="true", MPLBACKEND="Agg", PYTHONUNBUFFERED="1")
    return env


def test_the_readme_has_examples_and_every_skip_says_why():
    assert len([e for e in EXAMPLES if e.action == "run"]) >= 10
    assert [e for e in EXAMPLES if e.action in ("skip", "file") and not e.argument] == []


def test_every_docs_page_is_in_the_reading_order_and_the_readme_is_short():
    """docs/README.md lists every page (so none of their examples goes untested); the README
    stays a front page (issue: 878 lines, profile alone 186)."""
    listed = set(pages())
    assert {p for p in DOCS_INDEX.parent.glob("*.md") if p != DOCS_INDEX} <= listed
    assert all(p.exists() for p in listed)
    assert len(README.read_text(encoding="utf-8").splitlines()) < 300
    assert [e for e in EXAMPLES if e.path == README and e.action == "run"], "the README's quickstart runs"


@pytest.mark.slow
@pytest.mark.unsampled  # each example builds on the files the ones before it wrote
@pytest.mark.parametrize("example", EXAMPLES, ids=[e.label for e in EXAMPLES])
def test_readme_example_runs_verbatim(example, scratch):
    if example.action == "skip":
        pytest.skip(f"{example.where}: {example.argument}")
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
        f"{example.where} exited {proc.returncode} (expected {example.exit_code}):\n"
        f"--- stdout ---\n{proc.stdout[-3000:]}\n--- stderr ---\n{proc.stderr[-3000:]}"
    )
