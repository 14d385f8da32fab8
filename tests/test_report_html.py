"""`vitbench report --html` / ``vitbench.report(..., html=True)``: one self-contained report.html
beside report.md: tables as HTML, plots and table CSVs embedded as data URIs, user text escaped,
nothing loaded from anywhere. The slow test opens it in headless chromium and checks the
screenshot and that the browser decoded every embedded plot."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from vitbench.cli import main
from vitbench.reporting.html import document, write
from vitbench.studies import report

HOSTILE = "<script>alert(1)</script>"
#: the smallest valid PNG: one transparent pixel
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")


def _external(page: str) -> list[str]:
    """Every src= / href= the page would load or link that is not a data URI or an anchor."""
    refs = re.findall(r'\s(?:src|href)="([^"]*)"', page)
    return [r for r in refs if not r.startswith(("data:", "#"))]


def test_document_embeds_images_and_tables_and_escapes_raw_html(tmp_path):
    (tmp_path / "tables").mkdir()
    (tmp_path / "plot.png").write_bytes(PIXEL)
    (tmp_path / "tables" / "t.csv").write_text("model,macs\na,1\n")
    text = textwrap.dedent(f"""\
        # title {HOSTILE}

        | model | macs |
        |---|---|
        | {HOSTILE} | 1 |

        ![a plot](plot.png) ![remote](https://example.com/x.png)

        <sub>Table as CSV: [tables/t.csv](tables/t.csv)</sub> [bad](javascript:alert(2)) <img src=x onerror=alert(3)>
        """)
    page = document(text, tmp_path, "t")
    assert "<script" not in page and "<img src=x" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") == 2  # heading and table cell
    assert "<table>" in page and "<th>model</th>" in page
    assert f'src="data:image/png;base64,{base64.b64encode(PIXEL).decode()}"' in page
    assert 'data-src="https://example.com/x.png"' in page  # a remote image is never fetched
    assert "<sub>Table as CSV" in page  # the report's own raw HTML stays
    assert 'download="t.csv"' in page and base64.b64encode(b"model,macs\na,1\n").decode() in page
    assert 'href="javascript:' not in page
    assert _external(page) == []


def test_write_names_the_page_after_the_first_heading(tmp_path):
    (tmp_path / "report.md").write_text("# vitbench report: a & b\n\ntext\n")
    path = write(tmp_path / "report.md")
    assert path == tmp_path / "report.html"
    assert "<title>vitbench report: a &amp; b</title>" in path.read_text()


def _results(tmp_path):
    """A results CSV of analyze rows, one with a hostile model name."""
    assert main(["analyze", "vit-s/16", "resnet50", "--img-size", "224,384", "-o", str(tmp_path / "a.csv")]) == 0
    lines = (tmp_path / "a.csv").read_text().splitlines()
    lines.append(lines[1].replace("vit-s/16,", f"{HOSTILE},", 1))
    (tmp_path / "a.csv").write_text("\n".join(lines) + "\n")
    return tmp_path / "a.csv"


def test_the_api_and_the_cli_write_the_same_html(tmp_path, capsys):
    source = _results(tmp_path)
    result = report(source, tmp_path / "api" / "rep", html=True)
    assert result.html == tmp_path / "api" / "rep" / "report.html" and result.report.exists()
    assert main(["report", str(source), "--out", str(tmp_path / "cli" / "rep"), "--html"]) == 0
    assert f"wrote {tmp_path / 'cli' / 'rep' / 'report.html'}" in capsys.readouterr().out
    api, cli = result.html.read_text(), (tmp_path / "cli" / "rep" / "report.html").read_text()
    assert "<script" not in api and "&lt;script&gt;alert(1)&lt;/script&gt;" in api
    assert _external(api) == []
    assert api.replace(str(tmp_path / "api"), "X") == cli.replace(str(tmp_path / "cli"), "X")  # only the folder differs
    assert report(source, tmp_path / "plain").html is None and not (tmp_path / "plain" / "report.html").exists()


STUDY = f"""\
name: html
description: an analytic study for the HTML report {HOSTILE}
studies:
  - name: patch
    models: [cifar-vit/4]
    grid: {{patch_size: [4, 8, 16]}}
  - name: resolution
    models: [vit-ti/16, resnet50]
    grid: {{img_size: [224, 384]}}
"""
#: a script added to a copy of the page only: it records what the browser decoded
_PROBE = ("<script>window.addEventListener('load', () => { document.body.dataset.decoded = "
          "Array.from(document.images).map(i => i.complete ? i.naturalWidth + 'x' + i.naturalHeight : 'no').join(','); });"
          "</script></body>")


def _chromium() -> str:
    found = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome") if shutil.which(name)), None)
    if found is None:
        if os.environ.get("VITBENCH_REQUIRE_CHROMIUM") == "1":
            pytest.fail("VITBENCH_REQUIRE_CHROMIUM=1 but no chromium on PATH (apt-get install chromium)")
        pytest.skip("no chromium on PATH (apt-get install chromium): the HTML report's screenshot is not checked")
    return found


def _browser(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--virtual-time-budget=5000",
             f"--user-data-dir={profile}"]  # its own profile: never the user's, never locked by another run
    return subprocess.run([chromium, *flags, *args], capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow
def test_chromium_renders_the_report_with_its_plots(tmp_path):
    chromium = _chromium()
    (tmp_path / "study.yaml").write_text(STUDY)
    result = report(tmp_path / "study.yaml", tmp_path / "out", html=True)
    page = result.html.read_text()
    images = re.findall(r"<img\b[^>]*>", page)
    assert len(images) == len(result.plots) >= 3
    assert all('src="data:image/png;base64,' in img for img in images) and _external(page) == []

    # the browser decoded every embedded plot (naturalWidth of each image, read by a probe script)
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", _PROBE))
    dom = _browser(chromium, tmp_path / "profile", "--dump-dom", probe.as_uri())
    decoded = re.search(r'data-decoded="([^"]*)"', dom.stdout)
    assert decoded, dom.stderr[-2000:]
    sizes = decoded.group(1).split(",")
    assert len(sizes) == len(images) and all(re.fullmatch(r"[1-9]\d*x[1-9]\d*", s) for s in sizes), sizes
    assert "alert(1)" in dom.stdout and "<script>alert(1)" not in dom.stdout  # shown as text, not run

    # the page itself, as a reader sees it: not blank, the plots' colours on it
    shot = tmp_path / "report.png"
    done = _browser(chromium, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1200,2400", result.html.as_uri())
    assert shot.exists(), done.stderr[-2000:]
    import matplotlib.image
    import numpy as np

    pixels = matplotlib.image.imread(shot)[..., :3]
    assert pixels.shape[:2] == (2400, 1200)
    ink = (pixels < 0.9).any(axis=2).mean()
    colours = len(np.unique((pixels * 15).round().reshape(-1, 3), axis=0))
    assert ink > 0.03, f"{ink:.1%} of the page is not white"
    assert colours > 40, f"only {colours} distinct colours: the plots did not render"


def _study_report(tmp_path, out="out"):
    (tmp_path / "study.yaml").write_text(STUDY)
    return report(tmp_path / "study.yaml", tmp_path / out, html=True, plots=False)


def _h2(page: str) -> list[tuple[str, str]]:
    """(id, text) of each second-level heading, in order."""
    return [(i, re.sub(r"<[^>]+>", "", t)) for i, t in re.findall(r'<h2 id="([^"]+)">(.*?)</h2>', page)]


def test_the_page_opens_with_a_short_summary_and_a_table_of_contents(tmp_path):
    # issue 46: the page opened with every conclusion (24 on the default study) before any
    # section, with no summary and no contents
    result = _study_report(tmp_path)
    page, text = result.html.read_text(), result.report.read_text()
    headings = _h2(page)
    names = [t for _, t in headings]
    assert names[:2] == ["Summary", "Contents"], names
    assert names.index("Contents") < names.index("Conclusions (computed from the results below)") < names.index("1. Patch size: MACs and parameters")
    summary = page.split('<h2 id="summary">', 1)[1].split("<h2", 1)[0]
    chosen = re.findall(r"<li>(.*?)</li>", summary, re.S)
    assert 1 <= len(chosen) <= 5 and len(chosen) < len(result.conclusions)
    assert "one conclusion per section" in summary.lower()  # the rule is stated
    conclusions = _plain(page.split('<h2 id="conclusions-computed-from-the-results-below">', 1)[1].split("<h2", 1)[0])
    assert all(_plain(c).strip() in conclusions for c in chosen)  # each is one of the report's conclusions
    contents = page.split('<h2 id="contents">', 1)[1].split("<h2", 1)[0]
    links = re.findall(r'<a href="#([^"]+)">', contents)
    ids = [i for i, _ in headings]
    assert links and set(links) <= set(ids), (links, ids)  # each entry leads to a heading
    assert {"1-patch-size-macs-and-parameters", "conclusions-computed-from-the-results-below"} <= set(links)
    assert "## Summary" in text and "](#1-patch-size-macs-and-parameters)" in text  # the markdown has them too


def _plain(html_text: str) -> str:
    return re.sub(r"<[^>]+>", "", html_text)


def test_the_reproduce_line_shows_no_absolute_path(tmp_path, monkeypatch):
    # issue 46: the Reproduce line showed an absolute path
    monkeypatch.chdir(tmp_path)
    result = _study_report(tmp_path)
    line = next(x for x in result.report.read_text().splitlines() if x.startswith("**Reproduce:**"))
    assert line == "**Reproduce:** `vitbench report study.yaml --out out`"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the report's folder is not under the current directory
    result = _study_report(tmp_path, "out2")
    line = next(x for x in result.report.read_text().splitlines() if x.startswith("**Reproduce:**"))
    assert str(tmp_path) not in line
    assert line == "**Reproduce:** `vitbench report study.yaml --out out2` (run in the folder that holds `out2/`)"
