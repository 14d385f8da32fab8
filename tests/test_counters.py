"""Traced counts (fvcore with vitbench's handles; FlopCounterMode on meta) == analytic, exactly."""

import pytest

from vitbench.analytic import complexity
from vitbench.counters import count, count_detailed
from vitbench.counters.validate import default_resolutions, validate
from vitbench.presets import list_presets, resolve

#: one preset per family in the default run; every preset under -m slow
DEFAULT_PRESETS = {"vit-ti/16", "resnet18", "slides-cnn"}


@pytest.mark.parametrize(
    "preset",
    [pytest.param(p.name, marks=() if p.name in DEFAULT_PRESETS else (pytest.mark.slow,)) for p in list_presets()],
)
def test_every_preset_agrees_at_three_resolutions(preset):
    records = validate([preset], batch_sizes=(1,))
    assert len(records) >= 3
    for record in records:
        if record["fvcore_macs"] is None:  # native resolution of a huge model: over the budget
            assert "fvcore skipped" in record["notes"]
        assert record["agree"], record
        assert record["dispatch_macs"] == record["macs"]
    # fvcore really ran on the small resolutions of every preset
    assert sum(r["fvcore_macs"] is not None for r in records) >= 2


@pytest.mark.slow
def test_batch_sizes_agree():
    # ViT-S/16 cut to two blocks: the batch multiplies every block alike (a sixth of fvcore's run)
    records = validate(["vit-s/16+depth=2", "resnet18", "ablation-vit-pos2d"], resolutions=[64], batch_sizes=(1, 3))
    assert all(r["agree"] for r in records)
    by_batch = {(r["model"], r["batch_size"]): r["fvcore_macs"] for r in records}
    assert by_batch[("vit-s/16", 3)] == 3 * by_batch[("vit-s/16", 1)]


def test_default_resolutions_include_non_square():
    sizes = default_resolutions(resolve("vit-b/16"))
    assert (224, 224) in sizes and any(h != w for h, w in sizes) and len(sizes) >= 3


def test_an_imagenet_resnet_is_validated_at_multiples_of_its_stride():
    # stem convolution and max-pool (stride 4), then three stride-2 stages: 32 pixels per output
    sizes = default_resolutions(resolve("resnet50"))
    assert sizes == [(224, 224), (64, 64), (96, 160)]


@pytest.mark.slow
def test_complexity_notebook_fvcore_figures_reproduced_exactly():
    # the notebook “Vision Transformers: From Theory to Practice”: fvcore #flops (its convention: MACs + LayerNorm at 5 per element) and #activations
    expected = {4: (1_256_365_568, 2_232_370), 8: (324_738_560, 544_306), 16: (96_255_488, 156_850)}
    for patch, (flops, activations) in expected.items():
        counted = count(resolve(f"cifar-vit/{patch}"), counters=("fvcore",))
        assert counted["fvcore_flops"] == flops
        assert counted["fvcore_activations"] == activations
        assert counted["fvcore_unsupported"] == ""


def test_fvcore_convention_is_macs_plus_layernorm():
    spec = resolve("cifar-vit/4")
    counted = count(spec, counters=("fvcore",))
    # 13 LayerNorms: 12 in blocks on 65x512 tokens, one on the pooled 512-vector; 5 per element
    layernorm = 5 * (12 * 65 * 512 + 512)
    assert counted["fvcore_flops"] == complexity(spec).macs + layernorm
    assert counted["fvcore_macs"] == complexity(spec).macs


@pytest.mark.parametrize("attention", ["sdpa", "math"])
@pytest.mark.slow
def test_fused_and_explicit_attention_count_the_same(attention):
    spec = resolve("ablation-vit", attention=attention)
    counted = count(spec)
    assert counted["fvcore_macs"] == counted["dispatch_macs"] == complexity(spec).macs
    assert counted["fvcore_activations"] == count(resolve("ablation-vit"), counters=("fvcore",))["fvcore_activations"]


@pytest.mark.parametrize(
    "name, preset",
    [pytest.param("vit_b_16", "vit-b/16", marks=pytest.mark.slow), pytest.param("vit_l_32", "vit-l/32", marks=pytest.mark.slow),
     ("resnet50", "resnet50")],
)
def test_torchvision_models_built_by_torchvision(name, preset):
    result = count_detailed(f"torchvision:{name}", activations=False)
    expected = complexity(resolve(preset)).macs
    assert result.fvcore_macs == expected
    assert result.dispatch_macs == expected
    assert result.fvcore_unsupported == {}


def test_plain_fvcore_misses_native_attention_but_ours_does_not():
    """The blind spot this project exists for: fvcore alone counts torchvision's fused attention
    as zero (about 11.29 G instead of 17.56 G MACs for ViT-B/16). Checked on torchvision's
    VisionTransformer with ViT-B/16's width and tokens and two of its twelve layers (the same
    modules, at a sixth of fvcore's run); the full ViT-B/16, fused attention counted, is
    test_torchvision_models_built_by_torchvision's."""
    import torch
    from torchvision.models.vision_transformer import VisionTransformer

    from vitbench.counters.fvcore_counter import _silenced

    layers = 2
    with torch.device("meta"):
        model = VisionTransformer(image_size=224, patch_size=16, num_layers=layers, num_heads=12, hidden_dim=768,
                                  mlp_dim=3072).eval()
    model = model.to_empty(device="cpu")
    with _silenced(), torch.no_grad():
        from fvcore.nn import FlopCountAnalysis

        plain = FlopCountAnalysis(model, torch.zeros(1, 3, 224, 224))
        plain.unsupported_ops_warnings(False)
        plain_total = plain.total()
        unsupported = plain.unsupported_ops()
    assert "aten::_native_multi_head_attention" in unsupported
    ours = count_detailed(model, activations=False)
    # the attention part, one layer: 4 n d^2 + 2 n^2 d = 4*197*768^2 + 2*197^2*768
    missing_per_layer = 4 * 197 * 768**2 + 2 * 197**2 * 768
    layernorm = 5 * (2 * layers + 1) * 197 * 768  # fvcore's 5 per element, 2 LayerNorms a layer and a final one on 197 x 768
    assert plain_total + layers * missing_per_layer == ours.fvcore_macs + layernorm
    assert ours.fvcore_macs == ours.dispatch_macs


def test_dispatch_counts_cpu_flash_kernel():
    """Ours counts SDPA on the CPU (the flash kernel) whatever the torch version; plain
    FlopCounterMode counts it as the peers table says for the installed torch (zero before 2.15)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from vitbench.counters.dispatch import dispatch_count
    from vitbench.counters.peers import counts_installed
    from vitbench.models import build_uninitialized

    spec = resolve("ablation-vit")
    model = build_uninitialized(spec).eval()
    x = torch.zeros(1, 3, 32, 32)
    with torch.no_grad(), FlopCounterMode(display=False) as plain:
        model(x)
    ours = dispatch_count(model, (x,)).macs
    c = complexity(spec)
    assert ours == c.macs
    assert c.attention_matmul_macs > 0
    missed = 0 if counts_installed("flop_counter_cpu_flash") else c.attention_matmul_macs
    assert plain.get_total_flops() // 2 == c.macs - missed


def test_timm_vit_if_available():
    """timm's ViT-S/16 is the vit-s/16 preset's formula (two blocks by default: every module of
    the model is there; the full depth is tests/test_timm_models.py's slow matrix)."""
    pytest.importorskip("timm")
    result = count_detailed("timm:vit_small_patch16_224+depth=2", activations=False)
    assert result.fvcore_macs == result.dispatch_macs == complexity(resolve("vit-s/16", depth=2)).macs


def test_disagreement_names_the_component(monkeypatch):
    import vitbench.analytic.vit as formulas

    original = formulas.mlp_fc2_macs
    monkeypatch.setattr(formulas, "mlp_fc2_macs", lambda spec: original(spec) + 1)
    records = validate(["ablation-vit"], resolutions=[32], batch_sizes=(1,))
    assert not records[0]["agree"]
    assert "mlp_fc2" in records[0]["differing_components"]
    assert "qkv" not in records[0]["differing_components"]


# --- what a surviving mutant showed untested (whole-core mutation run, issue 47) ------------------
def test_a_count_result_is_hashable_whatever_its_tables_hold():
    from vitbench.counters import CountResult

    one = CountResult(model="m", batch_size=1, dispatch_macs=5, dispatch_by_group={"mlp": 5}, fvcore_by_module={"": 5})
    other = CountResult(model="m", batch_size=1, dispatch_macs=5, dispatch_by_group={"mlp": 4})
    assert {one, other} and hash(one) == hash(other)  # the tables (dicts) are left out of the hash
    assert one != other and one.as_record() == {"dispatch_macs": 5}


def test_a_model_too_large_to_trace_is_refused_before_anything_is_built(monkeypatch):
    from vitbench.counters import run
    from vitbench.counters.limits import CountingRefused
    from vitbench.specs import with_overrides

    def built(*args, **kwargs):
        raise AssertionError("the model was traced")

    monkeypatch.setattr(run, "run_dispatch", built)
    monkeypatch.setattr(run, "run_fvcore", built)
    spec = with_overrides(resolve("vit-ti/16"), depth=100_000)
    with pytest.raises(CountingRefused, match="100,000 blocks"):
        count_detailed(spec, counters=("dispatch",))


def test_the_module_table_of_a_model_vitbench_does_not_recognise_has_no_components():
    import torch

    from vitbench.counters import module_table

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 2))
    rows = {r["module"]: r for r in module_table(model, depth=1, input_size=(3, 8, 8))}
    assert list(rows) == ["", "0", "2"]  # Flatten has no parameters and no MACs
    assert rows["0"]["macs"] == 6 * 6 * 4 * 3 * 9 and rows["2"]["macs"] == 4 * 6 * 6 * 2  # by hand
    assert all("component" not in r for r in rows.values())


def test_the_module_table_names_components_below_the_root_only():
    from vitbench.counters import module_table

    rows = {r["module"]: r for r in module_table("mnist-vit", depth=1)}
    assert "component" not in rows[""]  # the whole model computes every component
    named = {r.get("component") for path, r in rows.items() if path}
    assert named and "" not in named and not any(str(c).startswith("other:") for c in named if c)


def test_a_counted_record_with_a_table_depth_carries_fvcore_s_table():
    from vitbench.counters import counted_record
    from vitbench.models.references import resolve_all

    [target] = resolve_all(["mnist-vit"], {})
    record = counted_record(target, 1, ("fvcore",), table_depth=1)
    assert "fvcore_table" in record and "module" in record["fvcore_table"] and "blocks" in record["fvcore_table"]
    assert "fvcore_table" not in counted_record(target, 1, ("fvcore",))


def test_a_dispatch_count_is_hashable_and_counts_each_operator_in_macs():
    import torch

    from vitbench.counters.dispatch import DispatchCount, dispatch_count

    assert hash(DispatchCount(5, {"addmm": 5}, {"": 5})) == hash(DispatchCount(5, {"mm": 5}, {"x": 5}))
    counted = dispatch_count(torch.nn.Linear(16, 8), (torch.zeros(4, 16),))
    assert counted.macs == 4 * 16 * 8 and counted.by_operator == {"addmm": 4 * 16 * 8}  # MACs, not FLOPs
    assert counted.by_module == {"": 4 * 16 * 8}


def _self_attention():
    """nn.MultiheadAttention(16, 2) as self-attention, batch first, without the weights: the
    module PyTorch runs on its native fast path in eval mode without gradients."""
    import torch

    class SelfAttention(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attention = torch.nn.MultiheadAttention(16, 2, batch_first=True)

        def forward(self, x):
            return self.attention(x, x, x, need_weights=False)[0]

    return SelfAttention()


def test_pytorch_s_native_attention_fast_path_is_counted_by_hand():
    import torch

    from vitbench.counters.dispatch import dispatch_count

    model = _self_attention().eval()
    counted = dispatch_count(model, (torch.randn(3, 5, 16),))
    assert "_native_multi_head_attention" in counted.by_operator  # eval, no grad, batch first: the fast path
    n, d = 5, 16  # q, k, v and output projections 4 n d^2, then q k^T and attention x v 2 n^2 d, a sample
    assert counted.macs == 3 * (4 * n * d * d + 2 * n * n * d)


def test_the_fused_attention_formulas_on_shapes_worked_by_hand():
    from vitbench.counters.formulas import mha_activations, mha_macs, sdpa_activations, sdpa_macs

    q, k, v = (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4)  # B 2, h 3, n 5, m 7, d_h 8, d_v 4
    assert sdpa_macs(q, k, v) == 2 * 3 * 5 * 7 * 8 + 2 * 3 * 5 * 7 * 4 == 2520
    assert sdpa_activations(q, k, v) == 2 * 3 * 5 * 7 + 2 * 3 * 5 * 4 == 330  # scores + output
    query, key = (2, 5, 16), (2, 7, 16)  # B 2, n 5, m 7, E 16, 4 heads
    assert mha_macs(query, key, 16) == 2 * 5 * 256 + 2 * 2 * 7 * 256 + 2 * 2 * 5 * 7 * 16 + 2 * 5 * 256 == 14528
    assert mha_activations(query, key, 16, 4) == 2 * ((5 + 14) * 16 + 4 * 5 * 7 + 2 * 5 * 16) == 1208


def test_a_vit_layout_is_found_by_its_patch_embedding_and_attention_modules():
    from vitbench.counters.components import vit_layout

    assert vit_layout(["patch_embed.proj", "blocks.0.attn.qkv", "blocks.0.attn", "blocks.0.mlp.fc1", "head"]) == "vit"
    assert vit_layout(["patch_embed", "blocks.0.attn"]) == "vit"  # qkv computed inside attn (F.linear)
    assert vit_layout(["patch_embed.proj", "blocks.0.mlp.fc1"]) is None  # no attention: not a ViT
    assert vit_layout(["blocks.0.attn.qkv", "blocks.0.attn"]) is None  # no patch embedding
    assert vit_layout(["patch_embed.proj", "blocks.0.attn.rel_pos.mlp"]) is None  # a position MLP is no attention
    # torchvision: ViT (conv_proj + self_attention), Swin (features.0, attention computing qkv itself)
    assert vit_layout(["conv_proj", "encoder.layers.encoder_layer_0.self_attention"]) == "torchvision"
    assert vit_layout(["features.0", "features.1.0.attn"]) == "torchvision"
    assert vit_layout(["conv1", "layer1.0.conv1", "fc"]) is None


def test_a_live_vit_module_without_a_spec_gets_its_components_in_the_module_table():
    import torch

    from vitbench.counters import module_table

    class Attention(torch.nn.Module):
        def __init__(self, d: int) -> None:
            super().__init__()
            self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)

        def forward(self, x):
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            return self.proj(torch.nn.functional.scaled_dot_product_attention(q, k, v))

    class TinyViT(torch.nn.Module):
        def __init__(self, d: int = 8) -> None:
            super().__init__()
            self.patch_embed = torch.nn.Conv2d(3, d, 4, stride=4)
            self.blocks = torch.nn.ModuleList([torch.nn.ModuleDict({"attn": Attention(d)})])
            self.head = torch.nn.Linear(d, 2)

        def forward(self, x):
            tokens = self.patch_embed(x).flatten(2).transpose(1, 2)
            return self.head(self.blocks[0]["attn"](tokens).mean(1))

    rows = {r["module"]: r for r in module_table(TinyViT(), depth=4, input_size=(3, 8, 8))}
    assert {path: r.get("component") for path, r in rows.items()} == {
        "": None, "patch_embed": "patch_embed", "blocks": None, "blocks.0": None, "blocks.0.attn": "attn_matmul",
        "blocks.0.attn.qkv": "qkv", "blocks.0.attn.proj": "attn_proj", "head": "head"}


def test_swin_and_convnext_modules_map_to_their_own_components():
    from vitbench.counters.components import component_layout
    from vitbench.specs.convnext import ConvNeXtSpec
    from vitbench.specs.swin import SwinSpec

    swin, convnext = SwinSpec(), ConvNeXtSpec()  # the defaults: Swin-T, ConvNeXt-T
    torchvision_swin, _ = component_layout(swin, "torchvision")
    assert torchvision_swin("features.1.0.attn") == "attention"  # qkv and projection computed inside it
    assert torchvision_swin("features.0.0") == "patch_embed" and torchvision_swin("features.2.reduction") == "patch_merging"
    timm_swin, _ = component_layout(swin, "vit")
    assert timm_swin("layers.0.blocks.0.attn") == "attn_matmul" and timm_swin("layers.0.blocks.0.attn.qkv") == "qkv"
    to_group, groups = component_layout(convnext, None)
    assert to_group("stages.0.blocks.0.conv_dw") == "dwconv" and to_group("features.1.0.block.0") == "dwconv"
    assert to_group("stages.1.downsample.1") == "downsample" and "dwconv" in groups


def test_counted_columns_fill_a_row_without_a_formula():
    from vitbench.counters.fill import fill_counted

    both = fill_counted({"module_params": 5, "dispatch_macs": 10, "fvcore_macs": 10})
    assert both == {"module_params": 5, "params": 5, "params_source": "module", "dispatch_macs": 10, "fvcore_macs": 10,
                    "macs": 10, "macs_source": "dispatch", "flops": 20, "agree": True}  # flops = 2 x MACs
    assert fill_counted({"dispatch_macs": 10, "fvcore_macs": 12})["agree"] is False
    fvcore_only = fill_counted({"fvcore_macs": 7})
    assert (fvcore_only["macs"], fvcore_only["macs_source"], fvcore_only["flops"]) == (7, "fvcore", 14)
    assert "agree" not in fvcore_only
    analytic = fill_counted({"params": 3, "macs": 4, "dispatch_macs": 5})
    assert analytic["macs"] == 4 and analytic["macs_source"] == "analytic" and "flops" not in analytic


def test_a_small_vit_at_its_size_is_validated_component_by_component():
    from vitbench.counters.validate import validate

    [row] = validate(["mnist-vit"], resolutions=[28], batch_sizes=(1,), counters=("dispatch",))
    assert row["agree"] is True and row["differing_components"] == "" and row["dispatch_macs"] == row["macs"]
    [capped] = validate(["mnist-vit"], resolutions=[28], batch_sizes=(1,), fvcore_budget_macs=1)
    assert capped["fvcore_macs"] is None and "fvcore skipped" in capped["notes"] and capped["dispatch_macs"] == row["macs"]


def test_a_live_module_is_validated_at_each_size_asked():
    import torch

    from vitbench.counters.validate import validate

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                torch.nn.Linear(4, 2))
    model.img_size = 8  # what the module says of its input (as torchvision's ViT does)
    rows = validate([model], resolutions=[8, (6, 10)], batch_sizes=(1,))
    assert [r["img_size"] for r in rows] == [8, "6x10"] and all(r["agree"] is True for r in rows)  # fvcore = dispatch
    # the convolution's MACs: H x W x 4 outputs x 3 x 3 x 3, plus the head's 4 x 2
    assert [r["dispatch_macs"] for r in rows] == [8 * 8 * 4 * 27 + 8, 6 * 10 * 4 * 27 + 8]


def test_a_size_the_preset_already_has_is_replaced_to_keep_three():
    from vitbench.specs import with_overrides

    assert default_resolutions(with_overrides(resolve("vit-ti/16"), img_size=32)) == [(32, 32), (48, 80), (64, 64)]


def test_a_model_without_a_formula_at_an_automatic_batch_size_has_its_parameters_counted():
    import torch

    from vitbench.counters.fill import counted_identity
    from vitbench.models.references import resolve as resolve_target

    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 2))
    model.img_size = 2
    target = resolve_target(model)
    assert counted_identity(target, "auto") == {"params": 12 * 2 + 2}  # per image MACs need a whole batch
    assert counted_identity(target, 3) == {"params": 26, "macs": 3 * 24, "flops": 2 * 3 * 24}


def test_fvcore_counts_the_native_attention_fast_path_as_the_explicit_one():
    import torch

    from vitbench.counters.fvcore_counter import FvcoreCount, fvcore_count

    x = torch.randn(3, 5, 16)
    explicit = fvcore_count(_self_attention().eval(), (x,))  # parameters that need gradients: no fast path
    fused = fvcore_count(_self_attention().eval().requires_grad_(False), (x,))
    assert set(fused.by_operator) == {"_native_multi_head_attention"} and "linear" in explicit.by_operator
    n, d = 5, 16  # a sample: projections 4 n d^2 + q k^T and attention x v 2 n^2 d MACs; activations:
    assert fused.macs == explicit.macs == 3 * (4 * n * d * d + 2 * n * n * d)
    # q, k, v (3 n d), 2 heads' scores (2 n^2), attention output and projection (2 n d)
    assert fused.activations == explicit.activations == 3 * (3 * n * d + 2 * n * n + 2 * n * d)
    assert hash(fused) == hash(FvcoreCount(fused.macs, fused.flops, fused.activations, {}, {}, {"x": 1}))


def test_fvcore_counts_a_same_padded_convolution():
    import torch

    from vitbench.counters.fvcore_counter import fvcore_count

    counted = fvcore_count(torch.nn.Conv2d(3, 4, 3, padding="same"), (torch.randn(1, 3, 8, 8),))
    assert counted.by_operator == {"_convolution_mode": 8 * 8 * 4 * 3 * 9}  # outputs x in-channels x kernel


def test_an_operator_fvcore_counts_that_is_no_mac_is_listed_not_mixed_into_macs(monkeypatch):
    import torch

    from vitbench.counters import fvcore_counter

    # fvcore 0.1.5 counts only MACs and norm-like operators; a later one (here: a handle for relu,
    # which vitbench otherwise tells fvcore to ignore) may count more: kept out of the MACs, said
    monkeypatch.setattr(fvcore_counter, "IGNORED_OPERATORS", tuple(o for o in fvcore_counter.IGNORED_OPERATORS
                                                                  if o != "aten::relu"))
    monkeypatch.setitem(fvcore_counter.FLOP_HANDLES, "aten::relu", lambda inputs, outputs: 7)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
    counted = fvcore_counter.fvcore_count(model, (torch.randn(2, 4),), activations=False)
    assert counted.by_operator == {"linear": 2 * 4 * 3, "relu": 7}
    assert counted.macs == 24 and counted.flops == 31 and counted.unsupported == {"counted-as-non-mac:relu": 7}


def test_fvcore_is_kept_from_building_a_model_whose_weights_take_half_the_memory(monkeypatch):
    import torch

    from vitbench.counters import run
    from vitbench.models.references import resolve as resolve_target

    shared = torch.nn.Linear(100, 100)  # 10,100 parameters, 40,400 bytes, used twice: held once
    model = torch.nn.Sequential(torch.nn.Flatten(), shared, shared)
    model.img_size = 10
    target = resolve_target(model)
    monkeypatch.setattr(run, "_available_memory", lambda: 2 * 40_400)
    assert run._too_big_to_execute(target) is None
    monkeypatch.setattr(run, "_available_memory", lambda: 2 * 40_400 - 2)
    assert run._too_big_to_execute(target) == (
        "its parameters (0.0 GB) would take more than half of the memory available (0.0 GB)")


def test_a_model_that_cannot_run_on_meta_is_counted_for_real_and_says_why_in_a_line():
    import torch

    from vitbench.counters import run
    from vitbench.models.references import resolve as resolve_target

    class RealOnly(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(12, 2)
            self.img_size = 2

        def forward(self, x):
            if x.device.type == "meta":
                raise RuntimeError("needs data: " + "x" * 200)
            return self.fc(x.flatten(1))

    counted, params, note = run.run_dispatch(resolve_target(RealOnly()), 3)
    assert counted.macs == 3 * 12 * 2 and params == 26
    assert note == f"dispatch counted by running on cpu (the model cannot run on meta: needs data: {'x' * 108})"


def test_fvcore_skips_a_referenced_model_too_big_to_build_and_says_the_dispatch_count_stands(monkeypatch):
    from vitbench.counters import run
    from vitbench.models.references import resolve_all

    monkeypatch.setattr(run, "_available_memory", lambda: 1000)
    [target] = resolve_all(["mnist-vit"], {})
    counted, params, note = run.run_fvcore(target, 1, activations=False, table_depth=None)
    assert (counted, params) == (None, None)
    assert note.startswith("fvcore skipped: it executes the model, and its parameters (0.0 GB) would take more than half")
    assert note.endswith("; the dispatch count stands")
