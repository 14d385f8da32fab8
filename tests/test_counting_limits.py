"""The counters refuse, from the analytic size and before building anything, what they cannot
trace (issue "hardening": `analyze vit-b/16 --depth 100000 --counters analytic,dispatch` used
4.8 GB with no result in 180 s; `--img-size 100000 --counters dispatch` ended in exit 3 "can't
allocate 120000003072 bytes"; a sweep with depth 10**30 and the counters stage reached 22.5 GB)."""

from __future__ import annotations

import pytest

import vitbench
from vitbench.cli import main
from vitbench.counters.limits import MAX_TRACED_BLOCKS
from vitbench.store import read_store


@pytest.fixture
def nothing_built(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("a counter ran: the refusal must come first")

    monkeypatch.setattr("vitbench.counters.run.run_dispatch", fail)
    monkeypatch.setattr("vitbench.counters.run.run_fvcore", fail)


@pytest.mark.parametrize("overrides, reason", [
    ({"depth": 100_000}, "tracing would build all 100,000 blocks"),
    ({"img_size": 100_000}, "the input batch alone is 120.0 GB"),
])
def test_analyze_refuses_before_building(nothing_built, capsys, overrides, reason):
    [row] = vitbench.analyze("vit-b/16", counters=("analytic", "dispatch"), **overrides)
    assert row["status"] == "refused" and reason in row["error"]
    assert row["macs"] is not None and row["macs_source"] == "analytic"  # the analytic figures stand
    flag = "--" + next(iter(overrides)).replace("_", "-")
    assert main(["analyze", "vit-b/16", flag, str(next(iter(overrides.values()))), "--counters", "analytic,dispatch"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and reason in err[0]


def test_the_limit_is_the_first_depth_refused(nothing_built):
    [row] = vitbench.analyze("vit-ti/16", counters=("dispatch",), depth=MAX_TRACED_BLOCKS + 1)
    assert row["status"] == "refused"


def test_a_sweep_row_is_refused_not_traced(nothing_built, tmp_path):
    result = vitbench.sweep(models=["vit-b/16"], grid={"depth": [10**30]}, stages=["analytic", "counters"], out=tmp_path / "s")
    [row] = read_store(tmp_path / "s")[0]
    assert result.statuses == {"refused": 1} and row["status"] == "refused" and "blocks" in row["error"]
    assert row["macs"] > 10**30  # the analytic stage's exact integer
