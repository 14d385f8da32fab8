"""A dry run builds nothing and calls no ``py:`` factory (issue: "`sweep --dry-run` builds
them ... a dry run builds nothing"); the ids it lists are the ones the run writes. A ``py:``
reference naming a built-in or a non-module class is refused before anything is called."""

from __future__ import annotations

import textwrap

import pytest

from vitbench.cli import main
from vitbench.store import read_store

FACTORY = textwrap.dedent('''
    import pathlib
    from torch import nn

    CALLS = pathlib.Path(__file__).with_name("calls.txt")

    def build(depth=2, img_size=32):
        with CALLS.open("a") as log:
            log.write(f"{depth}\\n")
        return nn.Sequential(*[nn.Conv2d(3, 3, 3, padding=1) for _ in range(depth)])
''')


@pytest.fixture
def factory_dir(tmp_path, monkeypatch):
    (tmp_path / "mine.py").write_text(FACTORY)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _listed_ids(out: str) -> set[str]:
    return {word for line in out.splitlines() for word in line.split() if len(word) == 32 and all(c in "0123456789abcdef" for c in word)}


def test_a_dry_run_calls_no_py_factory_and_lists_the_ids_the_run_writes(factory_dir, capsys):
    argv = ["sweep", "--model", "py:./mine.py:build,cifar-vit/4", "--depth", "1,3", "--img-size", "32", "--stages", "counters"]
    assert main([*argv, "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert not (factory_dir / "calls.txt").exists()  # the factory was never called
    assert captured.out.strip().endswith("4 configurations")
    assert "built when the sweep runs" in captured.err and captured.err.rstrip().endswith("py:./mine.py:build")
    listed = _listed_ids(captured.out)
    assert len(listed) == 4
    assert main([*argv, "--out", str(factory_dir / "s"), "-q"]) == 0
    assert (factory_dir / "calls.txt").read_text().split()  # the real run does call it
    rows = read_store(factory_dir / "s")[0]
    assert {r["id"] for r in rows} == listed
    mine = sorted((r for r in rows if r["model"].startswith("py:")), key=lambda r: r["overrides"])
    assert [r["overrides"] for r in mine] == ["img_size=32,depth=1", "img_size=32,depth=3"]
    assert mine[1]["macs"] == 3 * mine[0]["macs"] > 0  # three 3x3 convolutions against one


def test_a_dry_run_builds_no_torchvision_or_hf_model(monkeypatch, capsys):
    pytest.importorskip("transformers")
    import torchvision
    import transformers

    def refuse(*args, **kwargs):
        raise AssertionError("a dry run built a model")

    monkeypatch.setattr(torchvision.models, "get_model", refuse)
    monkeypatch.setattr(transformers.AutoModel, "from_config", refuse)
    argv = ["sweep", "--model", "torchvision:resnet18,hf:vit", "--img-size", "160,224", "--depth", "2,4", "--dry-run"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    # ResNet-18 takes img_size only (2 rows); hf:vit takes both (4 rows)
    assert out.strip().endswith("6 configurations")
    from vitbench.sweeps import build_plan
    from vitbench.sweeps.run import preview

    plan = build_plan(models=["torchvision:resnet18", "vit-s/16", "hf:vit"], grid={"img_size": [160, 224]})
    assert preview(plan).unchecked == ("torchvision:resnet18", "hf:vit")  # the API says what the CLI's note says


@pytest.mark.parametrize("reference, kind", [
    ("py:os:system+command=touch {marker}", "standard library"),  # refused from its name: nothing imported
    ("py:subprocess:Popen+args=touch {marker}", "standard library"),
])
def test_a_py_reference_to_a_builtin_or_other_class_is_refused_before_it_runs(reference, kind, tmp_path, capsys):
    marker = tmp_path / "ran"
    assert main(["analyze", reference.format(marker=marker)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and kind in err[0] and "py:" in err[0]
    assert not marker.exists()
