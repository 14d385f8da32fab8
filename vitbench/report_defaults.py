"""Where the built-in default study (``vitbench report`` with no argument) is written and what it
takes, as the CLI says before it starts: constants only, so that ``vitbench --help`` imports
nothing of the report."""

from __future__ import annotations

from pathlib import Path

#: where the default study is written unless ``out`` says otherwise (relative to the current folder)
DEFAULT_OUT = Path("vitbench-report")
#: what the default study takes, as the CLI states it before it starts (measured: docs/reports.md)
DEFAULT_STUDY_TIME = "about 6 minutes on 2 idle cores, longer on a busy machine"
