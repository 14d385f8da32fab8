"""Issue 33, scale and CSV cells: the results CSV reader's bounded numbers (named by file, row and
column), its typing kept exact while it reads only the columns asked for, the fast float-list
and Welch paths equal to what they replace, merge's coverage check not looping over a claimed
grid, and a sweep file of many values parsed once."""

from __future__ import annotations

import json
import math
import random
import time

import pytest

from vitbench.csv_records import _list_or_text, records_from_csv
from vitbench.errors import InputFileError

WHERE = "file='r.csv'"


def _read(text: str, columns=None):
    return records_from_csv(text, WHERE, columns)


@pytest.mark.parametrize("cell, why", [
    ("7" * 1001, "1,001 digits"), ("-" + "9" * 5000, "5,000 digits"), ("+" + "1" * 4301, "4,301 digits"),
])
def test_an_integer_of_too_many_digits_is_refused_naming_row_and_column(cell, why):
    text = f"model,macs,latency_p50_s\na,1,0.5\n\nb,2,0.5\nc,{cell},0.5\n"  # the blank line counts
    with pytest.raises(InputFileError) as error:
        _read(text)
    message = str(error.value)
    assert message.startswith(f"{WHERE}: row 5, column 'macs': ") and why in message and "\n" not in message
    assert len(message) < 160  # the value shortened


@pytest.mark.parametrize("column", ["macs", "latency_p50_s"])
def test_1000_digits_are_still_read_exactly(column):
    cell = "9" * 1000
    [row] = _read(f"model,{column}\na,{cell}\n")
    assert row[column] == 10**1000 - 1


@pytest.mark.parametrize("cell", ["inf", "-inf", "Infinity", "1e9999999", "1e1000"])
def test_infinity_or_overflow_in_a_column_of_counts_is_refused(cell):
    with pytest.raises(InputFileError, match=rf"row 3, column 'macs': '{cell}' is not a count"):
        _read(f"model,macs\na,5926016\nb,{cell}\n")


@pytest.mark.parametrize("cell, value", [("inf", math.inf), ("1e9999999", math.inf), ("-1e400", -math.inf)])
def test_infinity_in_a_measurement_column_reads_as_infinity(cell, value):
    rows = _read(f"model,latency_p50_s\na,0.25\nb,{cell}\n")
    assert rows[1]["latency_p50_s"] == value and rows[0]["latency_p50_s"] == 0.25


@pytest.mark.parametrize("cell", ["nan", "NaN", "NAN", "", "None", "null"])
@pytest.mark.parametrize("column", ["macs", "latency_p50_s", "model"])
def test_nan_is_a_missing_cell_in_every_column(cell, column):
    rows = _read(f"k,{column}\n1,{cell}\n2,{cell}\n")
    assert rows[0][column] is None


def test_typing_is_exact_and_per_column():
    text = ("model,macs,batch_size,latency_p50_s,spec_key,env_torch,ok,run_medians_s,warnings\n"
            "a,9007199254740993,16.0,2,k1,2.10,true,\"[0.1,0.2]\",x\n"
            "b,18014398509481985,1e3,0.5,k2,2.9,false,\"[1,2.0]\",\n")
    a, b = _read(text)
    assert a["macs"] == 9007199254740993 and b["macs"] == 18014398509481985  # beyond a float's 2^53
    assert (a["batch_size"], b["batch_size"]) == (16, 1000) and type(a["batch_size"]) is int
    assert a["latency_p50_s"] == 2 and type(b["latency_p50_s"]) is float  # a measurement column
    assert (a["env_torch"], b["env_torch"]) == ("2.10", "2.9")  # text columns stay text
    assert (a["ok"], b["ok"]) == (True, False)
    assert a["run_medians_s"] == [0.1, 0.2] and [type(x) for x in b["run_medians_s"]] == [int, float]
    assert a["run_medians_s"] is not _read(text)[0]["run_medians_s"] and b["warnings"] is None


def test_equal_list_cells_are_distinct_lists():
    rows = _read('model,run_medians_s\na,"[0.5,0.6]"\nb,"[0.5,0.6]"\n')
    assert rows[0]["run_medians_s"] == rows[1]["run_medians_s"]
    assert rows[0]["run_medians_s"] is not rows[1]["run_medians_s"]


@pytest.mark.parametrize("cell", [
    "[0.1,0.2]", "[ 1e400 , -2.5e-3,3.0 ]", "[01.5]", "[1.5,]", "[.5]", "[1.]", "[-0.0,1E5]", "[0.5,\x0c0.1]",
    "[1,2]", "[1.0,2]", "[]", "[[0.1],[0.2]]", '["a"]', "[0.1, 0.2", "[NaN]",
])
def test_the_float_list_fast_path_reads_what_json_reads(cell):
    try:
        expected = json.loads(cell)
    except ValueError:
        expected = cell
    got = _list_or_text(cell)
    assert got == expected or (got != got and expected != expected)
    assert type(got) is type(expected)
    if isinstance(got, list):
        assert [type(x) for x in got] == [type(x) for x in expected]


def test_only_the_columns_asked_for_are_read_and_typed():
    text = "model,macs,huge,latency_p50_s\na,1," + "7" * 5000 + ",0.5\nb,2,3,0.25\n"
    rows = _read(text, {"model", "latency_p50_s"})
    assert rows == [{"model": "a", "latency_p50_s": 0.5}, {"model": "b", "latency_p50_s": 0.25}]
    assert _read("model,macs\n", {"model"}) == []
    assert _read("model,macs\na,1\n", set()) == [{}]
    with pytest.raises(InputFileError, match="row 3 has 1 fields"):
        _read("model,macs\na,1\nb\n", {"model"})  # a ragged row is refused whatever is read


def test_a_csv_of_many_rows_is_read_in_blocks():
    rows = _read("model,macs,latency_p50_s\n" + "".join(f"m{i % 7},{i},{i / 8}\n" for i in range(25_001)))
    assert len(rows) == 25_001 and rows[-1] == {"model": "m3", "macs": 25_000, "latency_p50_s": 3125.0}
    assert rows[10_000]["macs"] == 10_000 and type(rows[8]["latency_p50_s"]) is float


def test_welch_p_equals_scipys_ttest():
    from scipy import stats

    from vitbench.measure.stats import run_shift

    rng = random.Random(33)
    for _ in range(40):
        a = [math.exp(rng.gauss(0, rng.choice([1e-3, 0.1, 1]))) for _ in range(rng.randint(2, 7))]
        b = [math.exp(rng.gauss(rng.choice([0, 0.05]), rng.choice([1e-3, 0.1]))) for _ in range(rng.randint(2, 7))]
        margin, side = rng.choice([1.0, 1.05, 0.95]), rng.choice(["two-sided", "greater", "less"])
        shifted = [math.log(x) - math.log(margin) for x in b]
        expected = stats.ttest_ind(shifted, [math.log(x) for x in a], equal_var=False, alternative=side).pvalue
        assert run_shift(a, b, margin, side).p == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_merge_coverage_does_not_loop_over_a_claimed_grid():
    from vitbench.sweeps.merging import coverage

    rows = [{"index": i} for i in (0, 1, 5)]
    infos = [("a", {"sweep": {"grid_size": 10**12, "shard_count": 10**12}})]
    started = time.perf_counter()
    missing, warnings = coverage(rows, infos)
    assert time.perf_counter() - started < 1
    assert missing == 10**12 - 3
    assert warnings[0].startswith("shards missing from the merge: 3/1000000000000, 4/1000000000000, 5/1000000000000, 7/")
    assert f"and {10**12 - 3 - 20:,} more" in warnings[0]
    few, _ = coverage([{"index": 0}], [("a", {"sweep": {"grid_size": 4, "shard_count": 2}})])
    assert few == 3 and "2/2 (3 of 4 configurations absent)" in coverage([{"index": 0}], [("a", {"sweep": {"grid_size": 4, "shard_count": 2}})])[1][0]


def test_a_sweep_file_of_many_values_is_parsed_once_and_fast(tmp_path):
    from vitbench.sweeps.plan import load_sweep_file

    values = ",".join(str(1 + i % 12) for i in range(20_000))
    path = tmp_path / "many.yaml"
    path.write_text(f"name: many\nmodels: [mnist-vit]\nstages: [analytic]\ngrid: {{depth: [{values}]}}\n")
    started = time.perf_counter()
    plan = load_sweep_file(path)
    assert time.perf_counter() - started < 5  # the pure-Python parser, twice: about 7 s here
    [study] = plan.studies
    assert dict(study.grid)["depth"] == tuple(range(1, 13))
