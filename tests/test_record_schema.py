"""Issue 33, the fuzzer's finds 1-6 and 8: every record read (CSV, JSON, store, records in memory,
DataFrame) has its known columns checked once (vitbench.record_schema, through
vitbench.reading.read_results): batch sizes, model names, numbers a float holds; the report's
own requirement (model and batch size) and its refusal of one configuration measured twice;
``predict --measured`` refusing the same; no matplotlib warning reaching stderr."""

from __future__ import annotations

import json
import warnings

import pytest

from vitbench.errors import InputFileError
from vitbench.reading import read_results
from vitbench.record_schema import MAX_BATCH_SIZE, check_records, require_columns, require_finite


def _row(**cells):
    return {"model": "mnist-vit", "batch_size": 4, "status": "ok", "latency_p50_s": 0.005, "throughput_img_s": 800.0, **cells}


@pytest.mark.parametrize("cells, shown", [
    ({"batch_size": "4"}, "batch_size='4'"), ({"batch_size": "\u0661\u0662\u0663"}, "batch_size='\u0661\u0662\u0663'"),
    ({"batch_size": 0}, "batch_size=0"), ({"batch_size": False}, "batch_size=False"), ({"batch_size": True}, "batch_size=True"),
    ({"batch_size": -2}, "batch_size=-2"), ({"batch_size": 1.5}, "batch_size=1.5"), ({"batch_size": [1]}, r"batch_size=\[1\]"),
    ({"batch_size": 2**31}, "batch_size=2147483648"),
    ({"pred_latency_s": "1"}, "pred_latency_s='1'"), ({"latency_p50_s": 10**310}, "latency_p50_s=1000"),
    ({"throughput_img_s": "inf"}, "throughput_img_s='inf'"), ({"peak_memory_bytes": True}, "peak_memory_bytes=True"),
    ({"macs": -(10**400)}, "macs=-1000"), ({"samples_s": [0.1, 10**309]}, r"samples_s=\[0.1, 1000"),
    ({"model": 5}, "model=5"), ({"model": ["a"]}, r"model=\['a'\]"),
])
def test_a_known_column_holding_what_it_cannot_is_one_line_naming_row_column_and_value(cells, shown):
    with pytest.raises(InputFileError, match=rf"^where: row 2: {shown}.*: must be ") as info:
        check_records([_row(), _row(**cells)], "where")
    assert "\n" not in str(info.value) and len(str(info.value)) < 200


def test_what_the_columns_may_hold_passes():
    check_records([
        # an infinity is a float: the gate marks it INVALID (docs/gate.md), --measured refuses it
        _row(), _row(batch_size=MAX_BATCH_SIZE, latency_p50_s=10**300, throughput_img_s=float("inf"), samples_s=[0.1, 2, None], run_samples_s=[[0.1], [0.2]]),
        _row(pred_basis="gpu-model:h100", macs_source="analytic", env_torch="2.1", pred_latency_s=None, model="x\U0008e612"),
        # a failed row is shown with its error: its other cells are never used (--batch-size auto, a hand-made error)
        _row(status="error", batch_size="auto", latency_p50_s="abc"), _row(status="invalid", batch_size=0),
    ], "where")


@pytest.mark.parametrize("suffix", [".json", ".csv", "records", "frame"])
def test_every_source_is_checked_the_same_way(tmp_path, suffix):
    rows = [_row(), _row(pred_latency_s="x1")]
    if suffix == "records":
        source = rows
    elif suffix == "frame":
        pd = pytest.importorskip("pandas")
        source = pd.DataFrame(rows)
    else:
        source = tmp_path / f"r{suffix}"
        from vitbench.results import csv_text

        source.write_text(json.dumps(rows) if suffix == ".json" else csv_text(rows))
    with pytest.raises(InputFileError, match=r": row 2: pred_latency_s='x1': must be a number"):
        read_results(source)


def test_a_store_row_is_checked(tmp_path):
    from vitbench.store import Store

    with Store.open(tmp_path / "s") as store:
        store.add(dict(_row(batch_size="8"), id="a", index=0))
    with pytest.raises(InputFileError, match=r"row 1: batch_size='8'"):
        read_results(tmp_path / "s")


def test_batch_sizes_of_a_frame_with_a_gap_and_of_a_csv_with_auto_rows_are_whole_numbers(tmp_path):
    pd = pytest.importorskip("pandas")
    rows, _ = read_results(pd.DataFrame([_row(batch_size=2), _row(status="error", batch_size=None)]))
    assert [type(r["batch_size"]) for r in rows] == [int, type(None)] and rows[0]["batch_size"] == 2
    path = tmp_path / "auto.csv"
    path.write_text("model,batch_size,status\n123,8,ok\n123,auto,error\n123,16.0,ok\n")
    rows, _ = read_results(path)
    assert [r["batch_size"] for r in rows] == [8, "auto", 16] and [r["model"] for r in rows] == ["123"] * 3


def test_the_reports_requirement_names_the_missing_column_or_the_row(tmp_path):
    with pytest.raises(InputFileError, match=r"^where: no 'batch_size' column; why$"):
        require_columns([{"model": "a"}], "where", ("model", "batch_size"), "why")
    with pytest.raises(InputFileError, match=r"^where: row 2: model is empty; why$"):
        require_columns([_row(), _row(model=None), _row(status="error", model=None)], "where", ("model", "batch_size"), "why")
    require_columns([_row(), _row(status="error", batch_size=None)], "where", ("model", "batch_size"), "why")


def test_a_report_refuses_an_infinite_value_of_a_row_that_ran():
    from vitbench.record_schema import require_finite

    with pytest.raises(InputFileError, match=r"^where: row 2: samples_s=\[0.1, inf\]: is infinite; why$"):
        require_finite([_row(), _row(samples_s=[0.1, float("inf")]), _row(status="error", latency_p50_s=float("inf"))], "where", "why")
    require_finite([_row(), _row(status="error", latency_p50_s=float("-inf"))], "where", "why")


def _csv(path, rows):
    from vitbench.results import csv_text

    path.write_text(csv_text(rows))
    return path


def test_report_refuses_one_configuration_measured_twice_naming_rows_model_and_batch(tmp_path):
    from vitbench.studies import report

    source = _csv(tmp_path / "d.csv", [_row(batch_size=1), _row(batch_size=2), _row(batch_size=1, throughput_img_s=900.0)])
    with pytest.raises(InputFileError, match=r"rows 1 and 3 both measure model='mnist-vit' at batch_size=1; .*one measurement"):
        report(source, tmp_path / "r", plots=False)
    assert not (tmp_path / "r" / "report.md").exists()


def test_a_memory_fit_over_one_batch_size_is_left_out_not_an_error(tmp_path):
    from vitbench.studies import report

    # one series (model, mode, precision, device), two models behind it (spec_key): one batch size
    rows = [_row(batch_size=1, spec_key=k, peak_memory_bytes=m, mode="infer") for k, m in (("a", 10**7), ("b", 2 * 10**7))]
    result = report(_csv(tmp_path / "c.csv", rows), tmp_path / "r", plots=False)
    text = result.report.read_text()
    assert "mnist-vit infer" in text and "least squares" not in text


def test_predict_measured_refuses_two_times_for_one_step():
    from vitbench.timemodel.prediction_rows import measured_index

    rows = [_row(batch_size=1, mode="infer"), _row(batch_size=2, mode="infer"), _row(batch_size=1, mode="train"),
            _row(batch_size=1, mode="infer", latency_p50_s=0.007)]
    with pytest.raises(InputFileError, match=r"^measured records: rows 1 and 4 both measure model='mnist-vit' at batch_size=1 \(infer fp32\)"):
        measured_index(rows)
    assert len(measured_index(rows[:3])) == 3


@pytest.mark.slow  # about 1-3 s: the default suite stays under 2 minutes
def test_a_model_name_no_font_draws_gives_no_warning(tmp_path):
    from vitbench.studies import report

    rows = [_row(model="mnist-vit\U0008e612", batch_size=b, throughput_img_s=1000.0 * b) for b in (1, 4)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = report(_csv(tmp_path / "g.csv", rows), tmp_path / "r")
    assert result.plots and [str(w.message) for w in caught] == []


def test_the_batch_size_bound_is_the_settings():
    from vitbench.settings import MAX_BATCH_SIZE as settings_bound

    assert MAX_BATCH_SIZE == settings_bound


# --- red-team holes: counts and sizes are never negative; ratios may be ---

@pytest.mark.parametrize("column, value", [("params", -5), ("macs", -1.5), ("flops", -1), ("tokens", -2),
                                           ("elementwise_ops", -3), ("peak_memory_bytes", -1.0)])
def test_a_negative_count_or_size_is_refused(column, value):
    record = {"model": "m", "batch_size": 1, "status": "ok", column: value}
    check_records([record], "f")  # a number: the gate marks it INVALID (exit 1); a report refuses it
    with pytest.raises(InputFileError, match=rf"^f: row 1: {column}={value}: must be a count or a size \(0 or more\); r$"):
        require_finite([record], "f", "r")


@pytest.mark.parametrize("column, value", [("params", 0), ("peak_memory_bytes", 1.5e9), ("macs_delta", -3),
                                           ("speedup_ratio", -0.5), ("latency_p50_s", 0.1)])
def test_zero_counts_and_signed_non_counts_pass(column, value):
    record = {"model": "m", "batch_size": 1, "status": "ok", column: value}
    check_records([record], "f")
    require_finite([record], "f", "r")


def test_a_csv_cell_with_an_underscore_is_no_number(tmp_path):
    path = tmp_path / "u.csv"
    path.write_text("model,params,batch_size,status\nm,1_000,1,ok\n")
    with pytest.raises(InputFileError, match=r"row 1: params='1_000': must be a number"):
        read_results(path)
