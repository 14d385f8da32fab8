"""Rows of models no formula covers (a ``py:`` factory) carry params and MACs in every command: plan
and predict count them as analyze does (issue 34: their rows had null params and MACs).

The factory's figures by hand: Conv2d(3, 4, k=4, s=4) on 16x16 has 4*3*4*4 + 4 = 196 parameters
and 4x4 outputs x 4 channels x 48 MACs = 3,072 MACs; Linear(64, 10) has 650 parameters and 640
MACs. Per image: 846 parameters, 3,712 MACs."""

from __future__ import annotations

import json

import pytest

import vitbench
from vitbench.cli import main

FACTORY = """\
import torch.nn as nn


def make():
    return nn.Sequential(nn.Conv2d(3, 4, 4, stride=4), nn.Flatten(), nn.Linear(64, 10))
"""


@pytest.fixture
def factory(tmp_path):
    (tmp_path / "tiny.py").write_text(FACTORY)
    return f"py:{tmp_path / 'tiny.py'}:make"


def test_analyze_counts_the_factory_by_hand(factory):
    (row,) = vitbench.analyze(factory, img_size=16, batch_size=2)
    assert (row["params"], row["macs"]) == (846, 2 * 3712)


def test_plan_rows_count_params_and_macs(factory, capsys):
    (row,) = vitbench.plan_records(vitbench.resolve_models([factory], {"img_size": 16}), batch_size=2)
    assert (row["params"], row["macs"]) == (846, 2 * 3712)
    assert main(["plan", factory, "--img-size", "16", "--batch-size", "2", "--format", "json", "-q"]) == 0
    (printed,) = json.loads(capsys.readouterr().out)["records"]
    assert (printed["params"], printed["macs"]) == (846, 2 * 3712)


def test_predict_rows_count_params_and_macs(factory, capsys):
    rows = vitbench.predict(factory, device=["h100", "a100"], batch_size=[1, 4], img_size=16)
    assert [(r["batch_size"], r["params"], r["macs"], r["flops"]) for r in rows] == [
        (1, 846, 3712, 7424), (1, 846, 3712, 7424), (4, 846, 4 * 3712, 8 * 3712), (4, 846, 4 * 3712, 8 * 3712)]
    assert main(["predict", factory, "--img-size", "16", "--device", "h100", "--format", "json", "-q"]) == 0
    (printed,) = json.loads(capsys.readouterr().out)["records"]
    assert (printed["params"], printed["macs"]) == (846, 3712)
