"""The one table renderer: humanised tables and markdown with warnings beside the numbers they
qualify; raw CSV and JSON."""

from __future__ import annotations

import csv
import io
import json

import pytest

from vitbench.errors import SpecError
from vitbench.reporting.format import render

UNSTABLE = (
    "unstable timing: CV 5.0%, IQR/median 12.0% over 9 samples (> 10%); rerun with --threads N "
    "(fewer than the cores), a longer --min-time, and close other programs using the device"
)


def _row(**extra):
    row = {
        "model": "mnist-vit", "batch_size": 8, "throughput_img_s": 100.0, "latency_p50_s": 0.01,
        "latency_iqr_s": 0.0012, "latency_cv": 0.05, "peak_memory_bytes": 3 * 2**20, "params": 1_234_567,
    }
    row.update(extra)
    return row


COLUMNS = [("model", "model"), ("throughput_img_s", "img/s"), ("peak_memory_bytes", "peak"), ("warnings", "other")]


def test_unstable_marker_sits_beside_the_throughput():
    text = render([_row(warnings=[UNSTABLE])], "markdown", COLUMNS)
    # spread = max(CV 0.05, IQR / median = 0.0012 / 0.01 = 0.12) = 12%
    assert "| 100 (! unstable 12%) |" in text
    assert "3.00 MiB" in text
    # the warning is placed beside its number, so the 'other warnings' cell stays empty
    assert text.splitlines()[-1].split("|")[-2].strip() == ""


def test_legacy_joined_warning_string_is_marked_too():
    row = _row(warnings=UNSTABLE + "; memory breakdown unavailable: no hooks")
    text = render([row], "table", ["model", "throughput_img_s", "peak_memory_bytes"])
    assert "100 (! unstable 12%)" in text and "3.00 MiB (! memory)" in text


def test_a_warning_about_no_shown_column_goes_to_the_warnings_column():
    row = _row(warnings=["arithmetic intensity failed: ValueError: x; see the docs", UNSTABLE])
    text = render([row], "markdown", COLUMNS)
    other = text.splitlines()[-1].split("|")[-2].strip()
    assert other == "arithmetic intensity failed: ValueError: x"  # its head, before the advice
    assert "(! unstable 12%)" in text


def test_csv_and_json_keep_raw_values_and_the_warning_list():
    rows = [_row(warnings=[UNSTABLE, "second"]), _row(model="other", warnings=None)]
    parsed = list(csv.DictReader(io.StringIO(render(rows, "csv", [k for k, _ in COLUMNS]))))
    assert parsed[0]["throughput_img_s"] == "100.0" and parsed[0]["peak_memory_bytes"] == str(3 * 2**20)
    assert json.loads(parsed[0]["warnings"]) == [UNSTABLE, "second"]
    assert parsed[1]["warnings"] == ""
    data = json.loads(render(rows, "json"))
    assert data["records"][0]["params"] == 1_234_567 and data["records"][0]["warnings"] == [UNSTABLE, "second"]
    assert data["records"][0]["latency_p50_s"] == 0.01


def test_markdown_headers_and_escaping():
    text = render([{"model": "a|b", "params": 1_234_567}], "markdown", [("model", "the model"), ("params", "params")])
    lines = text.splitlines()
    assert lines[0].startswith("| the model")
    assert "a\\|b" in lines[2] and "1.235 M" in lines[2]


def test_unknown_format_is_an_error_naming_the_value():
    with pytest.raises(SpecError, match="format='html'"):
        render([_row()], "html")


def test_machine_state_warnings_are_marked_on_the_timing():
    from vitbench.reporting.study.rows import instability, instability_details

    busy = ("busy machine: other processes use 1.8 of 2 cores, load average 5.5, and this run uses 1 "
            "thread(s): timings are slower and noisier than on an idle machine; measure on an idle machine")
    governor = "CPU frequency governor is 'powersave': the clock speed varies while measuring; set it"
    row = _row(latency_iqr_s=0.0, latency_cv=0.01, warnings=[busy, governor])
    text = render([row], "table", ["model", "throughput_img_s", "latency_p50_s"])
    assert "100 (! busy machine) (! governor)" in text
    # a busy machine makes the row unfit for conclusions; a governor alone does not
    # a short complete reason for the conclusion; the warning whole for the withheld-rows table
    assert instability(row) == "busy machine"
    assert instability_details(row).startswith(busy.split(";")[0])
    assert instability(_row(latency_iqr_s=0.0, latency_cv=0.01, warnings=[governor])) is None


def test_booleans_say_true_and_false():
    rows = [{"model": "a", "compile": True, "isolate": False}]
    assert "true" in render(rows, "table") and "True" not in render(rows, "table")
    assert render(rows, "csv").splitlines()[1] == "a,true,false"
    assert "| a       | true      | false     |" in render(rows, "markdown")
    assert json.loads(render(rows, "json"))["records"][0]["compile"] is True


def test_one_csv_encoding_for_every_writer(tmp_path):
    """`--format csv`, a store's export and Records.to_csv gave different text for the same
    records ("[0.1, 0.2]" against "[0.1,0.2]"); now one cell encoder writes them all."""
    from vitbench.results import Records
    from vitbench.store.export import csv_bytes

    records = [
        {"model": "m", "params": 2**63 + 1, "samples_s": [0.1, 0.2], "cv": 0.1 + 0.2, "ok": True, "none": None},
        {"model": "n", "params": 3, "samples_s": [], "cv": float("nan"), "ok": False, "none": None},
    ]
    expected = (
        "model,params,samples_s,cv,ok,none\n"
        "m,9223372036854775809,\"[0.1,0.2]\",0.30000000000000004,true,\n"
        "n,3,[],,false,\n"
    )
    assert render(records, "csv") == expected
    assert Records(records).to_csv() == expected
    assert csv_bytes(records, chunk=1).decode("utf-8") == expected  # the store's export, chunked
