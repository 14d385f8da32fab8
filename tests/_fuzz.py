"""The fuzzer's machinery (tests/test_fuzz.py): the command line run in this process under a time
and a memory bound, and the properties every run must keep (issue "one boundary for every input
and output"). The inputs it is given are in tests/_fuzz_inputs.py.

Each ``problems_*`` function returns what is wrong with one run (an empty list when it is clean),
so that a survey can collect every failure class and a test can assert there is none."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import re
import resource
import signal
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, settings

#: seconds one command may take (the cheapest hostile input hung for 304 s before the fix; a
#: command of the fuzzer takes well under a second, the first trace of a model a few on a busy machine)
TIME_LIMIT_S = 20
#: bytes of address space a command may add to this process (a trace that tried 60 GB)
MEMORY_LIMIT_BYTES = 3 * 2**30
#: ``-m slow`` multiplies every test's number of examples by this (VITBENCH_FUZZ_FACTOR=N: by N)
SLOW_FACTOR = int(os.environ.get("VITBENCH_FUZZ_FACTOR") or 20)


def budget(examples: int, scale: int = 1) -> settings:
    """A fixed seed (the same examples every run), no per-example deadline (the first trace of a
    model takes seconds), ``examples * scale`` examples, and no database left in the tree. No
    shrinking (a failing store took hypothesis's five minutes to shrink): the failure's message
    carries the reproducer whole; VITBENCH_FUZZ_SHRINK=1 shrinks it."""
    phases = tuple(Phase) if os.environ.get("VITBENCH_FUZZ_SHRINK") else tuple(p for p in Phase if p not in (Phase.shrink, Phase.explain))
    return settings(
        derandomize=True, database=None, deadline=None, max_examples=examples * scale, print_blob=False, phases=phases,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                               HealthCheck.large_base_example],
    )


# --------------------------------------------------------------------------- running the CLI
class Hang(BaseException):
    """A command that outlived TIME_LIMIT_S. A BaseException: hypothesis does not catch it, so a
    hang stops the test at once (its message carries the input) instead of being shrunk at ten
    seconds a try."""


def _on_alarm(signum, frame):
    raise Hang


def _address_space() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


@contextlib.contextmanager
def bounded(describe: Callable[[], str]) -> Iterator[None]:
    """Run the body within TIME_LIMIT_S (else :class:`Hang`, naming ``describe()``) and with at
    most MEMORY_LIMIT_BYTES more address space (an allocation beyond fails: MemoryError)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    used = _address_space()
    if used is not None:
        cap = used + MEMORY_LIMIT_BYTES
        resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(TIME_LIMIT_S)
    try:
        yield
    except Hang:
        raise Hang(f"no answer in {TIME_LIMIT_S} s: {describe()}") from None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def run_cli(argv: Sequence[str], files: Sequence[Path] = ()) -> tuple[int, str, str]:
    """``vitbench ARGV`` in this process, bounded: (exit code, stdout, stderr)."""
    from vitbench.cli import main

    out, err = io.StringIO(), io.StringIO()
    with bounded(lambda: describe(argv, files)), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            warnings.catch_warnings(record=True) as caught:
        # the warnings a user's terminal shows (Python's default filters hide the deprecations)
        warnings.simplefilter("always")
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.simplefilter("ignore", category)
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse's --help and the like
            code = exc.code if isinstance(exc.code, int) else 2
    shown = "".join(warnings.formatwarning(w.message, w.category, w.filename, w.lineno, "") for w in caught)
    return code, out.getvalue(), err.getvalue() + shown


#: bytes of each file a reproducer shows
DESCRIBED_BYTES = 20_000


def describe(argv: Sequence[str], files: Sequence[Path] = ()) -> str:
    """The reproducer: the command line and the bytes of the files it names."""
    parts = [f"argv={list(argv)!r}"]
    for path in files:
        path = Path(path)
        if path.is_dir():
            for child in sorted(path.iterdir()):
                if child.is_file():
                    parts.append(f"{child}={child.read_bytes()[:DESCRIBED_BYTES]!r}")
        elif path.is_file():
            parts.append(f"{path}={path.read_bytes()[:DESCRIBED_BYTES]!r}")
    return "; ".join(parts)


#: C0 controls but tab and newline, DEL and the C1 controls: what may reach a terminal
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def problems_of_run(code: int, out: str, err: str, allowed: tuple[int, ...] = (0, 1, 2), terminal_out: bool = False) -> list[str]:
    """What a run did wrong: an exit code outside ``allowed`` (3 is an internal error), a
    traceback, an error not on one line starting ``vitbench``, control characters on the
    terminal (stderr; stdout too when ``terminal_out``)."""
    found = []
    if code not in allowed:
        found.append(f"exit {code} (allowed {allowed})")
    if "Traceback" in err or "internal error" in err:
        found.append("a traceback or internal error on stderr")
    lines = [line for line in err.splitlines() if line.strip()]
    if code not in (0, 1) and not any(line.startswith("vitbench") for line in lines):  # 1: a gate failed, its report says why
        found.append("an error exit without a `vitbench...` line on stderr")
    if len([line for line in lines if line.startswith("vitbench: error")]) > 1:
        found.append("more than one error line")
    strays = [line for line in lines if not line.startswith("vitbench")]
    if strays:
        found.append(f"stderr lines not starting with 'vitbench' (a message over several lines?): {strays[:2]!r}")
    if _CONTROL.search(err):
        found.append("control characters on stderr")
    if terminal_out and _CONTROL.search(out):
        found.append("control characters on stdout")
    return found


def clean_run(argv: Sequence[str], files: Sequence[Path] = (), **kwargs: Any) -> tuple[int, str, str, list[str]]:
    code, out, err = run_cli(argv, files)
    found = problems_of_run(code, out, err, **kwargs)
    return code, out, err, [f"{p}; stderr={err[-600:]!r}; {describe(argv, files)}" for p in found]


def problems_of_reader(read: Callable[[], Any], what: str) -> list[str]:
    """A reader returns, or raises a VitbenchError whose message is one line; nothing else."""
    from vitbench.errors import VitbenchError

    try:
        with bounded(lambda: what):
            read()
    except VitbenchError as exc:
        text = str(exc)
        if "\n" in text or "\r" in text:
            return [f"a {type(exc).__name__} message over several lines: {text[:300]!r}; {what}"]
        return []
    except Exception as exc:  # noqa: BLE001 - any other exception is the failure being looked for
        return [f"{type(exc).__name__}: {str(exc)[:300]} (not a VitbenchError); {what}"]
    return []


# --------------------------------------------------------------------------- written outputs
_FORMULA = ("=", "+", "-", "@", "\t", "\r")
_ACTIVE_HTML = re.compile(r"<\s*(script|img|iframe|svg|a\s)|javascript:|on\w+\s*=", re.IGNORECASE)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"the token {name}")


def problems_of_outputs(folder: Path) -> list[str]:
    """Every file written under ``folder``: CSV cells that a spreadsheet would run as a formula
    (starting ``= + - @ TAB CR``, not a number: OWASP), live HTML or ``javascript:`` links in
    markdown and HTML, control characters in what is read as text (markdown, HTML), JSON with
    NaN or Infinity tokens, XML that does not parse."""
    found = []
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
        if path.suffix not in (".csv", ".md", ".html", ".txt", ".json", ".xml"):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            found.append(f"{path.name}: cannot be read back ({exc})")
            continue
        if path.suffix == ".json":
            try:  # what other tools read: no NaN or Infinity tokens
                json.loads(text, parse_constant=_refuse_constant)
            except ValueError as exc:
                found.append(f"{path.name}: not strict JSON ({exc})")
        if path.suffix == ".xml":
            import xml.etree.ElementTree as ElementTree

            try:
                ElementTree.fromstring(text)
            except ElementTree.ParseError as exc:
                found.append(f"{path.name}: not well-formed XML ({exc})")
        if path.suffix == ".csv":
            try:
                cells = [c for row in csv.reader(io.StringIO(text)) for c in row]
            except csv.Error as exc:
                found.append(f"{path.name}: not a readable CSV ({exc})")
                continue
            bad = [c for c in cells if c.startswith(_FORMULA) and not _is_number(c)]
            if bad:
                found.append(f"{path.name}: a cell a spreadsheet runs as a formula: {bad[0][:80]!r}")
        if path.suffix in (".md", ".html"):
            body = re.sub(r"<style.*?</style>|<img src=\"data:image/[^\"]*\"[^>]*>", "", text, flags=re.S) if path.suffix == ".html" else text
            if path.suffix == ".md" and _ACTIVE_HTML.search(body):
                found.append(f"{path.name}: live HTML or a javascript: link: {_ACTIVE_HTML.search(body).group(0)!r}")
            if path.suffix == ".html" and re.search(r"<\s*script|javascript:|\bonerror\s*=", body, re.IGNORECASE):
                found.append(f"{path.name}: a live script, handler or javascript: link")
        if path.suffix in (".md", ".html", ".txt") and _CONTROL.search(text.replace("\r\n", "\n")):
            found.append(f"{path.name}: control characters {_CONTROL.search(text.replace(chr(13) + chr(10), chr(10))).group(0)!r}")
    return found


def finite_latencies(text: str) -> list[str]:
    """The problems of predict's JSON rows: an ok row whose latency or throughput is not a
    finite positive number (an inf or a null presented as a prediction)."""
    found = []
    try:
        rows = json.loads(text)
    except ValueError as exc:
        return [f"stdout is not JSON ({exc})"]
    rows = rows.get("records", rows) if isinstance(rows, dict) else rows
    for row in rows:
        if row.get("status", "ok") != "ok":
            continue
        for column in ("pred_latency_s", "pred_throughput_img_s"):
            value = row.get(column)
            if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0):
                found.append(f"an ok row with {column}={value!r}")
    return found
