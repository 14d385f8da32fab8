"""Sweep grid expansion, de-duplication, invalid rows, sharding, stage rows and CLI errors."""

from __future__ import annotations

import pytest

from vitbench.analytic import complexity
from vitbench.cli import main
from vitbench.errors import VitbenchError
from vitbench.presets import resolve
from vitbench.store import read_store
from vitbench.sweeps import expand, parse_shard, plan_from_grid, select_shard, sweep


def _plan(models, grid=None, **kw):
    return plan_from_grid(models, grid, **kw)


def test_grid_is_models_times_product_with_inapplicable_fields_skipped_and_duplicates_merged():
    plan = _plan(["vit-b/16", "resnet50"], {"img_size": [224, 384], "patch_size": [16, 32]})
    configs = expand(plan)
    # ViT: 2 sizes x 2 patches = 4; ResNet-50 has no patch_size: 2 sizes (the 2 patch values
    # would give identical ResNets, kept once).
    assert [(c.model, c.spec.img_size[0], getattr(c.spec, "patch_size", None)) for c in configs] == [
        ("vit-b/16", 224, 16), ("vit-b/16", 224, 32), ("vit-b/16", 384, 16), ("vit-b/16", 384, 32),
        ("resnet50", 224, None), ("resnet50", 384, None),
    ]
    assert [c.index for c in configs] == list(range(6))
    assert len({c.id for c in configs}) == 6


def test_identical_configurations_from_different_presets_are_kept_once():
    # vit-b/16 with patch 32 is exactly vit-b/32 (same spec_key, name aside).
    configs = expand(_plan(["vit-b/16", "vit-b/32"], {"patch_size": [32]}))
    assert len(configs) == 1 and configs[0].model == "vit-b/16"


def test_ids_are_stable_and_depend_on_what_determines_the_row():
    a = expand(_plan(["vit-s/16"], {"img_size": [224, 384]}, batch_sizes=[1, 8]))
    b = expand(_plan(["vit-s/16"], {"img_size": [224, 384]}, batch_sizes=[1, 8]))
    assert [c.id for c in a] == [c.id for c in b]
    c = expand(_plan(["vit-s/16"], {"img_size": [224, 384]}, batch_sizes=[1, 8], stages=["analytic", "counters"]))
    assert not {x.id for x in a} & {x.id for x in c}
    assert len({x.id for x in a}) == 4  # 2 sizes x 2 batches


def test_invalid_combination_is_a_row_not_an_abort(tmp_path):
    # 48 px: patch 16 divides it (9 patches), patch 32 does not.
    result = sweep(models=["vit-s/16"], grid={"img_size": [48, 64], "patch_size": [16, 32]}, out=tmp_path / "s")
    rows = {(r["img_size"], r["patch_size"]): r for r in result.records if r["status"] == "ok"}
    invalid = [r for r in result.records if r["status"] == "invalid"]
    assert len(invalid) == 1
    assert "patch_size=32" in invalid[0]["error"] and "48" in invalid[0]["error"]
    assert set(rows) == {(48, 16), (64, 16), (64, 32)}
    # 48/16 = 3 patches a side: 9 patches + CLS = 10 tokens.
    assert rows[(48, 16)]["tokens"] == 10
    assert rows[(64, 32)]["macs"] == complexity(resolve("vit-s/16", img_size=64, patch_size=32)).macs


def test_a_grid_where_everything_is_invalid_is_a_usage_error():
    with pytest.raises(VitbenchError, match="every configuration of the grid is invalid"):
        expand(_plan(["vit-s/16"], {"img_size": [48], "patch_size": [32]}))


def test_shards_partition_the_grid_deterministically():
    configs = expand(_plan(["vit-s/16", "vit-b/16", "resnet18"], {"img_size": [224, 256, 384]}, batch_sizes=[1, 2]))
    assert len(configs) == 18
    shards = [select_shard(configs, (i, 4)) for i in range(1, 5)]
    assert [len(s) for s in shards] == [5, 5, 4, 4]
    ids = [c.id for s in shards for c in s]
    assert sorted(ids) == sorted(c.id for c in configs)
    assert [c.index for c in shards[1]] == [1, 5, 9, 13, 17]


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "a/b", "2", "1/2/3", ""])
def test_bad_shard_text_is_rejected(text):
    with pytest.raises(VitbenchError, match="--shard"):
        parse_shard(text)


def test_shard_runs_into_its_own_store_and_shards_merge_back(tmp_path):
    common = ["sweep", "--model", "vit-ti/16,resnet18", "--img-size", "160,224,320", "--quiet"]
    for i in (1, 2, 3):
        assert main(common + ["--shard", f"{i}/3", "--out", str(tmp_path / f"s{i}")]) == 0
    assert main(["merge", str(tmp_path / "s3"), str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "all")]) == 0
    assert main(common + ["--out", str(tmp_path / "whole")]) == 0
    merged, _ = read_store(tmp_path / "all")
    whole, _ = read_store(tmp_path / "whole")
    assert [r["id"] for r in merged] == [r["id"] for r in whole]
    assert [r["macs"] for r in merged] == [r["macs"] for r in whole]
    assert len(merged) == 6


def test_failing_configuration_becomes_an_error_row(tmp_path, monkeypatch):
    import vitbench.analytic as analytic

    real = analytic.complexity

    def flaky(spec, batch_size=1):
        if spec.img_size == (256, 256):
            raise RuntimeError("boom on purpose")
        return real(spec, batch_size)

    monkeypatch.setattr(analytic, "complexity", flaky)
    result = sweep(models=["vit-ti/16"], grid={"img_size": [224, 256, 288]}, out=tmp_path / "s")
    statuses = {r["img_size"] if r["img_size"] else r["overrides"]: r["status"] for r in result.records}
    assert sorted(statuses.values()) == ["error", "ok", "ok"]
    error = next(r for r in result.records if r["status"] == "error")
    # vitbench's own code raised (this test's stand-in for a bug): the sweep goes on, the row says
    # so and keeps the traceback (issue 47)
    assert error["error"] == "internal error: RuntimeError: boom on purpose"
    assert error["error_detail"].startswith("Traceback") and "in flaky" in error["error_detail"]
    assert error["overrides"] == "img_size=256"


def test_existing_store_is_never_overwritten_without_resume_or_force(tmp_path, capsys):
    out = str(tmp_path / "s")
    assert main(["sweep", "--model", "vit-ti/16", "--out", out, "--quiet"]) == 0
    assert main(["sweep", "--model", "vit-ti/16", "--out", out, "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--resume" in err[0] and "--force" in err[0]
    # Issue 13: a different definition (another model list) is refused on resume in one line ...
    assert main(["sweep", "--model", "vit-ti/16,vit-s/16", "--out", out, "--quiet", "--resume"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "another sweep definition" in err[0] and "--allow-foreign" in err[0]
    assert [r["model"] for r in read_store(out)[0]] == ["vit-ti/16"]
    # ... and added to only when asked
    assert main(["sweep", "--model", "vit-ti/16,vit-s/16", "--out", out, "--quiet", "--resume", "--allow-foreign"]) == 0
    assert [r["model"] for r in read_store(out)[0]] == ["vit-ti/16", "vit-s/16"]
    # the same definition resumes without a flag
    assert main(["sweep", "--model", "vit-ti/16,vit-s/16", "--out", out, "--quiet", "--resume"]) == 0


def test_counters_stage_adds_traced_columns(tmp_path):
    pytest.importorskip("fvcore")
    result = sweep(models=["mnist-vit"], stages=["analytic", "counters"], counters=["dispatch"], out=tmp_path / "s")
    (row,) = result.records
    # The dispatch counter traces the built module; the MNIST ViT's exact MACs are known
    # analytically, and the two must agree.
    assert row["dispatch_macs"] == row["macs"] == complexity(resolve("mnist-vit")).macs
    assert row["agree"] in (True, "True")


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["--model", "vit-b/16", "--patch-size", "abc"], "--patch-size"),
        (["--model", "vit-b/16", "--depth", "6,x"], "--depth"),
        (["--model", "resnet50", "--patch-size", "16"], "--patch-size"),
        (["--model", "vit-b/99"], "--model"),
        (["--model", "vit-b/16", "--stages", "analytic,timing"], "--stages"),
        (["--model", "vit-b/16", "--batch-size", "1,0"], "--batch-size"),
        (["--model", "vit-b/16", "--mode", "fast"], "--mode"),
        (["--model", "vit-b/16", "--min-time", "-1"], "--min-time"),
        (["--model", "vit-b/16", "--shard", "3/2"], "--shard"),
        (["--model", "vit-s/16", "--img-size", "48", "--patch-size", "32"], "invalid"),
        (["--img-size", "224"], "--model"),
    ],
)
def test_bad_grids_fail_with_one_line_and_exit_2(argv, flag, capsys, tmp_path):
    rc = main(["sweep", *argv, "--out", str(tmp_path / "s"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and err[0].startswith("vitbench: error:") and flag in err[0]
    assert not (tmp_path / "s" / "results.csv").exists() and not (tmp_path / "s" / "rows.jsonl").exists()


def test_dry_run_lists_the_shard_without_running(tmp_path, capsys):
    assert main(["sweep", "--model", "vit-b/16", "--img-size", "224,384", "--patch-size", "16,32", "--shard", "2/2", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "img_size=224,patch_size=32" in out and "img_size=384,patch_size=32" in out
    assert "patch_size=16" not in out
    assert out.strip().endswith("2 configurations")


@pytest.mark.slow
def test_model_references_resolve_through_the_one_resolution(tmp_path):
    torchvision = pytest.importorskip("torchvision")
    result = sweep(models=["torchvision:resnet18"], grid={"img_size": [160, 224]}, out=tmp_path / "s")
    rows = {r["img_size"]: r for r in result.records}
    # torchvision's own figure for its ResNet-18 (the weights' metadata; nothing is downloaded)
    expected = torchvision.models.ResNet18_Weights.IMAGENET1K_V1.meta["num_params"]
    assert rows[224]["params"] == rows[160]["params"] == expected == 11_689_512
    # MACs scale with the pixels (stride-32 feature maps: 7x7 at 224 px, 5x5 at 160 px), the head aside
    assert rows[224]["status"] == "ok" and rows[160]["macs"] < rows[224]["macs"]


def test_configurations_whose_12_digit_ids_collide_are_all_kept(tmp_path, capsys):
    """Two of these 8 configurations shared the first 48 bits of their SHA-1 (the old id): the
    sweep said 7 configurations and wrote 7 rows. Ids are now 128 bits: all 8 are rows."""
    from vitbench.sweeps.grid import ID_DIGITS

    argv = ["--model", "mnist-vit", "--depth", "5,91", "--embed-dim", "672,616", "--mlp-ratio", "726,703"]
    assert main(["sweep", *argv, "--out", str(tmp_path / "s"), "-q"]) == 0
    rows = read_store(tmp_path / "s")[0]
    assert len(rows) == 8 and len({r["id"] for r in rows}) == 8 and {len(r["id"]) for r in rows} == {ID_DIGITS}
    assert len({r["id"][:12] for r in rows}) == 7  # the collision the 12-digit ids had
    assert main(["sweep", *argv, "--dry-run"]) == 0
    assert capsys.readouterr().out.strip().endswith("8 configurations")


def test_a_store_of_12_digit_ids_resumes_with_12_digit_ids(tmp_path):
    """A store an earlier vitbench wrote (12-digit ids, no id_hex_digits in sweep.json) resumes
    without running its rows again or mixing id lengths."""
    from vitbench.store import Store
    from vitbench.sweeps.grid import iter_configs
    from vitbench.sweeps.rows import Runner
    from vitbench.sweeps.run import sweep_meta

    grid = {"img_size": [32, 64, 96], "depth": [1, 2]}
    plan = plan_from_grid(["cifar-vit/4"], grid)
    runner = Runner()
    meta = sweep_meta(plan, 6, None)
    with Store.open(tmp_path / "old", sweep=meta) as store:
        for config in list(iter_configs(plan, digits=12))[:4]:
            store.add(runner.row(config))
    before = {r["id"]: r for r in read_store(tmp_path / "old")[0]}
    result = sweep(models=["cifar-vit/4"], grid=grid, out=tmp_path / "old", resume=True)
    assert (result.skipped, result.ran) == (4, 2)
    rows = read_store(tmp_path / "old")[0]
    assert len(rows) == 6 and {len(r["id"]) for r in rows} == {12}
    kept = [r for r in rows if r["id"] in before]
    assert len(kept) == 4 and all(r == before[r["id"]] for r in kept)  # not run again


def _counting_build_config(monkeypatch):
    from vitbench.sweeps import grid

    calls = []
    real = grid.build_config

    def counted(model, overrides):
        calls.append(overrides)
        return real(model, overrides)

    monkeypatch.setattr(grid, "build_config", counted)
    return calls


def test_the_validity_check_does_not_walk_millions_of_invalid_points_to_find_a_valid_one(monkeypatch):
    """3,000,000 points; in grid order the first 2,000,000 have embed_dim 64 or 128, which vit-s/16's
    6 heads do not divide. The check found the first valid point by walking them all (about two
    minutes). It must look where the grid varies instead and stop at a valid point."""
    from vitbench.sweeps.grid import check_valid

    calls = _counting_build_config(monkeypatch)
    plan = _plan(["vit-s/16"], {"embed_dim": [64, 128, 192], "depth": list(range(1, 1001)), "mlp_ratio": list(range(1, 1001))})
    check_valid(plan)  # a valid point exists (embed_dim 192): no error
    assert 0 < len(calls) <= 2_000
    assert dict(calls[-1])["embed_dim"] == 192


def test_a_huge_grid_that_may_be_all_invalid_is_not_walked_point_by_point(monkeypatch):
    """10^6 points, none valid (65 is not divisible by 6 heads): only enumerating them all could
    prove it, so the check gives up after a bounded number of tries; every row then says why it
    is invalid. A grid small enough to try whole is still refused (the next test)."""
    from vitbench.sweeps.grid import check_valid, iter_configs

    calls = _counting_build_config(monkeypatch)
    plan = _plan(["vit-s/16"], {"embed_dim": [65], "depth": list(range(1, 1001)), "mlp_ratio": list(range(1, 1001))})
    check_valid(plan)
    assert 0 < len(calls) <= 2_000
    first = next(iter(iter_configs(plan)))
    assert first.invalid is not None and "embed_dim" in first.invalid


def test_a_small_grid_that_is_all_invalid_is_still_refused_whatever_its_order():
    with pytest.raises(VitbenchError, match="every configuration of the grid is invalid"):
        expand(_plan(["vit-s/16"], {"embed_dim": [64, 65, 128], "depth": [1, 2, 3]}))
