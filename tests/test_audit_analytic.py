"""The formulas behind `vitbench audit` (vitbench.analytic.conventions), checked against values
worked out by hand and, for Swin's global attention, against timm's module counted on meta (the
audit itself checks the rest against counted timm and torchvision modules: tests/test_audit.py),
and the layering rules: the quantity registry names analytic functions (no
formulas of its own), and neither the formulas nor the catalogue code import torch.
"""

from __future__ import annotations

import operator
import subprocess
import sys

import pytest

from vitbench.analytic import conventions
from vitbench.claims import QUANTITIES
from vitbench.presets import resolve
from vitbench.specs import SwinSpec

SWIN_B = SwinSpec(name="swin-b", embed_dim=128, depths=(2, 2, 18, 2), num_heads=(4, 8, 16, 32), window_clamp=True)


def test_swin_stage_attention_by_hand():
    # Swin-B stage 1 at 224 px: n = 56^2 = 3,136 tokens, C = 128, M = 7: 64 windows.
    assert (conventions.swin_tokens(SWIN_B), conventions.swin_windows(SWIN_B)) == (3136, 64)
    # global: 4 n C^2 + 2 n^2 C = 205,520,896 + 2,517,630,976
    assert conventions.swin_global_attention_macs(SWIN_B) == 205_520_896 + 2_517_630_976 == 2_723_151_872
    # window: 4 n C^2 + 2 M^2 n C = 205,520,896 + 39,337,984
    assert conventions.swin_window_attention_macs(SWIN_B) == 205_520_896 + 39_337_984 == 244_858_880
    assert conventions.swin_global_scores_per_head(SWIN_B) == 3136**2
    assert conventions.swin_window_scores_per_head(SWIN_B) == 49**2
    readings = {r.key: r.value for r in conventions.swin_window_attention_readings(SWIN_B)}
    assert readings == {"matmul-only": 2 * 49 * 3136 * 128, "qk-only": 49 * 3136 * 128}
    readings = {r.key: r.value for r in conventions.swin_global_attention_readings(SWIN_B)}
    assert readings == {"matmul-only": 2 * 3136**2 * 128, "qk-only": 3136**2 * 128}
    # Stage 2 (28 x 28, C = 256): windows of 7, and global over the stage's own map.
    assert conventions.swin_windows(SWIN_B, 1) == 16
    assert conventions.swin_global_attention_macs(SWIN_B, 1) == 4 * 784 * 256**2 + 2 * 784**2 * 256


@pytest.mark.slow
def test_swin_global_attention_equals_timms_counted_stage():
    pytest.importorskip("timm")
    from vitbench.counters import count_detailed

    # timm's Swin-B with 56 x 56 windows: stage 1 (56 x 56 tokens) is one window, global attention.
    counted = count_detailed("timm:swin_base_patch4_window7_224+window_size=56", counters=("dispatch",))
    assert counted.dispatch_by_module["layers.0.blocks.0.attn"] == conventions.swin_global_attention_macs(SWIN_B) == 2_723_151_872


def test_vit_parts_by_hand():
    spec = resolve("vit-b/16")  # n = 197, d = 768, m = 3072, L = 12
    n, d, m = 197, 768, 3072
    assert conventions.attention_layer_macs(spec) == 4 * n * d * d + 2 * n * n * d
    assert conventions.encoder_layer_macs(spec) == 4 * n * d * d + 2 * n * n * d + 2 * n * d * m
    assert conventions.encoder_params(spec) == 12 * 7_087_872 == 85_054_464
    assert conventions.without_cls(spec).tokens == 196 and conventions.without_cls(conventions.without_cls(spec)) is None
    readings = {r.key: r.value for r in conventions.attention_readings(spec)}
    assert readings == {
        "matmul-only": 2 * n * n * d, "qk-only": n * n * d,
        "block/no-cls": 4 * 196 * d * d + 2 * 196**2 * d, "matmul-only/no-cls": 2 * 196**2 * d, "qk-only/no-cls": 196**2 * d,
    }
    # fvcore: MACs + 5 per LayerNorm element (2 per block on n d, the final one on the CLS token)
    macs = 17_563_828_224  # tests/test_audit.py::_vitb16_macs
    assert conventions.fvcore_flops(spec) == macs + 5 * (12 * 2 * n * d + d)


def test_the_registry_names_analytic_functions_and_no_formulas():
    for q in QUANTITIES.values():
        for function in (q.compute, q.readings):
            if function is None or isinstance(function, operator.attrgetter):
                continue
            assert function.__module__.startswith("vitbench.analytic"), (q.name, function)
            assert function.__name__ != "<lambda>", q.name


def test_formulas_and_the_analytic_audit_import_no_torch():
    # `vitbench audit --no-counted` stays fast: no torch, timm or pandas for the whole catalogue.
    code = ("import sys; from vitbench.claims import audit; records = audit(counted=False); "
            "assert len(records) > 100; heavy = {'torch', 'timm', 'pandas'} & set(sys.modules); "
            "assert not heavy, sorted(heavy)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_classifier_activation_and_omittable_counts_by_hand():
    from vitbench.specs import PlainCNNSpec, ViTSpec

    vit_b = resolve("vit-b/16")  # n = 197, N = 196, d = 768, h = 12, m = 3072, L = 12, K = 1000
    assert conventions.classifier_params(vit_b) == 768 * 1000 + 1000 == 769_000
    # fvcore's activations, B [N d + L (3nd + h n^2 + 3 nd + n m) + K], by hand for B = 2:
    # N d = 150,528; per layer 453,888 + 465,708 + 453,888 + 605,184 = 1,978,668; x 12 = 23,744,016
    assert conventions.fvcore_activations(vit_b, batch_size=2) == 2 * (150_528 + 23_744_016 + 1000) == 47_791_088
    # a plain CNN on 1 x 8 x 8: 3x3 conv to 2 channels (2 x 8 x 8 = 128 outputs, the largest), 2x2 max
    # pool, a hidden linear layer 32 -> 5, the classifier 5 -> 3: its parameters 5 x 3 + 3 = 18
    cnn_spec = PlainCNNSpec(img_size=(8, 8), in_chans=1, num_classes=3, stages=((2,),), fc_dims=(5,))
    assert conventions.classifier_params(cnn_spec) == 18
    assert conventions.largest_activation_bytes(cnn_spec, batch_size=2) == 4 * 2 * 128
    # a qkv without bias leaves no qkv bias out; with one, 3 d per block
    tiny = dict(img_size=(32, 32), patch_size=16, embed_dim=8, depth=2, num_heads=2)
    assert conventions.omittable_params(ViTSpec(**tiny, qkv_bias=False))["qkv_bias"] == 0
    assert conventions.omittable_params(ViTSpec(**tiny, qkv_bias=True))["qkv_bias"] == 2 * 3 * 8
    assert conventions.omittable_params(ViTSpec(**tiny), blocks=1)["fc1_bias"] == 32
    # a final LayerNorm holds 2 d; without one there is none to leave out
    assert conventions.omittable_params(ViTSpec(**tiny))["final_norm"] == 16
    assert conventions.omittable_params(ViTSpec(**tiny, final_norm=False))["final_norm"] == 0
    assert conventions.omittable_params(cnn_spec) == {"head_bias": 3}


def test_a_reading_cannot_be_changed_by_whoever_holds_it():
    import dataclasses

    from vitbench.presets import resolve

    reading = conventions.params_readings(resolve("vit-ti/16"))[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        reading.value = 0
