"""`vitbench profile` and `vitbench selftest` from the command line (in-process ``main``)."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from _columns import INTERFACE_COLUMNS

from vitbench.cli import main

FAST = ["--device", "cpu", "--min-time", "0.05", "--warmup", "1", "--threads", "1", "--no-memory", "--runs", "1"]


def _json(capsys) -> list[dict]:
    return json.loads(capsys.readouterr().out)["records"]


@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
def test_profile_json_has_every_column(capsys):
    with_memory = [flag for flag in FAST if flag != "--no-memory"]
    assert main(["profile", "mnist-vit", "--batch-size", "2", "--format", "json", *with_memory]) == 0
    (r,) = _json(capsys)
    assert [c for c in INTERFACE_COLUMNS if c not in r] == []
    assert r["status"] == "ok" and r["model"] == "mnist-vit" and r["batch_size"] == 2 and r["error"] in ("", None)
    assert len(r["samples_s"]) == r["n_samples"] > 0 and r["latency_p50_s"] > 0 and r["throughput_img_s"] > 0
    assert r["attention_kernel"] == "cpu_flash" and r["env_threads"] == 1 and r["device"] == "cpu"
    import torch

    import vitbench

    assert r["env_torch"] == torch.__version__ and r["vitbench_version"] == vitbench.__version__
    assert r["env_cpu"] and r["env_device_name"]
    assert 0 < r["mem_params_bytes"] <= r["peak_memory_bytes"]


def test_profile_table_default_columns(capsys):
    assert main(["profile", "mnist-vit", "--batch-size", "2", *FAST]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert header == ["model", "batch_size", "device", "mode", "precision", "status", "throughput_img_s",
                      "latency_p50_s", "latency_p90_s", "latency_cv", "peak_memory_bytes", "attention_kernel", "mfu"]


@pytest.mark.slow
def test_profile_csv_keeps_raw_samples(capsys):
    assert main(["profile", "mnist-vit", "--mode", "infer,train", "--format", "csv", *FAST]) == 0
    frame = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(frame["mode"]) == ["infer", "train"]
    for _, row in frame.iterrows():
        samples = json.loads(row["samples_s"])
        assert len(samples) == row["n_samples"]
        assert row["throughput_img_s"] == pytest.approx(1 / pd.Series(samples).median())


@pytest.mark.slow
def test_multi_config_run_continues_after_oom(capsys):
    # batch 10^9 needs ~3 TB for the MNIST input alone: an allocation failure, caught (run
    # anyway: by default the memory model refuses it, below)
    code = main(["profile", "mnist-vit", "--batch-size", "1000000000,2", "--no-memory-check", "--format", "json", *FAST])
    captured = capsys.readouterr()
    rows = json.loads(captured.out)["records"]
    assert code == 0  # an OOM row is a result, not a failure of the tool
    assert [r["status"] for r in rows] == ["oom", "ok"]
    assert "oom: mnist-vit (batch 1000000000" in captured.err


def test_refused_rows_carry_identity_and_the_reason(capsys):
    from vitbench.analytic import complexity
    from vitbench.presets import resolve

    code = main(["profile", "mnist-vit", "--batch-size", "1000000000", "--format", "json", *FAST])
    captured = capsys.readouterr()
    (r,) = json.loads(captured.out)["records"]
    assert code == 0 and r["status"] == "refused" and "this machine's memory" in r["error"]
    expected = complexity(resolve("mnist-vit"), 10**9)
    assert r["params"] == expected.params and r["macs"] == expected.macs and r["img_size"] == 28
    assert "refused: mnist-vit (batch 1000000000" in captured.err


def test_timeout_without_isolate_is_honoured(capsys):
    code = main(["profile", "mnist-vit", "--timeout", "0.001", "--format", "json", *FAST])
    (r,) = _json(capsys)
    assert code == 3 and r["status"] == "error" and "timed out after 0.001 s" in r["error"]


@pytest.mark.slow
def test_profile_with_memory_limit_and_auto(capsys):
    code = main(["profile", "mnist-vit", "--batch-size", "auto", "--memory-limit", "32MiB", "--max-batch-size", "512", "--format", "json", *FAST])
    (r,) = _json(capsys)
    assert code == 0 and r["status"] == "ok", r["error"]
    assert r["batch_size_auto"] and 1 <= r["batch_size"] <= 512


@pytest.mark.parametrize(
    "argv, field",
    [
        (["--precision", "fp16", "--device", "cpu"], "precision"),
        (["--batch-size", "0"], "--batch-size"),
        (["--mode", "eval"], "--mode"),
        (["--attention", "flash"], "attention"),
        (["--memory-limit", "lots"], "--memory-limit"),
        (["--img-size", "30"], "patch_size"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, field):
    assert main(["profile", "mnist-vit", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("vitbench: error:") and field in err


def test_exit_3_when_every_configuration_fails(capsys, monkeypatch):
    import vitbench.measure.workload as workload

    def broken(*args, **kwargs):
        raise RuntimeError("simulated driver failure")

    monkeypatch.setattr(workload, "build_workload", broken)
    assert main(["profile", "mnist-vit", "--format", "json", *FAST]) == 3
    captured = capsys.readouterr()
    (r,) = json.loads(captured.out)["records"]
    assert r["status"] == "error" and "simulated driver failure" in r["error"]


@pytest.mark.slow
def test_selftest_subset_passes(capsys):
    assert main(["selftest", "--device", "cpu", "--only", "environment", "--only", "timing", "--only", "peak-memory"]) == 0
    out = capsys.readouterr().out
    assert out.count("PASS") == 3 and "FAIL" not in out


def test_run_flags_are_one_vocabulary_with_units():
    import argparse

    from vitbench.cli.common import add_run_arguments, parse_quantity, parse_size, run_settings_from
    from vitbench.settings import RunSettings

    assert parse_size("512MiB") == 512 * 2**20 and parse_size("2GB") == 2 * 10**9 and parse_size("4096") == 4096
    assert parse_quantity("989T") == 989e12 and parse_quantity("3.35e12") == 3.35e12
    for bad in ("lots", "0", "1e9GiB", "-1"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_size(bad)
    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    args = parser.parse_args(["--min-time", "0.5", "--memory-limit", "1GiB", "--timeout", "30", "--runs", "3",
                              "--no-memory", "--no-memory-check", "--clock", "cpu", "--mode", "infer,train"])
    values = run_settings_from(args)
    assert values == {"min_run_time_s": 0.5, "memory_limit_bytes": 2**30, "timeout_s": 30.0, "runs": 3,
                      "memory": False, "memory_check": False, "clock": "cpu", "mode": ["infer", "train"]}
    scalars = {k: v for k, v in values.items() if not isinstance(v, list)}
    assert RunSettings(**scalars).in_worker  # every flag names a RunSettings field
    only = argparse.ArgumentParser()
    add_run_arguments(only, fields=("device", "threads", "runs"))
    assert run_settings_from(only.parse_args(["--threads", "2"])) == {"threads": 2}
    with pytest.raises(SystemExit):
        only.parse_args(["--min-time", "1"])


@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
def test_profile_table_tells_rows_apart_by_resolution_and_overrides(capsys):
    """Rows that differ only in --img-size, or in a reference's keyword arguments, get the
    column that tells them apart."""
    from vitbench.cli import main

    code = main(["profile", "vit-ti/16+depth=1", "--img-size", "32,48", "--device", "cpu", "--runs", "1",
                 "--min-time", "0.05", "--warmup", "1", "--no-memory", "--threads", "1"])
    out = capsys.readouterr().out
    assert code == 0
    header = out.splitlines()[0].split()
    assert header[:3] == ["model", "overrides", "img_size"]
    assert "depth=1" in out and " 32 " in out and " 48 " in out


def test_profile_api_takes_input_size_like_analyze():
    from torch import nn

    import vitbench

    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
    settings = vitbench.RunSettings(device="cpu", runs=1, min_run_time_s=0.05, warmup=1, memory=False, threads=1)
    [row] = vitbench.profile(model, settings, input_size=(3, 32, 32))
    assert row["status"] == "ok" and row["img_size"] == 32 and row["throughput_img_s"] > 0
