"""Exact integers and raw samples through every path (store, CSV and Parquet exports, merge,
compare), and the store read without vitbench (pandas, DuckDB), as the README shows."""

from __future__ import annotations

import csv

import pytest

from vitbench.cli import main
from vitbench.reading import read_results
from vitbench.store import Store, read_store
from vitbench.store.export import export_store
from vitbench.sweeps.merging import merge

# Above 2^53 a float cannot hold every integer: 2^53 + 1 becomes 2^53 through a float.
EXACT = 2**53 + 1


def _store(path, macs, fingerprint="e" * 16):
    rows = [
        {"id": "a", "index": 0, "model": "vit-b/16", "spec_key": "ka", "batch_size": 1, "status": "ok", "macs": macs,
         "run_medians_s": [0.01, 0.011], "run_samples_s": [[0.01, 0.0101], [0.011, 0.0112]], "samples_s": [0.01, 0.0101, 0.011, 0.0112]},
        # a failed row without MACs: the column has a gap (the CSV then went through float)
        {"id": "b", "index": 1, "model": "resnet50", "spec_key": "kb", "batch_size": 1, "status": "error", "macs": None, "error": "boom"},
        {"id": "c", "index": 2, "model": "vit-h/14", "spec_key": "kc", "batch_size": 1, "status": "ok", "macs": 2**62 + 3},
    ]
    with Store.open(path, sweep={"fingerprint": fingerprint, "grid_size": 3}) as store:
        for row in rows:
            store.add(row)
    return rows


def test_integers_and_samples_survive_the_store_and_the_csv_export(tmp_path):
    rows = _store(tmp_path / "s", EXACT)
    records, _ = read_store(tmp_path / "s")
    assert [r["macs"] for r in records] == [EXACT, None, 2**62 + 3]
    assert records[0]["run_samples_s"] == rows[0]["run_samples_s"]  # lists of lists, exactly
    export_store(tmp_path / "s", tmp_path / "s", ["csv"])
    with open(tmp_path / "s" / "results.csv", newline="") as handle:
        cells = list(csv.DictReader(handle))
    assert [c["macs"] for c in cells] == [str(EXACT), "", str(2**62 + 3)]  # digits, never 9.007e15
    back, _ = read_results(tmp_path / "s" / "results.csv")  # the one results reader
    assert [r["macs"] for r in back] == [EXACT, None, 2**62 + 3]
    assert back[0]["run_medians_s"] == [0.01, 0.011] and back[0]["samples_s"] == rows[0]["samples_s"]


def test_parquet_export_is_exact_and_typed(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    _store(tmp_path / "s", EXACT)
    export_store(tmp_path / "s", tmp_path / "s", ["csv", "parquet"])
    table = pq.read_table(tmp_path / "s" / "results.parquet")
    assert str(table.schema.field("macs").type) == "int64"
    assert table.column("macs").to_pylist() == [EXACT, None, 2**62 + 3]
    assert table.column("run_samples_s").to_pylist()[0] == [[0.01, 0.0101], [0.011, 0.0112]]
    assert b"eeeeeeee" in table.schema.metadata[b"vitbench"]  # the sweep's fingerprint travels along


def test_merge_and_compare_keep_a_difference_of_two_above_2_to_the_53(tmp_path, capsys):
    _store(tmp_path / "base", EXACT)
    _store(tmp_path / "cur", EXACT + 2)
    merge([tmp_path / "cur"], tmp_path / "merged")
    assert read_store(tmp_path / "merged")[0][0]["macs"] == EXACT + 2
    # compare reads stores and exported CSVs through the one reader: a +2 change is a change
    for base, cur in ((tmp_path / "base", tmp_path / "merged"), (tmp_path / "base" / "results.csv", tmp_path / "merged" / "results.csv")):
        if base.suffix == ".csv":
            export_store(tmp_path / "base", tmp_path / "base")
        code = main(["compare", str(base), str(cur), "--fail-on", "macs:0", "--allow-missing-metrics", "--format", "csv"])
        out = capsys.readouterr().out
        assert code == 1 and str(EXACT) in out and str(EXACT + 2) in out


def test_the_readme_one_liners_read_a_store_without_vitbench(tmp_path):
    pd = pytest.importorskip("pandas")
    duckdb = pytest.importorskip("duckdb")
    _store(tmp_path / "s", EXACT)
    directory = str(tmp_path / "s")
    frame = pd.read_json(f"{directory}/rows.jsonl", lines=True, engine="pyarrow", dtype_backend="pyarrow")
    assert frame["macs"].tolist()[0] == EXACT and frame["macs"].isna().tolist() == [False, True, False]
    assert duckdb.sql(f"SELECT macs FROM read_json_auto('{directory}/rows.jsonl') ORDER BY index").fetchall() == [
        (EXACT,), (None,), (2**62 + 3,)
    ]
    export_store(directory, directory, ["csv", "parquet"])
    assert pd.read_parquet(f"{directory}/results.parquet", dtype_backend="pyarrow")["macs"].tolist()[0] == EXACT
    assert duckdb.sql(f"SELECT max(macs) FROM '{directory}/results.parquet'").fetchall() == [(2**62 + 3,)]
