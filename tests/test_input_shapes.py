"""Inputs whose shape is an attack, refused in one line (exit 2) without expanding them (issue
"hardening": a 539-byte YAML alias bomb ran 225 s and 3.9 GB then exit 3; a 5,000-deep YAML list
and a 10^5-deep JSON document ended in RecursionError, exit 3; a duplicate YAML key was kept
silently)."""

from __future__ import annotations

import pytest

from vitbench.cli import main

BOMB = "models: [mnist-vit]\nx: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n" for prev, name in zip("abcdefgh", "bcdefghi")
)


@pytest.mark.parametrize("name, text, message", [
    ("bomb.yaml", BOMB, "expands to more than 1,000,000 values"),
    ("deep.yaml", "models: [mnist-vit]\nx: " + "[" * 5000 + "]" * 5000 + "\n", "nested"),
    ("deeper.yaml", "models: [mnist-vit]\nx: " + "[" * 80 + "]" * 80 + "\n", "nested deeper than 64 levels"),
    ("dup.yaml", "models: [mnist-vit]\nmodels: [vit-b/16]\n", "line 2: duplicate key 'models'"),
    ("deep.toml", "models = ['mnist-vit']\nx = " + "[" * 5000 + "]" * 5000 + "\n", "invalid TOML"),
])
def test_a_hostile_sweep_file_is_one_line_exit_2(tmp_path, capsys, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    assert main(["sweep", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "Error" not in err[0], err


def test_a_yaml_alias_that_repeats_a_little_is_still_fine(tmp_path, capsys):
    path = tmp_path / "ok.yaml"
    path.write_text("models: [mnist-vit]\nbatch_sizes: &b [1, 2]\ngrid: {depth: [1, 2]}\n")
    assert main(["sweep", str(path), "--dry-run"]) == 0


def test_a_deeply_nested_json_results_file_is_one_line_exit_2(tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert main(["compare", str(path), str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nested too deeply" in err[0]
