"""JSON that a damaged or hostile file nests too deeply for Python's parser (RecursionError,
not ValueError) is bad input like any other unreadable JSON: one line, exit 2, or a damaged
record, never an internal error. Found by reviewing every ``json.loads`` in vitbench."""

from __future__ import annotations

import zlib

import pytest

from vitbench.cli import main
from vitbench.store import read_store

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--model", "mnist-vit", "--stages", "analytic", "--out", "s", "-q"]) == 0
    return tmp_path / "s"


@pytest.mark.parametrize("argv", [
    ["compare", "s", "s"],
    ["merge", "s", "--out", "m"],
    ["sweep", "--model", "mnist-vit", "--stages", "analytic", "--out", "s", "--resume"],
])
def test_a_store_definition_nested_too_deeply_is_one_line_exit_2(store, capsys, argv):
    (store / "sweep.json").write_text(DEEP)
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sweep.json" in err[0] and "internal error" not in err[0]


@pytest.mark.parametrize("sidecar", [DEEP, "[1, 2]"])
def test_an_old_store_sidecar_that_is_too_deep_or_not_an_object_is_one_line_exit_2(tmp_path, capsys, sidecar):
    old = tmp_path / "old"
    old.mkdir()
    (old / "results.csv").write_text("model,macs\nvit-s/16,4598882304\n")
    (old / "results.json").write_text(sidecar)
    assert main(["compare", str(old), str(old)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "results.json" in err[0] and "internal error" not in err[0]


def test_a_record_with_a_valid_crc_but_nested_too_deeply_is_a_damaged_record(store):
    body = '{"id":' + DEEP + "}"
    line = f'{body[:-1]},"_crc32":"{zlib.crc32(body.encode()):08x}"}}\n'
    with open(store / "rows.jsonl", "a") as rows:
        rows.write(line)
    records, info = read_store(store)
    assert len(records) == 1 and records[0]["model"] == "mnist-vit"
    assert info["problems"]  # the record is reported as damaged, not parsed


def test_a_results_cell_nested_too_deeply_is_read_as_no_value_by_the_report():
    from vitbench.reporting.study.rows import spec_dict, throughput_band

    assert spec_dict({"spec_key": '{"depth": ' + DEEP + "}"}) is None
    assert throughput_band({"batch_size": 8, "run_medians_s": DEEP}) is None
    assert throughput_band({"batch_size": 8, "run_medians_s": "[0.5, 0.5]"}) == (16.0, 16.0)  # the sound case still reads
