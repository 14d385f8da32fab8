"""The README's `vitbench compare` examples run verbatim (CLI lines through ``vitbench.cli.main``,
the Python block with ``exec``), in a scratch directory where ``benchmarks/`` is the repository's.
Slow: it profiles mnist-vit twice with five worker processes each."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from vitbench.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _section(title: str) -> str:
    """The README text from ``title`` to the next heading."""
    text = (ROOT / "README.md").read_text()
    start = text.index(title)
    return text[start:re.compile(r"\n#{2,3} ").search(text, start + 1).start()]


def _blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.S)


def _commands(block: str) -> list[list[str]]:
    joined = block.replace("\\\n", " ")
    return [shlex.split(line, comments=True) for line in joined.splitlines() if line.strip() and not line.startswith("#")]


@pytest.mark.slow
def test_compare_section_examples_run_verbatim(tmp_path, monkeypatch, capsys):
    section = _section("## Using vitbench as a CI gate: `vitbench compare`")
    (bash,) = _blocks(section, "bash")
    (python,) = _blocks(section, "python")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "benchmarks").symlink_to(ROOT / "benchmarks")
    codes = []
    for argv in _commands(bash):
        assert argv[0] == "vitbench"
        codes.append(main(argv[1:]))
        capsys.readouterr()
    # analyze, the counts gate, two profiles, the speed gate (the same configuration twice)
    assert codes == [0, 0, 0, 0, 0], codes
    assert (tmp_path / "gate.md").read_text().startswith("### vitbench compare: PASS")

    exec(compile(python, "README.md (compare)", "exec"), {})
    printed = capsys.readouterr().out
    assert printed.startswith("1 [('vit-s/16 224px b1', 'params'), ('vit-s/16 224px b1', 'macs')]")


def test_python_api_compare_line_runs():
    """The one-line compare of the README's Python API section (no files needed)."""
    (line,) = [ln for ln in _section("## Python API").splitlines() if ln.startswith("vitbench.compare(")]
    import vitbench

    assert eval(line, {"vitbench": vitbench}) == 1  # a 13th block adds parameters
