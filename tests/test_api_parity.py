"""The API owns every behaviour; the CLI parses, calls and prints. For each command, the rows the
command prints (as JSON) are the rows the API function of the same name returns for the same
request (issue: the tracing fallback lived only in cli/plan.py, so `plan_records` returned None
where `vitbench plan` gave bytes)."""

from __future__ import annotations

import json

import pytest

import vitbench
from vitbench.cli import main

#: columns that differ between two runs of the same request by nature (clock readings, host load)
VOLATILE = ("timestamp", "created", "completed_at", "elapsed", "env_load", "duration_s", "run_id", "pred_seconds")


def cli_rows(capsys, *argv: str) -> list[dict]:
    code = main([*argv, "--format", "json"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    data = json.loads(out)
    return data["records"] if isinstance(data, dict) else data


def api_rows(records) -> list[dict]:
    """The API's records through the same JSON encoder the CLI prints with."""
    from vitbench.reporting.format import render

    data = json.loads(render(records, "json"))
    return data["records"] if isinstance(data, dict) else data


def stable(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not any(k.startswith(p) for p in VOLATILE)} for r in rows]


def test_analyze(capsys):
    # references and live modules: tests/test_references.py (a counted model, the gate sees it)
    cli = cli_rows(capsys, "analyze", "vit-s/16", "resnet50", "deit-s/16", "--img-size", "224,384")
    api = api_rows(vitbench.analyze(["vit-s/16", "resnet50", "deit-s/16"], img_size=[224, 384]))
    assert len(cli) == 6 and cli == api


def test_analyze_with_counters(capsys):
    cli = cli_rows(capsys, "analyze", "mnist-vit", "--counters", "analytic,fvcore,dispatch", "--batch-size", "2")
    api = api_rows(vitbench.analyze("mnist-vit", counters=("analytic", "fvcore", "dispatch"), batch_size=2))
    assert cli == api and cli[0]["fvcore_macs"] == cli[0]["dispatch_macs"] == cli[0]["macs"]


def test_validate(capsys):
    cli = cli_rows(capsys, "validate", "mnist-vit", "--img-size", "28", "--batch-sizes", "1", "--all")
    api = api_rows(vitbench.validate(["mnist-vit"], resolutions=[28], batch_sizes=[1]))
    assert cli and stable(cli) == stable(api)
    assert cli[0]["img_size"] == 28  # the identity every command writes (validate wrote "28x28")


def test_plan(capsys):
    # a model the replay does not cover, traced in both: tests/test_plan_cli.py
    cli = cli_rows(capsys, "plan", "vit-s/16", "resnet50", "--batch-size", "8", "--memory", "8GiB")
    api = api_rows(vitbench.plan_records(vitbench.resolve_models(["vit-s/16", "resnet50"]), memory_bytes=8 * 2**30, batch_size=8))
    assert cli == api and all(r["pred_peak_memory_bytes"] > 0 and r["max_batch_size"] > 8 for r in cli)


@pytest.mark.slow
def test_predict_on_a_datasheet_device(capsys):
    cli = cli_rows(capsys, "predict", "vit-s/16", "resnet50", "--device", "h100", "--precision", "bf16", "--batch-size", "1,64")
    api = api_rows(vitbench.predict(["vit-s/16", "resnet50"], device="h100", precision="bf16", batch_size=[1, 64]))
    assert len(cli) == 4 and stable(cli) == stable(api)


def test_audit(capsys):
    cli = cli_rows(capsys, "audit", "--source", "assignment", "--no-counted")
    api = api_rows(vitbench.audit(source="assignment", counted=False))
    assert len(cli) == 3 and cli == api


def test_models(capsys):
    cli = cli_rows(capsys, "models")
    assert [r["model"] for r in cli] == [p.name for p in vitbench.list_presets()]


def test_compare(capsys, tmp_path):
    base, grown = tmp_path / "base.csv", tmp_path / "grown.csv"
    assert main(["analyze", "vit-s/16", "resnet50", "-o", str(base)]) == 0
    assert main(["analyze", "vit-s/16", "resnet50", "--depth", "13", "-o", str(grown)]) == 0
    capsys.readouterr()
    code = main(["compare", str(base), str(grown), "--fail-on", "params:0", "--format", "json"])
    printed = json.loads(capsys.readouterr().out)
    result = vitbench.compare(str(base), str(grown), ["params:0"])
    assert code == result.exit_code == 1
    assert [r.metric for r in result.regressions] == ["params"]
    from vitbench.reporting.gate import render

    assert printed == json.loads(render(result, "json"))


def test_sweep(capsys, tmp_path):
    assert main(["sweep", "--model", "mnist-vit,cifar-vit/4", "--depth", "1,2", "--out", str(tmp_path / "cli"), "-q"]) == 0
    capsys.readouterr()
    vitbench.sweep(models=["mnist-vit", "cifar-vit/4"], grid={"depth": [1, 2]}, out=tmp_path / "api")
    from vitbench.store import read_store

    cli, api = read_store(tmp_path / "cli")[0], read_store(tmp_path / "api")[0]
    assert len(cli) == 4 and stable(api_rows(cli)) == stable(api_rows(api))


@pytest.mark.slow
def test_profile_rows_have_the_same_columns_and_identity(capsys):
    argv = ["profile", "mnist-vit", "--device", "cpu", "--batch-size", "2", "--runs", "1", "--min-time", "0.05", "--warmup", "1", "--threads", "1"]
    cli = cli_rows(capsys, *argv)
    api = api_rows(vitbench.profile(["mnist-vit"], vitbench.RunSettings(device="cpu", batch_size=2, runs=1, min_run_time_s=0.05, warmup=1, threads=1)))
    assert set(cli[0]) == set(api[0])
    identity = ("model", "spec_key", "batch_size", "device", "mode", "precision", "status", "params", "macs")
    assert [{k: r[k] for k in identity} for r in cli] == [{k: r[k] for k in identity} for r in api]


IDENTITY = ("model", "source", "kind", "spec_key", "img_size", "patch_size", "batch_size", "overrides")


@pytest.mark.slow
def test_one_identity_whichever_command_made_the_row(tmp_path):
    """The identity was built in five places: validate wrote img_size '384x384' and had no kind,
    source or patch size, the sweep no source. Now every row's identity columns come from
    vitbench.specs.identity.RowIdentity and agree for the same configuration."""
    models = ["vit-s/16", "torchvision:resnet18"]
    rows = {
        "analyze": vitbench.analyze(models, img_size=384, batch_size=2),
        "plan": vitbench.plan_records(vitbench.resolve_models(models, {"img_size": 384}), batch_size=2),
        "predict": vitbench.predict(models, device="h100", batch_size=2, img_size=384),
        "validate": [r for r in vitbench.validate(models, resolutions=[384], batch_sizes=[2])],
        "sweep": vitbench.sweep(models=models, grid={"img_size": [384]}, batch_sizes=[2], out=tmp_path / "s").records,
    }
    # spec_key: on planned, swept (and measured) rows; analyze, predict and validate leave it out
    # so that the gate matches their rows by model across a change to the model
    keyed = [[r["spec_key"] for r in rows[name]] for name in ("plan", "sweep")]
    assert keyed[0] == keyed[1] and all(keyed[0])
    assert all("spec_key" not in r for name in ("analyze", "predict", "validate") for r in rows[name])
    seen = {name: [{k: r.get(k) for k in IDENTITY if k != "spec_key"} for r in found] for name, found in rows.items()}
    expected = seen["analyze"]
    assert [r["img_size"] for r in expected] == [384, 384]
    assert [r["source"] for r in expected] == ["preset", "torchvision"]
    assert [r["overrides"] for r in expected] == ["img_size=384", "img_size=384"]
    for name, identities in seen.items():
        assert identities == expected, name
