"""docs/sweeps.md's sweep-file example runs every grid it shows (issue 34: its top-level patch grid
used to be dropped silently, all rows coming from the sub-study), and top-level models that no
study inherits are refused instead of silently never running."""

from __future__ import annotations

import textwrap

from readme_examples import ROOT, examples

from vitbench.cli import main
from vitbench.sweeps import expand, load_sweep_file


def _docs_study(tmp_path):
    [example] = [e for e in examples(ROOT / "docs" / "sweeps.md") if e.action == "file" and e.argument == "study.yaml"]
    path = tmp_path / "study.yaml"
    path.write_text(example.code)
    return path


def test_the_docs_sweep_file_runs_its_patch_grid_and_its_resolution_study(tmp_path):
    configs = expand(load_sweep_file(_docs_study(tmp_path)))
    by_study: dict[str, list] = {}
    for c in configs:
        by_study.setdefault(c.study, []).append(c)
    # the text beside the example: cifar-vit/4 at patch 4, 8, 16 x 32, 64 px; vit-b at 3 patches x 3 sizes + resnet50 x 3
    patch = sorted((c.spec.patch_size, c.spec.img_size[0]) for c in by_study["patch"])
    assert patch == [(p, s) for p in (4, 8, 16) for s in (32, 64)]
    assert len(by_study["resolution"]) == 12 and len(configs) == 18


def test_the_docs_sweep_file_dry_run_lists_both_studies(tmp_path, capsys):
    assert main(["sweep", str(_docs_study(tmp_path)), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "18" in out and "cifar-vit/4" in out and "resnet50" in out


def test_top_level_models_every_study_replaces_are_refused(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent("""
        models: [cifar-vit/4]
        grid: {patch_size: [4, 8]}
        studies:
          - {name: only, models: [vit-ti/16]}
    """))
    assert main(["sweep", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "models=['cifar-vit/4']: is inherited by no study" in err[0]
    # a study that inherits them keeps the file valid
    path.write_text(textwrap.dedent("""
        models: [cifar-vit/4]
        grid: {patch_size: [4, 8]}
        studies:
          - {name: inherits}
          - {name: own, models: [vit-ti/16]}
    """))
    configs = expand(load_sweep_file(path))
    assert sorted({str(c.model) for c in configs if c.study == "inherits"}) == ["cifar-vit/4"]
