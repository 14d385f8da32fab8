"""The gate fails on what it cannot trust (issue "hardening"): impossible values (a throughput
of 0, negative or infinite, an infinite latency) passed as "not significant" or crashed with
exit 3; a gate that checked nothing passed; rules on text columns did nothing; Parquet and a
byte-order mark broke the reader."""

from __future__ import annotations

import pytest
from test_compare import measured, write

from vitbench.cli import main
from vitbench.gate import compare


@pytest.mark.parametrize("changes", [
    {"throughput_img_s": 0.0}, {"throughput_img_s": -5.0}, {"throughput_img_s": float("-inf")},
    {"throughput_img_s": float("inf")}, {"latency_p50_s": float("inf")}, {"peak_memory_bytes": -1},
    {"macs": -10},
])
def test_an_impossible_current_value_fails_the_gate(tmp_path, capsys, changes):
    base = write(tmp_path / "base.csv", [measured()])
    cur = write(tmp_path / "cur.csv", [measured(**changes)])
    metric = next(iter(changes))
    result = compare(tmp_path / "base.csv", tmp_path / "cur.csv", [f"{metric}:10%"])
    [row] = [r for r in result.rows if r.metric == metric]
    assert row.verdict == "INVALID" and result.exit_code == 1
    assert main(["compare", str(base), str(cur), "--fail-on", f"{metric}:10%"]) == 1
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("changes", [{"throughput_img_s": 1e309}, {"run_medians_s": [1e308] * 5}])
def test_huge_values_do_not_crash_the_gate(tmp_path, capsys, changes):
    base = write(tmp_path / "base.csv", [measured()])
    cur = write(tmp_path / "cur.csv", [measured(**changes)])
    assert main(["compare", str(base), str(cur)]) == 1
    assert "internal error" not in capsys.readouterr().err
    inf_base = write(tmp_path / "inf.csv", [measured(throughput_img_s=float("inf"))])
    assert main(["compare", str(inf_base), str(cur)]) == 1


@pytest.mark.parametrize("empty", [None, float("nan")])
def test_a_gate_that_checked_nothing_does_not_pass(tmp_path, empty):
    base = [measured(macs=empty)]
    cur = [measured(macs=5)]
    result = compare(base, cur, ["macs:0"])
    assert result.exit_code == 1 and any("nothing was checked" in f for f in result.failures)


@pytest.mark.parametrize("rule", ["status:0", "model:0", "run_medians_s:5%"])
def test_a_rule_on_a_text_or_list_column_is_refused(tmp_path, capsys, rule):
    base = write(tmp_path / "base.csv", [measured()])
    assert main(["compare", str(base), str(base), "--fail-on", rule]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a numeric column" in err[0]


def test_parquet_and_byte_order_marks(tmp_path, capsys):
    base = write(tmp_path / "base.csv", [measured()])
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + base.read_bytes())
    assert main(["compare", str(base), str(bom)]) == 0  # the mark is not part of 'model'
    parquet = tmp_path / "r.parquet"
    parquet.write_bytes(b"PAR1" + b"\x00" * 64 + b"PAR1")
    assert main(["compare", str(base), str(parquet)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Parquet" in err[-1]


def test_repeated_rows_that_disagree_fail_instead_of_pooling(tmp_path):
    """One normal row and one at half speed for the same configuration passed as their median."""
    base = [measured()]
    slow = measured(seed=1)
    slow["throughput_img_s"] /= 2
    result = compare(base, [measured(seed=2), slow])
    assert result.exit_code == 1 and any("appears 2 times with throughput_img_s" in f for f in result.failures)
    same = compare(base, [measured(seed=2), measured(seed=3)])  # repeats that agree are pooled
    assert not any("appears" in f for f in same.failures)


def test_a_damaged_baseline_record_fails_the_gate(tmp_path, capsys):
    from vitbench.sweeps import sweep

    sweep(models=["cifar-vit/4"], grid={"depth": [1, 2, 3]}, out=tmp_path / "s")
    rows = tmp_path / "s" / "rows.jsonl"
    lines = rows.read_bytes().split(b"\n")
    at = lines[1].index(b'"macs":') + len(b'"macs":')
    digit = lines[1][at:at + 1]
    lines[1] = lines[1][:at] + (b"7" if digit != b"7" else b"8") + lines[1][at + 1:]  # the checksum no longer holds
    rows.write_bytes(b"\n".join(lines))
    assert main(["compare", str(tmp_path / "s"), str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert "damaged record" in err and "whole results" in err
