"""The README's examples as runnable blocks, for tests/test_readme.py.

Every fenced ``bash`` and ``python`` block of README.md is an example that must run verbatim, in
README order, in one scratch directory (later examples use the files earlier ones wrote, as a
reader following along would). An HTML comment on the line before a fence says otherwise:

    <!-- readme: skip REASON -->      not run (REASON says why: a cluster, an install, a server)
    <!-- readme: file NAME -->        not run: its text is written to NAME for later examples
    <!-- readme: exit N -->           runs, and must exit with N (a gate that fails on purpose)

Blocks in other languages (yaml, text, plain fences) are documentation, not examples, unless a
``file`` marker names them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
RUNNABLE = ("bash", "python")
_MARKER = re.compile(r"^\s*<!--\s*readme:\s*(skip|file|exit)\s*(.*?)\s*-->\s*$")
_FENCE = re.compile(r"^(\s*)```(\w*)\s*$")  # fences inside list items are indented


@dataclass(frozen=True)
class Example:
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    action: str  # run | skip | file
    argument: str = ""  # skip reason, file name
    exit_code: int = 0

    @property
    def label(self) -> str:
        first = next((ln for ln in self.code.splitlines() if ln.strip() and not ln.startswith("#")), "")
        return f"L{self.line}:{first.strip()[:50]}"


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
        action, argument, exit_code = "run", "", 0
        if marker:
            kind, argument = marker.groups()
            if kind == "exit":
                exit_code = int(argument)
            else:
                action = kind
        if action == "file" or language in RUNNABLE:
            out.append(Example(start + 1, language, code, action, argument, exit_code))
        i = j + 1
    return out
