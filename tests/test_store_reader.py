"""Reading a results store (:mod:`vitbench.store.reader`): which record of an id wins, the grid
order, rows streamed in or out of the file's order, the ids and their length, an earlier
vitbench's store (results.csv + results.json), and the errors a reader gives. Stores are built
with the writer or written by hand; expected rows are written out."""

from __future__ import annotations

import json

import pytest

from vitbench.store import Store, StoreError, is_store, read_store, store_info
from vitbench.store.export import export_store
from vitbench.store.format import encode_record
from vitbench.store.reader import (
    grid_order,
    latest_rows,
    read_definition,
    stored_id_digits,
    stored_ids,
    stream_latest,
)


def _write(path, rows, extra=b""):
    path.mkdir(parents=True, exist_ok=True)
    (path / "rows.jsonl").write_bytes(b"".join(encode_record(r) for r in rows) + extra)
    return path


@pytest.mark.parametrize("row, key", [
    ({"index": 3, "id": "b"}, (3, "b")), ({"index": 3.0, "id": "b"}, (3, "b")), ({"index": 2.5, "id": "b"}, (1 << 62, "b")),
    ({"index": True, "id": "b"}, (1 << 62, "b")), ({"id": 7}, (1 << 62, "7")), ({"index": "3"}, (1 << 62, "")),
])
def test_grid_order_is_the_index_then_the_id(row, key):
    assert grid_order(row) == key
    assert type(grid_order(row)[0]) is int


def test_the_last_valid_record_of_each_id_wins_in_grid_order_with_every_column(tmp_path):
    rows = [{"id": "b", "index": 1, "v": 1}, {"id": "a", "index": 0, "v": 2}, {"id": "b", "index": 1, "v": 3, "w": "x"},
            {"id": "c", "v": 4}]
    path = _write(tmp_path, rows, extra=encode_record({"id": "a", "index": 0, "v": 9}).replace(b'"v":9', b'"v":8'))
    got, problems = latest_rows(path / "rows.jsonl")
    assert got == [{"id": "a", "index": 0, "v": 2, "w": None}, {"id": "b", "index": 1, "v": 3, "w": "x"},
                   {"id": "c", "index": None, "v": 4, "w": None}]
    assert problems == [f"{path / 'rows.jsonl'}: 1 damaged record(s) skipped (line 5)"]


def test_a_record_without_an_id_counts_as_damaged(tmp_path):
    path = _write(tmp_path, [{"index": 0}, {"id": "a", "index": 1}])
    rows, problems = latest_rows(path / "rows.jsonl")
    assert rows == [{"index": 1, "id": "a"}] and problems == [f"{path / 'rows.jsonl'}: 1 damaged record(s) skipped (line 1)"]
    assert stored_ids(path) == {"a"}


def test_the_damage_report_names_the_first_ten_lines(tmp_path):
    bad = encode_record({"id": "x"}).replace(b'"x"', b'"y"')
    path = _write(tmp_path, [{"id": "a"}], extra=bad * 12)
    _, problems = latest_rows(path / "rows.jsonl")
    assert problems == [f"{path / 'rows.jsonl'}: 12 damaged record(s) skipped (line 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)"]


@pytest.mark.parametrize("rows", [
    [{"id": "a", "index": 0}, {"id": "b", "index": 1}, {"id": "c", "index": 2}],                          # a sweep's order
    [{"id": "c", "index": 2}, {"id": "a", "index": 0}, {"id": "b", "index": 1}],                          # merged shards
    [{"id": "a", "index": 0, "v": 1}, {"id": "b", "index": 1}, {"id": "a", "index": 0}, {"id": "c", "index": 2}],  # a rerun
])
def test_streamed_rows_are_the_latest_rows(tmp_path, rows):
    path = _write(tmp_path, rows) / "rows.jsonl"
    expected = [{"id": i, "index": n, "v": None} for n, i in enumerate("abc")]
    for single in (True, False):
        columns, streamed, problems = stream_latest(path, single_definition=single)
        got = list(streamed)
        assert columns == list(dict.fromkeys(k for r in rows for k in r)) and problems == []
        assert [{"v": None, **r} for r in got] == expected


def test_rows_out_of_order_are_read_back_by_their_offsets(tmp_path):
    rows = [{"id": "c", "index": 2, "pad": "x" * 50}, {"id": "a", "index": 0}, {"id": "b", "index": 1, "w": 5}]
    path = _write(tmp_path, rows, extra=b"\n  \n") / "rows.jsonl"
    columns, streamed, _ = stream_latest(path)
    assert columns == ["id", "index", "pad", "w"]
    assert list(streamed) == [{"id": "a", "index": 0, "pad": None, "w": None}, {"id": "b", "index": 1, "pad": None, "w": 5},
                              {"id": "c", "index": 2, "pad": "x" * 50, "w": None}]


def test_a_line_of_the_longest_length_is_read_back_by_its_offset(tmp_path, monkeypatch):
    from vitbench import input_files
    from vitbench.store import reader

    for module in (input_files, reader):
        monkeypatch.setattr(module, "MAX_ROW_LINE_BYTES", 100)  # bytes of a line before its newline
    pad = 101 - len(encode_record({"id": "b", "index": 1, "p": ""}))
    longest = {"id": "b", "index": 1, "p": "x" * pad}
    assert len(encode_record(longest)) == 101
    path = _write(tmp_path, [longest, {"id": "a", "index": 0}]) / "rows.jsonl"
    assert [r["id"] for r in stream_latest(path)[1]] == ["a", "b"]


def test_a_store_in_grid_order_written_by_two_definitions_is_read_by_offset(tmp_path):
    # one definition: an id has one index; two: the same id may come back at another index
    path = _write(tmp_path, [{"id": "a", "index": 0}, {"id": "b", "index": 1}, {"id": "a", "index": 2}]) / "rows.jsonl"
    assert [r["id"] for r in stream_latest(path, single_definition=False)[1]] == ["b", "a"]


def test_an_export_of_a_store_out_of_order_is_in_grid_order(tmp_path):
    rows = [{"id": "c", "index": 2}, {"id": "a", "index": 0}, {"id": "b", "index": 1}]
    store = _write(tmp_path / "s", rows)
    (written,) = export_store(store, tmp_path / "out")
    assert written.read_text().splitlines() == ["id,index", "a,0", "b,1", "c,2"]


# --------------------------------------------------------------------------- ids


def test_the_length_of_ids_comes_from_the_definition_else_the_first_record(tmp_path):
    assert stored_id_digits(tmp_path / "none") is None
    with Store.open(tmp_path / "s", sweep={"fingerprint": "f", "id_hex_digits": 16}) as store:
        store.add({"id": "abcd", "index": 0})
    assert stored_id_digits(tmp_path / "s") == 16
    for digits in (7, 41, True, "16"):  # out of range or no whole number: the first record's id decides
        definition = json.loads((tmp_path / "s" / "sweep.json").read_text())
        definition["sweep"]["id_hex_digits"] = digits
        (tmp_path / "s" / "sweep.json").write_text(json.dumps(definition))
        assert stored_id_digits(tmp_path / "s") == 4, digits
    (tmp_path / "s" / "sweep.json").write_text("[]")  # a definition that cannot be read
    assert stored_id_digits(tmp_path / "s") == 4
    _write(tmp_path / "t", [{"id": 12345}, {"id": "abcdefabcdef"}], extra=b"torn")
    assert stored_id_digits(tmp_path / "t") == 12
    (tmp_path / "u").mkdir()
    (tmp_path / "u" / "sweep.json").write_text('{"schema_version": 2}')
    assert stored_id_digits(tmp_path / "u") is None
    _write(tmp_path / "v", [{"index": 0}])
    assert stored_id_digits(tmp_path / "v") is None
    for digits in (8, 40):
        (tmp_path / "u" / "sweep.json").write_text(json.dumps({"sweep": {"id_hex_digits": digits}}))
        assert stored_id_digits(tmp_path / "u") == digits


def test_stored_ids_are_the_valid_records_ids(tmp_path):
    assert stored_ids(tmp_path) == set()
    _write(tmp_path, [{"id": "a"}, {"id": 3}, {"v": 1}], extra=encode_record({"id": "z"})[:-5])
    assert stored_ids(tmp_path) == {"a", "3"}


# --------------------------------------------------------------------------- reading a store


def test_a_store_is_read_from_its_folder_or_its_rows_file(tmp_path):
    with Store.open(tmp_path / "s", sweep={"fingerprint": "f", "name": "n"}) as store:
        store.add({"id": "a", "index": 0, "macs": 2**60})
    for path in (tmp_path / "s", tmp_path / "s" / "rows.jsonl"):
        records, info = read_store(path)
        assert list(records) == [{"id": "a", "index": 0, "macs": 2**60}]
        assert info["fingerprint"] == "f" and info["sweep"] == {"name": "n"} and info["problems"] == []


@pytest.mark.parametrize("make, message", [
    (lambda p: None, "no such results store"),
    (lambda p: p.write_text("x"), "no such results store"),
    (lambda p: p.mkdir(), "no results store here (no rows.jsonl or results.csv)"),
])
def test_no_store_is_one_line(tmp_path, make, message):
    path = tmp_path / "s"
    make(path)
    with pytest.raises(StoreError) as caught:
        read_store(path)
    assert str(caught.value) == f"results={str(path)!r}: {message}"


def test_is_store_and_store_info(tmp_path):
    assert not is_store(tmp_path / "none") and not is_store(tmp_path)
    (tmp_path / "f").write_text("")
    assert not is_store(tmp_path / "f")
    for name in ("rows.jsonl", "sweep.json", "results.csv"):
        folder = tmp_path / name.replace(".", "_")
        folder.mkdir()
        (folder / name).write_text("{}" if name == "sweep.json" else "")
        assert is_store(folder), name
    assert store_info(tmp_path / "rows_jsonl") is None
    assert store_info(str(tmp_path / "sweep_json")) == {} and is_store(str(tmp_path / "sweep_json"))


def test_a_missing_definition_is_empty_and_a_damaged_one_refused(tmp_path):
    assert read_definition(tmp_path) == {}
    (tmp_path / "sweep.json").write_text('["not", "an", "object"]')
    with pytest.raises(StoreError, match=r"not a store definition \(top level is not an object\)"):
        read_definition(tmp_path)
    (tmp_path / "sweep.json").write_text('{"schema_version": 2, "sweep": {"shard_index": 3}}')
    assert read_definition(tmp_path)["sweep"] == {"shard_index": 3}  # no count: any index up to the largest
    (tmp_path / "sweep.json").write_text('{"sweep": {"shard_index": 1000001}}')
    with pytest.raises(StoreError, match="sweep.shard_index=1000001"):
        read_definition(tmp_path)
    (tmp_path / "sweep.json").write_text('{"sweep": {"shard_count": 1000001}}')
    with pytest.raises(StoreError, match="sweep.shard_count=1000001"):
        read_definition(tmp_path)
    (tmp_path / "sweep.json").write_text('{"sweep": {"shard_count": 1, "shard_index": 1, "grid_size": 0}}')
    assert read_definition(tmp_path)["sweep"] == {"shard_count": 1, "shard_index": 1, "grid_size": 0}
    (tmp_path / "sweep.json").write_text('{"schema_version": 1}')
    assert read_definition(tmp_path) == {"schema_version": 1}


def test_an_earlier_vitbenchs_store_attaches_its_samples(tmp_path):
    (tmp_path / "results.csv").write_text("id,model,macs\na,m,10\nb,m,20\n")
    (tmp_path / "results.json").write_text(json.dumps({"schema_version": 1, "sweep": {"name": "old"},
                                                       "samples_s": {"a": [0.5, 0.25]}}))
    records, info = read_store(tmp_path)
    assert list(records) == [{"id": "a", "model": "m", "macs": 10, "samples_s": [0.5, 0.25]},
                             {"id": "b", "model": "m", "macs": 20}]
    assert info == {"schema_version": 1, "sweep": {"name": "old"}, "problems": []}
    (tmp_path / "results.json").unlink()
    assert read_store(tmp_path)[1] == {"problems": []}


@pytest.mark.parametrize("sidecar, message", [
    ("[1, 2]", "not a results JSON (top level is not an object)"),
    ('{"schema_version": 3}', "schema_version 3 is newer than this vitbench reads; upgrade vitbench"),
])
def test_an_earlier_stores_sidecar_that_cannot_be_read_is_one_line(tmp_path, sidecar, message):
    (tmp_path / "results.csv").write_text("id,model\na,m\n")
    (tmp_path / "results.json").write_text(sidecar)
    with pytest.raises(StoreError) as caught:
        read_store(tmp_path)
    assert str(caught.value) == f"file={str(tmp_path / 'results.json')!r}: {message}"
