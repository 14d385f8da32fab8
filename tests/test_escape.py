"""The one escaper (vitbench/escape.py, issue 33): every CSV cell vitbench writes is safe to open in
a spreadsheet (OWASP CSV injection), every markdown table and report holds no live HTML or
``javascript:`` link, and nothing printed reaches a terminal as an escape sequence. Unit tests of
each function, then hostile model names through compare, report, merge and the terminal."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vitbench.cli import TerminalStream, main
from vitbench.escape import csv_cell, csv_unquote, markdown_cell, markdown_text, terminal_text
from vitbench.results import csv_text, read_csv_records, write_csv

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
#: a plain number: what a spreadsheet reads as a number, not a formula (written as it is)
NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
HOSTILE = (
    "=cmd|' /C calc'!A0", '+HYPERLINK("http://x")', "@SUM(1)", "-2+3+cmd|' /C calc'!A0", "\t=1+1", "\r=1+1",
    "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[x](javascript:alert(1))", "\x1b]0;pwn\x07",
    "'=already quoted", "''@twice",
)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def unsafe_cells(text: str) -> list[str]:
    """The cells of CSV text a spreadsheet would run as a formula."""
    return [c for row in csv.reader(io.StringIO(text)) for c in row
            if c[:1] in TRIGGERS and not NUMBER.fullmatch(c)]


def live_html(markdown_source: str) -> list[str]:
    """What a markdown renderer that passes raw HTML through (Python-Markdown, tables) makes live:
    script or img tags, event handlers, javascript: links."""
    from html.parser import HTMLParser

    import markdown

    found: list[str] = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag in ("script", "iframe", "object", "embed", "svg"):
                found.append(tag)
            for name, value in attrs:
                if name.startswith("on") or (value or "").strip().lower().startswith(("javascript:", "vbscript:", "data:text")):
                    found.append(f"{tag} {name}={value}")

    Tags().feed(markdown.markdown(markdown_source, extensions=["tables"]))
    return found


# --------------------------------------------------------------------------- csv_cell


@pytest.mark.parametrize("trigger", TRIGGERS)
def test_each_trigger_gets_a_leading_quote(trigger):
    assert csv_cell(f"{trigger}SUM(A1:A9)") == f"'{trigger}SUM(A1:A9)"
    assert csv_cell(trigger) == "'" + trigger


@pytest.mark.parametrize("number", ["-3", "-1.5e-3", "+2", "-0.25", "+.5", "-7E+10", "12"])
def test_plain_numbers_stay_as_they_are(number):
    assert csv_cell(number) == number


@pytest.mark.parametrize("text", ["vit-b/16", "a=b", "x+y", "'quoted", "", " =1", "-", "-inf", "--help"])
def test_other_text(text):
    expected = {"-": "'-", "-inf": "'-inf", "--help": "'--help"}.get(text, text)
    assert csv_cell(text) == expected


@pytest.mark.parametrize("text,written", [("'=x", "''=x"), ("''-3", "'''-3"), ("'-3", "''-3"), ("'@", "''@")])
def test_a_quote_before_a_trigger_gets_one_more(text, written):
    assert csv_cell(text) == written
    assert csv_unquote(written) == text


def test_unquote_leaves_other_cells():
    for cell in ("'abc", "abc", "'", "''", "-3", "=x"):
        assert csv_unquote(cell) == cell


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(alphabet=st.sampled_from("=+-@\t\r'0123456789.eE ax|\"\n,"), max_size=8))
def test_round_trip_and_no_formula_for_any_text(text):
    written = csv_cell(text)
    assert csv_unquote(written) == text
    assert not (written[:1] in TRIGGERS and not NUMBER.fullmatch(written))


def test_hostile_names_round_trip_through_write_csv_and_read_csv_records(tmp_path):
    rows = [{"model": name, "=header": name, "macs": i} for i, name in enumerate(HOSTILE)]
    path = tmp_path / "r.csv"
    write_csv(rows, path)
    text = path.read_bytes().decode()
    assert unsafe_cells(text) == []
    assert "'=cmd|' /C calc'!A0" in text and "'''@twice" in text  # neutralised, not dropped
    back = read_csv_records(path)
    assert [r["model"] for r in back] == list(HOSTILE)
    assert [r["=header"] for r in back] == list(HOSTILE)
    assert [r["macs"] for r in back] == list(range(len(HOSTILE)))


def test_numbers_are_written_as_numbers():
    text = csv_text([{"a": -3, "b": -1.5e-3, "c": float("-inf"), "d": "-3"}])
    assert text.splitlines()[1] == "-3,-0.0015,-inf,-3"


# --------------------------------------------------------------------------- markdown


@pytest.mark.parametrize("payload", ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>",
                                     "[x](javascript:alert(1))", "![x](javascript:alert(1))",
                                     "<javascript:alert(1)>", "\\[x\\](javascript:alert(1))",
                                     "[x](jav&#97;script:alert(1))"])
def test_markdown_cell_is_never_live(payload):
    cell = markdown_cell(payload)
    assert "<script" not in cell and "<img" not in cell
    table = f"| a | b |\n|---|---|\n| {cell} | x |\n"
    assert live_html(table) == []
    assert live_html(f"- {cell}\n") == []


def test_markdown_cell_escapes_table_syntax_and_flattens_lines():
    assert markdown_cell("a|b`c\\d\ne\r\nf") == "a\\|b`c\\\\d e f"  # a code span runs nothing: kept
    assert markdown_cell("A & B &lt;") == "A & B &amp;lt;"
    assert markdown_cell("[3 values]") == "\\[3 values\\]"


def test_the_report_escapers_are_the_one_escaper():
    from vitbench.reporting.format import markdown_escape
    from vitbench.reporting.html import text

    for payload in HOSTILE:
        assert markdown_escape(payload) == text(payload) == markdown_cell(payload)


def test_markdown_text_keeps_our_links_and_notes_and_disarms_the_rest():
    ours = "<sub>Table as CSV: [tables/a.csv](tables/a.csv)</sub> ![plot](plot.png) [doc](https://example.org/x)"
    assert markdown_text(ours) == ours
    hostile = ("# <script>alert(1)</script>\n\n- [x](javascript:alert(1)) <img src=x onerror=alert(1)>\n"
               "- [y](jav&#97;script:alert(1)) [z]( <javascript:alert(1)> )\n\n[ref]: javascript:alert(1)\n\n[ref]\n")
    safe = markdown_text(hostile)
    assert live_html(hostile) != []  # the payloads are live without the escaper
    assert live_html(safe) == []
    assert "p < 0.05" in markdown_text("p < 0.05")  # a comparison is not a tag


# --------------------------------------------------------------------------- terminal


@pytest.mark.parametrize("text,expected", [
    ("\x1b]0;pwn\x07title", "title"),           # OSC: the window title
    ("\x1b[31mred\x1b[0m", "red"),               # CSI: colours
    ("\x1b[2J\x1b[Hcleared", "cleared"),         # clear screen, cursor home
    ("a\rb\x08c\x07d\x00e\x7f\x9bf", "abcdef"),  # carriage return, backspace, bell, NUL, DEL, C1
    ("ab\u202ecd", "abcd"),                      # a bidirectional override
    ("keep\ttabs\nand lines", "keep\ttabs\nand lines"),
    ("vit-b/16 ünïcode", "vit-b/16 ünïcode"),
])
def test_terminal_text(text, expected):
    assert terminal_text(text) == expected


def test_terminal_stream_keeps_a_progress_bars_leading_carriage_return():
    buffer = io.StringIO()
    stream = TerminalStream(buffer)
    stream.write("\rstep 1 \x1b]0;pwn\x07model\r")
    stream.writelines(["\x1b[31mred\n"])
    assert buffer.getvalue() == "\rstep 1 model" + "red\n"


#: every line break str.splitlines() and a table renderer take, and how a table cell shows it
#: (Python's escape of the character, written out here by hand)
LINE_BREAKS = {"\n": "\\n", "\r": "\\r", "\r\n": "\\r\\n", "\v": "\\x0b", "\f": "\\x0c", "\x1c": "\\x1c",
               "\x1d": "\\x1d", "\x1e": "\\x1e", "\x85": "\\x85", "\u2028": "\\u2028", "\u2029": "\\u2029"}


@pytest.mark.parametrize("brk", LINE_BREAKS)
def test_a_line_break_in_a_terminal_table_cell_is_shown_not_taken(brk):
    """issue 45: a value holding a line break (a calibration's device name) printed a line that
    read as a row of its own."""
    from vitbench.reporting.format import render

    spoof = f"cpu{brk}resnet50  999"
    text = render([{"model": "vit-s/16", "device": spoof, "macs": 1}, {"model": "z", "device": "cpu", "macs": 2}], "table")
    lines = text.splitlines()
    assert len(lines) == 4, lines  # the header, its ruler, two rows
    assert f"cpu{LINE_BREAKS[brk]}resnet50  999" in lines[2] and not lines[3].startswith("resnet50")
    header = render([{f"de{brk}vice": "x"}], "table").splitlines()
    assert len(header) == 3 and header[0].strip() == f"de{LINE_BREAKS[brk]}vice"


def test_a_line_break_in_a_name_adds_no_row_to_compares_table(tmp_path, capsys):
    path = tmp_path / "r.csv"
    write_csv([_record("vit\nresnet50 224px b8 cpu infer fp32  throughput_img_s  100  1 ok", 0)], path)
    assert main(["compare", str(path), str(path)]) == 0
    out = capsys.readouterr().out
    assert "vit\\nresnet50" in out and not any(line.startswith("resnet50") for line in out.splitlines())


# --------------------------------------------------------------------------- end to end


def _record(model: str, i: int) -> dict:
    return {"model": model, "kind": "vit", "spec_key": json.dumps({"model": model}), "img_size": 224, "patch_size": 16,
            "batch_size": 8, "device": "cpu", "mode": "infer", "precision": "fp32", "status": "ok",
            "throughput_img_s": 100.0 + i, "latency_p50_s": 0.08, "params": 1000, "macs": 2000,
            "env_device_name": "\x1b]0;pwn\x07cpu", "env_torch": "2.x", "env_threads": 2}


E2E_NAMES = ("=cmd|' /C calc'!A0", '+HYPERLINK("http://x")', "@SUM(1)", "<script>alert(1)</script>",
             "[x](javascript:alert(1))", "\x1b]0;pwn\x07", "<img src=x onerror=alert(1)>", "a$\\foo{$")


@pytest.fixture(scope="module")
def hostile_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("hostile") / "hostile.csv"
    write_csv([_record(name, i) for i, name in enumerate(E2E_NAMES)], path)
    return path


def _clean_terminal(*streams: str) -> None:
    for text in streams:
        assert "\x1b" not in text and "\x07" not in text and not CONTROL.search(text), repr(text)


def test_compare_output_file_and_terminal(hostile_csv, tmp_path, capsys):
    out = tmp_path / "out.csv"
    assert main(["compare", str(hostile_csv), str(hostile_csv), "-o", str(out)]) == 0
    text = out.read_bytes().decode()
    assert unsafe_cells(text) == [] and "'=cmd|' /C calc'!A0 224px" in text
    assert main(["compare", str(hostile_csv), str(hostile_csv), "-o", str(tmp_path / "out.xml")]) == 0
    import xml.etree.ElementTree as ET

    names = [case.get("classname") for case in ET.parse(tmp_path / "out.xml").iter("testcase")]  # XML 1.0: no ESC
    assert any(name.startswith("=cmd|' /C calc'!A0") for name in names)
    assert main(["compare", str(hostile_csv), str(hostile_csv), "--format", "markdown"]) == 0
    markdown_out, err = capsys.readouterr()
    assert "<script" not in markdown_out and "<img" not in markdown_out and live_html(markdown_out) == []
    assert "&lt;script>" in markdown_out  # the name is there, as text
    assert "javascript:" not in markdown_out and "onerror=" not in markdown_out
    assert main(["compare", str(hostile_csv), str(hostile_csv)]) == 0
    table, err2 = capsys.readouterr()
    assert "=cmd|' /C calc'!A0" in table
    _clean_terminal(markdown_out, err, table, err2)


@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
def test_report_csvs_and_markdown(hostile_csv, tmp_path, capsys):
    rep = tmp_path / "rep"
    assert main(["report", str(hostile_csv), "--out", str(rep), "--html"]) == 0  # a `$` in a plot label: no mathtext error
    _clean_terminal(*capsys.readouterr())
    written = [rep / "results.csv", *sorted((rep / "tables").glob("*.csv"))]
    assert len(written) >= 2
    for path in written:
        assert unsafe_cells(path.read_bytes().decode()) == [], path
    assert [r["model"] for r in read_csv_records(rep / "results.csv")] == list(E2E_NAMES)  # equal to itself
    report_md = (rep / "report.md").read_text()
    assert "<script" not in report_md and "<img" not in report_md and "\x1b" not in report_md
    assert live_html(report_md) == []
    assert "&lt;script>alert(1)&lt;/script>" in report_md
    assert "javascript:" not in report_md and "onerror=" not in report_md  # inert even as text
    page = re.sub(r'"data:[^"]*"', '""', (rep / "report.html").read_text())  # the embedded plots and tables
    assert re.search(r"<script|javascript:|onerror=|\x1b", page, re.IGNORECASE) is None
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page or "&lt;script>alert(1)&lt;/script>" in page


@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
def test_report_of_a_sweep_file_with_a_hostile_name(tmp_path, capsys):
    sweep = tmp_path / "s.yaml"
    sweep.write_text('name: "\\e]0;pwn\\a=cmd<script>x"\n'
                     'description: "[x](javascript:alert(1)) <img src=x onerror=alert(1)>"\n'
                     'studies:\n  - name: "\\e[2Jst"\n    models: [mnist-vit]\n')
    assert main(["report", str(sweep), "--out", str(tmp_path / "rep")]) == 0
    _clean_terminal(*capsys.readouterr())
    report_md = (tmp_path / "rep" / "report.md").read_text()
    assert report_md.startswith("# vitbench report: =cmd&lt;script>x\n")
    assert live_html(report_md) == [] and "\x1b" not in report_md


def test_merge_writes_neutralised_cells(tmp_path, capsys):
    from vitbench.store import Store

    with Store.open(tmp_path / "a", sweep={"name": "s"}) as store:
        for i, name in enumerate(E2E_NAMES):
            store.add({"id": f"id{i}", "index": i, "model": name, "status": "ok", "macs": 1000 + i})
    assert main(["merge", str(tmp_path / "a"), "--out", str(tmp_path / "m")]) == 0
    _clean_terminal(*capsys.readouterr())
    text = (tmp_path / "m" / "results.csv").read_bytes().decode()
    assert unsafe_cells(text) == [] and "'@SUM(1)" in text
    assert [r["model"] for r in read_csv_records(tmp_path / "m" / "results.csv")] == list(E2E_NAMES)


@pytest.mark.parametrize("argv", [["merge", "\x1b]0;pwn\x07", "--out", "{tmp}/m"], ["report", "\x1b[31mvit\r\x07.csv"],
                                  ["compare", "\x1b[2J.csv", "\x1b[2J.csv"]])
def test_errors_print_no_escape_sequence(argv, capsys, tmp_path):
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    out, err = capsys.readouterr()
    _clean_terminal(out, err)
    assert err.startswith("vitbench: error: ") and err.count("\n") == 1


def test_an_error_message_with_raw_control_characters_is_cleaned(capsys):
    from vitbench.cli import error

    error("model \x1b]0;pwn\x07x\rover")
    assert capsys.readouterr().err == "vitbench: error: model xover\n"


def test_junit_xml_holds_no_character_xml_forbids(tmp_path):
    """U+FFFE and U+FFFF are no XML 1.0 characters: a model name holding one would make the
    JUnit file unreadable to every CI system (a red-team find)."""
    import xml.etree.ElementTree as ET

    path = tmp_path / "r.csv"
    write_csv([_record("m\ufffev\uffff", 0)], path)
    assert main(["compare", str(path), str(path), "-o", str(tmp_path / "out.xml")]) == 0
    names = [case.get("classname") for case in ET.parse(tmp_path / "out.xml").iter("testcase")]
    assert names and all(name.startswith("mv") for name in names)
