"""The one escaper of every cell vitbench writes: a CSV cell (spreadsheet formula injection,
OWASP), a markdown table cell and a line of markdown prose (no live HTML, no ``javascript:``
link), and text printed to a terminal (no control characters or escape sequences). Pure
functions of text; HTML is escaped by :mod:`vitbench.reporting.html`, on top of these.

A model name such as ``=cmd|' /C calc'!A0`` is data: written to a CSV it gets a leading ``'``
(a spreadsheet shows it as text) and the results reader takes that ``'`` off again, so a name
written and read back is equal to itself."""

from __future__ import annotations

import functools
import re

#: a CSV cell starting with one of these is a formula to a spreadsheet (OWASP CSV injection)
CSV_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_QUOTED = re.compile(r"'+[=+\-@\t\r]")


def csv_cell(text: str) -> str:
    """A text cell safe to open in a spreadsheet: one starting with ``= + - @``, a tab or a
    carriage return gets a leading ``'``; a plain number (``-3``, ``-1.5e-3``, ``+2``) stays as it
    is. A cell already starting with ``'`` then one of those gets one more ``'``, so that
    :func:`csv_unquote` gives back exactly ``text``."""
    body = text.lstrip("'")
    if not body or body[0] not in CSV_TRIGGERS:
        return text
    if body is text and _PLAIN_NUMBER.fullmatch(text):
        return text
    return "'" + text


def csv_unquote(cell: str) -> str:
    """The text :func:`csv_cell` was given: one leading ``'`` off a cell that starts with ``'``
    (one or more) then a trigger; any other cell as it is."""
    return cell[1:] if _QUOTED.match(cell) else cell


_MARKDOWN_CELL = {
    "\\": "\\\\", "|": "\\|", "[": "\\[", "]": "\\]",
    "&": "&amp;", "<": "&lt;", "\r\n": " ", "\n": " ", "\r": " ",
}
#: ``&`` only where it would start an entity (``&lt;``, ``&#60;``): ``A & B`` stays readable; a
#: backtick stays (a code span runs nothing; the id column of ``vitbench audit`` is code)
_MARKDOWN_CELL_PATTERN = re.compile(r"\r\n|[\\|\[\]<\n\r]|&(?=#?\w+;)")


def markdown_cell(text: object) -> str:
    """User text as literal markdown (a table cell, a list item): ``\\ | [ ]`` backslash-escaped,
    ``<`` and an entity's ``&`` as entities (no raw HTML, no link or image), line breaks a space,
    control characters gone; ``javascript:`` and ``onerror=`` inert even as text. Renders as the
    same characters it was given."""
    return _inert(_MARKDOWN_CELL_PATTERN.sub(lambda m: _MARKDOWN_CELL[m.group(0)], terminal_text(str(text), keep="\n\r")))


#: a script scheme or an event handler, as text: its ``:`` or ``=`` becomes an entity (rendered the
#: same), so that no filter, renderer or later edit can take it for a link or an attribute
_SCRIPT_WORD = re.compile(r"(?i)(\b(?:javascript|vbscript|livescript)\s*):|(\bon[a-z]+\s*)=")


def _inert(text: str) -> str:
    return _SCRIPT_WORD.sub(lambda m: f"{m.group(1)}&#58;" if m.group(1) is not None else f"{m.group(2)}&#61;", text)


#: the raw HTML a report's markdown may hold (the same list as vitbench.reporting.html): tags
#: without attributes; any other ``<`` that could open a tag or an autolink becomes ``&lt;``
MARKDOWN_TAGS = ("sub", "sup", "br", "b", "i", "em", "strong", "code", "kbd", "small", "details", "summary")
_UNSAFE_ANGLE = re.compile(r"<(?=[A-Za-z/!?])(?!/?(?:" + "|".join(MARKDOWN_TAGS) + r")\s*/?>)")
#: a link or image destination ``](...)`` or a reference definition ``]: ...`` whose target is
#: not a plain relative path or an http(s) address
_UNSAFE_LINK = re.compile(r"\](?=\(\s*(?![\w./-]+\)|https?://[^\s()<>]+\))|:\s*(?![\w./-]+\s*$|https?://\S+\s*$))", re.MULTILINE)


def markdown_text(text: str) -> str:
    """Markdown prose made safe, whatever user text it quotes: raw HTML other than the
    attribute-free :data:`MARKDOWN_TAGS` shown as text, and a link whose target is not a plain
    relative path or an ``http(s)`` address (``javascript:``, ``data:``, entities) made plain
    text; control characters stripped. Our own ``[file.csv](file.csv)`` links and ``<sub>`` notes
    stay as they are."""
    text = terminal_text(text)
    text = _UNSAFE_ANGLE.sub("&lt;", text)
    return _inert(_UNSAFE_LINK.sub("]\\\\", text))


_ESCAPE_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"          # CSI: colours, cursor moves, clearing
    r"|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC, DCS, SOS, PM, APC: titles, hyperlinks
    r"|\x1b[ -/]*[0-~]?"                 # any other escape
)
#: C0 controls, DEL, C1 controls, and bidirectional overrides and isolates
_CONTROL = "".join(map(chr, [*range(0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]))


@functools.lru_cache(maxsize=8)
def _controls(keep: str) -> re.Pattern[str]:
    return re.compile("[" + "".join(re.escape(c) for c in _CONTROL if c not in keep) + "]")


def terminal_text(text: str, keep: str = "\n\t") -> str:
    """``text`` safe to print to a terminal: escape sequences (CSI, OSC, ...) removed whole, and
    every other control character (ESC, BEL, carriage return, backspace, C1, bidirectional
    overrides) removed, but those in ``keep`` (newline and tab)."""
    if text.isprintable():
        return text
    return _controls(keep).sub("", _ESCAPE_SEQUENCE.sub("", text))


#: what :meth:`str.splitlines` (and so a table renderer) or a terminal takes for the end of a line
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_LINE_BREAK = re.compile("[" + LINE_BREAKS + "]")


def table_cell(text: object) -> str:
    """A terminal table's cell on one line: every line break (:data:`LINE_BREAKS`) shown as
    Python writes it in a string (``\\n``, ``\\r``, ``\\x0b``, ``\\x1c``, ``\\u2028``...), so
    that no value (a model name, a calibration's device name) starts a line that reads as another
    row; then :func:`terminal_text`, which keeps no other control character (a tab stays)."""
    text = str(text)
    if text.isprintable():
        return text
    text = _LINE_BREAK.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)
    return terminal_text(text, keep="\t")


__all__ = ["CSV_TRIGGERS", "LINE_BREAKS", "MARKDOWN_TAGS", "csv_cell", "csv_unquote", "markdown_cell", "markdown_text",
           "table_cell", "terminal_text"]
