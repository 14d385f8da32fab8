"""The analyze / models / validate commands: formats, columns, one-line errors and exit codes."""

import io
import json

import pandas as pd
import pytest
from _cli import run


def test_analyze_csv_columns_and_values(capsys):
    code, out, err = run(capsys, "analyze", "vit-b/16", "resnet50", "--format", "csv")
    assert code == 0 and err == ""
    frame = pd.read_csv(io.StringIO(out))
    for column in ("model", "img_size", "patch_size", "tokens", "params", "macs", "flops",
                   "macs_patch_embed", "macs_qkv", "macs_attn_scores", "macs_attn_values",
                   "macs_attn_proj", "macs_mlp_fc1", "macs_mlp_fc2", "macs_head", "macs_stage1"):
        assert column in frame.columns
    vit = frame.set_index("model").loc["vit-b/16"]
    assert vit["params"] == 86_567_656 and vit["macs"] == 17_563_828_224
    assert vit["flops"] == 2 * vit["macs"] and vit["tokens"] == 197


def test_analyze_overrides_apply_to_every_model_that_has_the_field(capsys):
    code, out, _ = run(capsys, "analyze", "vit-b/16", "resnet50", "--img-size", "384", "--format", "json")
    assert code == 0
    records = json.loads(out)["records"]
    assert {r["img_size"] for r in records} == {384}
    vit = next(r for r in records if r["model"] == "vit-b/16")
    assert vit["tokens"] == 577  # (384/16)^2 + 1


def test_analyze_batch_size_and_markdown(capsys):
    code, out, _ = run(capsys, "analyze", "cifar-vit/4", "--batch-size", "4", "--format", "markdown")
    assert code == 0 and out.startswith("| model")
    assert "5.017 G" in out  # 4 x 1,254,366,208 MACs


def test_analyze_counters_side_by_side(capsys):
    code, out, _ = run(capsys, "analyze", "mnist-vit", "--counters", "analytic,fvcore,dispatch", "--format", "csv")
    assert code == 0
    row = pd.read_csv(io.StringIO(out)).iloc[0]
    assert row["macs"] == row["fvcore_macs"] == row["dispatch_macs"]
    assert bool(row["agree"]) and row["fvcore_flops"] > row["fvcore_macs"]


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["analyze", "vit-b/61"], "did you mean"),
        (["analyze", "vit-b/16", "--img-size", "100"], "patch_size=16"),
        (["analyze", "vit-b/16", "--num-heads", "5"], "num_heads"),
        (["analyze", "resnet50", "--patch-size", "8"], "patch_size"),
        (["analyze", "vit-b/16", "--depth", "zero"], "depth"),
        (["analyze", "vit-b/16", "--batch-size", "0"], "batch-size"),
        (["analyze", "vit-b/16", "--counters", "ptflops"], "counters"),
        (["analyze", "vit-b/16", "--format", "xml"], "format"),
        (["analyze"], "MODEL"),
        (["frobnicate"], "frobnicate"),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vitbench: error:")
    assert needle in lines[0]
    assert "Traceback" not in err


def test_models_lists_presets(capsys):
    code, out, _ = run(capsys, "models", "--format", "csv")
    frame = pd.read_csv(io.StringIO(out))
    assert code == 0 and len(frame) >= 40
    assert frame.set_index("model").loc["cifar-vit/4", "params"] == 18_975_234
    code, out, _ = run(capsys, "models", "--kind", "resnet", "--format", "csv")
    assert set(pd.read_csv(io.StringIO(out))["kind"]) == {"resnet"}


@pytest.mark.slow
def test_validate_exit_codes(capsys, monkeypatch):
    code, out, err = run(capsys, "validate", "mnist-vit", "slides-cnn", "--batch-sizes", "1")
    assert code == 0 and "6/6 configurations agree" in err
    import vitbench.analytic.vit as formulas

    original = formulas.head_macs
    monkeypatch.setattr(formulas, "head_macs", lambda spec: original(spec) + 1)
    code, out, err = run(capsys, "validate", "mnist-vit", "--batch-sizes", "1", "--img-size", "28")
    assert code == 1
    assert "head" in out and "0/1 configurations agree" in err


def test_python_module_entry_point():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "vitbench", "analyze", "slides-vit", "--format", "csv"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "3195146" in done.stdout
