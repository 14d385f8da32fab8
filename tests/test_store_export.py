"""Exports of a store (:mod:`vitbench.store.export`): the CSV a chunk of rows at a time (one
header, every row, whatever the chunk boundaries), Parquet columns for values pyarrow cannot type
alone, and what a failed or refused export says. Expected files are written out by hand."""

from __future__ import annotations

import errno
import json
import os

import pytest

from vitbench.store import Store, StoreError, export_store
from vitbench.store.export import _streamed_csv, check_formats, csv_bytes, parquet_bytes

ROWS = [{"id": f"i{n}", "index": n, "macs": 2**60 + n, **({"note": "x"} if n == 3 else {})} for n in range(5)]
CSV = "id,index,macs,note\n" + "".join(f"i{n},{n},{2**60 + n},{'x' if n == 3 else ''}\n" for n in range(5))


def _store(path, rows=ROWS):
    with Store.open(path, sweep={"fingerprint": "f"}) as store:
        for row in rows:
            store.add(row)
    return path


@pytest.mark.parametrize("chunk", [1, 2, 5, 10_000])
def test_the_streamed_csv_is_one_file_whatever_the_chunks(tmp_path, chunk):
    store = _store(tmp_path / "s")
    assert b"".join(_streamed_csv(store, {"fingerprints": ["f"]}, chunk=chunk)).decode() == CSV
    assert csv_bytes(ROWS, chunk=chunk).decode() == CSV


def test_an_export_writes_the_csv_from_the_folder_or_its_rows_file(tmp_path):
    store = _store(tmp_path / "s")
    assert export_store(store / "rows.jsonl", tmp_path / "out") == [tmp_path / "out" / "results.csv"]
    assert (tmp_path / "out" / "results.csv").read_text() == CSV


def test_an_export_makes_the_folders_it_needs(tmp_path):
    store = _store(tmp_path / "s")
    out = tmp_path / "reports" / "2026" / "run"
    assert export_store(store, out) == [out / "results.csv"] and (out / "results.csv").read_text() == CSV


def test_a_store_without_rows_exports_an_empty_csv(tmp_path):
    Store.open(tmp_path / "s").close()
    export_store(tmp_path / "s", tmp_path / "s")
    assert (tmp_path / "s" / "results.csv").read_bytes() == b""
    assert csv_bytes([]) == b""


def test_an_earlier_vitbenchs_store_exports_its_records(tmp_path):
    (tmp_path / "results.csv").write_text("id,model,macs\na,m,10\n")
    (tmp_path / "results.json").write_text(json.dumps({"samples_s": {"a": [0.5, 0.25]}}))
    export_store(tmp_path, tmp_path / "out")
    assert (tmp_path / "out" / "results.csv").read_text() == 'id,model,macs,samples_s\na,m,10,"[0.5,0.25]"\n'


@pytest.mark.parametrize("formats, message", [
    (("xlsx",), "--export=xlsx: unknown format 'xlsx' (choose from csv, parquet)"),
    (("csv", "json"), "--export=csv,json: unknown format 'json' (choose from csv, parquet)"),
    ((), "--export=: unknown format '' (choose from csv, parquet)"),
])
def test_an_unknown_format_is_refused_before_anything_is_written(tmp_path, formats, message):
    with pytest.raises(StoreError) as caught:
        check_formats(formats)
    assert str(caught.value) == message
    store = _store(tmp_path / "s")
    with pytest.raises(StoreError):
        export_store(store, tmp_path / "out", formats)
    assert not (tmp_path / "out").exists()
    check_formats(("csv", "parquet"))


def test_a_failed_export_names_the_file_and_the_rows_saved(tmp_path, monkeypatch):
    from vitbench.store import export

    store = _store(tmp_path / "s")

    def full(path, data, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(export, "write_atomic", full)
    out = tmp_path / "out"
    for formats, name in ((("csv",), "results.csv"), (("parquet",), "results.parquet")):
        with pytest.raises(StoreError) as caught:
            export_store(store, out, formats)
        assert str(caught.value) == (f"out={str(out)!r}: cannot write {name} ({os.strerror(errno.ENOSPC)}): 5 rows are "
                                     "saved; free some space and rerun with --resume")


# --------------------------------------------------------------------------- Parquet


def test_parquet_types_what_pyarrow_can_and_keeps_the_rest_exactly(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    import decimal

    records = [{"wide": 2**64 - 1, "signed": -(2**63) - 1, "huge": 10**40, "mixed": 1, "flag": True, "text": "a"},
               {"wide": None, "signed": 10**38 - 1, "huge": 1, "mixed": "x", "flag": 3, "text": None},
               {"wide": 0, "signed": None, "huge": None, "mixed": [1, 2], "flag": None, "text": "b"}]
    table = pq.read_table(pa.BufferReader(parquet_bytes(records, {"fingerprint": "f", "sweep": {"name": "n"}, "x": 1})))
    types = {field.name: str(field.type) for field in table.schema}
    assert types == {"wide": "uint64", "signed": "decimal128(38, 0)", "huge": "string", "mixed": "string",
                     "flag": "string", "text": "string"}
    columns = table.to_pydict()
    assert columns["wide"] == [2**64 - 1, None, 0]
    assert columns["signed"] == [decimal.Decimal(-(2**63) - 1), decimal.Decimal(10**38 - 1), None]  # 38 digits
    assert columns["huge"] == [str(10**40), "1", None]
    assert columns["mixed"] == ["1", "x", "[1, 2]"]
    assert columns["flag"] == ["true", "3", None]
    assert columns["text"] == ["a", None, "b"]
    assert json.loads(table.schema.metadata[b"vitbench"]) == {"fingerprint": "f", "sweep": {"name": "n"}}


def test_parquet_of_a_column_of_text_and_integers_beyond_int64_is_text(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    records = [{"v": 2**64}, {"v": "x"}, {"v": -(10**38)}]
    table = pq.read_table(pa.BufferReader(parquet_bytes(records, {})))
    assert table.column("v").to_pylist() == [str(2**64), "x", str(-(10**38))]
    records = [{"v": 2**64}, {"v": 0}]  # one past uint64's largest: the exact integer as a decimal
    table = pq.read_table(pa.BufferReader(parquet_bytes(records, {})))
    assert str(table.schema.field("v").type) == "decimal128(38, 0)" and table.column("v").to_pylist() == [2**64, 0]
    records = [{"v": -1}, {"v": 2**63}]  # one below 0: no uint64
    table = pq.read_table(pa.BufferReader(parquet_bytes(records, {})))
    assert str(table.schema.field("v").type) == "decimal128(38, 0)" and table.column("v").to_pylist() == [-1, 2**63]


def test_parquet_without_pyarrow_is_one_line(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name.startswith("pyarrow"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    with pytest.raises(StoreError, match=r"^--export parquet needs pyarrow: pip install 'vitbench\[parquet\]'$"):
        parquet_bytes([{"a": 1}], {})
