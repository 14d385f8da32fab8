"""Roofline context: the GPU peak table, achieved FLOP/s and MFU, arithmetic intensity per op
kind (counted on the meta device, checked against hand-computed bytes and analytic MACs)."""

from __future__ import annotations

import pytest

from vitbench.analytic import complexity
from vitbench.measure import roofline as rl
from vitbench.specs import ViTSpec


@pytest.mark.parametrize(
    "name, expected",
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM"),
        ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe"),
        ("NVIDIA A100-PCIE-40GB", "A100 40GB"),
        ("NVIDIA L4", "L4"),
        ("Tesla T4", "T4"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
        ("NVIDIA L40S", None),  # not in the table: 'l4' must not match inside 'l40s'
        ("AMD EPYC 7763 64-Core Processor", None),
        (None, None),
    ],
)
def test_lookup_device(name, expected):
    entry = rl.lookup_device(name)
    assert (entry.name if entry else None) == expected


def test_table_values_are_dense_vendor_peaks():
    h100 = rl.lookup_device("NVIDIA H100 80GB HBM3")
    assert h100.flops_for("bf16") == pytest.approx(989.4e12)  # dense; 1979 TFLOP/s is with sparsity
    assert h100.bandwidth == pytest.approx(3.35e12)
    a100 = rl.lookup_device("NVIDIA A100-SXM4-80GB")
    assert a100.flops_for("fp16") == pytest.approx(312e12) and a100.flops_for("fp32") == pytest.approx(19.5e12)
    assert rl.lookup_device("Tesla T4").flops_for("bf16") is None  # Turing has no bf16


def test_step_flops_and_mfu():
    assert rl.step_flops(1_000, "infer") == 2_000  # 2 FLOPs per MAC
    assert rl.step_flops(1_000, "train") == 6_000  # forward + backward ~ 3 forward passes
    roof = rl.roofline(10**12, "train", 0.5, "bf16", "NVIDIA H100 80GB HBM3")
    assert roof.flops_per_s == pytest.approx(6e12 / 0.5)
    assert roof.peak_source == "table:H100 SXM"
    assert roof.mfu == pytest.approx(12e12 / 989.4e12)
    assert roof.ridge == pytest.approx(989.4e12 / 3.35e12)


def test_user_peak_overrides_table_and_serves_cpus():
    roof = rl.roofline(10**9, "infer", 0.01, "fp32", None, peak_flops=1e12, peak_bandwidth=1e11)
    assert roof.peak_source == "user"
    assert roof.mfu == pytest.approx(2e11 / 1e12)
    assert rl.bound(20.0, roof.ridge) == "compute" and rl.bound(5.0, roof.ridge) == "memory"
    assert rl.roofline(10**9, "infer", 0.01, "fp32", None).mfu is None
    over = rl.roofline(10**9, "infer", 0.01, "bf16", "NVIDIA L4", peak_flops=50e12)
    assert over.peak_flops_per_s == 50e12 and over.peak_bandwidth_bytes_per_s == 300e9


def test_tf32_key():
    assert rl.peak_precision_key("fp32", "cuda", tf32=True) == "tf32"
    assert rl.peak_precision_key("fp32", "cuda", tf32=False) == "fp32"
    assert rl.peak_precision_key("fp32", "cpu", tf32=True) == "fp32"
    assert rl.peak_precision_key("bf16", "cuda", tf32=True) == "bf16"


def test_op_kinds():
    from vitbench.measure.intensity import op_kind

    assert op_kind("addmm") == "linear" and op_kind("convolution") == "conv"
    assert op_kind("_scaled_dot_product_flash_attention_for_cpu") == "attention"
    assert op_kind("bmm") == "attention" and op_kind("native_layer_norm") == "norm"
    assert op_kind("gelu") == "elementwise"


def test_forward_intensity_matches_analytic_macs_and_hand_bytes():
    from vitbench.measure.intensity import forward_intensity

    spec = ViTSpec(img_size=32, patch_size=8, embed_dim=64, depth=2, num_heads=2, num_classes=10)
    batch = 4
    kinds = forward_intensity(spec, batch)
    c = complexity(spec, batch).macs_by_component
    linear_macs = c["qkv"] + c["attn_proj"] + c["mlp_fc1"] + c["mlp_fc2"] + c["head"]
    assert kinds["linear"].flops == 2 * linear_macs
    assert kinds["conv"].flops == 2 * c["patch_embed"]
    # patch embedding convolution: reads the images, the weights and bias, writes B x d x 4 x 4
    image = batch * 3 * 32 * 32
    weights = 64 * 3 * 8 * 8 + 64
    out = batch * 64 * 4 * 4
    assert kinds["conv"].bytes == 4 * (image + weights + out)
    assert kinds["conv"].intensity == pytest.approx(2 * c["patch_embed"] / (4 * (image + weights + out)))
    # elementwise and norms are far below any ridge point; matmuls far above them
    assert kinds["norm"].intensity < 1 and kinds["elementwise"].intensity < 1
    assert kinds["linear"].intensity > 5
    half = forward_intensity(spec, batch, precision="bf16")
    assert half["conv"].bytes == 2 * (image + weights + out)  # autocast runs it on 2-byte operands
    assert half["norm"].bytes == kinds["norm"].bytes  # layer norm stays fp32 under autocast


def test_intensity_columns_labels():
    from vitbench.measure.intensity import KindIntensity, intensity_columns

    cols = intensity_columns({"linear": KindIntensity(1000, 10), "elementwise": KindIntensity(10, 100)}, ridge=50.0)
    assert cols["arith_intensity_linear"] == 100.0 and cols["bound_linear"] == "compute"
    assert cols["arith_intensity_elementwise"] == 0.1 and cols["bound_elementwise"] == "memory"
    assert cols["arith_intensity"] == pytest.approx(1010 / 110) and cols["bound"] == "memory"
    assert cols["arith_intensity_conv"] is None and cols["bound_conv"] is None
