"""Streaming grid expansion: ids as documented, counting without building, the --yes guard."""

from __future__ import annotations

import hashlib
import time

import pytest

from vitbench.cli import main
from vitbench.specs import spec_key
from vitbench.sweeps import count_configs, expand, iter_configs, plan_from_grid


def test_ids_hash_the_spec_key_batch_and_stages_as_documented():
    plan = plan_from_grid(["vit-s/16", "resnet18"], {"img_size": [224, "224x160", 256], "depth": [6, 12]}, batch_sizes=[1, 4])
    configs = expand(plan)
    for c in configs:
        # computed independently from the built spec's key (the grid never builds specs for ids)
        text = spec_key(c.spec) + '\n{"batch_size":' + str(c.batch_size) + ',"stages":["analytic"]}'
        assert c.id == hashlib.sha1(text.encode()).hexdigest()[:32]
    # ViT: 3 sizes x 2 depths x 2 batches; ResNet-18 has no depth field: 3 sizes x 2 batches
    assert len(configs) == 12 + 6 == count_configs(plan)


def test_equal_values_in_different_spellings_are_one_configuration():
    # 224, "224" and "224x224" are one image size; 4 and 4.0 one MLP ratio
    plan = plan_from_grid(["vit-ti/16"], {"img_size": [224, "224", "224x224"], "mlp_ratio": [4, 4.0]})
    assert len(expand(plan)) == count_configs(plan) == 1


def test_a_million_point_grid_streams():
    plan = plan_from_grid(["vit-ti/16"], {"img_size": list(range(224, 1809, 16)), "depth": list(range(1, 101))}, batch_sizes=list(range(1, 101)))
    started = time.perf_counter()
    first = next(iter_configs(plan))  # nothing is expanded ahead
    assert time.perf_counter() - started < 1.0
    assert (first.index, first.overrides_text, first.batch_size) == (0, "img_size=224,depth=1", 1)


# 100 sizes x 100 depths x 11 batch sizes = 110,000 configurations (> 100,000)
LARGE = ["sweep", "--model", "vit-ti/16", "--img-size", ",".join(str(s) for s in range(224, 1809, 16)),
         "--depth", ",".join(str(d) for d in range(1, 101)), "--batch-size", ",".join(str(b) for b in range(1, 12))]


def test_a_grid_above_the_threshold_needs_yes_and_says_how_long(tmp_path, capsys):
    assert main([*LARGE, "--out", str(tmp_path / "s"), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "110,000 configurations" in err[0] and " h at ~" in err[0] and "--yes" in err[0]
    assert not (tmp_path / "s").exists()  # refused before the store was created


@pytest.mark.slow
def test_a_large_dry_run_lists_the_first_rows_and_counts_the_rest(capsys):
    assert main([*LARGE, "--dry-run"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1] == "110000 configurations" and out[-3] == "... and 109980 more"


def test_ids_follow_the_spec_key_when_a_newer_field_is_a_grid_axis():
    # reg_tokens was added after schema 1: the key leaves it out at its default (0) only
    plan = plan_from_grid(["vit-ti/16"], {"reg_tokens": [0, 4], "depth": [6, "6"]})
    configs = expand(plan)
    assert len(configs) == count_configs(plan) == 2
    for c in configs:
        text = spec_key(c.spec) + '\n{"batch_size":1,"stages":["analytic"]}'
        assert c.id == hashlib.sha1(text.encode()).hexdigest()[:32]
    assert '"reg_tokens"' not in spec_key(configs[0].spec) and '"reg_tokens":4' in spec_key(configs[1].spec)


@pytest.mark.slow
def test_a_one_model_grid_is_counted_arithmetically(monkeypatch, capsys):
    """10^9 points counted (dry run) and 8 x 10^6 refused without --yes, with no configuration
    enumerated (issue: the dry run took over 60 s and 1.25 GB, the refusal 41 s and 647 MB)."""
    from vitbench.cli import main
    from vitbench.sweeps import grid as grid_module

    real = grid_module._points

    def only_the_first(plan, keys_only=False):  # the listed head may be enumerated, no more
        for n, point in enumerate(real(plan, keys_only)):
            if n >= 1000:
                raise AssertionError("the grid was enumerated to count it")
            yield point

    monkeypatch.setattr(grid_module, "_points", only_the_first)
    values = lambda n, start=1: ",".join(str(start + i) for i in range(n))  # noqa: E731
    argv = ["sweep", "--model", "vit-ti/16", "--depth", values(1000), "--embed-dim", values(1000, 192), "--mlp-ratio", values(1000)]
    assert main([*argv, "--dry-run"]) == 0
    assert capsys.readouterr().out.strip().endswith("1000000000 configurations")
    assert main([*argv[:7], "--shard", "3/7", "--dry-run"]) == 0  # 10^6 points, shard 3 of 7
    assert capsys.readouterr().out.strip().endswith(f"{len(range(2, 10**6, 7))} configurations")
    assert main([*argv[:5], "--embed-dim", values(8000, 192), "--out", "unused"]) == 2
    assert "8,000,000 configurations" in capsys.readouterr().err


def test_list_valued_flag_alternatives_on_the_command_line(capsys):
    """docs/sweeps.md's own example: ``--layers '2,2,2,2;3,4,6,3'`` is two ResNets, one per
    alternative (it was refused: the two texts were taken as one list of two layers)."""
    from vitbench.cli import main

    assert main(["sweep", "--model", "resnet50", "--layers", "2,2,2,2;3,4,6,3", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "2 configurations" in out
    assert "layers=2-2-2-2" in out and "layers=3-4-6-3" in out
