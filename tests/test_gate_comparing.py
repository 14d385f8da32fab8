"""The gate's one entry, :func:`vitbench.gate.compare` (``vitbench.compare``): two large CSV
files go to the columnar gate, anything else to the record path, and both refuse the same bad
arguments. Small files; the size at which the columnar gate takes over is lowered to 0 bytes."""

from __future__ import annotations

import pytest

import vitbench
from vitbench.errors import SpecError
from vitbench.gate import compare, comparing
from vitbench.gate.array_verdicts import Verdicts

HEADER = "model,batch_size,status,throughput_img_s,params\n"


@pytest.fixture
def files(tmp_path):
    base, cur = tmp_path / "base.csv", tmp_path / "cur.csv"
    base.write_text(HEADER + "a,8,ok,100.0,10\nb,8,ok,100.0,10\n")
    cur.write_text(HEADER + "a,8,ok,90.0,10\n")
    return base, cur


@pytest.fixture
def columnar_from_0_bytes(monkeypatch):
    monkeypatch.setattr(comparing, "COLUMNAR_MIN_BYTES", 0)


def test_large_csv_files_are_compared_on_columns(files, columnar_from_0_bytes):
    result = compare(*files, ["throughput:-5%", "params:0"], allow_missing_rows=True)
    assert isinstance(result.rows, Verdicts)
    assert [(r.metric, r.verdict) for r in result.rows] == [("throughput_img_s", "REGRESSION"), ("params", "ok")]
    assert vitbench.compare is compare


def test_small_files_and_records_are_compared_on_records(files):
    result = compare(*files, ["throughput:-5%"], allow_missing_rows=True)
    assert type(result.rows) is tuple and result.exit_code == 1


@pytest.mark.parametrize("alpha", [0, 1, 2, -0.1, True, "0.05", float("nan")])
def test_a_bad_alpha_is_refused_on_either_path(files, monkeypatch, alpha):
    for limit in (0, None):
        monkeypatch.setattr(comparing, "COLUMNAR_MIN_BYTES", limit)
        with pytest.raises(SpecError, match="alpha"):
            compare(*files, ["params:0"], alpha=alpha)


def test_by_default_a_missing_configuration_or_metric_fails(files, columnar_from_0_bytes, tmp_path):
    result = compare(*files, ["params:0"])
    assert result.failures == ("1 of 2 baseline configurations missing from current",) and result.exit_code == 1
    no_params = tmp_path / "no-params.csv"
    no_params.write_text("model,batch_size,status,throughput_img_s\na,8,ok,100.0\nb,8,ok,100.0\n")
    missing = compare(files[0], no_params, ["params:0", "throughput:-50%"])
    assert missing.failures == ("params:0: metric 'params' is missing from the current results",)
    allowed = compare(files[0], no_params, ["params:0", "throughput:-50%"], allow_missing_metrics=True)
    assert allowed.passed and allowed.warnings[0].endswith("(allowed: --allow-missing-metrics)")
