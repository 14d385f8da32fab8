"""The baseline of a CI run, taken from the history (``vitbench gate``): the rows of the target
branch's merge base with the commit checked out, else those of the newest commit of the history
that is not this one. Git is asked with argument lists (no shell), and a branch name is checked
(:func:`vitbench.history.store.check_ref`) before git sees it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from vitbench.history.store import _git, check_ref, commits


def head(cwd: str | os.PathLike | None = None) -> str | None:
    """The commit checked out at ``cwd``, or None outside a git checkout."""
    return _git(["rev-parse", "HEAD"], cwd)


def merge_base(target_branch: str, cwd: str | os.PathLike | None = None) -> str | None:
    """The merge base of HEAD with ``origin/TARGET`` (a CI checkout's remote branch), else with
    ``TARGET``; None when git knows neither."""
    check_ref("branch", target_branch)
    for ref in (f"origin/{target_branch}", target_branch):
        found = _git(["merge-base", "HEAD", ref], cwd)
        if found:
            return found
    return None


def _rows_of(rows: Sequence[dict[str, Any]], commit: str) -> list[dict[str, Any]]:
    """The rows of ``commit``: added under its full id, or under an abbreviation of it."""
    exact = [r for r in rows if str(r.get("history_commit")) == commit]
    if exact:
        return exact
    short = {str(r.get("history_commit")) for r in rows}
    matches = [c for c in short if len(c) >= 7 and commit.startswith(c)]
    return [r for r in rows if str(r.get("history_commit")) == matches[0]] if len(matches) == 1 else []


def baseline(rows: Sequence[dict[str, Any]], *, target_branch: str | None = None, cwd: str | os.PathLike | None = None,
             current: str | None = None) -> tuple[str, list[dict[str, Any]]] | None:
    """``(commit, rows)`` of the baseline in the history ``rows`` for the commit ``current``
    (default: the one checked out at ``cwd``): the target branch's merge base when the history
    holds it, else the newest commit of the history other than ``current``; None when there is
    none (the first run only records)."""
    current = current if current is not None else head(cwd)
    if target_branch:
        base = merge_base(target_branch, cwd)
        found = _rows_of(rows, base) if base else []
        if found:
            return base, found
    others = [c.commit for c in commits(list(rows)) if c.commit != current]
    if not others:
        return None
    return others[-1], [r for r in rows if str(r.get("history_commit")) == others[-1]]


__all__ = ["baseline", "head", "merge_base"]
