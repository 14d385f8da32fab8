"""A history of results over commits: every results file added under a commit id, its date and
branch, kept in the same crash-safe append-only store as sweeps
(:class:`vitbench.store.writer.Store`: one checksummed JSON line per row, written before the
call returns, fsynced on close, a torn line skipped on reading; the store's lock serialises
concurrent writers, which wait for it here rather than fail).

Each row of an added results file becomes one record: the row's own columns plus

    history_commit    the commit id (``git rev-parse HEAD`` where the results are, or --commit)
    history_date      the commit's date, ISO 8601 (``git log -1 --format=%cI``, or --date)
    history_branch    the branch (``git rev-parse --abbrev-ref HEAD``, or --branch), may be empty
    history_message   the commit's subject line, may be empty
    history_entry     one id per ``add`` (several adds of one commit are kept apart and pooled)
    history_added_at  when it was added (UTC)

Commits are ordered by their date, then by when they were first added. A commit id and a branch
are checked when added (:func:`check_ref`: hex, or a name git takes as a ref, and nothing an option
parser or a shell would read as something else).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vitbench.errors import SpecError
from vitbench.escape import terminal_text
from vitbench.reading import read_results
from vitbench.results import Records
from vitbench.store.layout import StoreBusyError
from vitbench.store.reader import read_store
from vitbench.store.writer import Store

HISTORY_NAME = "vitbench-history"
FINGERPRINT = "vitbench-history-1"
COLUMNS = ("history_commit", "history_date", "history_branch", "history_message", "history_entry", "history_added_at")
#: seconds ``add`` waits for another writer's lock before giving up
LOCK_WAIT_S = 120.0


@dataclass(frozen=True)
class Commit:
    """One commit of the history: its id, date, branch, subject and how many rows it holds."""

    commit: str
    date: str
    branch: str
    message: str
    rows: int
    entries: int
    first_added: str

    @property
    def short(self) -> str:
        return self.commit[:10]

    def as_record(self) -> dict[str, Any]:
        return {"commit": self.commit, "date": self.date, "branch": self.branch, "message": self.message,
                "rows": self.rows, "entries": self.entries, "first_added": self.first_added}


def _git(args: list[str], cwd: str | os.PathLike | None) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_commit(cwd: str | os.PathLike | None = None) -> dict[str, str] | None:
    """The commit checked out at ``cwd`` (id, date, branch, subject), or None outside git."""
    commit = _git(["rev-parse", "HEAD"], cwd)
    if not commit:
        return None
    branch = _git(["rev-parse", "--abbrev-ref", "HEAD"], cwd) or ""
    return {"commit": commit, "date": _git(["log", "-1", "--format=%cI"], cwd) or "",
            "branch": "" if branch == "HEAD" else branch, "message": _git(["log", "-1", "--format=%s"], cwd) or ""}


def _check_date(date: str) -> str:
    try:
        parsed = dt.datetime.fromisoformat(date.replace("Z", "+00:00"))
    except ValueError:
        raise SpecError("date", date, "must be an ISO 8601 date, e.g. 2026-11-25T10:00:00+00:00") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.timezone.utc)
    return parsed.isoformat()


#: a full or abbreviated commit id
_HEX = re.compile(r"[0-9a-fA-F]{4,64}")
#: what ``git check-ref-format`` refuses anywhere in a name (space, ``~ ^ : ? * [ \\``), and
#: what a shell reads as syntax (a hint or a script may paste the name into one)
REF_FORBIDDEN = " ~^:?*[\\$;()`|&<>'\""
MAX_REF = 200


def _ref_problem(name: str, prefix: bool) -> str | None:
    """What makes ``name`` no git ref name (``git check-ref-format --allow-onelevel``, and none
    of :data:`REF_FORBIDDEN`), or None. ``prefix``: the start of a name (a trailing ``/``, ``.``
    or ``.lock`` may be cut short there)."""
    bad = next((c for c in name if c in REF_FORBIDDEN or not c.isprintable() or c.isspace()), None)
    whole = [(len(name) > MAX_REF, f"is longer than {MAX_REF} characters"),
             (name.startswith("-"), "starts with '-' (an option to git)"),
             (bad is not None, f"holds {bad!r}"),
             (".." in name, "holds '..'"), ("@{" in name, "holds '@{'"), (name == "@", "is '@'"),
             (name.startswith("/") or "//" in name, "has an empty part between slashes"),
             (any(part.startswith(".") for part in name.split("/")), "has a part starting with '.'"),
             (any(part.endswith(".lock") for part in name.split("/")[:-1]), "has a part ending with '.lock'")]
    ending = [(name.endswith("/"), "ends with '/'"), (name.endswith("."), "ends with '.'"),
              (name.endswith(".lock"), "ends with '.lock'")]
    return next((reason for broken, reason in whole + ([] if prefix else ending) if broken), None)


def check_ref(field: str, value: Any, *, prefix: bool = False, empty: bool = False) -> str:
    """``value`` if it is a commit id (4-64 hex digits) or a git ref name by git's own rules
    (:func:`_ref_problem`), else a :class:`SpecError` naming ``field`` (exit 2): nothing a history
    holds or prints can be read as an option or as shell syntax. ``prefix``: the start of one
    (``history show --commit``); ``empty``: the empty text is allowed (no branch)."""
    if isinstance(value, str) and (_HEX.fullmatch(value) or (empty and value == "")):
        return value
    kind = "a git branch name" if field == "branch" else "a commit id (4-64 hex digits) or a git ref name"
    if not isinstance(value, str) or not value:
        raise SpecError(field, value, f"must be {kind}")
    problem = _ref_problem(value, prefix)
    if problem:
        raise SpecError(field, value, f"must be {kind}: it {problem}")
    return value


def add(store: str | os.PathLike, results: Any, *, commit: str | None = None, date: str | None = None,
        branch: str | None = None, message: str | None = None, cwd: str | os.PathLike | None = None) -> dict[str, Any]:
    """Append ``results`` (anything :func:`vitbench.reading.read_results` reads: CSV, JSON, a
    store, records) to the history ``store`` under a commit: the one checked out at ``cwd``
    (default: here) unless ``commit`` is given; ``date``, ``branch``, ``message`` override git's.
    Returns what was added: commit, date, branch, entry, rows."""
    found = git_commit(cwd) if commit is None else None
    if commit is None and found is None:
        raise SpecError("commit", None, "not in a git checkout here: give --commit (and --date)")
    info = found or {"commit": "", "date": "", "branch": "", "message": ""}
    commit_id = check_ref("commit", commit if commit is not None else info["commit"])
    # a branch from git is checked too: a pull request's branch name is anyone's to choose
    branch_name = check_ref("branch", branch if branch is not None else info["branch"], empty=True)
    when = _check_date(date if date is not None else (info["date"] or dt.datetime.now(dt.timezone.utc).isoformat()))
    records, _ = read_results(results, "results")
    if not records:
        raise SpecError("results", str(results) if isinstance(results, (str, os.PathLike)) else "records", "holds no rows")
    entry = uuid.uuid4().hex[:12]
    added_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")

    # a branch or subject is shown in tables and written to CSVs: no escape sequence rides along
    meta = {"history_commit": commit_id, "history_date": when,
            "history_branch": branch_name,
            "history_message": terminal_text(str(message if message is not None else info["message"]), keep=""),
            "history_entry": entry, "history_added_at": added_at}
    rows = [{**{k: v for k, v in r.items() if k not in ("id", *COLUMNS)}, **meta, "id": f"{commit_id}/{entry}/{i}"}
            for i, r in enumerate(records)]
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            handle = Store.open(store, sweep={"name": HISTORY_NAME, "fingerprint": FINGERPRINT}, resume=True)
            break
        except StoreBusyError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    with handle:
        handle.add_many(rows)
    return {"commit": commit_id, "date": when, "branch": meta["history_branch"], "entry": entry, "rows": len(rows),
            "store": str(Path(store))}


def read(store: str | os.PathLike) -> Records:
    """Every row of the history ``store`` (rows of damaged lines skipped), in commit order."""
    rows, info = read_store(store)
    if (info.get("sweep") or {}).get("name") != HISTORY_NAME:
        raise SpecError("store", str(store), "is a results store, not a history (vitbench history add makes one)")
    order = {c.commit: i for i, c in enumerate(commits(rows))}
    return Records(sorted(rows, key=lambda r: (order.get(str(r.get("history_commit")), 0), str(r.get("history_added_at")))))


def commits(rows: list[dict[str, Any]]) -> list[Commit]:
    """The commits of ``rows``, oldest first (by date, then by when first added)."""
    seen: dict[str, dict[str, Any]] = {}
    for r in rows:
        c = str(r.get("history_commit"))
        entry = seen.setdefault(c, {"date": str(r.get("history_date") or ""), "branch": str(r.get("history_branch") or ""),
                                    "message": str(r.get("history_message") or ""), "rows": 0, "entries": set(),
                                    "first_added": str(r.get("history_added_at") or "")})
        entry["rows"] += 1
        entry["entries"].add(r.get("history_entry"))
        entry["first_added"] = min(entry["first_added"], str(r.get("history_added_at") or ""))

    def when(item: tuple[str, dict[str, Any]]) -> tuple:
        try:
            date = dt.datetime.fromisoformat(item[1]["date"].replace("Z", "+00:00")).timestamp()
        except ValueError:
            date = float("inf")
        return date, item[1]["first_added"]

    return [Commit(c, e["date"], e["branch"], e["message"], e["rows"], len(e["entries"]), e["first_added"])
            for c, e in sorted(seen.items(), key=when)]


__all__ = ["COLUMNS", "HISTORY_NAME", "MAX_REF", "REF_FORBIDDEN", "Commit", "add", "check_ref", "commits", "git_commit", "read"]
