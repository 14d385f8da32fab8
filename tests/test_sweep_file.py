"""Sweep files (YAML and TOML): the documented schema, and one-line errors with exit code 2."""

from __future__ import annotations

import textwrap

import pytest

from vitbench.cli import main
from vitbench.settings import RunSettings
from vitbench.store import read_store
from vitbench.sweeps import default_study_path, expand, load_sweep_file


def _write(tmp_path, text, name="s.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_yaml_schema_example_loads(tmp_path):
    path = _write(tmp_path, """
        name: patch-study
        models: [cifar-vit/4]
        grid: {patch_size: [4, 8, 16], img_size: [32, 64]}
        batch_sizes: [1]
        stages: [analytic, counters]
        measure: {device: cpu, mode: [infer], precision: [fp32], min_run_time_s: 0.5}
    """)
    plan = load_sweep_file(path)
    assert plan.name == "patch-study"
    (study,) = plan.studies
    assert study.grid == (("patch_size", (4, 8, 16)), ("img_size", (32, 64)))
    assert study.stages == ("analytic", "counters")
    # the measured stage's settings are RunSettings, under the same names as in the file
    assert study.measure == RunSettings(device="cpu", mode="infer", precision="fp32", min_run_time_s=0.5)
    assert study.modes == ("infer",) and study.precisions == ("fp32",)
    assert len(expand(plan)) == 6


def test_toml_file_with_studies_inherits_top_level_keys(tmp_path):
    path = _write(tmp_path, """
        name = "two"
        batch_sizes = [1, 4]
        [measure]
        device = "cpu"
        min_run_time_s = 0.1
        [[studies]]
        name = "res"
        models = ["vit-b/16", "resnet50"]
        grid = { img_size = [224, "384x256"] }
        [[studies]]
        name = "layers"
        models = ["resnet18"]
        batch_sizes = [2]
        grid = { layers = [[2, 2, 2, 2], [1, 1, 1, 1]] }
        measure = { mode = ["infer", "train"] }
    """, "s.toml")
    plan = load_sweep_file(path)
    res, layers = plan.studies
    assert res.batch_sizes == (1, 4) and layers.batch_sizes == (2,)
    assert res.grid == (("img_size", (224, "384x256")),)
    assert layers.grid == (("layers", ((2, 2, 2, 2), (1, 1, 1, 1))),)
    assert layers.modes == ("infer", "train") and layers.measure.min_run_time_s == 0.1
    configs = expand(plan)
    assert [c.spec.img_size for c in configs if c.study == "res"] == [(224, 224)] * 2 + [(384, 256)] * 2 + [(224, 224)] * 2 + [(384, 256)] * 2
    assert [c.spec.layers for c in configs if c.study == "layers"] == [(2, 2, 2, 2), (1, 1, 1, 1)]


def test_sweep_file_runs_from_the_cli(tmp_path):
    path = _write(tmp_path, """
        models: [vit-ti/16, resnet18]
        grid: {img_size: [160, 224]}
    """)
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out), "--quiet"]) == 0
    records, sidecar = read_store(out)
    assert [(r["model"], r["img_size"]) for r in records] == [
        ("vit-ti/16", 160), ("vit-ti/16", 224), ("resnet18", 160), ("resnet18", 224)
    ]
    assert sidecar["sweep"]["name"] == "s" and sidecar["sweep"]["grid_size"] == 4


@pytest.mark.parametrize(
    "text, needle",
    [
        ("models: [vit-b/16]\ngrid: {patch_size: [16, 32]\n", "line 3"),  # unclosed flow mapping
        ("models: [vit-b/16]\n  grid: 3\n", "line 2"),
        ("models: [vit-b/16]\nbatch_size: [1]\n", "batch_size=[1]: unknown key"),
        ("models: vit-b/16\ngrid: {pach_size: [8]}\n", "grid.pach_size=[8]: unknown spec field"),
        ("models: [vit-b/16]\ngrid: {patch_size: []}\n", "grid.patch_size=[]: must not be empty"),
        ("models: [vit-b/16]\ngrid: [patch_size]\n", "grid=['patch_size']: must be a mapping"),
        ("models: [vit-b/16]\ngrid: {depth: [six]}\n", "grid.depth='six'"),
        ("models: [resnet50]\ngrid: {patch_size: [8]}\n", "grid.patch_size=8: does not apply"),
        ("models: [vit-b/16]\nstages: [analytic, timing]\n", "stages='timing': must be one of analytic, counters, predict, measured"),
        ("models: [vit-b/16]\nbatch_sizes: [1, two]\n", "batch_sizes='two': must be a positive integer"),
        ("models: [vit-b/16]\nmeasure: {min_run_time_s: fast}\n", "measure.min_run_time_s='fast': must be a number"),
        ("models: [vit-b/16]\nmeasure: {min_time: 0.5}\n", "measure.min_time=0.5: renamed to measure.min_run_time_s"),
        ("models: [vit-b/16]\nmeasure: {runs: 0}\n", "measure.runs=0: must be an integer >= 1"),
        ("models: [vit-b/16]\nmeasure: {device: tpu}\n", "measure.device='tpu': must be one of auto, cpu, cuda"),
        ("models: [vit-b/16]\nmeasure: {repeats: 3}\n", "measure.repeats=3: unknown key"),
        ("grid: {img_size: [224]}\n", "models=None: is required"),
        ("models: [vit-b/61]\n", "models='vit-b/61': unknown model"),
        ("- models\n", "the top level must be a mapping"),
        ("", "the file is empty"),
        ("models: [vit-s/16]\ngrid: {img_size: [48], patch_size: [32]}\n", "every configuration of the grid is invalid"),
        ("studies:\n  - models: [vit-b/16]\n", "studies[0].name=None: is required"),
    ],
)
def test_malformed_sweep_files_fail_with_one_line_and_exit_2(tmp_path, capsys, text, needle):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    rc = main(["sweep", str(path), "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1, err
    assert str(path) in err[0] or "every configuration" in err[0]
    assert needle in err[0], err[0]
    assert not (tmp_path / "out" / "results.csv").exists()


def test_malformed_toml_names_the_line(tmp_path, capsys):
    path = _write(tmp_path, 'models = ["vit-b/16"]\n[grid\npatch_size = [8]\n', "bad.toml")
    assert main(["sweep", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "invalid TOML" in err[0] and "line 2" in err[0]


def test_missing_file_and_wrong_suffix(tmp_path, capsys):
    assert main(["sweep", str(tmp_path / "nope.yaml")]) == 2
    (tmp_path / "s.json").write_text("{}")
    assert main(["sweep", str(tmp_path / "s.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "sweep file=" in err[0] and "no such file" in err[0] and ".toml" in err[1]


def test_grid_flags_and_a_sweep_file_do_not_mix(tmp_path, capsys):
    path = _write(tmp_path, "models: [vit-b/16]\n")
    assert main(["sweep", str(path), "--img-size", "384"]) == 2
    assert "--img-size" in capsys.readouterr().err


def test_the_built_in_default_study_validates():
    plan = load_sweep_file(default_study_path())
    configs = expand(plan)
    assert {s.name for s in plan.studies} >= {"patch-size", "ablation", "resolution", "variants"}
    assert all(c.invalid is None for c in configs)


def test_top_level_grid_is_inherited_by_studies_field_by_field(tmp_path):
    # Issue 10: a study with its own grid used to drop the top-level grid (study "a" ran 2
    # configurations, patch 16 and 32 at the preset's 224 px, instead of 2 sizes x 2 patches).
    path = _write(tmp_path, """
        models: [vit-ti/16]
        grid: {img_size: [160, 224], patch_size: [16]}
        studies:
          - name: a
            grid: {patch_size: [16, 32]}
          - name: b
            models: [resnet18]
    """)
    configs = expand(load_sweep_file(path))
    a = [(c.spec.img_size[0], c.spec.patch_size) for c in configs if c.study == "a"]
    assert a == [(160, 16), (160, 32), (224, 16), (224, 32)]  # the study's patch_size wins
    # the ResNet study inherits img_size and skips patch_size (a ResNet has none)
    assert [c.spec.img_size[0] for c in configs if c.study == "b"] == [160, 224]


def test_a_top_level_grid_field_no_study_can_use_is_an_error(tmp_path, capsys):
    path = _write(tmp_path, """
        grid: {patch_size: [8]}
        studies:
          - {name: cnn, models: [resnet18]}
    """)
    assert main(["sweep", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "grid.patch_size=[8]: does not apply to the models of any study" in err[0]


def test_command_line_settings_apply_to_every_study_of_a_file(tmp_path, capsys):
    from vitbench.sweeps import apply_overrides

    path = _write(tmp_path, """
        measure: {device: cpu, runs: 3}
        studies:
          - {name: a, models: [mnist-vit], stages: [analytic, measured]}
          - {name: b, models: [mnist-vit], stages: [analytic], measure: {threads: 2}}
    """)
    plan = apply_overrides(load_sweep_file(path), measure={"runs": "2", "mode": ["infer", "train"], "threads": None})
    a, b = plan.studies
    assert (a.measure.runs, a.measure.device, a.modes) == (2, "cpu", ("infer", "train"))
    assert (b.measure.runs, b.measure.threads) == (2, 2)  # None keeps the file's value
    assert plan.fingerprint != load_sweep_file(path).fingerprint  # another definition
    # the same through the command line: two modes of the measured study, one row of the other
    assert main(["sweep", str(path), "--mode", "infer,train", "--runs", "2", "--dry-run"]) == 0
    assert capsys.readouterr().out.strip().endswith("3 configurations")
    assert main(["sweep", str(path), "--runs", "0", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--runs: must be a positive integer, got '0'" in err[0]


def test_run_setting_flags_are_the_same_as_profiles():
    # one vocabulary (issue 10): --min-time SECONDS, --memory-limit SIZE, --timeout SECONDS
    # set the RunSettings fields min_run_time_s, memory_limit_bytes, timeout_s in both commands
    from vitbench.cli import build_parser
    from vitbench.cli.sweep import build_plan

    argv = ["sweep", "--model", "mnist-vit", "--stages", "analytic,measured", "--min-time", "0.5",
            "--memory-limit", "1GiB", "--timeout", "30", "--runs", "3"]
    (study,) = build_plan(build_parser().parse_args(argv)).studies
    m = study.measure
    assert (m.min_run_time_s, m.memory_limit_bytes, m.timeout_s, m.runs) == (0.5, 2**30, 30.0, 3)


@pytest.mark.parametrize("digits", ["²", "٣", "１"])  # superscript two, Arabic-Indic three, fullwidth one
def test_a_batch_size_in_another_scripts_digits_is_refused_in_one_line(tmp_path, capsys, digits):
    """str.isdigit() is true for these, int() refuses some: numbers are the digits 0-9, as in every
    other file vitbench reads (found by the slow fuzzer: an internal error, exit 3)."""
    path = tmp_path / "sweep.yaml"
    path.write_text(f"models: [mnist-vit]\nbatch_sizes: [1, '{digits}']\nstages: [analytic]\n", encoding="utf-8")
    assert main(["sweep", str(path), "--dry-run", "--out", str(tmp_path / "store")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "must be a positive integer" in err[0]
