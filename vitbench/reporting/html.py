"""One self-contained HTML file from a report's markdown: Python-Markdown (tables, fenced code)
renders it, and every local image it references is embedded as a data URI, so the file can be
attached to a pull request, mailed or published alone. Text that came from users (commit
messages, model names) must reach the markdown through :func:`text`, which escapes HTML."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

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
    """User text for a markdown table cell or line that becomes HTML: the report's markdown
    escaper (:func:`vitbench.reporting.format.markdown_escape`) over ``&``, ``<``, ``>`` as entities."""
    from vitbench.reporting.format import markdown_escape

    return markdown_escape(html.escape(str(value), quote=False))


def _embed(match: re.Match, base: Path) -> str:
    source = html.unescape(match.group(1))
    path = (base / source).resolve()
    mime = _MIME.get(path.suffix.lower())
    if mime is None or "://" in source or not path.is_file() or not path.is_relative_to(base.resolve()):
        return match.group(0)
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'src="data:{mime};base64,{data}"'


def document(markdown_text: str, base: str | Path, title: str) -> str:
    """The HTML document of ``markdown_text``, images under ``base`` embedded."""
    import markdown

    body = markdown.markdown(markdown_text, extensions=["tables", "fenced_code"], output_format="html")
    body = re.sub(r'src="([^"]+)"', lambda m: _embed(m, Path(base)), body)
    return (f'<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n'
            f"<style>{CSS}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n")


__all__ = ["document", "text"]
