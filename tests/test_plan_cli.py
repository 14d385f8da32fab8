"""`vitbench plan`: memory sizes, the largest batch, the predicted breakdown, one-line errors."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys

import pandas as pd
import pytest
from _cli import run

import vitbench
from vitbench.analytic.memory import memory_estimate, plan
from vitbench.api import resolve_models as vitbench_resolve
from vitbench.cli.plan import parse_memory
from vitbench.presets import resolve


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
    assert [w["code"] for w in row["warnings"]] == ["does-not-fit"] and row["warnings"][0]["message"].startswith("does not fit: batch size 1 needs")


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


# --- the library behind the command -----------------------------------------------------------------
def test_plan_records_is_the_library_behind_the_command(capsys):
    """`vitbench plan` prints what vitbench.plan_records returns; every row carries the identity
    columns (model, img_size, batch_size, params, macs) that `vitbench compare` matches on."""
    from vitbench.models import build_meta

    models = ["chapter-vit-tiny", "chapter-resnet-small"]
    code, out, _ = run(capsys, "plan", *models, "--memory", "1GiB", "--format", "json")
    assert code == 0
    printed = json.loads(out)["records"]
    library = vitbench.plan_records(vitbench.resolve_models(models), memory_bytes=2**30)
    assert json.loads(json.dumps(list(library))) == printed
    for row in printed:
        spec = resolve(row["model"])
        assert row["img_size"] == 32 and row["batch_size"] == row["max_batch_size"] > 0
        assert row["params"] == sum(p.numel() for p in build_meta(spec).parameters())
        assert row["macs"] == vitbench.analyze(row["model"], batch_size=row["batch_size"])[0]["macs"]
        assert row["spec_key"] and row["warnings"] == []


def test_a_model_without_a_memory_formula_is_a_row_with_the_reason():
    """Swin (and any model the replay does not cover) gets its identity and the reason in one
    line, never a made-up number; memory_estimate refuses it naming the field."""
    from torchvision.models import get_weight

    from vitbench.analytic.memory import plan_records
    from vitbench.errors import SpecError
    from vitbench.specs import SwinSpec

    spec = SwinSpec()  # Swin-T
    [row] = plan_records([spec], memory_bytes=2**30, batch_size=8)
    assert row["model"] == "swin" and row["batch_size"] == 8
    assert row["params"] == get_weight("Swin_T_Weights.IMAGENET1K_V1").meta["num_params"]
    assert row["pred_peak_memory_bytes"] is None and row["max_batch_size"] is None and row["fits"] is None
    assert [w["code"] for w in row["warnings"]] == ["memory-unavailable"] and row["warnings"][0]["message"].startswith("no memory formula for swin models")
    with pytest.raises(SpecError) as info:
        memory_estimate(spec, 1)
    assert info.value.field == "model" and "vitbench profile" in str(info.value)


def test_plan_records_do_not_import_torch():
    code = (
        "import sys, vitbench; from vitbench.specs import ResNetSpec, ViTSpec; "
        "rows = vitbench.plan_records([ViTSpec(), ResNetSpec()], memory_bytes=2**30); "
        "print(len(rows), 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["2", "False"]


def test_predictions_for_a_run_settings():
    """What profile asks before running: the predicted peak of a configuration and the largest
    batch under a cap, from its RunSettings; None where no memory model exists or for 'auto'."""
    from vitbench.analytic.memory import predicted_max_batch, predicted_peak_bytes
    from vitbench.settings import RunSettings
    from vitbench.specs import SwinSpec

    spec = resolve("vit-ti/16")
    settings = RunSettings(mode="train", batch_size=15, precision="bf16", optimizer="sgd", attention="math")
    expected = memory_estimate(spec, 15, "train", "bf16", "sgd", "math").peak_bytes
    assert predicted_peak_bytes(spec, settings) == expected
    assert predicted_peak_bytes(spec, settings, batch_size=3) == memory_estimate(spec, 3, "train", "bf16", "sgd", "math").peak_bytes
    assert predicted_max_batch(spec, expected, settings) == 15 == plan(spec, expected, "train", "bf16", "sgd", "math")
    assert predicted_peak_bytes(spec, RunSettings(batch_size="auto")) is None
    assert predicted_peak_bytes(SwinSpec(), settings) is None and predicted_max_batch(SwinSpec(), 2**30, settings) is None


# --- models without a formula: traced on fake tensors ----------------------------------------------------
@pytest.mark.slow
def test_traced_peak_agrees_with_the_replay():
    """The fake-tensor trace (any model) against the replay (measured to 0.2%) on mnist-vit:
    within 2% (it sees the tensors operators return, not kernel workspaces)."""
    from vitbench.counters.memory_trace import trace_target

    [target] = vitbench_resolve(["mnist-vit"])
    profile = trace_target(target, "train", "fp32", "adamw")
    for batch in (1, 64, 1000):
        replayed = memory_estimate(target.spec, batch).peak_bytes
        assert abs(profile.peak(batch) - replayed) <= 0.02 * replayed, (batch, profile.peak(batch), replayed)


def test_a_live_module_is_traced_and_its_row_says_so():
    import torch
    from torch import nn

    from vitbench.analytic.memory import plan_records
    from vitbench.counters.memory_trace import trace_target

    torch.manual_seed(0)
    module = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 8 * 8, 10))
    targets = vitbench_resolve([module], input_size=(3, 8, 8))
    [row] = plan_records(targets, memory_bytes=2**20, trace=trace_target)
    best = row["max_batch_size"]
    assert best > 1 and row["pred_peak_memory_bytes"] <= 2**20 and row["fits"] is True
    [bigger] = plan_records(targets, batch_size=best + 1, trace=trace_target)
    assert bigger["pred_peak_memory_bytes"] > 2**20
    assert [w["code"] for w in row["warnings"]] == ["memory-traced"] and row["warnings"][0]["message"].startswith("memory prediction traced on fake tensors")
    assert row["pred_weights_bytes"] is None  # the trace gives the peak only
    [untraced] = plan_records(targets, memory_bytes=2**20)
    assert untraced["pred_peak_memory_bytes"] is None and untraced["warnings"][0]["message"].startswith("no memory formula")


def test_a_reference_with_a_replayed_spec_says_whose_module_was_replayed():
    """torchvision's ViT-B/16 derives the ViT-B/16 spec: its row is the replay (measured:
    1,531,233,544 bytes at batch 4 against 1,531,249,544 predicted) with a note saying so."""
    from torchvision.models import get_weight

    [target] = vitbench_resolve(["torchvision:vit_b_16"])
    [row] = vitbench.plan_records([target], batch_size=4)
    assert row["model"] == "torchvision:vit_b_16" and row["source"] == "torchvision"
    assert row["pred_peak_memory_bytes"] == memory_estimate(target.spec, 4).peak_bytes == memory_estimate(resolve("vit-b/16"), 4).peak_bytes
    assert row["params"] == get_weight("ViT_B_16_Weights.IMAGENET1K_V1").meta["num_params"]
    assert [w["code"] for w in row["warnings"]] == ["memory-equivalent-module"] and "vitbench's equivalent vit module" in row["warnings"][0]["message"]


@pytest.mark.slow  # 5-7 s: kept in CI's slow phase so the default suite stays under 3 minutes
def test_plan_records_api_traces_what_the_replay_does_not_cover_like_the_cli(capsys):
    """The tracing fallback is the library's, not the command's: the API gives the number the
    command prints for a model without a memory formula."""
    import json

    from vitbench.cli import main

    [row] = vitbench.plan_records(vitbench.resolve_models(["torchvision:swin_t"]), batch_size=2)
    assert row["pred_peak_memory_bytes"] and row["pred_peak_memory_bytes"] > 0
    assert main(["plan", "torchvision:swin_t", "--batch-size", "2", "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    records = printed["records"] if isinstance(printed, dict) else printed
    assert records[0]["pred_peak_memory_bytes"] == row["pred_peak_memory_bytes"]
    [plain] = vitbench.plan_records(["torchvision:swin_t"], batch_size=2, trace=False)
    assert plain["pred_peak_memory_bytes"] is None and plain["warnings"]


def test_an_error_about_a_live_module_is_one_line():
    import torchvision

    with pytest.raises(vitbench.errors.VitbenchError) as caught:
        vitbench.plan(torchvision.models.resnet18(), 2**30)
    assert "\n" not in str(caught.value) and "<ResNet object>" in str(caught.value)


@pytest.mark.parametrize("field, value", [
    ("memory_bytes", -1), ("memory_bytes", 2**60 + 1), ("memory_bytes", True), ("memory_bytes", 1.5),
    ("batch_size", 0), ("batch_size", True), ("trace", "yes"), ("trace", 1)])
def test_plan_settings_refuse_a_bad_value_by_field(field, value):
    from vitbench.analytic.memory.plan_settings import PlanSettings
    from vitbench.errors import SpecError

    asked = {"memory_bytes": 2**30, field: value}
    with pytest.raises(SpecError, match=f"^{field}="):
        PlanSettings(**asked)


def test_plan_settings_take_the_bounds_of_a_budget_and_are_frozen():
    import dataclasses

    from vitbench.analytic.memory.plan_settings import MAX_MEMORY_BYTES, PlanSettings

    assert MAX_MEMORY_BYTES == 2**60  # 1 EiB, as the error message says
    assert PlanSettings(memory_bytes=0).memory_bytes == 0 and PlanSettings(memory_bytes=2**60).memory_bytes == 2**60
    with pytest.raises(dataclasses.FrozenInstanceError):
        PlanSettings(memory_bytes=1).trace = False
    assert PlanSettings(memory_bytes=1).trace is True  # what the replay does not cover is traced unless asked


def test_plan_records_name_the_overrides_and_refuse_an_unknown_run_choice():
    from vitbench.analytic.memory import plan_records
    from vitbench.errors import SpecError
    from vitbench.models.references import resolve_all

    [row] = plan_records(resolve_all(["vit-ti/16"], {"depth": 2}), batch_size=1)
    assert row["overrides"] == "depth=2" and row["model"] == "vit-ti/16"
    with pytest.raises(SpecError, match="^optimizer='lion': must be one of"):
        plan_records(["vit-ti/16"], batch_size=1, optimizer="lion")
