"""`vitbench gate`: the CI gate that action.yml runs, and that GitLab, Jenkins or a shell run after
installing vitbench, needing nothing from vitbench's repository:

1. run COMMAND (``bash -c``), which must write the current results to RESULTS (a RESULTS it did
   not write, such as an earlier run's file, is refused);
2. the baseline: BASELINE when given, else from the history store the rows of the target
   branch's merge base (or, failing that, of the newest commit of the history that is not this
   one) (:mod:`vitbench.history.baseline`);
3. compare BASELINE RESULTS with RULES: markdown to GATE_DIR/gate.md (printed, and appended to the
   step summary when there is one), JUnit XML to GATE_DIR/gate.xml;
4. add RESULTS to the history under the commit checked out (ADD_TO_HISTORY), and add to the
   report each change of the history that starts at this commit with its ``git bisect start``
   hint (:func:`vitbench.history.changes`: any change of a count or a predicted time);
5. print the report, append it to the step summary, comment on the pull request (PR_NUMBER, with
   the ``gh`` CLI and GH_TOKEN) when asked;
6. exit with compare's code (0 pass, 1 regression), 2 for a configuration, file or history error
   (one line naming the setting), 3 when COMMAND failed; 0 when there is no baseline yet (the
   first run only records).

Each setting is a flag or, when the flag is not given, the environment variable of the same name
(what action.yml sets and ci/gate_action.sh passed on). Fails closed: the run works in a fresh
temporary folder and only then copies what it made to GATE_DIR, whose earlier copies it removes
first, so nothing an earlier run left there is read back; no value is ever read as an option.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: flag (dest) -> the environment variable it defaults to
ENVIRONMENT = {"command": "COMMAND", "results": "RESULTS", "baseline": "BASELINE", "rules": "RULES",
               "history": "HISTORY", "target_branch": "TARGET_BRANCH", "gate_dir": "GATE_DIR",
               "add_to_history": "ADD_TO_HISTORY", "pr_number": "PR_NUMBER", "comment": "COMMENT",
               "summary": "GITHUB_STEP_SUMMARY"}
DEFAULTS = {"history": "vitbench-history", "gate_dir": ".", "add_to_history": "true", "comment": "false"}
#: what a run leaves in GATE_DIR (an earlier run's are removed first)
OUTPUTS = ("gate.md", "gate.xml", "baseline.csv", "history-add.csv")
#: the exit code of a COMMAND that failed (vitbench's "a run failed"; 1 is a regression only)
COMMAND_FAILED = 3


class GateError(Exception):
    """A configuration, file or history error: one line, exit 2 (never 1, which is a regression)."""


class CommandFailed(Exception):
    """COMMAND exited non-zero: exit :data:`COMMAND_FAILED`, its own code in the message."""

    def __init__(self, code: int):
        super().__init__(f"the command failed (exit {code})")
        self.code = code


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "gate",
        help="CI gate: run a command, compare with the baseline or the history, report, record",
        description="Run COMMAND, which writes RESULTS; compare them with BASELINE, or with the history's rows of "
        "the target branch's merge base (else of its newest other commit); write GATE_DIR/gate.md (also printed, "
        "and appended to $GITHUB_STEP_SUMMARY) and GATE_DIR/gate.xml (JUnit); comment on the pull request; add "
        "RESULTS to the history. Every setting is a flag or the environment variable named in its help. Exit 0 "
        "pass (or no baseline yet), 1 regression, 2 configuration, file or history error, 3 COMMAND failed.",
    )
    helps = {
        "command": "the shell command that writes the results",
        "results": "the results file COMMAND writes",
        "baseline": "a baseline results file (default: from the history)",
        "rules": "compare's --fail-on rules, comma-separated (default: compare's)",
        "history": f"the history store (default {DEFAULTS['history']})",
        "target_branch": "the branch the change goes into: its merge base is the baseline",
        "gate_dir": "where gate.md, gate.xml, baseline.csv, history-add.csv go (default: here)",
        "add_to_history": "true or false: add the results to the history (default true)",
        "pr_number": "the pull request to comment on (with gh)",
        "comment": "true or false: comment the report on the pull request (default false)",
        "summary": "a file the markdown report is appended to",
    }
    for dest, variable in ENVIRONMENT.items():
        metavar = "FILE" if dest in ("results", "baseline", "summary") else "DIR" if dest in ("history", "gate_dir") else "VALUE"
        parser.add_argument(f"--{dest.replace('_', '-')}", dest=dest, metavar=metavar,
                            help=f"{helps[dest]} (else ${variable})")
    parser.set_defaults(handler=run)


def settings(args, environ=None) -> dict[str, str]:
    """Each setting: its flag, else its environment variable, else its default; checked before
    anything runs (a :class:`GateError` naming the flag or the variable the value came from)."""
    from vitbench.errors import SpecError
    from vitbench.history.store import check_ref

    environ = os.environ if environ is None else environ
    got, named = {}, {}
    for dest, variable in ENVIRONMENT.items():
        flag = getattr(args, dest, None)
        named[dest] = f"--{dest.replace('_', '-')}" if flag is not None else variable
        got[dest] = (flag if flag is not None else environ.get(variable, "")) or DEFAULTS.get(dest, "")
    for dest, what in (("command", "the command that writes the results"), ("results", "the results file COMMAND writes")):
        if not got[dest]:
            raise GateError(f"{ENVIRONMENT[dest]} is not set (--{dest} or ${ENVIRONMENT[dest]}): {what}")
    problems = [(dest, "must be true or false") for dest in ("add_to_history", "comment") if got[dest] not in ("true", "false")]
    if got["pr_number"] and not re.fullmatch(r"[0-9]{1,18}", got["pr_number"]):
        problems.append(("pr_number", "must be a pull request's number"))
    if got["target_branch"]:
        try:
            check_ref("branch", got["target_branch"])
        except SpecError as exc:
            problems.append(("target_branch", exc.reason))
    if problems:
        dest, reason = problems[0]
        raise GateError(f"{named[dest]}={got[dest]!r}: {reason}")
    return got


def _stamp(path: str) -> tuple[int, int, int] | None:
    """A file's identity (inode, size, modification time in ns), None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def note(text: str) -> None:
    from vitbench.escape import terminal_text

    # one line a note, whatever a value in it holds (a RESULTS or COMMAND with a newline)
    line = "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)
    print(f"vitbench gate: {terminal_text(line)}", file=sys.stderr, flush=True)


def run_command(command: str, results: str) -> None:
    """Run ``command``; it must write ``results``. A command that fails raises
    :class:`CommandFailed`."""
    note(f"running: {command}")
    before = _stamp(results)
    sys.stdout.flush()
    try:
        done = subprocess.run(["bash", "-c", command], check=False)
    except OSError as exc:
        raise GateError(f"COMMAND cannot be run: no bash here ({exc.strerror or type(exc).__name__})") from None
    if done.returncode != 0:
        raise CommandFailed(done.returncode)
    after = _stamp(results)
    if after is None or after[1] == 0:
        raise GateError(f"RESULTS={results}: the command wrote nothing there")
    if before is not None and after == before:
        raise GateError(f"RESULTS={results}: the command did not write it (the file there is an earlier run's)")


def find_baseline(got: dict[str, str], work: Path) -> str | None:
    """The baseline file: BASELINE, else the history's rows of the merge base (or of the newest
    other commit) written to ``work``/baseline.csv; None when there is none yet."""
    from vitbench.errors import VitbenchError
    from vitbench.history import read
    from vitbench.history.baseline import baseline
    from vitbench.results import write_csv

    if got["baseline"]:
        return got["baseline"]
    store = Path(got["history"])
    # a history folder that is there but empty is no history yet; one that holds anything is read
    if not store.is_dir() or not any(store.iterdir()):
        return None
    try:
        rows = read(store)
    except (VitbenchError, OSError) as exc:
        raise GateError(f"HISTORY={got['history']}: cannot be read ({exc})") from None
    found = baseline(rows, target_branch=got["target_branch"] or None)
    if found is None:
        return None
    commit, base_rows = found
    write_csv(base_rows, work / "baseline.csv")
    note(f"baseline: commit {commit} of {got['history']}")
    return str(work / "baseline.csv")


def compare_to(baseline: str, got: dict[str, str], work: Path) -> int:
    """compare ``baseline`` with RESULTS: gate.md and gate.xml in ``work``; compare's code."""
    from vitbench.errors import VitbenchError
    from vitbench.gate import compare
    from vitbench.reporting.gate import render_chunks
    from vitbench.results import atomic_write_text

    try:
        result = compare(baseline, got["results"], rules=[got["rules"]] if got["rules"] else None)
        atomic_write_text(work / "gate.md", render_chunks(result, "markdown"))
        atomic_write_text(work / "gate.xml", render_chunks(result, "junit"))
    except VitbenchError as exc:
        note(f"compare: {exc}")
        (work / "gate.md").write_text(f"### vitbench gate: compare failed with exit code {exc.exit_code} (no report)\n")
        return exc.exit_code
    return result.exit_code


def comment(got: dict[str, str], report: Path) -> None:
    if got["comment"] != "true" or not got["pr_number"]:
        return
    if shutil.which("gh") is None:
        note("no gh CLI here: no pull-request comment")
        return
    done = subprocess.run(["gh", "pr", "comment", got["pr_number"], f"--body-file={report}"], check=False)
    if done.returncode != 0:
        note(f"could not comment on #{got['pr_number']} (a fork's read-only token?)")


def record(got: dict[str, str], work: Path) -> str | None:
    """Add RESULTS to the history under the commit checked out; the commit, None when it failed."""
    from vitbench.errors import VitbenchError
    from vitbench.history import add
    from vitbench.results import write_csv

    try:
        done = add(got["history"], got["results"])
    except (VitbenchError, OSError) as exc:
        note(f"could not add to {got['history']}: {exc}")
        return None
    write_csv([done], work / "history-add.csv")
    return done["commit"]


def hints(history: str, commit: str) -> list[str]:
    """Markdown lines, one per change of the history that starts at ``commit`` (any change of
    an exact or deterministic metric; a measured one once a second commit confirms it), each
    with its ``git bisect start`` command."""
    from vitbench.errors import VitbenchError
    from vitbench.history import changes, read
    from vitbench.reporting.history import _code
    from vitbench.reporting.html import text as markdown_escape

    try:
        found = [c for c in changes(read(history)) if c.first.commit == commit]
    except (VitbenchError, OSError) as exc:  # the gate's verdict stands; the hints are extra
        note(f"no bisect hints: {exc}")
        return []
    lines = []
    for c in found:
        size = f"{c.rel_change:+.2%}" if c.rel_change is not None else "from 0"
        lines.append(f"- {c.metric} of {markdown_escape(c.configuration)}: {size} at {_code(c.first.short)} "
                     f"({markdown_escape(c.first.message)}); {_code(c.bisect)}")
        note(f"{c.metric} of {c.configuration}: {size} at {c.first.short}: {c.bisect}")
    return ["", "#### Changes in the history at this commit", "", *lines, ""] if lines else []


def publish(got: dict[str, str], work: Path) -> None:
    """Print the report, append it to the step summary, comment it on the pull request."""
    report = (work / "gate.md").read_text()
    sys.stdout.write(report)
    sys.stdout.flush()
    if got["summary"]:
        try:
            with open(got["summary"], "a", encoding="utf-8") as fh:
                fh.write(report)
        except OSError as exc:
            note(f"GITHUB_STEP_SUMMARY={got['summary']}: cannot be written ({exc.strerror or type(exc).__name__})")
    comment(got, work / "gate.md")


def gate(got: dict[str, str], work: Path) -> int:
    """Steps 1-5 of the module docstring in ``work``; the exit code."""
    run_command(got["command"], got["results"])
    baseline = find_baseline(got, work)
    code = 0
    if baseline is None:
        note(f"no baseline yet (no BASELINE, nothing in {got['history']}): recording only")
        (work / "gate.md").write_text("### vitbench gate: no baseline yet; this run's results are recorded\n")
    else:
        code = compare_to(baseline, got, work)
        if code == 2:  # a baseline or rule the user must fix (compare said which, in one line): nothing recorded
            return 2
    if got["add_to_history"] == "true":
        commit = record(got, work)
        if commit is None:
            code = code or 2
        elif baseline is not None:
            extra = hints(got["history"], commit)
            if extra:
                with open(work / "gate.md", "a", encoding="utf-8") as fh:
                    fh.write("\n".join(extra))
    publish(got, work)
    return code


def run(args) -> int:
    try:
        got = settings(args)
        out = Path(got["gate_dir"])
        try:
            out.mkdir(parents=True, exist_ok=True)
            for name in OUTPUTS:
                (out / name).unlink(missing_ok=True)
        except OSError as exc:
            raise GateError(f"GATE_DIR={got['gate_dir']}: cannot be made or cleared ({exc.strerror or type(exc).__name__})") from None
        with tempfile.TemporaryDirectory(prefix="vitbench-gate.") as folder:
            work = Path(folder)
            try:
                return gate(got, work)
            finally:  # what this run made, and only that
                for name in OUTPUTS:
                    if (work / name).exists():
                        shutil.copyfile(work / name, out / name)
    except GateError as exc:
        note(str(exc))
        return 2
    except OSError as exc:  # no temporary folder, a GATE_DIR that cannot take the reports
        note(f"{exc.strerror or type(exc).__name__}: {exc.filename or ''} (TMPDIR, GATE_DIR)")
        return 2
    except CommandFailed as exc:
        note(str(exc))
        return COMMAND_FAILED
