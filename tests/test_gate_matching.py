"""How the gate reads and matches rows (:mod:`vitbench.gate.matching`): cells as numbers
(booleans, numpy scalars, text), configuration keys, the per-run step times of a row (from
``run_medians_s``, ``run_samples_s`` alone, the pooled samples, the latency or the throughput),
repeated rows of one configuration, and labels. Expected values are worked out by hand."""

from __future__ import annotations

import hashlib
import math
from decimal import Decimal

import numpy as np
import pytest

from vitbench.gate import compare
from vitbench.gate.matching import (
    Group,
    floats,
    group,
    is_missing,
    key_columns,
    key_text,
    labels,
    number,
    present_columns,
    row_samples,
    run_medians,
)

# --------------------------------------------------------------------------- cells


@pytest.mark.parametrize("value, missing", [
    (None, True), (math.nan, True), ("", True), (0, False), (0.0, False), ("x", False), ([], False),
    (False, False),
])
def test_missing_cells_are_none_nan_and_empty_text(value, missing):
    assert is_missing(value) is missing


@pytest.mark.parametrize("value, expected", [
    (True, None), (False, None), (None, None), (math.nan, None), (np.float32("nan"), None), ("nan", None),
    ("text", None), ([1.0], None), (7, 7), (2.5, 2.5), (-3, -3), (0, 0), (math.inf, math.inf),
    (np.int64(3), 3.0), (np.float64(0.25), 0.25), (np.float32(0.5), 0.5), (Decimal("1.5"), 1.5), ("4.5", 4.5),
])
def test_a_cell_as_a_number(value, expected):
    got = number(value)
    assert got == expected if expected is not None else got is None


def test_an_integer_cell_stays_an_exact_integer():
    big = 2**60 + 1  # a float would round it
    assert number(big) == big and type(number(big)) is int
    assert type(number(np.int64(5))) is float  # a numpy integer is read through float


def test_a_list_cell_keeps_its_finite_numbers_as_floats():
    assert floats([1, 2.5, None, math.nan, math.inf, -math.inf, "x", True, np.float64(0.5)]) == [1.0, 2.5, 0.5]
    assert all(type(x) is float for x in floats([1, np.int64(2)]))
    assert floats((3, 4)) == [3.0, 4.0]
    assert floats("1,2") == [] and floats(None) == [] and floats(5.0) == []


@pytest.mark.parametrize("value, text", [
    (None, ""), ("", ""), (math.nan, ""), (8, "8"), (8.0, "8"), ("8.0", "8"), (" 8 ", "8"), ("8", "8"),
    ("1e3", "1000"), (".5", "0.5"), ("1.", "1"), ("-3", "-3"), ("+2.5", "2.5"), (8.5, "8.5"),
    ("cpu", "cpu"), (" cpu ", "cpu"), ("1e", "1e"), ("8px", "8px"), ([224, 224], "224x224"),
    (("224.0", 160), "224x160"), (True, "True"),
])
def test_key_text_is_the_same_from_csv_and_json(value, text):
    assert key_text(value) == text


def test_present_columns_are_those_with_a_value():
    rows = [{"a": 1, "b": None, "c": ""}, {"a": None, "b": math.nan, "d": 0}]
    assert present_columns(rows) == {"a", "d"}


# --------------------------------------------------------------------------- keys


def _row(**cells):
    return {"model": "m", **cells}


def test_the_key_is_the_spec_key_when_every_row_has_one():
    base = [_row(spec_key="k1", batch_size=8, device="cpu", img_size=224)]
    cur = [_row(spec_key="k1", batch_size=8, mode="infer", img_size=224)]
    # run columns only where both files record them; no model, img_size or patch_size
    assert key_columns(base, cur) == ("spec_key", "batch_size")


def test_one_row_without_a_spec_key_keys_on_the_model():
    base = [_row(spec_key="k1", img_size=224, patch_size=16, precision="fp32")]
    cur = [_row(spec_key="k1", img_size=224, precision="fp32"), _row(spec_key="", img_size=224, precision="fp32")]
    assert key_columns(base, cur) == ("model", "img_size", "precision")


def test_two_names_of_one_architecture_in_a_file_add_the_model_to_the_key():
    base = [_row(spec_key="k", batch_size=1)]
    cur = [{"model": "vit-s/16", "spec_key": "k", "batch_size": 1}, {"model": "deit-s/16", "spec_key": "k", "batch_size": 1}]
    assert key_columns(base, cur) == ("spec_key", "model", "batch_size")
    # in the baseline file too
    assert key_columns(cur, base) == ("spec_key", "model", "batch_size")
    # the same name twice, or two names at different batch sizes, is no clash
    twice = [{"model": "a", "spec_key": "k", "batch_size": 1}, {"model": "a", "spec_key": "k", "batch_size": 1}]
    apart = [{"model": "a", "spec_key": "k", "batch_size": 1}, {"model": "b", "spec_key": "k", "batch_size": 2}]
    assert key_columns(base, twice) == ("spec_key", "batch_size") == key_columns(base, apart)


def test_rows_group_on_the_text_of_their_key():
    rows = [_row(batch_size=8), _row(batch_size="8.0"), _row(batch_size=16), {"model": "n", "batch_size": 8}]
    groups = group(rows, ("model", "batch_size"))
    assert {k: len(g.rows) for k, g in groups.items()} == {("m", "8"): 2, ("m", "16"): 1, ("n", "8"): 1}
    assert list(groups) == [("m", "8"), ("m", "16"), ("n", "8")]  # first-seen order


# --------------------------------------------------------------------------- runs of a row


def test_run_medians_are_read_first():
    row = {"run_medians_s": [0.2, 0.3], "run_samples_s": [[9.0]], "samples_s": [9.0], "latency_p50_s": 9.0}
    assert run_medians(row) == [0.2, 0.3]


def test_a_row_with_only_run_samples_has_one_median_per_non_empty_run():
    row = {"run_samples_s": [[0.1, 0.3, 0.2], [], [0.4, 0.6], "bad", [math.nan]]}
    assert run_medians(row) == [0.2, 0.5]
    assert row_samples(row) == [0.1, 0.3, 0.2, 0.4, 0.6]


def test_run_samples_with_no_usable_run_fall_through_to_the_pooled_samples():
    assert run_medians({"run_samples_s": [[], [math.nan]], "samples_s": [0.3, 0.1, 0.2]}) == [0.2]
    assert run_medians({"run_samples_s": "[0.1]", "latency_p50_s": 0.5}) == [0.5]  # text, not a list


def test_without_runs_a_row_is_one_run():
    assert run_medians({"samples_s": [0.4, 0.1, 0.2, 0.3]}) == [0.25]
    assert run_medians({"latency_p50_s": 0.5, "throughput_img_s": 100.0, "batch_size": 8}) == [0.5]
    assert run_medians({"latency_p50_s": 0, "throughput_img_s": 100.0, "batch_size": 8}) == [0.08]
    assert run_medians({"throughput_img_s": 100.0, "batch_size": 8}) == [0.08]
    assert type(run_medians({"latency_p50_s": 1})[0]) is float


@pytest.mark.parametrize("row", [
    {}, {"throughput_img_s": -100.0, "batch_size": 8}, {"throughput_img_s": 0.0, "batch_size": 8},
    {"throughput_img_s": 100.0}, {"throughput_img_s": 100.0, "batch_size": 0}, {"latency_p50_s": -1.0},
    {"samples_s": []}, {"run_medians_s": [], "run_samples_s": []},
])
def test_a_row_without_a_step_time_has_no_runs(row):
    assert run_medians(row) == []


def test_row_samples_prefer_the_pooled_samples():
    assert row_samples({"samples_s": [1.0, 2.0], "run_samples_s": [[5.0]]}) == [1.0, 2.0]
    assert row_samples({"samples_s": [], "run_samples_s": [[5.0], [6.0, 7.0]]}) == [5.0, 6.0, 7.0]
    assert row_samples({"run_samples_s": "x"}) == [] and row_samples({}) == []


# --------------------------------------------------------------------------- groups


def test_a_repeated_configuration_takes_the_median_of_its_values():
    grouped = Group([{"params": 10}, {"params": 30}, {"params": None}, {"params": 12}, {"params": "x"}])
    assert grouped.value("params") == 12
    assert Group([{"t": 1.0}, {"t": 2.0}]).value("t") == 1.5
    assert Group([{"t": None}]).value("t") is None and Group([]).value("t") is None


def test_one_value_is_kept_exactly():
    big = 2**62 + 1
    assert Group([{"params": big}, {"params": None}]).value("params") == big


def test_each_repeated_row_adds_its_runs_and_zero_runs_are_dropped():
    grouped = Group([{"run_medians_s": [0.1, 0.0, 0.2]}, {"run_samples_s": [[0.3], [0.0, 0.0, 0.5]]},
                     {"latency_p50_s": 0.4}])
    assert grouped.run_medians() == [0.1, 0.2, 0.3, 0.4]
    assert grouped.n_samples() == 4


@pytest.mark.parametrize("statuses, failed", [
    (["oom", "error"], "oom"), (["ok", "oom"], None), (["ok"], None), ([None, "oom"], "oom"),
    ([None, ""], None), (["error"], "error"), ([], None),
])
def test_a_configuration_failed_when_every_row_with_a_status_failed(statuses, failed):
    assert Group([{"status": s} for s in statuses]).failed() == failed


def test_labels_name_model_size_batch_and_run_columns_of_the_key():
    rows = [{"model": "vit", "img_size": 224, "batch_size": 8.0, "device": "cpu", "mode": "infer", "precision": "fp32"}]
    keys = ("model", "batch_size", "device", "mode", "precision")
    assert labels(group(rows, keys), keys) == {("vit", "8", "cpu", "infer", "fp32"): "vit 224px b8 cpu infer fp32"}
    no_size = [{"model": "vit", "batch_size": 8, "device": "", "mode": "train"}]
    assert list(labels(group(no_size, ("model", "mode")), ("model", "mode")).values()) == ["vit train"]
    assert list(labels(group(no_size, ("model", "device")), ("model", "device")).values()) == ["vit"]


def test_a_repeated_configuration_is_named_by_its_last_row_as_its_model_is():
    # img_size is not a key when one file lacks it: rows of one configuration may differ there;
    # the name reads the last row, the one Group.model reads (the later row of a file wins)
    rows = [{"model": "vit", "img_size": 224, "batch_size": 8}, {"model": "vit", "img_size": 384, "batch_size": 8}]
    groups = group(rows, ("model", "batch_size"))
    assert [g.model for g in groups.values()] == ["vit"]
    assert labels(groups, ("model", "batch_size")) == {("vit", "8"): "vit 384px b8"}
    first_missing = [{"model": "vit", "batch_size": 8}, {"model": "vit", "img_size": 384, "batch_size": 8}]
    assert list(labels(group(first_missing, ("model",)), ("model",)).values()) == ["vit 384px"]


def test_labels_that_would_read_the_same_get_a_hash_of_their_key():
    rows = [{"model": "vit", "spec_key": "a"}, {"model": "vit", "spec_key": "b"}, {"model": "cnn", "spec_key": "c"}]
    keys = ("spec_key", "model")
    named = labels(group(rows, keys), keys)
    suffix = {k: hashlib.sha1(f"{k[0]}|{k[1]}".encode()).hexdigest()[:6] for k in named}
    assert named == {("a", "vit"): f"vit #{suffix['a', 'vit']}", ("b", "vit"): f"vit #{suffix['b', 'vit']}",
                     ("c", "cnn"): "cnn"}


# --------------------------------------------------------------------------- through the gate


def _measured(model, throughput, **cells):
    return {"model": model, "batch_size": 8, "status": "ok", "params": 100, "throughput_img_s": throughput, **cells}


def test_repeated_rows_that_agree_are_pooled_by_their_median():
    base = [_measured("m", 100.0), _measured("m", 104.0), _measured("m", 102.0)]
    cur = [_measured("m", 97.0)]
    result = compare(base, cur, ["throughput:-5%"])
    (row,) = [r for r in result.rows if r.metric == "throughput_img_s"]
    assert row.baseline == 102.0 and row.verdict == "ok" and result.passed
    assert any("baseline: 1 configuration(s) appear more than once" in w for w in result.warnings)


def test_repeated_rows_that_disagree_fail_the_gate():
    base = [_measured("m", 100.0)]
    cur = [_measured("m", 100.0), _measured("m", 50.0)]
    result = compare(base, cur, ["params:0"])
    assert result.failures == ("current: m appears 2 times with throughput_img_s from 50 to 100; "
                               "give one row per configuration",)
    assert result.exit_code == 1


def test_a_configuration_repeated_with_several_metrics_apart_is_one_failure():
    cur = [_measured("m", 100.0, latency_p50_s=0.08), _measured("m", 50.0, latency_p50_s=0.16)]
    result = compare([_measured("m", 100.0, latency_p50_s=0.08)], cur, ["params:0"])
    assert result.failures == ("current: m appears 2 times with throughput_img_s from 50 to 100; "
                               "give one row per configuration",)


def test_a_numpy_or_boolean_cell_compares_as_the_number_it_holds():
    base = [_measured("m", np.float64(100.0), params=np.int64(100))]
    cur = [_measured("m", 100.0, params=100)]
    result = compare(base, cur, ["params:0", "throughput:-5%"])
    assert result.passed and {r.metric: r.verdict for r in result.rows} == {
        "throughput_img_s": "ok", "params": "ok"}


def test_runs_from_run_samples_alone_decide_significance():
    def row(level):
        return _measured("m", 8 / level, run_samples_s=[[level * f, level * f * 1.001] for f in (1.0, 1.01, 0.99)])

    result = compare([row(0.010)], [row(0.020)], ["throughput:-5%"])
    (timing,) = [r for r in result.rows if r.metric == "throughput_img_s"]
    assert (timing.runs_baseline, timing.runs_current, timing.n_baseline, timing.n_current) == (3, 3, 6, 6)
    assert timing.verdict == "REGRESSION" and timing.p_value is not None and timing.p_value < 0.05


def test_zero_run_medians_do_not_count_as_runs():
    base = [_measured("m", 100.0, run_medians_s=[0.0, 0.08])]
    cur = [_measured("m", 50.0, run_medians_s=[0.16, 0.0])]
    result = compare(base, cur, ["throughput:-5%"])
    (timing,) = [r for r in result.rows if r.metric == "throughput_img_s"]
    assert (timing.runs_baseline, timing.runs_current) == (1, 1)
    assert timing.verdict == "REGRESSION" and timing.p_value is None
    assert timing.note.startswith("threshold only; significance not assessed: 1 run in baseline")
