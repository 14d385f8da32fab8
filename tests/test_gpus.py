"""Every GPU in the catalogue carries its vendor's numbers: each peak is checked against the
chip's own arithmetic (SMs x clock x operations per SM per clock, from the architecture
whitepapers), and each bandwidth against the memory bus (width x data rate, from the
datasheets). Numbers typed wrong, or a sparse peak given as a dense one, fail here."""

from __future__ import annotations

import pytest

from vitbench.errors import SpecError
from vitbench.timemodel.gpus import CATALOGUE, GPU_DEVICES, gpu, match_device_name

# FP32 lanes per SM, and dense FP16 tensor FLOPs per SM per clock with FP32 accumulate
# (whitepapers: Volta V100, Turing TU104, Ampere GA100 and GA102, Ada AD102/AD104, Hopper
# GH100, Blackwell GB202 and B200). GeForce cards accumulate FP16 into FP32 at half rate.
PER_SM = {
    "v100": (64, 1024), "v100-pcie": (64, 1024), "t4": (64, 1024),
    "a100": (64, 2048), "a100-40gb": (64, 2048), "a100-pcie": (64, 2048), "a100-40gb-pcie": (64, 2048),
    "a10": (128, 1024), "a6000": (128, 1024), "rtx3090": (128, 512),
    "l4": (128, 1024), "l40s": (128, 1024), "rtx4090": (128, 512),
    "h100": (128, 4096), "h100-pcie": (128, 4096), "h100-nvl": (128, 4096), "h200": (128, 4096),
    "b200": (128, 8192), "rtx5090": (128, 512), "rtx-pro-6000": (128, 1024), "rtx-pro-6000-maxq": (128, 1024),
}
# memory bus width (bits) and data rate per pin (Gbit/s), from the datasheets
BUS = {
    "v100": (4096, 1.752), "v100-pcie": (4096, 1.752), "t4": (256, 10.0), "a10": (384, 12.5),
    "a100": (5120, 3.186), "a100-40gb": (5120, 2.43), "a100-pcie": (5120, 3.024), "a100-40gb-pcie": (5120, 2.43),
    "a6000": (384, 16.0), "rtx3090": (384, 19.5), "l4": (192, 12.5), "l40s": (384, 18.0), "rtx4090": (384, 21.0),
    "h100": (5120, 5.23), "h100-pcie": (5120, 3.125), "h100-nvl": (6144, 5.1), "h200": (6144, 6.25),
    "b200": (8192, 7.8), "rtx5090": (512, 28.0), "rtx-pro-6000": (512, 28.0), "rtx-pro-6000-maxq": (512, 28.0),
}


def test_the_catalogue_covers_the_cards_users_choose_between():
    assert set(PER_SM) == set(GPU_DEVICES) == set(BUS)
    generations = {spec.generation for spec in CATALOGUE}
    assert generations == {"volta", "turing", "ampere", "ada", "hopper", "blackwell"}


@pytest.mark.parametrize("key", GPU_DEVICES)
def test_each_peak_is_what_its_sms_and_clock_can_do(key):
    """implied clock = peak / (SMs x ops per SM per clock) lies at or just under the boost
    clock (tensor peaks are quoted at a clock up to about 15% below it)."""
    spec = gpu(key)
    lanes, tensor = PER_SM[key]
    fp32_clock = spec.fp32_tflops * 1e12 / (spec.sms * lanes * 2)
    fp16_clock = spec.fp16_tflops * 1e12 / (spec.sms * tensor)
    boost = spec.boost_mhz * 1e6
    assert 0.97 * boost <= fp32_clock <= 1.02 * boost, (fp32_clock, boost)
    assert 0.85 * boost <= fp16_clock <= 1.02 * boost, (fp16_clock, boost)
    if spec.bf16_tflops is not None:
        assert spec.bf16_tflops == spec.fp16_tflops
    if spec.generation in ("volta", "turing"):
        assert spec.bf16_tflops is None and spec.tf32_tflops is None
    else:  # TF32 tensor cores run at half the FP16 rate (FP32 accumulate) on every card since Ampere
        assert spec.fp16_tflops / spec.tf32_tflops == pytest.approx(2.0, rel=0.03)


@pytest.mark.parametrize("key", GPU_DEVICES)
def test_each_bandwidth_is_its_memory_bus(key):
    width, rate = BUS[key]
    assert gpu(key).bandwidth_gb_s == pytest.approx(width * rate / 8, rel=0.01)


def test_names_aliases_and_the_local_card_resolve():
    assert gpu("RTX4090").key == gpu("4090").key == "rtx4090"
    assert gpu("h200").generation == "hopper" and gpu("nosuch") is None
    assert match_device_name("NVIDIA H100 80GB HBM3").key == "h100"
    assert match_device_name("NVIDIA H100 PCIe").key == "h100-pcie"
    assert match_device_name("NVIDIA A100-SXM4-40GB").key == "a100-40gb"
    assert match_device_name("NVIDIA A100-SXM4-80GB").key == "a100"
    assert match_device_name("NVIDIA GeForce RTX 4090").key == "rtx4090"
    assert match_device_name("NVIDIA L40S").key == "l40s"
    assert match_device_name("NVIDIA L4").key == "l4"
    assert match_device_name("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition").key == "rtx-pro-6000-maxq"
    assert match_device_name("NVIDIA RTX A4000") is None


def test_devices_lists_every_card_with_its_source(capsys):
    import vitbench
    from vitbench.cli import main

    rows = vitbench.devices()
    assert [r["device"] for r in rows] == list(GPU_DEVICES)
    h100 = next(r for r in rows if r["device"] == "h100")
    assert h100["fp16_flops_per_s"] == 989.4e12 and h100["bandwidth_bytes_per_s"] == 3.35e12
    # a data-centre card is priced by the data-centre fit, at the rates it was measured to sustain
    assert h100["params_from"] == "datacenter" and h100["rates"] == "sustained" and "datasheet" in h100["source"]
    assert h100["sustained_tensor_flops_per_s"] == 794.5e12 and "ml-engineering" in h100["sustained_source"]
    # what a choice between cards needs: memory and how cards talk to each other (NVIDIA's datasheet)
    assert h100["memory_bytes"] == 80 * 10**9 and h100["nvlink"] == "NVLink 4" and h100["nvlink_bytes_per_s"] == 900e9
    assert h100["pcie"] == "PCIe Gen5 x16" and next(r for r in rows if r["device"] == "l4")["nvlink"] is None
    # in raw units: NVIDIA's datasheets (H100 SXM: 1,980 MHz boost, PCIe Gen5 128 GB/s; A100: PCIe Gen4
    # 64 GB/s, both directions) and the copy rate measured on the lent H200 (issue 43: 4.3 TB/s)
    assert h100["boost_clock_hz"] == 1_980_000_000 and h100["pcie_bytes_per_s"] == 128e9
    assert next(r for r in rows if r["device"] == "a100")["pcie_bytes_per_s"] == 64e9
    assert next(r for r in rows if r["device"] == "h200")["sustained_bandwidth_bytes_per_s"] == pytest.approx(4.3e12)
    rtx4090 = next(r for r in rows if r["device"] == "rtx4090")
    assert rtx4090["params_from"] == "ada" and rtx4090["rates"] == "datasheet" and rtx4090["sustained_tensor_flops_per_s"] is None
    assert all(r["source"] for r in rows)
    assert main(["devices"]) == 0
    table = capsys.readouterr().out
    assert all(column in table.splitlines()[0] for column in ("memory_bytes", "sustained_tensor_flops_per_s", "nvlink", "pcie"))
    assert main(["devices", "--generation", "blackwell", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert "rtx5090" in out and "b200" in out and "a100" not in out
    with pytest.raises(SpecError, match="generation"):
        vitbench.devices("pascal")


@pytest.mark.parametrize("name, family", [
    ("timm:convnext_tiny.fb_in1k", "ConvNeXt"), ("timm:vit_base_patch16_224.augreg_in21k", "ViT-like"),
    ("vit-b/16", "ViT-like"), ("timm:deit_small_patch16_224", "ViT-like"), ("resnet50", "ResNet-like"),
    ("torchvision:resnet18", "ResNet-like"), ("timm:seresnext50_32x4d", "ResNet-like"),
    ("timm:efficientnet_b0", "EfficientNet/MobileNet"), ("torchvision:mobilenet_v3_large", "EfficientNet/MobileNet"),
    ("timm:swin_tiny_patch4_window7_224", "other"), ("timm:levit_128", "other"), ("py:./net.py:make", "other"),
    # vitbench's own ViT presets whose names do not start with "vit"
    ("mnist-vit", "ViT-like"), ("cifar-vit/4", "ViT-like"), ("deit-s/16", "ViT-like"),
])
def test_model_families_of_the_error_bands(name, family):
    from vitbench.timemodel.families import family as family_of

    assert family_of(name) == family


def test_the_families_are_five_and_a_name_is_read_without_its_source_weights_or_overrides():
    from vitbench.timemodel.families import FAMILIES, family

    assert FAMILIES == ("ViT-like", "ResNet-like", "ConvNeXt", "EfficientNet/MobileNet", "other")
    assert family("timm:resnet50+drop_rate=0.1") == "ResNet-like"  # the model, not its override
    assert family("vit-b/16+depth=6") == "ViT-like"
    assert family("timm:convnext_tiny.fb_in1k+drop_path_rate=0.1") == "ConvNeXt"
    # a file of the user's: its function's name says nothing vitbench can trust
    assert family("py:./models.py:resnet50") == "other" and family("py:./vit.py:build") == "other"
    assert {family(name) for name in ("vit-ti/16", "resnet50", "timm:convnext_tiny", "timm:efficientnet_b0",
                                      "timm:swin_tiny_patch4_window7_224")} == set(FAMILIES)


@pytest.mark.parametrize("key", [k for k in GPU_DEVICES if gpu(k).market == "datacenter"])
def test_each_data_centre_card_sustains_a_measured_fraction_of_its_datasheet(key):
    """Published measurements put a large dense fp16/bf16 matrix product at 40-90% of a data-centre
    datasheet (power-capped cards lowest) and a copy at 70-95% of the bandwidth: a figure outside
    that is a typo or a sparse peak."""
    spec = gpu(key)
    measured = spec.sustained
    assert measured is not None and measured.source
    assert 0.40 <= measured.tensor_tflops / spec.fp16_tflops <= 0.90
    assert 0.70 <= measured.copy_gb_s / spec.bandwidth_gb_s <= 0.95
    scaled = spec.at_sustained_rates()
    assert scaled.fp16_tflops == pytest.approx(measured.tensor_tflops) and scaled.bandwidth_gb_s == measured.copy_gb_s
    assert scaled.sms == spec.sms and scaled.l2_mb == spec.l2_mb


def test_consumer_and_workstation_cards_keep_their_datasheet():
    for key in GPU_DEVICES:
        spec = gpu(key)
        if spec.market != "datacenter":
            assert spec.sustained is None and spec.at_sustained_rates() is spec


#: NVIDIA's datasheets and whitepapers, read again for this table (SMs, boost MHz, dense FP32
#: TFLOP/s, dense FP16 tensor TFLOP/s with FP32 accumulate, DRAM GB/s, L2 MB, memory GB)
DATASHEETS = {
    "v100": (80, 1530, 15.7, 125.0, 900, 6, 32),
    "v100-pcie": (80, 1380, 14.0, 112.0, 900, 6, 32),
    "t4": (40, 1590, 8.1, 65.0, 320, 4, 16),
    "a100": (108, 1410, 19.5, 312.0, 2039, 40, 80),
    "a100-40gb": (108, 1410, 19.5, 312.0, 1555, 40, 40),
    "a100-pcie": (108, 1410, 19.5, 312.0, 1935, 40, 80),
    "a100-40gb-pcie": (108, 1410, 19.5, 312.0, 1555, 40, 40),
    "a6000": (84, 1800, 38.7, 154.8, 768, 6, 48),
    "l4": (58, 2040, 30.3, 121.0, 300, 48, 24),
    "l40s": (142, 2520, 91.6, 362.05, 864, 96, 48),
    "h100": (132, 1980, 67.0, 989.4, 3350, 50, 80),
    "h100-pcie": (114, 1755, 51.2, 756.0, 2000, 50, 80),
    "h100-nvl": (132, 1785, 60.0, 835.0, 3900, 50, 94),
    "h200": (132, 1980, 67.0, 989.4, 4800, 50, 141),
    "b200": (148, 1965, 75.0, 2250.0, 8000, 126, 180),
    "rtx3090": (82, 1695, 35.6, 71.0, 936, 6, 24),
    "rtx4090": (128, 2520, 82.6, 165.2, 1008, 72, 24),
    "rtx5090": (170, 2407, 104.8, 209.5, 1792, 96, 32),
    "rtx-pro-6000": (188, 2617, 125.0, 503.8, 1792, 128, 96),
    "rtx-pro-6000-maxq": (188, 2287, 110.0, 440.0, 1792, 128, 96),
}


@pytest.mark.parametrize("key", sorted(DATASHEETS))
def test_each_cards_numbers_are_its_datasheets(key):
    spec = gpu(key)
    got = (spec.sms, spec.boost_mhz, spec.fp32_tflops, spec.fp16_tflops, spec.bandwidth_gb_s, spec.l2_mb, spec.memory_gb)
    assert got == DATASHEETS[key]


def test_tf32_is_the_datasheets_dense_figure_where_the_card_has_it():
    assert {key: gpu(key).tf32_tflops for key in ("a100", "h100", "l4", "rtx4090", "v100")} == {
        "a100": 156.0, "h100": 494.7, "l4": 60.0, "rtx4090": 82.6, "v100": None}  # Volta has no TF32


def test_measured_rates_are_the_cited_measurements_and_cannot_be_changed():
    import dataclasses

    # zzc0721/torch-performance-test-data (V100-SXM2 torch.mm); BabelStream copy on an A100-SXM4-80GB
    assert gpu("v100").sustained.tensor_tflops == 94.84 and gpu("a100").sustained.copy_gb_s == 1709.0
    # no V100 PCIe was measured: the SXM2's measured fraction of its datasheet, at the PCIe's 112 TFLOP/s
    assert gpu("v100-pcie").sustained.tensor_tflops == pytest.approx(112.0 * 94.84 / 125.0)
    assert gpu("v100-pcie").sustained.derived and not gpu("v100").sustained.derived
    with pytest.raises(dataclasses.FrozenInstanceError):
        gpu("a100").sustained.copy_gb_s = 2039.0


#: NVIDIA's datasheets: NVLink per GPU (both directions), the cards one NVLink domain joins, PCIe
#: x16 (both directions), the DGX's network per node (Gb/s)
LINK_DATASHEETS = {
    "v100": ("NVLink 2", 300, 8, 32, 400),         # DGX-1: 4x 100 Gb/s InfiniBand
    "a100": ("NVLink 3", 600, 8, 64, 1600),        # DGX A100: 8x 200 Gb/s
    "a100-pcie": ("NVLink 3", 600, 2, 64, None),   # an NVLink bridge joins two PCIe cards
    "a100-40gb-pcie": ("NVLink 3", 600, 2, 64, None),
    "h100": ("NVLink 4", 900, 8, 128, 3200),       # DGX H100: 8x 400 Gb/s
    "l4": (None, None, 0, 64, None),
}


@pytest.mark.parametrize("key", sorted(LINK_DATASHEETS))
def test_each_cards_links_are_its_datasheets(key):
    from vitbench.timemodel.interconnect import link

    wire = link(key)
    assert (wire.nvlink, wire.nvlink_gb_s, wire.nvlink_group, wire.pcie_gb_s, wire.network_gbit_s) == LINK_DATASHEETS[key]



ZZC_ROWS = {"v100": "NVIDIA Tesla V100-SXM2-16GB", "t4": "NVIDIA Tesla T4 16GB", "a100-40gb-pcie": "NVIDIA A100-PCIE-40GB",
            "l4": "NVIDIA L4", "l40s": "NVIDIA L40S", "h100-pcie": "NVIDIA H100 PCIe", "h200": "NVIDIA H200"}


def test_the_measured_matrix_product_rates_are_the_published_table_read_again():
    """The sustained tensor rates cited to zzc0721/torch-performance-test-data are its rows
    (tests/data holds them as published): bf16 on the cards with bf16 tensor cores (Ampere and
    later), fp16 on Volta and Turing, whose bf16 runs without them."""
    from pathlib import Path

    lines = (Path(__file__).parent / "data" / "zzc0721_torch_mm_9d82827.md").read_text().splitlines()
    header, *rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines if line.startswith("| ")]
    table = {row[0]: dict(zip(header[1:], row[1:])) for row in rows if not row[0].startswith("---")}
    assert {key for key in GPU_DEVICES if gpu(key).sustained and "zzc0721" in gpu(key).sustained.source} == set(ZZC_ROWS)
    for key, device in ZZC_ROWS.items():
        column = "fp16" if gpu(key).generation in ("volta", "turing") else "bf16"
        assert gpu(key).sustained.tensor_tflops == float(table[device][column]), key
