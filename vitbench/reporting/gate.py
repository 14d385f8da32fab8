"""Rendering a gate comparison (:class:`vitbench.gate.CompareResult`): a terminal table, a
markdown pull-request comment, JSON (every verdict, p-value and run count) or CSV (one row per
configuration and metric, raw values). Tables go through the one renderer,
:func:`vitbench.reporting.format.render`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from vitbench.escape import markdown_text, terminal_text
from vitbench.gate.result import TEST_NAME, CompareResult, Verdict
from vitbench.gate.rules import is_rate
from vitbench.reporting.format import humanize, markdown_escape, si
from vitbench.reporting.format import render as render_records
from vitbench.results import csv_text

#: Markdown tables longer than this are folded into a <details> block (failures are listed
#: above it in full).
MARKDOWN_OPEN_ROWS = 30
#: A terminal or markdown report of more comparisons than this lists only the rows that are not
#: ok or unchanged (at most this many) and counts the rest: ``--format csv`` or ``json`` has them all
LISTED_ROWS = 1000
#: More warnings than this are summarised: each distinct message once, with how many rows gave it
LISTED_WARNINGS = 50

_COLUMNS = ("configuration", "metric", "baseline", "current", "change", "p", "rule", "verdict")


def summary_line(result: CompareResult) -> str:
    """``PASS: 0 regressions, 0 not significant, 4 ok (4 comparisons over 2 configurations;
    rules: ...)``, with the gate's other failures counted."""
    counts = result.counts()
    configs = result.configurations()
    regressions = counts.get(Verdict.REGRESSION, 0)
    parts = [f"{regressions} regression{'s' * (regressions != 1)}"]
    if counts.get(Verdict.MISSING):
        parts.append(f"{counts[Verdict.MISSING]} missing")
    parts += [f"{counts.get(Verdict.NOT_SIGNIFICANT, 0)} not significant", f"{counts.get(Verdict.OK, 0)} ok"]
    failures = f"; {len(result.failures)} other failure{'s' * (len(result.failures) != 1)}" if result.failures else ""
    return (
        f"{'PASS' if result.passed else 'FAIL'}: {', '.join(parts)} ({len(result.rows)} "
        f"comparison{'s' * (len(result.rows) != 1)} over {configs} configuration{'s' * (configs != 1)}; "
        f"rules: {', '.join(str(r) for r in result.rules) or 'none'}{failures})"
    )


def _cell(metric: str, value: float | None) -> str:
    if value is None:
        return ""
    if is_rate(metric):  # throughput_img_s is a rate, not seconds
        unit = " img/s" if metric == "throughput_img_s" else "/s"
        return f"{value:,.1f}{unit}" if value < 1e6 else f"{si(value)}{unit}"
    if isinstance(value, float) and value.is_integer() and not metric.endswith("_s"):
        value = int(value)
    if isinstance(value, int) and not metric.endswith("_bytes"):
        return f"{value:,}"  # counts in full: a gate on exact counts must show the digits that moved
    return str(humanize(metric, value))


def _p_text(row) -> str:
    if row.p_value is not None:
        return f"{row.p_value:.2g}"
    return ""


def _listed(result: CompareResult) -> tuple[Any, int]:
    """The rows a terminal or markdown report lists, and how many it leaves out: every row, or for
    a comparison of over :data:`LISTED_ROWS` rows the first of those whose verdict is neither ok
    nor unchanged."""
    if len(result.rows) <= LISTED_ROWS:
        return result.rows, 0
    notable = tuple(v for v in Verdict if v not in (Verdict.OK, Verdict.UNCHANGED))
    if hasattr(result.rows, "where"):
        picked = result.rows.where(notable)
    else:
        picked = tuple(r for r in result.rows if r.verdict in notable)
    picked = picked[:LISTED_ROWS]
    return picked, len(result.rows) - len(picked)


def _warning_lines(warnings: Any) -> list[str]:
    """Warnings, each distinct message once with a count when there are over :data:`LISTED_WARNINGS`
    (``baseline cfg: busy machine`` x 10^5 reads as one line)."""
    if len(warnings) <= LISTED_WARNINGS:
        return list(warnings)
    counted: dict[str, list[Any]] = {}
    for text in warnings:
        _, _, message = text.partition(": ")
        entry = counted.setdefault(message or text, [0, text])
        entry[0] += 1
    return [f"{message} ({count:,} rows, e.g. {example})" if count > 1 else example
            for message, (count, example) in counted.items()]


def table_rows(result: CompareResult) -> list[dict[str, Any]]:
    """Rows for display: humanised values, one per configuration and metric (for a large
    comparison, those :func:`_listed` picks)."""
    return [
        {
            "configuration": r.configuration,
            "metric": r.metric,
            "baseline": _cell(r.metric, r.baseline),
            "current": _cell(r.metric, r.current),
            "change": r.change_text,
            "p": _p_text(r),
            "rule": ", ".join(r.rules),
            "verdict": str(r.verdict) + (f" ({r.note})" if r.note else ""),
        }
        for r in _listed(result)[0]
    ]


def _notes(result: CompareResult) -> list[tuple[str, list[str]]]:
    notes: list[tuple[str, list[str]]] = []
    if result.failures:
        notes.append(("Gate failures", list(result.failures)))
    failed_rows = result.failed_rows
    if failed_rows:
        notes.append(("Regressions", [
            f"{r.configuration} {r.metric}: {r.change_text or r.note} breaks {', '.join(r.failed_rules)}"
            + (f" (p={r.p_value:.2g}, runs {r.runs_baseline} vs {r.runs_current})" if r.p_value is not None else "")
            + (f" ({r.note})" if r.note and r.change_text else "")
            for r in failed_rows[:LISTED_ROWS]
        ] + ([f"... and {len(failed_rows) - LISTED_ROWS:,} more (--format csv or json lists them all)"]
             if len(failed_rows) > LISTED_ROWS else [])))
    if result.env_differences:
        notes.append(("Environment differences (reported, not failures)", [str(d) for d in result.env_differences]))
    for title, labels in (("Only in baseline (missing from current)", result.removed),
                          ("Only in current (added)", result.added)):
        if len(labels):
            shown = list(labels[:LISTED_ROWS])
            more = len(labels) - len(shown)
            notes.append((title, shown + ([f"... and {more:,} more"] if more else [])))
    if result.not_applicable:
        notes.append(("Default rules not applicable (metric in neither file)", list(result.not_applicable)))
    if result.warnings:
        notes.append(("Warnings", _warning_lines(result.warnings)))
    return notes


def _junit_detail(row) -> str:
    detail = (f"baseline {row.baseline!r}, current {row.current!r}, change {row.change_text or 'n/a'}, "
              f"rules {', '.join(row.rules) or 'none'}")
    if row.p_value is not None:
        detail += f", p={row.p_value:.3g}"
    return detail + (f"; {row.note}" if row.note else "")


def _junit_case(row) -> Any:
    """One ruled metric of one configuration as a ``testcase``."""
    import xml.etree.ElementTree as ET

    case = ET.Element("testcase", classname=row.configuration, name=row.metric, time="0")
    detail = _junit_detail(row)
    if row.failed:
        broken = f" (broke {', '.join(row.failed_rules)})" if row.failed_rules else ""
        failure = ET.SubElement(case, "failure", message=f"{row.verdict}: {row.metric} {row.change_text}{broken}".strip(),
                                type=str(row.verdict))
        failure.text = detail
    elif row.verdict == Verdict.NOT_APPLICABLE:
        ET.SubElement(case, "skipped", message=row.note or "nothing to compare")
    else:
        ET.SubElement(case, "system-out").text = f"{row.verdict}: {detail}"
    return case


def _junit_gate_cases(result: CompareResult) -> list[Any]:
    """The gate's own failures (configurations missing from the current results, ruled metrics
    one side lacks) as test cases of class ``vitbench.gate``."""
    import xml.etree.ElementTree as ET

    cases = []
    for index, reason in enumerate(result.failures):
        case = ET.Element("testcase", classname="vitbench.gate", name=f"gate-{index + 1}", time="0")
        failure = ET.SubElement(case, "failure", message=reason, type="GATE")
        if result.removed and "missing" in reason:
            failure.text = "missing from current: " + "; ".join(result.removed)
        cases.append(case)
    return cases


def render_junit(result: CompareResult) -> str:
    """JUnit XML for CI systems that read test reports: one ``testcase`` per configuration
    (``classname``) and ruled metric (``name``); a failing verdict (REGRESSION, MISSING, INVALID) is a
    ``failure`` whose message is the verdict, the change and the rules it broke; ``n/a`` is
    ``skipped``; the gate's own failures (configurations missing from the current results, ruled
    metrics one side lacks) are test cases of class ``vitbench.gate``."""
    import xml.etree.ElementTree as ET

    # a metric no rule checks is information, not a test
    cases = [_junit_case(row) for row in result.rows if row.rules or row.failed]
    cases += _junit_gate_cases(result)
    failures = sum(1 for c in cases if c.find("failure") is not None)
    skipped = sum(1 for c in cases if c.find("skipped") is not None)
    counts = dict(tests=str(len(cases)), failures=str(failures), errors="0", skipped=str(skipped))
    suites = ET.Element("testsuites", name="vitbench compare", **counts)
    suite = ET.SubElement(suites, "testsuite", name="vitbench compare", **counts)
    properties = ET.SubElement(suite, "properties")
    for name, value in (("summary", summary_line(result)), ("rules", " ".join(str(r) for r in result.rules)),
                        ("alpha", f"{result.alpha:g}"), ("key_columns", ",".join(result.key_columns))):
        ET.SubElement(properties, "property", name=name, value=value)
    suite.extend(cases)
    ET.indent(suites)

    # XML 1.0 allows no control character but tab and line breaks, no surrogate and neither
    # U+FFFE nor U+FFFF: a model name's ESC or U+FFFE would make the file unreadable to every CI system
    text = terminal_text(ET.tostring(suites, encoding="unicode"), keep="\n\t\r")
    return '<?xml version="1.0" encoding="utf-8"?>\n' + re.sub("[\ud800-\udfff\ufffe\uffff]", "", text) + "\n"


def _body(result: CompareResult, rows: list[dict[str, Any]], left_out: int, markdown: bool) -> str:
    """The table of listed rows, and a line counting those left out."""
    body = render_records(rows, "markdown" if markdown else "table", list(_COLUMNS)) if rows else ""
    if left_out:
        first = f"the first {LISTED_ROWS:,} others listed; " if len(rows) == LISTED_ROWS else ""
        body += ("\n\n" if body else "") + (f"{left_out:,} of {len(result.rows):,} comparisons not listed (ok or "
                                              f"unchanged; {first}--format csv or json lists every comparison)")
    return body


#: a CSV or JSON report of more comparisons than this is made in chunks (:func:`render_chunks`), each
#: written as it comes: 6 x 10^6 comparisons held as one text took 14 GB
STREAM_ROWS = 50_000
#: comparisons per chunk
_CHUNK_ROWS = 10_000


def render_chunks(result: CompareResult, fmt: str = "table") -> Iterator[str]:
    """:func:`render` in pieces whose concatenation is its text: for a CSV or JSON report of over
    :data:`STREAM_ROWS` comparisons, a chunk per :data:`_CHUNK_ROWS` rows (what the CLI writes as it
    goes); else the one text."""
    if fmt not in ("csv", "json") or len(result.rows) <= STREAM_ROWS:
        yield render(result, fmt)
    elif fmt == "csv":
        yield from _csv_chunks(result)
    else:
        yield from _json_chunks(result)


def _flat(row: Any) -> dict[str, Any]:
    """One comparison as a CSV row: its fields, rule lists joined by ``;``, the key's columns."""
    flat = {**{k: v for k, v in row.as_dict().items() if k != "key"}, **dict(row.key)}
    flat["rules"] = ";".join(flat["rules"])
    flat["failed_rules"] = ";".join(flat["failed_rules"])
    return flat


def _blocks(rows: Any) -> Iterator[list[Any]]:
    block: list[Any] = []
    for row in rows:
        block.append(row)
        if len(block) == _CHUNK_ROWS:
            yield block
            block = []
    if block:
        yield block


def _csv_chunks(result: CompareResult) -> Iterator[str]:
    """The CSV report in chunks. Its columns are every comparison's (the fields, then the key
    columns), named once; a chunk holding a carriage return in a cell ends its rows with ``\r\n``
    as :func:`vitbench.results.csv_text` does a whole file."""
    columns = None
    for block in _blocks(result.rows):
        flat = [_flat(row) for row in block]
        first = columns is None
        if first:
            columns = list(dict.fromkeys(key for row in flat for key in row))
        yield csv_text(flat, columns, header=first)


def _json_chunks(result: CompareResult) -> Iterator[str]:
    """The JSON report in chunks: the text ``json.dumps(..., indent=2)`` gives, its two lists of
    comparisons (``rows``, ``regressions``) written an item at a time."""
    document = {**result.as_dict(rows=False), "summary": summary_line(result)}
    yield "{"
    for index, (key, value) in enumerate(document.items()):
        yield ("," if index else "") + "\n  " + json.dumps(key) + ": "
        if key in ("rows", "regressions"):
            rows = result.rows if key == "rows" else result.regressions
            if not len(rows):
                yield "[]"
                continue
            yield "["
            first = True
            for block in _blocks(rows):
                items = [json.dumps(row.as_dict(), indent=2, default=str).replace("\n", "\n    ") for row in block]
                yield ("" if first else ",") + "".join(("\n    " if i == 0 and first else ",\n    " if i else "\n    ") + item
                                                      for i, item in enumerate(items))
                first = False
            yield "\n  ]"
        else:
            yield json.dumps(value, indent=2, default=str).replace("\n", "\n  ")
    yield "\n}\n"


def render(result: CompareResult, fmt: str = "table") -> str:
    """The comparison as ``table`` (terminal), ``markdown`` (pull-request comment), ``json``,
    ``csv`` (one row per configuration and metric, raw values) or ``junit`` (JUnit XML)."""
    if fmt == "junit":
        return render_junit(result)
    if fmt == "json":
        return json.dumps({**result.as_dict(), "summary": summary_line(result)}, indent=2, default=str) + "\n"
    if fmt == "csv":
        flat = [{**{k: v for k, v in r.as_dict().items() if k != "key"}, **dict(r.key)} for r in result.rows]
        for row in flat:
            row["rules"] = ";".join(row["rules"])
            row["failed_rules"] = ";".join(row["failed_rules"])
        return render_records(flat, "csv")
    markdown = fmt == "markdown"
    rows = table_rows(result)
    left_out = _listed(result)[1]
    body = _body(result, rows, left_out, markdown)
    summary = summary_line(result)
    notes = _notes(result)
    if markdown:
        out = [f"### vitbench compare: {'PASS' if result.passed else 'FAIL'}", "", f"**{summary}**", ""]
        if len(rows) > MARKDOWN_OPEN_ROWS:  # keep a pull-request comment short: fold big tables
            shown = f"All {len(rows)}" if not left_out else f"{len(rows):,} of {len(result.rows):,}"
            out += [f"<details><summary>{shown} comparisons</summary>", "", body, "", "</details>"]
        else:
            out.append(body)
        for title, items in notes:
            out += ["", f"**{title}**", ""] + [f"- {markdown_escape(i)}" for i in items]
        out += ["", f"<sub>Matched on {', '.join(result.key_columns)}. Timing regressions need the "
                f"threshold exceeded and p < {result.alpha:g} ({TEST_NAME}; at least 2 runs a side, "
                "else the threshold alone decides).</sub>"]

        return markdown_text("\n".join(out) + "\n")  # no live HTML or link from a model name
    out = [body, "", summary]
    for title, items in notes:
        out += ["", f"{title}:"] + [f"  {i}" for i in items]
    return "\n".join(out) + "\n"
