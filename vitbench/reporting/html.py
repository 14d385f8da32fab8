"""One self-contained HTML file from a report's markdown: Python-Markdown (tables, fenced code)
renders it, and every local image it references is embedded as a data URI, so the file can be
attached to a pull request, mailed or published alone. Text that came from users (commit
messages, model names) must reach the markdown through :func:`text`, which escapes HTML.

:func:`table` is the HTML twin of :func:`vitbench.reporting.format.render`'s table: the same
humanised cells (units chosen by column name, warnings beside their numbers), every cell escaped,
for a notebook's display of :class:`vitbench.results.Records`."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vitbench import input_files
from vitbench.escape import MARKDOWN_TAGS, markdown_cell
from vitbench.input_files import read_input_bytes, read_input_text
from vitbench.reporting.format import cells, columns_of
from vitbench.results import atomic_write_text

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem; color: #1b1f24; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #d0d7de; padding: 0.3rem 0.6rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
code { background: #f6f8fa; padding: 0.1rem 0.3rem; border-radius: 4px; }
img { max-width: 100%; height: auto; }
sub { color: #57606a; }
"""
_MIME = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif"}


def text(value: object) -> str:
    """User text for a markdown table cell or line that becomes HTML: the one markdown escaper,
    :func:`vitbench.escape.markdown_cell` (``<`` and an entity's ``&`` as entities: no tag; brackets,
    pipes and backslashes escaped: no link; ``javascript:`` inert)."""
    return markdown_cell(value)


#: rows a notebook shows in full; a longer table shows its head and tail around a note
MAX_ROWS = 60
_HEAD, _TAIL = 20, 10


#: the columns that answer a prediction's question, shown first (after the configuration) when
#: a table is drawn without a column list (a notebook's display of predict or choose rows)
ANSWER_FIRST = ("model", "overrides", "device", "batch_size", "mode", "precision", "fits", "pred_latency_s",
                "pred_throughput_img_s", "pred_bound", "pred_epoch_s", "pred_train_hours", "pred_cost", "pred_error_median",
                "pred_error_p90", "measured_latency_s", "pred_ratio", "pred_warning", "status", "error")


def answer_first(cols: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``cols`` with :data:`ANSWER_FIRST`'s present ones first when the rows are predictions."""
    keys = [k for k, _ in cols]
    if "pred_latency_s" not in keys:
        return cols
    first = [c for name in ANSWER_FIRST for c in cols if c[0] == name]
    return first + [c for c in cols if c not in first]


def table(records: Sequence[dict[str, Any]], columns: Sequence[Any] | None = None, max_rows: int = MAX_ROWS) -> str:
    """An HTML ``<table>`` of ``records`` with humanised, escaped cells. More than ``max_rows``
    rows: the first 20 and the last 10, with a row saying how many are hidden between them.
    Without ``columns``, prediction rows show their answer first (:func:`answer_first`)."""
    rows = list(records)
    cols = columns_of(rows, columns) if columns else answer_first(columns_of(rows))
    shown: list[tuple[int, dict[str, Any]]] = list(enumerate(rows))
    hidden = 0
    if len(rows) > max_rows:
        hidden = len(rows) - _HEAD - _TAIL
        shown = shown[:_HEAD] + shown[-_TAIL:]
    head = "".join(f"<th>{html.escape(str(h))}</th>" for _, h in cols)
    body = []
    for i, record in shown:
        if hidden and i == len(rows) - _TAIL:
            body.append(f'<tr><td colspan="{len(cols) + 1}"><em>&hellip; {hidden} rows hidden &hellip;</em></td></tr>')
        tds = "".join(f"<td>{html.escape(c)}</td>" for c in cells(record, cols))
        body.append(f"<tr><th>{i}</th>{tds}</tr>")
    caption = f"{len(rows)} row{'s' if len(rows) != 1 else ''} &times; {len(cols)} column{'s' if len(cols) != 1 else ''}"
    if hidden:
        caption += f" ({hidden} hidden; <code>.to_frame()</code> has them all)"
    return (f'<table class="vitbench-records">\n<caption style="caption-side: bottom; text-align: left">{caption}</caption>\n'
            f"<thead><tr><th></th>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>")


#: the raw HTML a report's markdown may hold (``<sub>`` notes, line breaks), without attributes;
#: any other tag, from a model name or a commit message, is shown as text, never run
_ALLOWED_TAGS = MARKDOWN_TAGS
_ALLOWED_HTML = r"(<(?:/?(?:" + "|".join(_ALLOWED_TAGS) + r")\s*/?|!--(?:(?!<!--|-->).)*--)>)"
#: a linked local table larger than this stays a link rather than a data URI
MAX_EMBEDDED_LINK_BYTES = 2**20
_DATA_MIME = {".csv": "text/csv", ".json": "application/json"}


def _local(source: str, base: Path) -> Path | None:
    """The file under ``base`` a relative reference names, or None (a URL, outside, absent)."""
    if "://" in source or source.startswith(("data:", "/", "#", "mailto:", "javascript:")):
        return None
    path = (base / source).resolve()
    return path if path.is_file() and path.is_relative_to(base.resolve()) else None


def _embed(match: re.Match, base: Path) -> str:
    """An image's ``src`` as a data URI; one that is not a local image is not fetched either
    (``data-src``): the document loads nothing from anywhere."""
    tag, source = match.group(1), html.unescape(match.group(2))
    if source.startswith("data:image/"):
        return match.group(0)
    path = _local(source, base)
    mime = _MIME.get(path.suffix.lower()) if path is not None else None
    if path is None or mime is None:
        return f'{tag}data-src="{html.escape(source)}"'
    data = base64.b64encode(_read(path)).decode("ascii")
    return f'{tag}src="data:{mime};base64,{data}"'


def _read(path: Path) -> bytes:
    """A file the page embeds, through the one gate of every file read (a regular file, capped)."""
    return read_input_bytes(path, f"file={str(path)!r}", max_bytes=input_files.MAX_RESULTS_BYTES)


def _link(match: re.Match, base: Path) -> str:
    """A link to a local table (CSV, JSON) as a data URI the reader can download; ``javascript:``
    links are disarmed; other links, and files over :data:`MAX_EMBEDDED_LINK_BYTES`, stay."""
    tag, source = match.group(1), html.unescape(match.group(2))
    if source.strip().lower().startswith(("javascript:", "vbscript:", "data:text/html")):
        return f'{tag}href="#"'
    path = _local(source, base)
    mime = _DATA_MIME.get(path.suffix.lower()) if path is not None else None
    if path is None or mime is None or path.stat().st_size > MAX_EMBEDDED_LINK_BYTES:
        return match.group(0)
    data = base64.b64encode(_read(path)).decode("ascii")
    return f'{tag}href="data:{mime};base64,{data}" download="{html.escape(path.name)}"'


def slug(heading: str, separator: str = "-") -> str:
    """A heading's anchor, as GitHub makes it for report.md and as the page's headings get it
    (so the report's table of contents links work in both): lower case, punctuation dropped,
    each space a dash."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", separator)


def _converter() -> Any:
    """Python-Markdown with tables, fenced code and heading ids (:func:`slug`), raw HTML
    limited to :data:`_ALLOWED_TAGS`."""
    import markdown
    from markdown.extensions.toc import TocExtension
    from markdown.inlinepatterns import HtmlInlineProcessor

    converter = markdown.Markdown(extensions=["tables", "fenced_code", TocExtension(slugify=slug)], output_format="html")
    converter.preprocessors.deregister("html_block")
    converter.inlinePatterns.deregister("html")
    converter.inlinePatterns.register(HtmlInlineProcessor(_ALLOWED_HTML, converter), "html", 90)
    return converter


def document(markdown_text: str, base: str | Path, title: str) -> str:
    """The HTML document of ``markdown_text``: images under ``base`` embedded, links to local
    CSV and JSON files as data URIs, raw HTML other than :data:`_ALLOWED_TAGS` escaped; nothing external is loaded."""
    body = _converter().convert(markdown_text)
    body = re.sub(r'(<img\b[^>]*?\s)src="([^"]*)"', lambda m: _embed(m, Path(base)), body)
    body = re.sub(r'(<a\b[^>]*?\s)href="([^"]*)"', lambda m: _link(m, Path(base)), body)
    return (f'<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n'
            f"<style>{CSS}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n")


def write(markdown_path: str | Path, title: str | None = None) -> Path:
    """Write ``report.html`` (the same name, ``.html``) beside the markdown file ``markdown_path``:
    one self-contained page, its images and tables embedded. ``title``: the first heading's text."""
    source = Path(markdown_path)

    text_md = read_input_text(source, f"file={str(source)!r}", max_bytes=input_files.MAX_RESULTS_BYTES)
    if title is None:
        heading = re.search(r"^#\s+(.+)$", text_md, re.MULTILINE)
        title = heading.group(1).strip() if heading else source.stem
    out = source.with_suffix(".html")
    atomic_write_text(out, document(text_md, source.parent, title), field="html")
    return out


__all__ = ["MAX_ROWS", "document", "slug", "table", "text", "write"]
