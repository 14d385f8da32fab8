"""The command line run in-process, as the tests drive it."""

from __future__ import annotations

from vitbench.cli import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """``vitbench ARGV...`` in this process: (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
