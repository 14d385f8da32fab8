"""A model reference is parsed once into a ModelRef that the plan, the grid and the commands
carry; a batch size is checked once per analyzed model; `analyze --module-table` resolves
and counts each model once."""

import collections

import pytest
from _cli import run

import vitbench.analytic.identity
import vitbench.counters
import vitbench.models.references
import vitbench.settings
from vitbench.errors import SpecError
from vitbench.specs.model_ref import ModelRef


def test_parse_gives_the_parts_and_keeps_the_text():
    ref = ModelRef.parse("timm:vit_base_patch16_224+img_size=384+depths=2-2-6-2")
    assert (ref.source, ref.name, ref.args) == ("timm", "vit_base_patch16_224", (("img_size", "384"), ("depths", "2-2-6-2")))
    assert ref.text == str(ref) == "timm:vit_base_patch16_224+img_size=384+depths=2-2-6-2"
    assert ref.reference == "timm:vit_base_patch16_224" and not ref.is_preset
    assert ref.typed_args() == {"img_size": 384, "depths": (2, 2, 6, 2)}
    preset = ModelRef.parse("vit-b/16+depth=6+img_size=224x320")
    assert preset.is_preset and preset.spec_args() == {"depth": "6", "img_size": (224, 320)}
    assert vitbench.models.references.parse_reference("vit-b/16+depth=6") == ("preset", "vit-b/16", {"depth": "6"})
    with pytest.raises(SpecError, match="given twice"):
        ModelRef.parse("vit-b/16+depth=6+depth=7")


def _count_parses(monkeypatch) -> collections.Counter:
    parsed: collections.Counter = collections.Counter()
    parse = ModelRef.parse.__func__

    def counting(cls, text):
        parsed[text] += 1
        return parse(cls, text)

    monkeypatch.setattr(ModelRef, "parse", classmethod(counting))
    return parsed


@pytest.mark.slow
def test_a_sweep_parses_each_reference_once(monkeypatch):
    """Validation, counting, the validity check, study sizes, every configuration and its
    Target: one parse per reference (before ModelRef: 25 for these two references)."""
    from vitbench.sweeps import grid
    from vitbench.sweeps.plan import apply_overrides, plan_from_grid

    parsed = _count_parses(monkeypatch)
    plan = plan_from_grid(["cifar-vit/4", "torchvision:resnet18"], {"img_size": [32, 64]}, batch_sizes=[1, 2])
    plan = apply_overrides(plan, batch_sizes=[1, 2, 4])
    grid.tally(plan)
    grid.check_valid(plan)
    grid.study_sizes(plan)
    configs = list(grid.iter_configs(plan))
    assert len(configs) == 12 and all(c.target is not None for c in configs)
    assert {c.model for c in configs} == {"cifar-vit/4", "torchvision:resnet18"}
    assert parsed == {"cifar-vit/4": 1, "torchvision:resnet18": 1}


def test_check_batch_size_runs_once_per_analyzed_model(monkeypatch):
    calls = []
    check = vitbench.settings.check_batch_size

    def counting(batch_size, **kwargs):
        calls.append(batch_size)
        return check(batch_size, **kwargs)

    for module in (vitbench.settings, vitbench.analytic.identity, vitbench.counters):
        monkeypatch.setattr(module, "check_batch_size", counting)
    records = vitbench.analyze(["slides-cnn", "cifar-vit/4"], batch_size=2, counters=["analytic", "dispatch"])
    assert [r["dispatch_macs"] == r["macs"] for r in records] == [True, True]
    assert calls == [2, 2]


@pytest.mark.slow
def test_analyze_module_table_resolves_and_counts_each_model_once(capsys, monkeypatch):
    resolved, counted = collections.Counter(), collections.Counter()
    resolve_ref, count_target = vitbench.models.references.resolve_ref, vitbench.counters.count_target

    def resolving(ref, *args):
        resolved[ref.text] += 1
        return resolve_ref(ref, *args)

    def counting(target, *args, **kwargs):
        counted[target.label] += 1
        return count_target(target, *args, **kwargs)

    monkeypatch.setattr(vitbench.models.references, "resolve_ref", resolving)
    monkeypatch.setattr(vitbench.counters, "count_target", counting)
    code, out, _ = run(capsys, "analyze", "slides-cnn", "cifar-vit/4", "--counters", "fvcore", "--module-table", "1")
    assert code == 0
    assert resolved == {"slides-cnn": 1, "cifar-vit/4": 1} and counted == {"slides-cnn": 1, "cifar-vit/4": 1}
    assert out.count("fvcore per-module table") == 2 and "#fvcore flops (MACs + norms)" in out
    assert "fvcore_table" not in out.split("\n\n")[0]  # the table is not a column of the rows
