"""Warnings as data: a code, the message, the advice. Markers and conclusions follow the code, so
rewording a message cannot silently move or drop its marker (issue: reporting/marks.py sorted
prose back into kinds by regex)."""

from __future__ import annotations

import pytest

from vitbench import row_warnings
from vitbench.reporting import marks
from vitbench.reporting.format import render
from vitbench.row_warnings import CODES, normalize, warning

ROW = {"model": "m", "throughput_img_s": 100.0, "latency_p50_s": 0.01, "latency_cv": 0.05,
       "latency_iqr_s": 0.0012, "peak_memory_bytes": 3 * 2**20, "batch_size": 8}
SHOWN = ["model", "batch_size", "throughput_img_s", "peak_memory_bytes", "warnings"]


def test_the_code_places_the_marker_whatever_the_wording():
    reworded = {**ROW, "warnings": [warning("unstable-steps", "the steps scatter widely", "run longer")]}
    assert marks.marks(reworded, SHOWN)[0] == {"throughput_img_s": "(! unstable 12%)"}
    assert marks.timing_warnings(reworded) == ["the steps scatter widely; run longer"]
    # a message that happens to say 'unstable' but is about something else gets no timing marker
    misleading = {**ROW, "warnings": [warning("pass-failed", "trace failed: unstable file system")]}
    assert marks.marks(misleading, SHOWN) == ({}, ["trace failed: unstable file system"])
    assert marks.timing_warnings(misleading) == []


@pytest.mark.parametrize("code, column", [
    ("unstable-runs", "throughput_img_s"), ("busy-machine", "throughput_img_s"), ("gpu-shared", "throughput_img_s"),
    ("cpu-governor", "throughput_img_s"), ("memory-breakdown", "peak_memory_bytes"),
    ("auto-batch-stepped-down", "batch_size"), ("auto-batch-limit", "batch_size"),
])
def test_each_marked_code_qualifies_its_column(code, column):
    row = {**ROW, "warnings": [warning(code, "x")]}
    placed, loose = marks.marks(row, SHOWN)
    assert list(placed) == [column] and loose == []


def test_every_rule_names_known_codes_and_unknown_codes_are_refused():
    assert set().union(*(r.codes for r in marks.RULES)) <= set(CODES)
    with pytest.raises(ValueError, match="unknown warning code 'made-up'"):
        warning("made-up", "x")


def test_warnings_survive_csv_json_and_the_store(tmp_path):
    from vitbench.reading import read_results
    from vitbench.store import Store, read_store

    found = [warning("unstable-runs", "runs disagree, CV 15%", "rerun with more --runs"), warning("cpu-governor", "powersave")]
    row = {**ROW, "warnings": found}
    (tmp_path / "r.csv").write_text(render([row], "csv"), encoding="utf-8")
    (tmp_path / "r.json").write_text(render([row], "json"), encoding="utf-8")
    for name in ("r.csv", "r.json"):
        (back,), _ = read_results(tmp_path / name)
        assert back["warnings"] == found
    with Store.open(tmp_path / "store") as store:
        store.add({**row, "id": "a" * 32, "index": 0, "status": "ok"})
    (back,) = read_store(tmp_path / "store")[0]
    assert back["warnings"] == found


def test_older_results_with_plain_text_warnings_still_read_and_mark():
    legacy = {**ROW, "warnings": "unstable timing: CV 5.0%; memory breakdown unavailable: no hooks"}
    assert normalize(legacy["warnings"]) == [{"code": "legacy", "message": legacy["warnings"], "advice": ""}]
    placed, _ = marks.marks(legacy, SHOWN)
    assert placed == {"throughput_img_s": "(! unstable 12%)", "peak_memory_bytes": "(! memory)"}
    assert row_warnings.texts(["plain", None, ""]) == ["plain"]
    assert normalize(float("nan")) == [] and normalize(None) == []
