"""The examples of the README and of docs/*.md as runnable blocks, for tests/test_readme.py.

Every fenced ``bash`` and ``python`` block of README.md, then of each page docs/README.md lists
(in its order), is an example that must run verbatim, in that order, in one scratch directory
(later examples use the files earlier ones wrote, as a reader following along would). An HTML comment on the line before a fence says otherwise:

    <!-- readme: skip REASON -->      not run (REASON says why: a cluster, an install, a server)
    <!-- readme: file NAME -->        not run: its text is written to NAME for later examples
    <!-- readme: exit N -->           runs, and must exit with N (a gate that fails on purpose)
    <!-- readme: timing REASON -->    runs a timing gate on this shared machine: must exit 0, or 1
                                      only where the gate itself reports a side unstable between
                                      runs (other work used the machine: then the times differ)

Blocks in other languages (yaml, text, plain fences) are documentation, not examples, unless a
``file`` marker names them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS_INDEX = ROOT / "docs" / "README.md"
RUNNABLE = ("bash", "python")
_MARKER = re.compile(r"^\s*<!--\s*readme:\s*(skip|file|exit|timing)\s*(.*?)\s*-->\s*$")
#: what ``vitbench compare`` prints of a side whose runs varied (the warning of vitbench/measure/stability.py)
UNSTABLE = "unstable between runs"
_FENCE = re.compile(r"^(\s*)```(\w*)\s*$")  # fences inside list items are indented


@dataclass(frozen=True)
class Example:
    path: Path  # the page the example is on
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    action: str  # run | skip | file
    argument: str = ""  # skip reason, file name, why a timing gate may fail
    exit_code: int = 0
    timing: bool = False  # a timing gate: 1 is allowed where it reports its runs unstable

    @property
    def label(self) -> str:
        first = next((ln for ln in self.code.splitlines() if ln.strip() and not ln.startswith("#")), "")
        page = "README" if self.path == README else self.path.stem
        return f"{page}:L{self.line}:{first.strip()[:50]}"

    @property
    def where(self) -> str:
        shown = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{shown} line {self.line}"


def pages() -> list[Path]:
    """README.md, then every page docs/README.md links to, in its order."""
    import re

    linked = re.findall(r"\]\(([\w-]+\.md)\)", DOCS_INDEX.read_text(encoding="utf-8"))
    return [README, *(DOCS_INDEX.parent / name for name in dict.fromkeys(linked))]


#: pages whose examples neither read nor write a file another page's examples use: they run in a
#: test file of their own (tests/test_readme_measuring.py), in their own scratch folder, so that
#: pytest-xdist can run them beside the rest (the profile examples alone take ~9 minutes in CI)
SEPARATE_PAGES = ("measuring.md",)


def all_examples() -> list[Example]:
    return [example for page in pages() for example in examples(page)]


def chained_examples() -> list[Example]:
    """Every page's examples but :data:`SEPARATE_PAGES`', in reading order (one scratch folder)."""
    return [e for e in all_examples() if e.path.name not in SEPARATE_PAGES]


def page_examples(name: str) -> list[Example]:
    """The examples of ``docs/<name>``, in order."""
    return examples(DOCS_INDEX.parent / name)


#: one example may take this long (the default study on a busy CI runner)
TIMEOUT_S = 1800


def make_scratch(folder: Path) -> Path:
    """``folder`` standing in for the repository root: the examples' own files are written there,
    and ``benchmarks/`` (the committed baselines the gate example reads) is the repository's."""
    (folder / "benchmarks").symlink_to(ROOT / "benchmarks")
    return folder


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(CI="true", MPLBACKEND="Agg", PYTHONUNBUFFERED="1")
    return env


def run_example(example: Example, scratch: Path) -> None:
    """Run one example verbatim in ``scratch`` (skip it with its reason; write a ``file`` one);
    an AssertionError with its output when it exits other than it should."""
    import pytest

    if example.action == "skip":
        pytest.skip(f"{example.where}: {example.argument}")
    if example.action == "file":
        (scratch / example.argument).write_text(example.code, encoding="utf-8")
        return
    if example.language == "bash":
        argv = ["bash", "-euo", "pipefail", "-c", example.code]
    else:
        argv = [sys.executable, "-c", example.code]
    proc = subprocess.run(argv, cwd=scratch, env=_environment(), capture_output=True, text=True, timeout=TIMEOUT_S)
    if example.timing and proc.returncode == 1 and UNSTABLE in proc.stdout:
        return  # the gate said why its verdict may be the machine's, as it tells a user
    assert proc.returncode == example.exit_code, (
        f"{example.where} exited {proc.returncode} (expected {example.exit_code}):\n"
        f"--- stdout ---\n{proc.stdout[-3000:]}\n--- stderr ---\n{proc.stderr[-3000:]}"
    )


def examples(path: Path = README) -> list[Example]:
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Example] = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        start = i
        indent, language = fence.groups()
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith("```"):
            j += 1
        code = "\n".join(line[len(indent):] if line.startswith(indent) else line for line in lines[i + 1:j]) + "\n"
        marker = _MARKER.match(lines[start - 1]) if start > 0 else None
        action, argument, exit_code, timing = "run", "", 0, False
        if marker:
            kind, argument = marker.groups()
            if kind == "exit":
                exit_code = int(argument)
            elif kind == "timing":
                timing = True
            else:
                action = kind
        if action == "file" or language in RUNNABLE:
            out.append(Example(path, start + 1, language, code, action, argument, exit_code, timing))
        i = j + 1
    return out
