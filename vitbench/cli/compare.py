"""`vitbench compare`: the regression gate. Exit 0 pass, 1 regression (or missing rows or
metrics), 2 usage or file error. Parsing and printing only: :mod:`vitbench.gate` decides,
:mod:`vitbench.reporting.gate` renders."""

from __future__ import annotations

import sys

from vitbench.cli.common import FORMAT_OF_SUFFIX, unit_fraction


def register(subparsers) -> None:
    from vitbench.gate import DEFAULT_ALPHA, DEFAULT_RULES
    from vitbench.reporting.format import FORMATS

    parser = subparsers.add_parser(
        "compare",
        help="compare results against a baseline; exit 1 on a regression (CI gate)",
        description="Match rows of two results (CSV or JSON files, or sweep store directories) by "
        "configuration key and check each metric's change against rules. Timing regressions "
        "count only when significant across runs (Welch's t-test on per-run medians; needs 2+ "
        "runs a side, else the threshold alone decides). Baseline rows missing from the current "
        "results and ruled metrics only one side has fail the gate too. Exit codes: 0 pass, "
        "1 regression or missing rows/metrics, 2 usage or file error.",
        epilog="Rules: METRIC:-N% fails when METRIC drops by more than N%, METRIC:+N% when it "
        "grows by more than N%, METRIC:N% in the metric's bad direction, METRIC:[+|-]N in "
        "absolute units, METRIC:0 on any change. Aliases: throughput, latency_p50, latency_p90, "
        f"peak_memory; any numeric column by its name. Default: {' '.join(DEFAULT_RULES)}",
    )
    parser.add_argument("baseline", metavar="BASELINE", help="baseline results (CSV, JSON or store directory)")
    parser.add_argument("current", metavar="CURRENT", help="current results (CSV, JSON or store directory)")
    parser.add_argument(
        "--fail-on",
        action="append",
        metavar="EXPR",
        help="regression rule, repeatable or comma-separated (e.g. throughput:-5%%, params:0); "
        "replaces the default rules",
    )
    parser.add_argument(
        "--alpha",
        type=unit_fraction,
        default=DEFAULT_ALPHA,
        help=f"significance level for timing metrics (default {DEFAULT_ALPHA})",
    )
    parser.add_argument(
        "--allow-missing-rows",
        action="store_true",
        help="pass when baseline configurations are absent from the current results (listed, not failing)",
    )
    parser.add_argument(
        "--allow-missing-metrics",
        action="store_true",
        help="pass when a ruled metric is absent from one side (warned, not failing)",
    )
    parser.add_argument("--format", choices=(*FORMATS, "junit"), default=None,
                        help="output format: junit is JUnit XML for CI test reports, one test case per "
                             "configuration and metric (default: from the -o file's suffix, .csv/.json/.md/.xml, "
                             "else table)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")

    parser.set_defaults(handler=run, default_format="table", suffix_formats={**FORMAT_OF_SUFFIX, ".xml": "junit"})


def run(args) -> int:
    from vitbench.gate import compare
    from vitbench.reporting.gate import render_chunks

    result = compare(
        args.baseline, args.current, rules=args.fail_on, alpha=args.alpha,
        allow_missing_rows=args.allow_missing_rows, allow_missing_metrics=args.allow_missing_metrics,
    )
    chunks = render_chunks(result, args.format)  # a 10^6-configuration CSV or JSON report is written as made
    if args.output:
        from vitbench.results import atomic_write_text

        atomic_write_text(args.output, chunks, field="--output")
    else:
        for chunk in chunks:
            sys.stdout.write(chunk)
    return result.exit_code
