"""Results over commits: ``vitbench history`` (store, trends, the commits where they changed)."""

from vitbench.history.changes import Change, changes, series
from vitbench.history.store import Commit, add, commits, read

__all__ = ["Change", "Commit", "add", "changes", "commits", "read", "series"]
