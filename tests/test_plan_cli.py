"""`vitbench plan`: memory sizes, the largest batch, the predicted breakdown, one-line errors."""

from __future__ import annotations

import argparse
import io
import json

import pandas as pd
import pytest

from vitbench.analytic.memory import memory_estimate, plan
from vitbench.cli import main
from vitbench.cli.plan import parse_memory
from vitbench.presets import resolve


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "text, expected",
    [
        ("24GiB", 24 * 2**30),
        ("24GB", 24 * 10**9),
        ("25769803776", 25_769_803_776),
        ("512 MiB", 512 * 2**20),
        ("1.5GiB", 3 * 2**29),
        ("64kib", 64 * 1024),
        ("2TB", 2 * 10**12),
        ("1TiB", 2**40),
        ("100KB", 100_000),
        ("4096B", 4096),
    ],
)
def test_parse_memory_units(text, expected):
    assert parse_memory(text) == expected


@pytest.mark.parametrize("text", ["24XB", "abc", "", "-1GB", "0", "GiB", "1e9", "24 G i B"])
def test_parse_memory_rejects(text):
    with pytest.raises(argparse.ArgumentTypeError) as info:
        parse_memory(text)
    assert repr(text) in str(info.value)


def test_plan_gives_the_largest_batch_that_fits(capsys):
    code, out, err = run(capsys, "plan", "vit-b/16", "resnet50", "--memory", "24GiB", "--format", "json")
    assert code == 0 and err == ""
    records = {r["model"]: r for r in json.loads(out)["records"]}
    for name in ("vit-b/16", "resnet50"):
        spec = resolve(name)
        row = records[name]
        best = row["max_batch_size"]
        assert best == plan(spec, 24 * 2**30) and best > 0
        assert row["batch_size"] == best and row["memory_bytes"] == 24 * 2**30
        assert row["pred_peak_memory_bytes"] == memory_estimate(spec, best).peak_bytes <= 24 * 2**30
        assert memory_estimate(spec, best + 1).peak_bytes > 24 * 2**30
        assert row["mode"] == "train" and row["precision"] == "fp32" and row["optimizer"] == "adamw"
    assert records["vit-b/16"]["attention"] == "sdpa" and records["resnet50"]["attention"] is None


def test_batch_size_gives_the_breakdown(capsys):
    code, out, _ = run(capsys, "plan", "vit-b/16", "--batch-size", "32", "--attention", "math", "--format", "csv")
    assert code == 0
    row = pd.read_csv(io.StringIO(out)).iloc[0]
    expected = memory_estimate(resolve("vit-b/16", attention="math"), 32).as_record()
    for column, value in expected.items():
        assert row[column] == value
    assert row["pred_attention_matrix_bytes"] == 32 * 12 * 197**2 * 4
    assert row["pred_weights_bytes"] == 4 * 86_567_656 and row["attention"] == "math"
    assert "max_batch_size" not in row.index


def test_both_memory_and_batch_size(capsys):
    code, out, _ = run(capsys, "plan", "resnet50", "--memory", "8GB", "--batch-size", "16",
                       "--mode", "infer", "--precision", "bf16", "--format", "json")
    assert code == 0
    row = json.loads(out)["records"][0]
    spec = resolve("resnet50")
    assert row["batch_size"] == 16 and row["memory_bytes"] == 8 * 10**9
    assert row["max_batch_size"] == plan(spec, 8 * 10**9, mode="infer", precision="bf16")
    assert row["pred_peak_memory_bytes"] == memory_estimate(spec, 16, mode="infer", precision="bf16").peak_bytes
    assert row["fits"] is True and row["optimizer"] is None
    assert row["pred_gradients_bytes"] == 0 and row["pred_optimizer_bytes"] == 0


def test_nothing_fits_is_a_row_with_a_warning(capsys):
    code, out, _ = run(capsys, "plan", "vit-h/14", "--memory", "1GiB", "--format", "json")
    assert code == 0
    row = json.loads(out)["records"][0]
    assert row["max_batch_size"] == 0 and row["fits"] is False
    assert "does not fit" in row["warnings"]


def test_overrides_and_optimizers_change_the_plan(capsys):
    _, out224, _ = run(capsys, "plan", "vit-b/16", "--memory", "24GiB", "--format", "json")
    _, out384, _ = run(capsys, "plan", "vit-b/16", "--memory", "24GiB", "--img-size", "384", "--format", "json")
    _, outsgd, _ = run(capsys, "plan", "vit-b/16", "--memory", "24GiB", "--optimizer", "sgd", "--format", "json")
    b224, b384, bsgd = (json.loads(o)["records"][0]["max_batch_size"] for o in (out224, out384, outsgd))
    assert b384 == plan(resolve("vit-b/16", img_size=384), 24 * 2**30) < b224 < bsgd


def test_table_output(capsys):
    code, out, _ = run(capsys, "plan", "chapter-vit-tiny", "--memory", "1GiB")
    assert code == 0
    header = out.splitlines()[0]
    for column in ("model", "batch_size", "pred_peak_memory_bytes", "max_batch_size"):
        assert column in header
    assert "GiB" in out or "MiB" in out


@pytest.mark.parametrize(
    "argv, needles",
    [
        (["plan", "vit-b/16", "--memory", "24XB"], ["--memory", "'24XB'"]),
        (["plan", "vit-b/16", "--memory=-5GiB"], ["--memory", "'-5GiB'"]),
        (["plan", "vit-b/16"], ["--memory", "--batch-size"]),
        (["plan", "vit-b/16", "--batch-size", "0"], ["--batch-size"]),
        (["plan", "vit-b/61", "--batch-size", "1"], ["did you mean"]),
        (["plan", "vit-b/16", "--batch-size", "1", "--precision", "fp8"], ["--precision", "fp8"]),
        (["plan", "vit-b/16", "--batch-size", "1", "--attention", "flash"], ["attention", "flash"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, needles):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vitbench: error:")
    for needle in needles:
        assert needle in lines[0]
