"""The columnar reader (:mod:`vitbench.csv_columns`) and gate (:mod:`vitbench.gate.columnar`)
against the record path they stand in for on large files: on generated files, every record the
columnar reader answers for equals the record reader's (value and type), and every comparison
the columnar gate answers for equals the record path's (p-values to rounding: numpy's sums of
logarithms against ``math.fsum``). Each test also checks that the columnar path was taken, so
none passes by falling back."""

from __future__ import annotations

import csv
import dataclasses
import io
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vitbench import csv_columns
from vitbench.csv_records import records_from_csv
from vitbench.errors import InputFileError
from vitbench.gate import compare
from vitbench.gate import comparing as verdicts  # (its COLUMNAR_MIN_BYTES: 0 forces the columnar gate)
from vitbench.gate.array_verdicts import Verdicts as _Verdicts
from vitbench.reporting import gate as gate_report

SETTINGS = settings(derandomize=True, database=None, deadline=None, max_examples=40, print_blob=False,
                    suppress_health_check=list(HealthCheck))


def _same(a, b) -> bool:
    """Equal values of equal types (lists element by element)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and (a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b)))


# --------------------------------------------------------------------------- the reader

_CELLS = st.one_of(
    st.integers(-10**20, 10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(0, 1e6).map(lambda x: f"{x:.3e}"),
    st.sampled_from(["", "nan", "None", "16.0", "+5", "1e3", "007", "-0", " 5", "1_000", "true", "x", "1e999",
                     "[0.5, 1.5]", "[1e-3,2e-3]", "[]", "[1, 2]", "auto"]),
    st.lists(st.floats(1e-9, 10), min_size=1, max_size=4).map(lambda v: "[" + ",".join(map(repr, v)) + "]"),
)
_NAMES = st.sampled_from(["latency_p50_s", "peak_memory_bytes", "macs", "params", "throughput_img_s", "run_medians_s",
                          "samples_s", "env_torch", "tokens", "note", "attn_matmul_share", "batch_size", "status"])


def _write(path, header, rows) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    path.write_text(buffer.getvalue())
    return buffer.getvalue()


@SETTINGS
@given(columns=st.lists(_NAMES, min_size=1, max_size=5, unique=True), data=st.data())
@pytest.mark.slow
def test_every_record_the_columnar_reader_gives_is_the_record_readers(tmp_path_factory, columns, data):
    header = ["model", *columns]
    n = data.draw(st.integers(1, 30))
    kinds = {c: data.draw(st.lists(_CELLS, min_size=1, max_size=6)) for c in columns}
    rows = [[f"m{i % 7}"] + [data.draw(st.sampled_from(kinds[c])) for c in columns] for i in range(n)]
    path = tmp_path_factory.mktemp("r") / "r.csv"
    text = _write(path, header, rows)
    try:
        expected = records_from_csv(text, "f", set(header))
    except Exception:  # noqa: BLE001 (a refused file: the columnar reader must not answer for it)
        expected = None
    for limit in (1, csv_columns.DISTINCT_LIMIT):  # many distinct cells (Arrow's typing), few (the record rule)
        table = csv_columns.read_csv_columns(path, "f", set(header), min_bytes=0, distinct_limit=limit)
        if table is None:
            continue
        assert expected is not None
        got = [table.record(i) for i in range(table.n)]
        assert len(got) == len(expected)
        for mine, theirs in zip(got, expected):
            assert mine.keys() == theirs.keys()
            assert all(_same(mine[k], theirs[k]) for k in mine), (mine, theirs)


def test_the_columnar_reader_answers_for_a_plain_results_file(tmp_path):
    """Not vacuous: a plain file is read on columns, by both typings, equal to the record reader."""
    header = ["model", "batch_size", "latency_p50_s", "peak_memory_bytes", "run_medians_s", "macs"]
    rows = [[f"m{i}", str(1 + i % 4), repr(0.001 * (1 + i / 97)), str(1000 + i), f"[{0.001 * (1 + i / 89)!r},0.002]",
             str(10**15 + i)] for i in range(200)]
    path = tmp_path / "r.csv"
    text = _write(path, header, rows)
    expected = records_from_csv(text, "f", set(header))
    for limit in (1, 10**6):
        table = csv_columns.read_csv_columns(path, "f", set(header), min_bytes=0, distinct_limit=limit)
        assert table is not None
        assert {name: c.kind for name, c in table.columns.items()}["latency_p50_s"] == ("mixed" if limit == 1 else "values")
        assert all(all(_same(table.record(i)[k], r[k]) for k in r) for i, r in enumerate(expected))


@pytest.mark.parametrize("text", [
    "model,x\r\na,1\r\n",            # \r: the record reader's
    "model,x\na,1\nb\n",             # a short row: refused with its row number by the record reader
    "model,x\na,'=1\n",              # a quoted cell (csv_cell's ')
    "\ufeffmodel,x\na,1\n",          # a byte-order mark
    "model,model\na,1\n",            # a name twice
])
def test_files_the_columnar_reader_leaves_to_the_record_reader(tmp_path, text):
    path = tmp_path / "r.csv"
    path.write_text(text)
    assert csv_columns.read_csv_columns(path, "f", {"model", "x"}, min_bytes=0) is None


# --------------------------------------------------------------------------- the gate


def _results(draw, n: int, shift: float, seed: int) -> list[list[str]]:
    rows = []
    for i in range(n):
        step = 0.001 * (1 + ((i * 7919 + seed) % 101) / 50)
        runs = draw(st.sampled_from([5, 5, 5, 1, 2, 0]))
        factor = shift if draw(st.booleans()) else 1.0
        medians = [step * factor * (1 + 0.01 * ((k * 31 + i + seed) % 7)) for k in range(runs)]
        status = draw(st.sampled_from(["ok"] * 12 + ["oom", ""]))
        latency = draw(st.sampled_from([repr(step * factor)] * 10 + ["", "0", "-1", "inf"]))
        memory = draw(st.sampled_from([str(1000 + i), str(1000 + i), str(int((1000 + i) * factor * 1.2)), ""]))
        warning = draw(st.sampled_from([""] * 6 + ["busy machine: load 1.3"]))
        rows.append([f"net-{i % 5}", str(1 + i // 5), "cpu", "infer", "fp32", status, repr(1 / (step * factor)),
                     latency, memory, str(10**9 + i), "[" + ",".join(map(repr, medians)) + "]" if medians else "",
                     "[0.001,0.002]", warning, draw(st.sampled_from(["2.14.1", "2.15.0"]))])
    return rows


HEADER = ["model", "batch_size", "device", "mode", "precision", "status", "throughput_img_s", "latency_p50_s",
          "peak_memory_bytes", "macs", "run_medians_s", "samples_s", "warnings", "env_torch"]


def _compare_both(monkeypatch, a, b, rules):
    monkeypatch.setattr(verdicts, "COLUMNAR_MIN_BYTES", 0)
    columnar = compare(a, b, rules)
    monkeypatch.setattr(verdicts, "COLUMNAR_MIN_BYTES", 1 << 60)
    records = compare(a, b, rules)
    return columnar, records


def _assert_equal_results(columnar, records, answered: bool = True) -> None:
    """The two results agree; ``answered``: the columnar gate gave the first (not the record path)."""
    if answered:
        assert isinstance(columnar.rows, _Verdicts)
    assert len(columnar.rows) == len(records.rows)
    for mine, theirs in zip(columnar.rows, records.rows):
        assert dataclasses.replace(mine, p_value=None) == dataclasses.replace(theirs, p_value=None)
        assert (mine.p_value is None) == (theirs.p_value is None)
        if mine.p_value is not None:
            assert mine.p_value == pytest.approx(theirs.p_value, rel=1e-9, abs=1e-12)
    mine, theirs = columnar.as_dict(), records.as_dict()
    for key in theirs:
        if key not in ("rows", "regressions"):
            assert mine[key] == theirs[key], key
    assert columnar.counts() == records.counts() and list(columnar.counts()) == list(records.counts())
    assert [r.configuration for r in columnar.failed_rows] == [r.configuration for r in records.failed_rows]


@SETTINGS
@given(data=st.data())
@pytest.mark.slow
def test_every_verdict_of_the_columnar_gate_is_the_record_paths(tmp_path_factory, monkeypatch, data):
    n_base, n_cur = data.draw(st.integers(1, 40)), data.draw(st.integers(1, 40))
    base_rows = _results(data.draw, n_base, 1.0, 0)
    cur_rows = _results(data.draw, n_cur, data.draw(st.sampled_from([1.0, 1.02, 1.3, 0.8])), 3)
    folder = tmp_path_factory.mktemp("g")
    _write(folder / "a.csv", HEADER, base_rows)
    _write(folder / "b.csv", HEADER, cur_rows)
    rules = data.draw(st.sampled_from([None, ["throughput:-5%", "latency_p50:+3%", "peak_memory:+10", "macs:0"],
                                       ["throughput:10%", "peak_memory_bytes:+0%"], ["latency_p50_s:-2%"]]))
    flags = data.draw(st.sampled_from([{}, {"allow_missing_rows": True}]))
    # few distinct values a column (typed per value) or many (Arrow's typing, which leaves a column
    # of text such as "inf" to the record reader: then the record path answers both)
    limit = data.draw(st.sampled_from([1, csv_columns.DISTINCT_LIMIT]))
    monkeypatch.setattr(csv_columns, "DISTINCT_LIMIT", limit)
    monkeypatch.setattr(verdicts, "COLUMNAR_MIN_BYTES", 0)
    try:
        columnar = compare(folder / "a.csv", folder / "b.csv", rules, **flags)
    except Exception as exc:  # noqa: BLE001 (the record path must raise the same)
        monkeypatch.setattr(verdicts, "COLUMNAR_MIN_BYTES", 1 << 60)
        with pytest.raises(type(exc)) as caught:
            compare(folder / "a.csv", folder / "b.csv", rules, **flags)
        assert str(caught.value) == str(exc)
        return
    monkeypatch.setattr(verdicts, "COLUMNAR_MIN_BYTES", 1 << 60)
    records = compare(folder / "a.csv", folder / "b.csv", rules, **flags)
    _assert_equal_results(columnar, records, answered=limit > 1)
    for fmt in ("table", "markdown", "csv", "json"):
        assert _close_text(gate_report.render(columnar, fmt)) == _close_text(gate_report.render(records, fmt))


def _close_text(text: str) -> str:
    """A rendering with its p-values cut to 6 significant digits (they agree to rounding)."""
    import re

    return re.sub(r'("p_value": |p=|,)(\d\.\d{6})\d*(e-?\d+)?', r"\1\2\3", text)


@pytest.mark.parametrize("limit", [1, csv_columns.DISTINCT_LIMIT])
def test_the_columnar_gate_finds_a_regression_among_plain_rows(tmp_path, monkeypatch, limit):
    """Not vacuous: a 30% slowdown with 5 runs a side is a significant regression on both paths,
    with each column typed per distinct value or by Arrow (``limit`` 1)."""
    monkeypatch.setattr(csv_columns, "DISTINCT_LIMIT", limit)
    base = [[f"net-{i}", "8", "cpu", "infer", "fp32", "ok", repr(8 / 0.01), repr(0.01), "1000", "5",
             "[0.0100,0.0101,0.0102,0.0099,0.0100]", "", "", "2.14.1"] for i in range(10)]
    cur = [row[:] for row in base]
    cur[3][6] = repr(8 / 0.013)
    cur[3][10] = "[0.0130,0.0131,0.0132,0.0129,0.0130]"
    _write(tmp_path / "a.csv", HEADER, base)
    _write(tmp_path / "b.csv", HEADER, cur)
    columnar, records = _compare_both(monkeypatch, tmp_path / "a.csv", tmp_path / "b.csv", None)
    _assert_equal_results(columnar, records)
    assert [(r.configuration, r.metric) for r in columnar.regressions] == [("net-3 b8 cpu infer fp32", "throughput_img_s")]
    assert columnar.exit_code == 1


def test_a_large_comparison_lists_only_what_is_not_ok(tmp_path, monkeypatch):
    base = [[f"net-{i}", "8", "cpu", "infer", "fp32", "ok", repr(8 / 0.01), repr(0.01), "1000", "5",
             "[0.0100,0.0101,0.0102,0.0099,0.0100]", "", "busy machine: load 2", "2.14.1"] for i in range(40)]
    cur = [row[:] for row in base]
    cur[7][8] = "2000"
    _write(tmp_path / "a.csv", HEADER, base)
    _write(tmp_path / "b.csv", HEADER, cur)
    monkeypatch.setattr(gate_report, "LISTED_ROWS", 10)
    monkeypatch.setattr(gate_report, "LISTED_WARNINGS", 5)
    result, _ = _compare_both(monkeypatch, tmp_path / "a.csv", tmp_path / "b.csv", None)
    text = gate_report.render(result, "markdown")
    assert "net-7 b8 cpu infer fp32" in text and "net-8 b8" not in text.split("**Warnings**")[0]
    assert f"{len(result.rows) - 1:,} of {len(result.rows):,} comparisons not listed" in text
    assert "(80 rows, e.g. baseline net-0 b8 cpu infer fp32: busy machine: load 2)" in text


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_a_large_csv_or_json_report_written_in_chunks_is_the_whole_text(tmp_path, monkeypatch, fmt):
    """The CLI writes a report of over STREAM_ROWS comparisons as it is made; the chunks make the
    text render gives (checked here with chunks of 7 rows), for either path's result."""
    base = [[f"net-{i}", "8", "cpu", "infer", "fp32", "ok", repr(8 / 0.01), repr(0.01), "1000", "5",
             "[0.0100,0.0101,0.0102,0.0099,0.0100]", "[0.01]", "", "2.14.1"] for i in range(12)]
    cur = [row[:] for row in base]
    cur[2][5] = "oom"
    cur[5][6] = repr(8 / 0.013)
    cur[5][10] = "[0.0130,0.0131,0.0132,0.0129,0.0130]"
    _write(tmp_path / "a.csv", HEADER, base)
    _write(tmp_path / "b.csv", HEADER, cur)
    monkeypatch.setattr(gate_report, "STREAM_ROWS", 0)
    monkeypatch.setattr(gate_report, "_CHUNK_ROWS", 7)
    for result in _compare_both(monkeypatch, tmp_path / "a.csv", tmp_path / "b.csv", None):
        chunks = list(gate_report.render_chunks(result, fmt))
        assert len(chunks) > 3
        assert "".join(chunks) == gate_report.render(result, fmt)


def test_the_cli_writes_a_large_report_in_chunks(tmp_path, monkeypatch):
    from vitbench.cli import main

    rows = [[f"net-{i}", "8", "cpu", "infer", "fp32", "ok", repr(8 / 0.01), repr(0.01), "1000", "5",
             "[0.0100,0.0101,0.0102,0.0099,0.0100]", "", "", "2.14.1"] for i in range(30)]
    _write(tmp_path / "a.csv", HEADER, rows)
    monkeypatch.setattr(gate_report, "STREAM_ROWS", 10)
    monkeypatch.setattr(gate_report, "_CHUNK_ROWS", 4)
    assert main(["compare", str(tmp_path / "a.csv"), str(tmp_path / "a.csv"), "-o", str(tmp_path / "out.csv")]) == 0
    written = list(csv.reader(io.StringIO((tmp_path / "out.csv").read_text())))
    assert len(written) == 1 + 30 * 4 and written[0][:2] == ["configuration", "metric"]  # 4 metrics both files have


_GOOD = "net-1,8,cpu,infer,fp32,ok,800.0,0.01,1000,5,\"[0.01,0.0101]\",,,2.14.1\n"
HOSTILE = {
    "header only": ",".join(HEADER) + "\n",
    "a name twice": ",".join(HEADER[:-1] + ["model"]) + "\n" + _GOOD,
    "no model column": ",".join(["name"] + HEADER[1:]) + "\n" + _GOOD.replace("net-1", "x"),
    "a short row": ",".join(HEADER) + "\n" + _GOOD + "net-2,8\n",
    "a long row": ",".join(HEADER) + "\n" + _GOOD.replace("\n", ",extra\n"),
    "NUL": ",".join(HEADER) + "\n" + _GOOD.replace("net-1", "net\x00-1"),
    "an unclosed quote": ",".join(HEADER) + "\n" + _GOOD + 'net-3,8,cpu,infer,fp32,ok,800.0,0.01,1000,5,"[0.01\n',
    "a nested list": ",".join(HEADER) + "\n" + _GOOD.replace('"[0.01,0.0101]"', '"' + "[" * 500 + "]" * 500 + '"'),
    "infinite throughput": ",".join(HEADER) + "\n" + _GOOD.replace("800.0", "1e999"),
    "a batch of 0": ",".join(HEADER) + "\n" + _GOOD.replace(",8,", ",0,"),
    "a batch of text": ",".join(HEADER) + "\n" + _GOOD.replace(",8,", ",eight,"),
    "1000-digit memory": ",".join(HEADER) + "\n" + _GOOD.replace(",1000,", "," + "9" * 1001 + ","),
    "a list for a count": ",".join(HEADER) + "\n" + _GOOD.replace(",1000,", ',"[1,2]",'),
    "text timings": ",".join(HEADER) + "\n" + _GOOD.replace('"[0.01,0.0101]"', "fast"),
    "a formula name": ",".join(HEADER) + "\n" + _GOOD.replace("net-1", "=cmd|' /C calc'!A0"),
    "a control character": ",".join(HEADER) + "\n" + _GOOD.replace("net-1", "net\x1b[31m-1"),
    "a surrogate-free non-UTF-8 byte": None,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_file_gets_the_record_paths_answer(tmp_path, monkeypatch, name):
    """Whatever the file, the columnar path answers as the record path does: the same result or
    the same one-line error, never an error of its own."""
    path = tmp_path / "bad.csv"
    if HOSTILE[name] is None:
        path.write_bytes((",".join(HEADER) + "\n" + _GOOD).encode().replace(b"net-1", b"net-\xff1"))
    else:
        path.write_text(HOSTILE[name])
    good = tmp_path / "good.csv"
    good.write_text(",".join(HEADER) + "\n" + _GOOD)
    outcomes = []
    for limit in (0, 1 << 60):
        monkeypatch.setattr(verdicts, "COLUMNAR_MIN_BYTES", limit)
        try:
            result = compare(good, path)
            outcomes.append(("result", gate_report.render(result, "json")))
        except Exception as exc:  # noqa: BLE001
            outcomes.append((type(exc).__name__, str(exc)))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] in ("result", "InputFileError", "RuleError", "SpecError")


def test_without_pyarrow_large_files_take_the_record_path(tmp_path, monkeypatch):
    import sys

    _write(tmp_path / "a.csv", HEADER, [[f"net-{i}", "8", "cpu", "infer", "fp32", "ok", "800.0", "0.01", "1000", "5",
                                          "[0.01,0.0101]", "", "", "2.14.1"] for i in range(5)])
    monkeypatch.setitem(sys.modules, "pyarrow.csv", None)  # import pyarrow.csv: ImportError
    assert csv_columns.read_csv_columns(tmp_path / "a.csv", "f", set(HEADER), min_bytes=0) is None
    monkeypatch.setattr(verdicts, "COLUMNAR_MIN_BYTES", 0)
    result = compare(tmp_path / "a.csv", tmp_path / "a.csv")
    assert isinstance(result.rows, tuple) and result.exit_code == 0


# the cases a review found where the columnar path answered otherwise (each now the record path's answer)
REVIEWED = {
    "two label tuples, one text (an empty part)": ("model,device,mode,throughput_img_s\nvit,cpu,,100.0\nvit,,cpu,100.0\n",
                                                   None, ["throughput:-5%"], 65_536),
    "two label tuples, one text (a space)": ("model,img_size,throughput_img_s\nvit 8px,,100.0\nvit,8,100.0\n",
                                             None, ["throughput:-5%"], 65_536),
    "19-digit integers among decimals": ("model,macs\na,1234567890123456789\nb,2.5\n",
                                         "model,macs\na,1234567890123456788\nb,2.5\n", ["macs:0"], 1),
    "19-digit integers in a timing column": ("model,latency_p50_s\na,1234567890123456789\nb,2.5\n",
                                             "model,latency_p50_s\na,1234567890123456788\nb,2.5\n", ["latency_p50_s:0"], 1),
    "a 1001-digit count": ("model,throughput_img_s,macs\na,100.0," + "1" * 1001 + "\nb,100.0,2.5\n", None,
                           ["throughput:-5%"], 1),
    "an infinite count": ("model,peak_memory_bytes\na,100\nb,1e999\n", "model,peak_memory_bytes\na,100\nb,200\n",
                          ["peak_memory:+10%"], 1),
    "a first character of JSON": ("[x],model,throughput_img_s\n1,vit,100.0\n", None, ["throughput:-5%"], 65_536),
}


@pytest.mark.parametrize("name", sorted(REVIEWED))
def test_cases_a_review_found_get_the_record_paths_answer(tmp_path, monkeypatch, name):
    base_text, cur_text, rules, limit = REVIEWED[name]
    (tmp_path / "a.csv").write_text(base_text)
    (tmp_path / "b.csv").write_text(cur_text or base_text)
    monkeypatch.setattr(csv_columns, "DISTINCT_LIMIT", limit)
    outcomes = []
    for columnar in (True, False):
        monkeypatch.setattr(verdicts, "COLUMNAR_MIN_BYTES", 0 if columnar else 1 << 60)
        try:
            result = compare(tmp_path / "a.csv", tmp_path / "b.csv", rules)
            outcomes.append(("result", _close_text(gate_report.render(result, "json"))))
        except Exception as exc:  # noqa: BLE001
            outcomes.append((type(exc).__name__, str(exc)))
    assert outcomes[0] == outcomes[1]


def _runs_file(path, latency: float, runs: list[float]) -> None:
    path.write_text("model,batch_size,device,mode,precision,status,latency_p50_s,throughput_img_s,run_medians_s\n"
                    f'm1,8,cpu,infer,fp32,ok,{latency!r},{8 / latency!r},"[{", ".join(map(repr, runs))}]"\n')


# runs that do not vary give p = 0 or 1 by the sign of a difference of logarithms; a second review
# found numpy's log one unit in the last place from math.log's, which flipped such verdicts
SIGN_CASES = {
    "a 5% slowdown, runs that do not vary (default rules)": (0.36, [0.36, 0.36], 0.378, [0.378, 0.378], None, 0.05),
    "neighbouring floats, equal math.log (exact rule)": (0.336302971536452, [0.336302971536452] * 2,
                                                         0.33630297153645206, [0.33630297153645206] * 2,
                                                         ["latency_p50:0"], 0.05),
    "neighbouring floats, different math.log (exact rule)": (0.18049910918496706, [0.18049910918496706] * 2,
                                                             0.1804991091849671, [0.1804991091849671] * 2,
                                                             ["latency_p50:0"], 0.05),
    "runs differing only in the last digit": (34.57069577046053, [34.57069577046053] * 3 + [34.57069577046054, 34.57069577046053],
                                              34.570695770460546, [34.570695770460546] * 5, ["latency_p50:0"], 0.01),
    "a p within rounding of alpha": (0.01, [0.01, 0.0101, 0.0099], 0.0106, [0.0106, 0.0107, 0.0105], ["latency:+5%"],
                                     0.1492155599102109),
}


@pytest.mark.parametrize("name", sorted(SIGN_CASES))
def test_verdicts_decided_by_a_rounding_are_the_record_paths(tmp_path, monkeypatch, name):
    base_latency, base_runs, cur_latency, cur_runs, rules, alpha = SIGN_CASES[name]
    _runs_file(tmp_path / "a.csv", base_latency, base_runs)
    _runs_file(tmp_path / "b.csv", cur_latency, cur_runs)
    columnar, records = [], []
    for limit, out in ((0, columnar), (1 << 60, records)):
        monkeypatch.setattr(verdicts, "COLUMNAR_MIN_BYTES", limit)
        out.append(compare(tmp_path / "a.csv", tmp_path / "b.csv", rules, alpha=alpha))
    (mine,), (theirs,) = columnar, records
    assert [(r.metric, r.verdict, r.p_value) for r in mine.rows] == [(r.metric, r.verdict, r.p_value) for r in theirs.rows]
    assert mine.exit_code == theirs.exit_code


# --- high-cardinality labels (issue 45: 10^6 distinct model names took 201 s and 3.2 GB) -------------
#: model names that make labels clash or read oddly: spaces (two tuples of parts, one text), empty
#: and missing cells, numeric text, surrounding blanks; a list-like one (not a model name: the
#: record path names it) only where ``odd`` is "list"
_ODD_NAMES = ["net a", "net", "", "nan", "None", "007", " 7 ", "7", "x y z", "net  a", "net a ", "net\ta"]


@pytest.mark.parametrize("limit", [4, csv_columns.DISTINCT_LIMIT])
@pytest.mark.parametrize("odd", ["", "odd", "list"])
def test_a_label_column_of_many_distinct_names_gets_the_record_paths_verdicts(tmp_path, monkeypatch, limit, odd):
    """Every row its own model name (the label column past ``limit`` distinct cells: kept as Arrow
    strings, dictionary-encoded once), with names that make labels clash or not; rows added and
    removed; the columnar gate answers and agrees with the record path."""
    monkeypatch.setattr(csv_columns, "DISTINCT_LIMIT", limit)
    names = [f"net-{i}" for i in range(60)]
    if odd:
        names[: len(_ODD_NAMES)] = _ODD_NAMES
    if odd == "list":
        names[30] = "[0.5]"
    def row(name, i, step):
        runs = [step * (1 + 0.01 * k) for k in range(5)]
        return [name, str(1 + i % 3), "cpu", "infer", "fp32", "ok", repr(8 / step), repr(step), str(1000 + i), "5",
                "[" + ",".join(map(repr, runs)) + "]", "", "busy machine" if i % 7 == 0 else "", "2.14.1"]

    base = [row(name, i, 0.01) for i, name in enumerate(names[:55])]
    cur = [row(name, i, 0.013 if i == 20 else 0.01) for i, name in enumerate(names) if i != 3]
    _write(tmp_path / "a.csv", HEADER, base)
    _write(tmp_path / "b.csv", HEADER, cur)
    table = csv_columns.read_csv_columns(tmp_path / "a.csv", "f", set(HEADER), min_bytes=0, distinct_limit=limit)
    assert (table is None) == (odd == "list")
    if table is not None:
        assert table.columns["model"].kind == "values" and len(table.columns["model"].values) >= 50
    if odd == "list":  # both paths refuse the file, in the same words
        messages = []
        for min_bytes in (0, 1 << 60):
            monkeypatch.setattr(verdicts, "COLUMNAR_MIN_BYTES", min_bytes)
            with pytest.raises(InputFileError, match=r"row 31: model=\[0.5\]: must be a model name") as caught:
                compare(tmp_path / "a.csv", tmp_path / "b.csv")
            messages.append(str(caught.value))
        assert messages[0] == messages[1]
        return
    columnar, records = _compare_both(monkeypatch, tmp_path / "a.csv", tmp_path / "b.csv", None)
    _assert_equal_results(columnar, records)
    assert list(columnar.added) == list(records.added) and list(columnar.removed) == list(records.removed)
    assert columnar.exit_code == records.exit_code == 1
    for fmt in ("table", "markdown", "csv", "json"):
        assert _close_text(gate_report.render(columnar, fmt)) == _close_text(gate_report.render(records, fmt))
