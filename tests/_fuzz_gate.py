"""The fuzzer's CI gate settings (issue 45): hostile values for the settings `vitbench gate`
(vitbench/cli/gate.py) reads from its flags or the environment (RESULTS, BASELINE, RULES,
HISTORY, TARGET_BRANCH, GATE_DIR, ADD_TO_HISTORY, PR_NUMBER, COMMENT, GITHUB_STEP_SUMMARY):
option-like text, shell syntax that would create a marker file if it ever reached a shell,
newlines and other control characters, very long text, the empty text, and paths to a FIFO, a
device, a folder, a dangling link and a link to a FIFO. tests/test_fuzz.py runs the gate with
them around a fixed COMMAND of its own."""

from __future__ import annotations

import os
from pathlib import Path

import _fuzz_inputs as fi
from hypothesis import strategies as st

#: the settings besides COMMAND, and the variable each is read from
SETTINGS = ("RESULTS", "BASELINE", "RULES", "HISTORY", "TARGET_BRANCH", "GATE_DIR", "ADD_TO_HISTORY", "PR_NUMBER",
            "COMMENT", "GITHUB_STEP_SUMMARY")
#: the marker a shell payload would create (under the example's canary folder)
MARKER = "PWNED"


def payloads(canary: str) -> tuple[str, ...]:
    """Shell syntax that would create ``canary``/PWNED if a value ever reached a shell (or
    ``PWNED`` in the working folder, which the test checks too)."""
    target = f"{canary}/{MARKER}"
    return (f"$(touch {target})", f"`touch {target}`", f";touch {target}", f"x;touch {target};", f"|touch {target}",
            f"&& touch {target}", f"x\ntouch {target}", f"$(touch${{IFS}}{target})", "$(touch PWNED)", ";touch PWNED",
            f"'; touch {target}; '", f"\"; touch {target}; \"", f"1;touch {target}", f"main;touch {target}",
            f"macs:0;touch {target}", f"true;touch {target}", f"-o{target}", f"--output={target}")


PLAIN = ("", " ", "-", "--", "-h", "--help", "-o.csv", "--version", "-rf", "true", "false", "TRUE", "1", "0", "7",
         "main", "macs:0", "macs:0,params:0", "throughput:-5%", ".", "./", "results.csv", "a b.csv", "*", "~", "$HOME",
         "${HOME}", "%s%n", "\x1b[31mred", "a\rb", "a\x7fb", "a\x01b", "tab\there", "new\nline", "\u202ehidden", "é",
         "a" * 5000, "-" * 300, "9" * 40, "refs/heads/main", "HEAD", "@{-1}", "main..x", "x.lock", "/x", "x/")


def special_paths(folder: Path) -> dict[str, str]:
    """Paths to things that are not plain files, made in ``folder`` (the example's own)."""
    fifo = folder / "fifo"
    os.mkfifo(fifo)
    (folder / "a-folder").mkdir()
    os.symlink(fifo, folder / "link-to-fifo")
    os.symlink(folder / "nowhere", folder / "dangling")
    os.symlink("/dev/null", folder / "link-to-null")
    return {"fifo": str(fifo), "folder": str(folder / "a-folder"), "link-to-fifo": str(folder / "link-to-fifo"),
            "dangling": str(folder / "dangling"), "link-to-null": str(folder / "link-to-null"),
            "null": "/dev/null", "full": "/dev/full", "zero": "/dev/zero"}


SPECIAL = ("fifo", "folder", "link-to-fifo", "dangling", "link-to-null", "null", "full", "zero")


@st.composite
def gate_settings(draw) -> dict[str, tuple[str, str]]:
    """Two to four settings, each (how the value is made, the value): "text" a value as drawn,
    "payload" the index of a shell payload (made with the example's canary folder), "path" one
    of :data:`SPECIAL`. Text never holds ``..`` or a leading ``/`` (a path out of the example's
    folder is the user's own choice, not an injection)."""
    text = st.one_of(st.sampled_from(PLAIN), fi.hostile_text).map(lambda t: t.replace("\x00", "")) \
        .filter(lambda t: ".." not in t and not t.startswith("/") and not t.startswith("~"))
    value = st.one_of(text.map(lambda t: ("text", t)),
                      st.integers(0, len(payloads("")) - 1).map(lambda i: ("payload", str(i))),
                      st.sampled_from(SPECIAL).map(lambda p: ("path", p)))
    names = draw(st.lists(st.sampled_from(SETTINGS), min_size=2, max_size=4, unique=True))
    return {name: draw(value) for name in names}
