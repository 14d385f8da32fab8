"""Model references (presets, torchvision:, timm:, hf:, py:, live modules): resolution, input
sizes from the models' own metadata, keyword arguments and override flags, one-line errors, and
counting any model (analyze never fails for want of a formula)."""

from __future__ import annotations

import re
import sys
import textwrap

import pytest
from _cli import run

import vitbench
from vitbench.cli import main
from vitbench.errors import SpecError, UnknownModelError, VitbenchError
from vitbench.models.references import (
    parse_reference,
    parse_value,
    resolve,
    resolve_all,
)


@pytest.fixture
def mypkg(tmp_path, monkeypatch):
    """A user's package with factories (imported from a temporary directory on sys.path)."""
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text(textwrap.dedent('''
        from torch import nn

        class Net(nn.Module):
            image_size = 32  # the model says its input size

            def __init__(self, width=8, num_classes=10):
                super().__init__()
                self.conv = nn.Conv2d(3, width, 3)  # 32 -> 30 px, no padding
                self.pool = nn.AdaptiveAvgPool2d(1)
                self.fc = nn.Linear(width, num_classes)

            def forward(self, x):
                return self.fc(self.pool(self.conv(x)).flatten(1))

        def build(width=8, num_classes=10):
            return Net(width, num_classes)

        def silent():
            return nn.Sequential(nn.Conv2d(3, 4, 1))

        def not_a_module():
            return 42
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "mypkg"
    for name in [n for n in sys.modules if n == "mypkg" or n.startswith("mypkg.")]:
        del sys.modules[name]


# --- syntax --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        ("vit-b/16", ("preset", "vit-b/16", {})),
        ("timm:convnext_tiny", ("timm", "convnext_tiny", {})),
        ("timm:vit_base_patch16_224+img_size=384+drop_rate=0.1", ("timm", "vit_base_patch16_224", {"img_size": "384", "drop_rate": "0.1"})),
        ("py:mypkg.models:build+width=16", ("py", "mypkg.models:build", {"width": "16"})),
        ("hf:vit", ("hf", "vit", {})),
    ],
)
def test_parse_reference(text, expected):
    assert parse_reference(text) == expected


@pytest.mark.parametrize(
    "text, value",
    [("384", 384), ("-1", -1), ("0.1", 0.1), ("true", True), ("False", False), ("none", None),
     ("224x320", (224, 320)), ("2-2-6-2", (2, 2, 6, 2)), ("avg", "avg")],
)
def test_parse_value(text, value):
    assert parse_value(text) == value and type(parse_value(text)) is type(value)


@pytest.mark.parametrize("text", ["timm:vit_base_patch16_224+img_size", "timm:x+=3", "timm:x+a=1+a=2", "timm:"])
def test_bad_reference_syntax_is_one_line(text):
    with pytest.raises(SpecError) as info:
        resolve(text)
    assert "\n" not in str(info.value) and str(info.value).startswith("model=")


# --- resolution and metadata -----------------------------------------------------------------
@pytest.mark.parametrize(
    "reference, input_size",
    [
        ("torchvision:efficientnet_b3", (3, 300, 300)),  # crop size of its default weights
        ("torchvision:vit_h_14", (3, 224, 224)),  # the model's own image_size (SWAG weights: 518)
        ("torchvision:inception_v3", (3, 299, 299)),
        ("timm:vit_base_patch16_384", (3, 384, 384)),  # timm pretrained_cfg
        ("timm:fastvit_t8", (3, 256, 256)),
        pytest.param("hf:dinov2", (3, 224, 224), marks=pytest.mark.slow),  # Dinov2Config().image_size
        pytest.param("hf:clip_vision", (3, 224, 224), marks=pytest.mark.slow),  # CLIPVisionConfig().image_size
    ],
)
def test_input_size_comes_from_the_models_own_metadata(reference, input_size):
    if reference.startswith("timm:"):
        pytest.importorskip("timm")
    if reference.startswith("hf:"):
        pytest.importorskip("transformers")
    assert resolve(reference).input_size == input_size


@pytest.mark.parametrize(
    "reference",
    ["vit-b/16+img_size=384", "resnet50+layers=2-2-2-2", "vit-b/16+img_size=224x320",
     pytest.param("hf:swin+depths=1-1", marks=pytest.mark.slow),  # about 3 s: transformers' first import
     "torchvision:resnet18+img_size=160", "timm:convnext_atto+img_size=288",
     "timm:vit_tiny_patch16_224+img_size=384+depth=2", "hf:vit+depth=2+hidden_size=192+num_attention_heads=3"],
)
def test_label_is_a_reference_that_resolves_back(reference):
    """Worker processes receive ``target.label`` and rebuild the same model from it."""
    if reference.startswith("timm:"):
        pytest.importorskip("timm")
    if reference.startswith("hf:"):
        pytest.importorskip("transformers")
    target = resolve(reference)
    assert target.label == reference
    assert resolve(target.label) == target


def test_img_size_flag_is_timms_img_size_for_vits_and_the_input_size_for_cnns():
    pytest.importorskip("timm")
    vit, cnn = resolve_all(["timm:vit_tiny_patch16_224+depth=1", "timm:convnext_atto"], {"img_size": ["384"]})
    assert vit.input_size == cnn.input_size == (3, 384, 384)
    assert vit.spec is not None and vit.spec.img_size == (384, 384)  # the ViT was built for 384
    assert dict(cnn.overrides) == {"img_size": 384}
    # a list of sizes: one target per size, for every model that takes the field
    targets = resolve_all(["timm:convnext_atto", "resnet18"], {"img_size": ["160", "224"]})
    assert [(t.name, t.img_size) for t in targets] == [
        ("timm:convnext_atto", (160, 160)), ("timm:convnext_atto", (224, 224)),
        ("resnet18", (160, 160)), ("resnet18", (224, 224)),
    ]


def test_override_that_no_model_takes_is_an_error():
    with pytest.raises(SpecError, match="patch_size='8': unknown field for resnet/torchvision models"):
        resolve_all(["resnet50", "torchvision:resnet18"], {"patch_size": "8"})


def test_hf_overrides_map_to_config_fields():
    pytest.importorskip("transformers")
    target = resolve_all(["hf:vit+depth=1"], {"img_size": ["96"], "embed_dim": ["192"], "num_heads": ["3"]})[0]
    counted = vitbench.count(target, counters=("dispatch",))
    # patches: 36 = (96/16)^2 (+1 CLS) = 37 tokens, d = 192, MLP 3072 (hf default), 1 layer, pooler
    n, d, m, p = 37, 192, 3072, 3 * 16 * 16
    expected = 36 * p * d + 4 * n * d * d + 2 * n * n * d + 2 * n * d * m + d * d
    assert target.input_size == (3, 96, 96)
    assert counted["dispatch_macs"] == expected


# --- one-line errors -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "reference, message",
    [
        ("torchvision:swin_tt", "did you mean 'torchvision:swin_t'"),
        ("torchvision:fasterrcnn_resnet50_fpn", "is not a classification model"),
        ("timm:vit_bse_patch16_224", "did you mean 'timm:vit_base_patch16_224'"),
        ("hf:vitt", "did you mean 'hf:vit'"),
        ("hf:vit+hiden_size=384", "did you mean 'hf:vit+hidden_size'"),
        ("hf:bert", "is not a vision encoder"),
        ("swin_t", "did you mean 'torchvision:swin_t'"),
        ("hf:google/vit-base-patch16-224", "would need the network"),
        ("timm:resnet50+pretrained=true", "would need the network"),
        ("timm:hf-hub:timm/vit_small_patch16_224.augreg_in21k", "would need the network"),
        ("torchvision:resnet50+weights=DEFAULT", "would need the network"),
        ("py:nowhere.models:build", "cannot import 'nowhere.models'"),
        ("py:torchvision.models:resnet18+weights=DEFAULT", "would need the network"),
        ("py:not-a-path", "must be py:package.module:factory"),
        ("timm:resnet18+bogus=1", "unexpected keyword argument 'bogus'"),
    ],
)
def test_bad_names_get_one_line(reference, message):
    if reference.startswith("timm:"):
        pytest.importorskip("timm")
    if reference.startswith("hf:") and "/" not in reference:
        pytest.importorskip("transformers")
    with pytest.raises((SpecError, UnknownModelError)) as info:
        resolve(reference)
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("reference, package, extra", [("timm:convnext_tiny", "timm", "timm"), ("hf:vit", "transformers", "hf")])
def test_missing_optional_package_names_the_extra(monkeypatch, reference, package, extra):
    monkeypatch.setitem(sys.modules, package, None)  # as if not installed: import raises ImportError
    with pytest.raises(SpecError, match=rf"needs {package}: pip install 'vitbench\[{extra}\]'"):
        resolve(reference)


def test_cli_error_for_unknown_reference_is_one_line(capsys):
    code, out, err = run(capsys, "analyze", "torchvision:resnt50")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "did you mean 'torchvision:resnet50'" in err


# --- py: factories and live modules ----------------------------------------------------------
def test_py_factory_counts_by_hand(mypkg):
    counted = vitbench.count(f"py:{mypkg}.models:build+width=16")
    # conv 3->16, 3x3: 16*27 weights + 16 biases; linear 16->10: 160 + 10
    assert counted["module_params"] == 16 * 27 + 16 + 160 + 10
    # conv on a 30x30 output (32 px, no padding): 900 * 16 * 27; linear: 16 * 10
    assert counted["dispatch_macs"] == counted["fvcore_macs"] == 900 * 16 * 27 + 160


def test_py_factory_takes_override_flags_it_names(mypkg):
    target = resolve_all([f"py:{mypkg}.models:build"], {"num_classes": ["4"], "img_size": ["64"]})[0]
    assert dict(target.overrides) == {"num_classes": 4, "img_size": 64}
    assert vitbench.count(target, counters=("dispatch",))["module_params"] == 8 * 27 + 8 + 8 * 4 + 4


@pytest.mark.parametrize(
    "factory, message",
    [("silent", "does not say its input size: give --img-size"), ("not_a_module", "returned int, not an nn.Module"),
     ("buld", "did you mean 'py:mypkg.models:build'")],
)
def test_py_factory_errors(mypkg, factory, message):
    with pytest.raises(SpecError, match=message):
        resolve(f"py:{mypkg}.models:{factory}")


@pytest.mark.slow
def test_live_module_is_counted_and_left_as_it_was():
    """Issue 11: ``vitbench.count(torchvision.models.resnet50())`` raised AttributeError."""
    import torch
    import torchvision

    torch.manual_seed(0)
    module = torchvision.models.resnet18().train()
    before = {k: v.clone() for k, v in module.state_dict().items()}
    counted = vitbench.count(module, input_size=(3, 224, 224))
    assert counted == vitbench.count("torchvision:resnet18")
    assert module.training and all(m.training for m in module.modules())
    after = module.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # not even BatchNorm statistics moved


@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
def test_live_module_needs_an_input_size_unless_it_says_one():
    import torchvision

    with pytest.raises(SpecError, match=r"input_size=None: ResNet does not say its input size"):
        vitbench.count(torchvision.models.resnet18())
    assert resolve(torchvision.models.vit_b_32()).input_size == (3, 224, 224)  # its image_size


def test_live_module_on_meta_is_counted_without_fvcore():
    import torch
    import torchvision

    with torch.device("meta"):
        module = torchvision.models.resnet18()
    result = vitbench.count(module, input_size=(3, 224, 224))
    assert result["dispatch_macs"] == vitbench.count("torchvision:resnet18", counters=("dispatch",))["dispatch_macs"]
    assert "fvcore_macs" not in result
    assert any("fvcore skipped" in w for w in result["count_warnings"])


# --- analyze and validate for any model ------------------------------------------------------
def test_analyze_without_a_formula_fills_params_and_macs_from_the_counters_with_a_reason():
    records = vitbench.analyze(["torchvision:mobilenet_v3_small", "torchvision:resnet18"])
    mobile, resnet = records
    assert mobile["params"] == mobile["module_params"] and mobile["params_source"] == "module"
    assert mobile["macs"] == mobile["dispatch_macs"] and mobile["macs_source"] == "dispatch"
    assert resnet["params_source"] == resnet["macs_source"] == "analytic"
    assert "no analytic formula" in mobile["analytic_note"]
    # torchvision's metadata for these weights: 2,542,856 params, 0.057 GMACs
    assert mobile["module_params"] == 2_542_856 and round(mobile["dispatch_macs"] / 1e9, 3) == 0.057
    assert resnet["params"] == resnet["module_params"] == 11_689_512
    assert resnet["macs"] == resnet["dispatch_macs"] and resnet["agree"] is True


def test_analyze_a_live_module():
    import torchvision

    record = vitbench.analyze(torchvision.models.resnet18(), input_size=(3, 224, 224))[0]
    assert record["model"] == "ResNet" and record["source"] == "module"
    assert record["params"] == record["module_params"] == 11_689_512  # derived ResNet spec


@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
def test_cli_analyze_mixed_references(capsys, mypkg):
    pytest.importorskip("timm")
    code, out, err = run(capsys, "analyze", "torchvision:swin_t", "timm:convnext_atto", f"py:{mypkg}.models:build", "--format", "json")
    assert code == 0, err
    import json

    records = {r["model"]: r for r in json.loads(out)["records"]}
    assert set(records) == {"torchvision:swin_t", "timm:convnext_atto", f"py:{mypkg}.models:build"}
    assert records["torchvision:swin_t"]["module_params"] == 28_288_354  # torchvision's metadata
    assert records[f"py:{mypkg}.models:build"]["dispatch_macs"] == 900 * 8 * 27 + 80


@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
def test_validate_checks_parameters_too():
    """A spec with the right MACs but the wrong parameters (a bias-free qkv: bias adds are not
    MACs) used to pass; now the parameter difference is a disagreement."""
    from dataclasses import replace

    from vitbench.counters.validate import validate

    target = resolve("torchvision:vit_b_32")
    wrong = replace(target, spec=replace(target.spec, qkv_bias=False))
    good, bad = validate([target, wrong], batch_sizes=(1,), counters=("dispatch",))
    assert good["agree"] and good["params"] == good["module_params"] == 88_224_232  # torchvision's metadata
    assert good["macs"] == bad["macs"] == bad["dispatch_macs"]
    assert not bad["agree"]
    # 12 blocks x 3 x 768 qkv biases
    assert bad["differing_components"] == f"params 88224232 vs {88_224_232 - 12 * 3 * 768}"


def test_a_live_vitbench_module_carries_its_spec():
    from vitbench.models import build_model

    spec = vitbench.resolve("ablation-vit")
    target = resolve(build_model(spec))
    assert target.spec == spec and target.input_size == (3, 32, 32)


def test_components_for_a_vit_without_a_formula():
    """Named ViT components from transformers' module paths: qkv = 3 n d^2 and the attention
    matmuls 2 n^2 d per layer (n = 197 tokens, d = 768, 2 layers)."""
    pytest.importorskip("transformers")
    from vitbench.counters import count_detailed
    from vitbench.counters.components import by_depth

    counted = count_detailed("hf:vit+depth=2", counters=("dispatch",))
    n, d = 197, 768
    assert counted.dispatch_by_group["qkv"] == 2 * 3 * n * d * d
    assert counted.dispatch_by_group["attn_matmul"] == 2 * 2 * n * n * d
    assert counted.dispatch_by_group["attn_proj"] == 2 * n * d * d
    assert sum(counted.dispatch_by_group.values()) == counted.dispatch_macs
    top = by_depth(counted.dispatch_by_module, 1)
    assert top[""] == counted.dispatch_macs
    # transformers iterates over ``layers`` without calling it: the table still has its total
    assert top["layers"] == counted.dispatch_macs - top["embeddings"] - top["pooler"]


def test_module_table_for_any_model():
    """Per-module parameters and MACs by path, like fvcore's by-module table, from the dispatch
    counter; ResNet-18: stem conv 112^2 x 64 x 3 x 7^2 MACs, fc 512 x 1000."""
    from vitbench.counters import module_table

    rows = {r["module"]: r for r in module_table("torchvision:resnet18", depth=1)}
    assert rows[""]["params"] == 11_689_512 and rows[""]["macs"] == vitbench.count("torchvision:resnet18", counters=("dispatch",))["dispatch_macs"]
    assert rows["conv1"]["macs"] == 112 * 112 * 64 * 3 * 49 and rows["conv1"]["params"] == 64 * 3 * 49
    assert rows["fc"]["macs"] == 512 * 1000 and rows["fc"]["component"] == "classifier"
    assert sum(r["macs"] for path, r in rows.items() if path) == rows[""]["macs"]


def test_an_explicit_input_size_builds_the_model_for_it():
    pytest.importorskip("timm")
    counted = vitbench.count("timm:vit_tiny_patch16_224+depth=1", counters=("dispatch",), input_size=(3, 384, 384))
    # 577 tokens, d 192, MLP 768, one block, 1000-class head, 576 patches of 3 x 16 x 16
    n, d, m = 577, 192, 768
    assert counted["dispatch_macs"] == 576 * 768 * d + 4 * n * d * d + 2 * n * n * d + 2 * n * d * m + d * 1000
    with pytest.raises(SpecError, match="cannot be built for this input size"):
        resolve("torchvision:resnet18", input_size=(1, 224, 224))


_MY_MODELS = '''
from torch import nn


def tiny(width=16):
    return nn.Sequential(nn.Conv2d(3, width, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 10))
'''


@pytest.mark.parametrize("reference", [
    "py:mymodels:tiny", "py:./mymodels.py:tiny",
    # the same path with a subfolder and with keyword arguments: 3.5 s each (a fresh process)
    pytest.param("py:sub/other.py:tiny", marks=pytest.mark.slow),
    pytest.param("py:mymodels:tiny+width=32", marks=pytest.mark.slow),
])
@pytest.mark.slow
def test_py_reference_from_the_current_directory_or_a_file(tmp_path, reference):
    """``vitbench`` as a console script does not put the current directory on sys.path: a
    ``py:`` module is found there all the same, and a ``.py`` file is taken by its path."""
    import os
    import shutil
    import subprocess

    (tmp_path / "mymodels.py").write_text(_MY_MODELS)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "other.py").write_text(_MY_MODELS)
    from pathlib import Path

    # the console script sits beside this interpreter (its venv need not be on PATH)
    script = Path(sys.executable).with_name("vitbench")
    script = str(script) if script.exists() else shutil.which("vitbench")
    assert script, "the vitbench console script is installed with the package"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([script, "analyze", reference, "--img-size", "32", "--format", "csv"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    width = 32 if "width=32" in reference else 16
    # conv 3 -> width (3x3, bias) + linear width -> 10 (bias)
    assert f",{3 * 9 * width + width + width * 10 + 10}," in done.stdout


@pytest.mark.parametrize("reference, message", [
    ("py:./missing.py:tiny", "no such file: './missing.py'"),
    ("py:mymodels:nothing", "nothing"),
    ("py:nosuchmodule_xyz:tiny", "cannot import 'nosuchmodule_xyz' (also looked in"),
])
def test_py_reference_errors_are_one_line(tmp_path, monkeypatch, reference, message):
    (tmp_path / "mymodels.py").write_text(_MY_MODELS)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(VitbenchError, match=re.escape(message)):
        resolve(reference)


@pytest.mark.parametrize("reference, model_type", [
    ("hf:ViTModel", "vit"), ("hf:Dinov2Model", "dinov2"), ("hf:CLIPVisionModel", "clip_vision_model"),
    ("hf:SwinModel", "swin"), ("hf:ViT", "vit"), ("hf:clip_vision", "clip_vision_model"),
])
def test_hf_takes_class_names_and_model_types(reference, model_type):
    """What users type (the class name) resolves to the model type transformers registers."""
    pytest.importorskip("transformers")
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    from vitbench.models.sources.hf_models import model_type as resolve_type

    assert resolve_type(reference[3:], MODEL_MAPPING_NAMES) == model_type
    target = resolve(reference)
    assert target.source == "hf" and target.input_size[0] == 3


def test_hf_multimodal_type_points_to_its_image_encoder():
    pytest.importorskip("transformers")
    with pytest.raises(SpecError, match="did you mean hf:clip_vision"):
        resolve("hf:clip")


@pytest.mark.slow  # 5-7 s: kept in CI's slow phase so the default suite stays under 3 minutes
def test_a_model_without_a_formula_has_one_number_per_quantity_and_the_gate_sees_it(tmp_path, monkeypatch, capsys):
    """params and macs are filled from the module and the dispatch counter (with their
    sources), so the default gate catches a change in a model vitbench has no formula for."""
    import csv
    import subprocess

    monkeypatch.chdir(tmp_path)
    for width, out in ((16, "c1.csv"), (48, "c2.csv")):  # the user edits their model between two runs
        (tmp_path / "gatemodels.py").write_text(_MY_MODELS.replace("width=16", f"width={width}"))
        done = subprocess.run([sys.executable, "-m", "vitbench", "analyze", "py:gatemodels:tiny", "--img-size", "32",
                               "--format", "csv", "-o", out], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr

    [before] = list(csv.DictReader(open("c1.csv")))
    [after] = list(csv.DictReader(open("c2.csv")))
    assert before["params"] == str(3 * 9 * 16 + 16 + 16 * 10 + 10) and before["params_source"] == "module"
    assert before["macs_source"] == "dispatch" and int(before["macs"]) == int(before["dispatch_macs"]) > 0
    assert int(before["flops"]) == 2 * int(before["macs"])
    capsys.readouterr()
    assert main(["compare", "c1.csv", "c2.csv"]) == 1
    out = capsys.readouterr().out
    assert "macs" in out and "params" in out


def test_one_failing_model_is_an_error_row_and_the_others_are_printed(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "brokenmodels.py").write_text(_MY_MODELS + '''

class _Broken(nn.Module):
    def forward(self, x):
        raise AssertionError("Input height (384) doesn't match model (224).")


def broken():
    return _Broken()
''')
    code = main(["analyze", "py:brokenmodels:broken", "py:brokenmodels:tiny", "resnet18", "--img-size", "64", "--format", "csv"])
    out, err = capsys.readouterr()
    assert code == 2  # a model whose own forward fails is the user's to fix (issue 33), not an internal error
    import csv
    import io

    rows = {r["model"]: r for r in csv.DictReader(io.StringIO(out))}
    assert rows["py:brokenmodels:broken"]["status"] == "refused"
    assert "doesn't match model" in rows["py:brokenmodels:broken"]["error"]
    assert int(rows["py:brokenmodels:tiny"]["params"]) == 3 * 9 * 16 + 16 + 16 * 10 + 10
    assert rows["resnet18"]["params_source"] == "analytic"
    assert err.strip().splitlines() == ["vitbench: error: py:brokenmodels:broken: its forward failed on a (1, 3, 64, 64) "
                                        "float32 input: AssertionError: Input height (384) doesn't match model (224)."]


def test_img_size_and_input_size_that_disagree_are_an_error_not_ignored():
    import torchvision

    model = torchvision.models.resnet18()
    with pytest.raises(SpecError, match=r"img_size=384: contradicts input_size=\(3, 224, 224\)"):
        vitbench.analyze(model, img_size=384, input_size=(3, 224, 224))
    [row] = vitbench.analyze(model, img_size=224, input_size=(3, 224, 224))  # the same size twice is fine
    assert row["img_size"] == 224


@pytest.mark.parametrize("name", ["vit_tiny_r_s16_p8_224"])
def test_timm_hybrid_vit_is_counted_exactly(name):
    """A constructor that cannot run on meta parameters (timm's hybrid ViTs run a dummy forward)
    is built for real instead; the counts equal an independent FlopCounterMode count of the
    module timm builds (math attention, so every attention product is a counted matmul)."""
    timm = pytest.importorskip("timm")
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    [row] = vitbench.analyze(f"timm:{name}")
    model = timm.create_model(name).eval()
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        model(torch.randn(1, 3, 224, 224))
    assert row["macs"] == counter.get_total_flops() // 2 and row["macs_source"] == "dispatch"
    assert row["params"] == sum(p.numel() for p in model.parameters())


def test_live_transformers_vit_for_image_classification_is_covered():
    transformers = pytest.importorskip("transformers")
    model = transformers.ViTForImageClassification(transformers.ViTConfig(num_hidden_layers=2, num_labels=7))
    [row] = vitbench.analyze(model, counters=("analytic", "dispatch"))
    assert row["params_source"] == "analytic" and row.get("analytic_note") is None
    assert row["params"] == row["module_params"] == sum(p.numel() for p in model.parameters())
    assert row["macs"] == row["dispatch_macs"] and row["agree"] is True


@pytest.mark.slow
def test_report_lists_models_without_a_formula_with_their_source(tmp_path, monkeypatch):
    """Every model is in "All configurations" with its source, and a model without a formula
    whose fvcore and dispatch counts agree is marked as agreeing."""
    import csv

    monkeypatch.chdir(tmp_path)
    (tmp_path / "reportmodels.py").write_text(_MY_MODELS)
    vitbench.sweep(models=["torchvision:mobilenet_v3_small", "py:reportmodels:tiny", "resnet18"], grid={"img_size": [64]},
                   stages=["analytic", "counters"], out=tmp_path / "store")
    vitbench.report(tmp_path / "store", out=tmp_path / "rep")
    listed = {r["model"]: r for r in csv.DictReader(open(tmp_path / "rep" / "tables" / "configurations.csv"))}
    assert set(listed) == {"torchvision:mobilenet_v3_small", "py:reportmodels:tiny", "resnet18"}
    assert listed["py:reportmodels:tiny"]["macs_source"] == "dispatch" and listed["resnet18"]["macs_source"] == "analytic"
    assert int(listed["py:reportmodels:tiny"]["params"]) == 3 * 9 * 16 + 16 + 16 * 10 + 10
    agreement = {r["model"]: r for r in csv.DictReader(open(tmp_path / "rep" / "tables" / "agreement.csv"))}
    mobile = agreement["torchvision:mobilenet_v3_small"]
    assert mobile["fvcore_macs"] == mobile["dispatch_macs"] and mobile["agree"] == "yes"


@pytest.mark.parametrize("reference", ["hf:siglip2_vision", "hf:Siglip2VisionModel", "hf:siglip2"])
def test_hf_siglip2_is_recognised_and_refused_with_its_reason(reference):
    """SigLIP 2's vision tower takes pre-cut patches, a padding mask and spatial shapes (NaFlex),
    not an image tensor: named in the alias table, it was always refused with 'has no
    image_size'; now it is recognised and refused for what it is."""
    pytest.importorskip("transformers")
    with pytest.raises(SpecError, match=r"pre-cut patches .*NaFlex.*\(batch, channels, height, width\)"):
        resolve(reference)


@pytest.mark.parametrize("reference, reason", [
    ("hf:videomae", r"video encoder \(its input is 16 frames"),
    ("hf:VivitModel", r"video encoder \(its input is 32 frames"),
    ("hf:timesformer", r"video encoder \(its input is 8 frames"),
    ("hf:vilt", r"takes input_ids first, not pixel_values"),
    ("hf:seggpt", r"needs prompt_pixel_values, prompt_masks beside pixel_values"),
])
def test_hf_video_and_text_types_are_refused_for_what_they_are(reference, reason, capsys):
    """Video encoders (5-D input) and models that need text or prompts beside the image failed
    deep inside ("ValueError: not enough values to unpack", a TypeError error row); they are
    refused from the config and the forward's signature, nothing built, one line, exit 2."""
    pytest.importorskip("transformers")
    with pytest.raises(SpecError, match=reason):
        resolve(reference)
    assert main(["analyze", reference]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(reason, err[0])


@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
def test_hf_minicpm_vision_tower_is_fed_its_patch_grid():
    """MiniCPM's vision towers take ``target_sizes`` (each image's patch grid) beside the pixels:
    analyze was an error row ("'NoneType' object has no attribute 'device'"). Counted here on a
    one-layer config against FlopCounterMode over the tower transformers builds, fed the grid its
    docstring asks for."""
    pytest.importorskip("transformers")
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import AutoModel
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    import vitbench

    if "minicpm_ocr_vision" not in MODEL_MAPPING_NAMES:  # older transformers: no such type, and vitbench says so
        with pytest.raises(SpecError, match="unknown transformers model type"):
            resolve("hf:minicpm_ocr_vision")
        return
    [row] = vitbench.analyze("hf:minicpm_ocr_vision+num_hidden_layers=1", img_size=112)
    config = CONFIG_MAPPING["minicpm_ocr_vision"](num_hidden_layers=1, image_size=112)
    model = AutoModel.from_config(config).eval()
    grid = torch.tensor([[112 // config.patch_size] * 2], dtype=torch.int32)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    # the math kernel: FlopCounterMode counts SDPA's CPU flash kernel as 0 before torch 2.15, so the
    # reference must not depend on which kernel the installed torch picks
    with torch.no_grad(), FlopCounterMode(display=False) as counter, sdpa_kernel(SDPBackend.MATH):
        model(torch.zeros(1, 3, 112, 112), target_sizes=grid)
    assert row.get("status", "ok") == "ok" and row["macs_source"] == "dispatch"
    assert (row["macs"], row["params"]) == (counter.get_total_flops() // 2, sum(p.numel() for p in model.parameters()))


def test_analyze_exits_1_when_counters_disagree_on_any_model(tmp_path, monkeypatch, capsys):
    """Issue: `analyze` exited 0 for a no-formula model whose counters differ
    (`timm:maxvit_tiny_tf_224`: fvcore 5,551,836,704 vs dispatch 5,551,836,656) while `validate`
    flagged it. A counter disagreement is a failed check (exit 1), the rows still printed. Here
    fvcore has no handle for ``aten::tensordot`` (it lists it as unsupported and counts 0) while
    the dispatch counter sees the matrix product inside: 3 x 16 x 8 = 384 MACs."""
    (tmp_path / "attn.py").write_text(textwrap.dedent('''
        import torch
        from torch import nn

        class Project(nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = nn.Parameter(torch.ones(16, 8))

            def forward(self, x):
                return torch.tensordot(x.flatten(2), self.weight, dims=1)

        def build(img_size=4):
            return Project()
    '''))
    monkeypatch.chdir(tmp_path)
    code = main(["analyze", "py:attn:build", "mnist-vit", "--img-size", "4", "--counters", "fvcore,dispatch", "--format", "csv"])
    out, err = capsys.readouterr()
    rows = {r["model"]: r for r in __import__("csv").DictReader(out.splitlines())}
    assert code == 1, (out, err)
    assert rows["py:attn:build"]["agree"] == "false"
    assert (rows["py:attn:build"]["fvcore_macs"], rows["py:attn:build"]["dispatch_macs"]) == ("0", "384")
    assert rows["mnist-vit"]["agree"] == "true"
    assert [line for line in err.splitlines() if "disagree" in line] == [
        line for line in err.splitlines() if line.startswith("vitbench: counters disagree: py:attn:build:")]
    assert main(["analyze", "mnist-vit", "--counters", "fvcore,dispatch"]) == 0


@pytest.mark.slow
def test_timm_img_size_reaches_a_class_that_passes_kwargs_to_its_parent():
    """Issue: `deit_base_distilled`'s constructor takes ``**kwargs``, so ``img_size`` was not
    passed and ``--img-size 384`` failed ("Input height (384) doesn't match model (224)").
    The arguments a class takes now include its parents' while ``**kwargs`` passes them on.
    Checked against timm's own model built with ``img_size=384``, counted by FlopCounterMode."""
    timm = pytest.importorskip("timm")
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    name = "deit_tiny_distilled_patch16_224"
    [row] = vitbench.analyze(f"timm:{name}", img_size=384)
    with torch.device("meta"):
        model = timm.create_model(name, img_size=384).eval()
    with FlopCounterMode(display=False) as counter:
        model(torch.empty(1, 3, 384, 384, device="meta"))
    assert row.get("status", "ok") == "ok" and row["tokens"] == 24 * 24 + 2
    assert (row["macs"], row["params"]) == (counter.get_total_flops() // 2, sum(p.numel() for p in model.parameters()))


@pytest.mark.parametrize("before_width, after_width", [(20, 22), (22, 20)])
def test_default_gate_catches_a_ten_percent_macs_change_on_a_model_without_a_formula(
        tmp_path, monkeypatch, capsys, before_width, after_width):
    """The model is the same reference in both runs (its width is read from the environment, as
    a user editing their own module would change it), so the rows are matched by identity and
    the gate's default rules (no --rule) judge a ~10% change of the dispatch-counted MACs."""
    import csv

    monkeypatch.chdir(tmp_path)
    (tmp_path / "tenpercent.py").write_text(
        "import os\nfrom torch import nn\n\n\n"
        "def net():\n"
        "    width = int(os.environ['TENPERCENT_WIDTH'])\n"
        "    return nn.Sequential(nn.Conv2d(3, width, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),\n"
        "                         nn.Linear(width, 10))\n")
    from vitbench.models import target

    for width, out in ((before_width, "base.csv"), (after_width, "new.csv")):
        monkeypatch.setenv("TENPERCENT_WIDTH", str(width))
        target._LIGHT.clear()  # two runs in one process: the second must not reuse the first's module
        assert main(["analyze", "py:tenpercent:net", "--img-size", "32", "--format", "csv", "-o", out]) == 0
    [base] = list(csv.DictReader((tmp_path / "base.csv").read_text().splitlines()))
    [new] = list(csv.DictReader((tmp_path / "new.csv").read_text().splitlines()))
    assert base["macs_source"] == new["macs_source"] == "dispatch"
    # conv: 30*30 outputs x 27 MACs x width, then the linear layer: width x 10
    assert int(base["macs"]) == 30 * 30 * 27 * before_width + before_width * 10
    assert int(new["macs"]) == 30 * 30 * 27 * after_width + after_width * 10
    assert abs(int(new["macs"]) / int(base["macs"]) - 1) == pytest.approx(0.1, abs=0.01)
    capsys.readouterr()
    code = main(["compare", "base.csv", "new.csv", "--format", "csv"])
    out = capsys.readouterr().out
    verdicts = {(r["metric"], r["verdict"]) for r in csv.DictReader(__import__("io").StringIO(out))}
    assert code == 1
    assert ("macs", "REGRESSION") in verdicts


def test_a_fixed_size_timm_model_asked_at_its_own_size_is_built_once(monkeypatch):
    """``timm:NAME+img_size=S`` where S is the size the model is built for by default gives the
    model already built for the probe (timm's published files name every model so); another
    size builds it again for that size. Either way the target is the one asked for."""
    pytest.importorskip("timm")
    from collections import OrderedDict

    from vitbench.models import materialize, target

    builds = []
    original = materialize.light_build
    monkeypatch.setattr(materialize, "light_build", lambda factory: builds.append(1) or original(factory))
    monkeypatch.setattr(target, "_LIGHT", OrderedDict())
    own = resolve("timm:vit_tiny_patch16_224+img_size=224")
    assert len(builds) == 1 and own.input_size == (3, 224, 224) and own.spec.img_size == (224, 224)
    other = resolve("timm:vit_tiny_patch16_224+img_size=384")
    assert len(builds) == 2 and other.input_size == (3, 384, 384) and other.spec.img_size == (384, 384)
