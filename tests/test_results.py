"""The one results reader (``vitbench.reading.read_results``) and the exact CSV writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vitbench.errors import InputFileError
from vitbench.reading import read_results
from vitbench.results import (
    IDENTITY_COLUMNS,
    Records,
    csv_text,
    identity_columns,
    read_csv_records,
    write_csv,
)

BIG = 2**53 + 1  # the first integer a float64 cannot hold


def test_csv_round_trip_keeps_integers_exact_with_gaps(tmp_path):
    rows = [
        {"model": "a", "macs": BIG, "latency_p50_s": 0.5, "ok": True, "samples_s": [0.1, 0.2], "note": None},
        {"model": "b", "macs": None, "latency_p50_s": 2.0, "ok": False, "samples_s": None, "note": "x, y"},
    ]
    write_csv(rows, tmp_path / "r.csv")
    assert (tmp_path / "r.csv").read_text().splitlines()[1] == 'a,9007199254740993,0.5,true,"[0.1,0.2]",'
    records, metadata = read_results(tmp_path / "r.csv")
    assert records == rows and metadata == {}
    assert type(records[0]["macs"]) is int and type(records[1]["latency_p50_s"]) is float


def test_csv_written_by_pandas_reads_back_typed(tmp_path):
    """pandas writes an integer column with a gap as floats (16 -> 16.0): counts come back as
    ints (from the decimal text, not through float); a whole-valued measurement stays a float."""
    (tmp_path / "p.csv").write_text(
        "model,patch_size,macs_qkv,elapsed_s,img_size,flag,compile,env_cuda\n"
        "a,16.0,261439488.0,1.0,224,True,false,13.0\n"
        "b,,,2.5,224x320,,true,\n"
    )
    a, b = read_csv_records(tmp_path / "p.csv")
    assert a == {"model": "a", "patch_size": 16, "macs_qkv": 261439488, "elapsed_s": 1.0, "img_size": "224",
                 "flag": True, "compile": False, "env_cuda": "13.0"}
    assert type(a["elapsed_s"]) is float
    assert b == {"model": "b", "patch_size": None, "macs_qkv": None, "elapsed_s": 2.5, "img_size": "224x320",
                 "flag": None, "compile": True, "env_cuda": None}


def test_json_object_list_records_and_dataframe(tmp_path):
    (tmp_path / "r.json").write_text(json.dumps({"schema_version": 1, "comment": "c", "records": [{"model": "a", "macs": BIG}]}))
    records, metadata = read_results(tmp_path / "r.json")
    assert records == [{"model": "a", "macs": BIG}] and metadata == {"schema_version": 1, "comment": "c"}
    (tmp_path / "l.json").write_text(json.dumps([{"model": "a"}]))
    assert read_results(tmp_path / "l.json")[0] == [{"model": "a"}]

    given = [{"model": "a", "samples_s": "[0.5, 0.25]", "x": float("nan")}]
    assert read_results(given)[0] == [{"model": "a", "samples_s": [0.5, 0.25], "x": None}]

    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame([{"model": "a", "batch_size": 8, "t": 0.5}, {"model": "b", "batch_size": 4, "t": None}])
    records, _ = read_results(frame)
    assert records == [{"model": "a", "batch_size": 8, "t": 0.5}, {"model": "b", "batch_size": 4, "t": None}]
    assert type(records[0]["batch_size"]) is int
    assert isinstance(records, Records)


def test_store_directory_is_read_by_the_store(tmp_path):
    from vitbench.store import Store

    with Store.open(tmp_path / "s") as store:
        store.add({"id": "1", "model": "a", "macs": BIG, "run_medians_s": [0.1, 0.11], "status": "ok"})
    records, _ = read_results(tmp_path / "s")
    (record,) = records
    assert record["macs"] == BIG and record["run_medians_s"] == [0.1, 0.11]


@pytest.mark.parametrize(
    "name, content, fragment",
    [
        ("ragged.csv", "model,macs\na,1\nb,2,3\n", "row 3 has 3 fields, the header (row 1) has 2"),
        ("dup.csv", "model,macs,macs\na,1,2\n", "column 'macs' appears more than once"),
        ("new.json", '{"schema_version": 99, "records": []}', "schema_version=99 is newer"),
        ("bad.json", '{"records": [1, 2]}', "records must be objects"),
        ("broken.json", '{"records": [', "not valid JSON"),
        ("empty.csv", "  \n", "the file is empty"),
    ],
)
def test_errors_are_one_line_and_name_the_role_and_file(tmp_path, name, content, fragment):
    (tmp_path / name).write_text(content)
    with pytest.raises(InputFileError) as info:
        read_results(tmp_path / name, role="baseline")
    message = str(info.value)
    assert fragment in message and message.startswith(f"baseline file='{tmp_path / name}'")
    assert "\n" not in message


def test_missing_file_and_a_single_mapping(tmp_path):
    with pytest.raises(InputFileError, match="current file=.*: no such file"):
        read_results(tmp_path / "nope.csv", role="current")
    with pytest.raises(InputFileError, match="expected a list of records"):
        read_results({"model": "a"})


def test_committed_baseline_reads_with_exact_counts():
    records = read_csv_records(Path(__file__).resolve().parents[1] / "benchmarks" / "baselines" / "results-baseline.csv")
    vit_ti = next(r for r in records if r["model"] == "vit-ti/16")
    assert vit_ti["macs"] == 1_253_683_200 and vit_ti["params"] == 5_717_416 and vit_ti["patch_size"] == 16


def test_identity_columns_multiply_macs_exactly():
    row = identity_columns(model="m", kind="vit", spec_key="k", img_size=224, patch_size=16, batch_size=3,
                           params=10, macs_per_image=BIG)
    assert tuple(row) == IDENTITY_COLUMNS and row["macs"] == 3 * BIG
    auto = identity_columns(model="m", kind="vit", spec_key="k", img_size=224, patch_size=16, batch_size="auto",
                            params=10, macs_per_image=BIG)
    assert auto["macs"] is None


def test_csv_text_columns_and_numpy_scalars():
    np = pytest.importorskip("numpy")
    text = csv_text([{"a": np.int64(BIG), "b": np.float64(0.25), "c": {"k": 1}}], columns=["c", "a", "b"])
    assert text == 'c,a,b\n"{""k"":1}",9007199254740993,0.25\n'
