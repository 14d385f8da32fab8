"""The GPU cost model's rules for what runs differently on a GPU than its operator's work alone
says (vitbench/timemodel/gpu_model.py), each on operators whose answer is worked out by hand:
PyTorch's own depthwise kernels and their weight gradient, cuDNN's grouped kernels and their
channels, the layout rewrite of half-precision NCHW convolutions, backward convolutions,
memory-bound kernels that pass over their tensors more than once, and the SM-bound rate of
PyTorch's memory-bound kernels. Plus which fit prices which card, and the bands a row says."""

from __future__ import annotations

from dataclasses import replace

import pytest

from vitbench.timemodel.gpu_model import (
    CONV,
    CONV_BACKWARD,
    DEPTHWISE,
    DEPTHWISE_BACKWARD,
    GROUPED,
    GROUPED_BACKWARD,
    MEMORY,
    TRAFFIC_PASSES,
    GenerationParams,
    GpuProfile,
    fit_source,
    memory_rate,
    op_table,
    predict_gpu,
)
from vitbench.timemodel.gpus import gpu
from vitbench.timemodel.ops import Op

H100, H200 = gpu("h100"), gpu("h200")
BASE = GenerationParams(gemm_eff=0.5, conv_eff=0.4, attention_eff=0.3, k_half=0.0001, bandwidth_eff=0.5, grouped_eff=0.25,
                        l2_gain=1.0, launch_floor_s=0.0, kernel_tail_s=0.0, host_infer_s=1e-9, host_train_s=1e-9)
FP32 = 67.0e12  # the H100 SXM's FP32 CUDA-core peak (FLOP/s)
BANDWIDTH = 3.35e12


def device_s(ops, params=BASE, spec=H100, mode="infer") -> float:
    return predict_gpu(ops, GpuProfile(spec, params, spec.generation), mode).device_s


def conv(kernel: str, macs: int, shape: tuple, moved: int = 1, dtype: str = "float16") -> Op:
    name = "convolution_backward" if kernel.endswith("_backward") else "convolution"
    return Op(name, "conv", macs, moved, shape, dtype, kernel)


def test_kernel_kinds():
    table = op_table([conv("conv", 8, (2, 2, 2)), conv("conv_nchw_backward", 16, (2, 2, 2)),
                      conv("conv_grouped", 8, (2, 2, 2, 4)), conv("conv_grouped_backward", 16, (2, 2, 2, 4)),
                      conv("conv_depthwise", 8, (2, 2, 2, 4)), conv("conv_depthwise_backward", 16, (2, 2, 2, 4))])
    assert list(table.kind) == [CONV, CONV_BACKWARD, GROUPED, GROUPED_BACKWARD, DEPTHWISE, DEPTHWISE_BACKWARD]
    # a GPU trace's grouped convolution carries its groups: output channels = groups x (out / groups)
    assert list(table.channels) == [0, 0, 8, 8, 8, 8]
    assert list(table.relayout) == [0, 1, 0, 0, 0, 0]


def test_pytorch_depthwise_kernels_forward_and_input_gradient_at_one_rate_weight_gradient_at_another():
    params = replace(BASE, depthwise_eff=0.1, depthwise_wgrad_eff=0.01)
    m, k, n = 10**9, 9, 1  # one forward: 9e9 MACs, 1.8e10 FLOPs
    forward = device_s([conv("conv_depthwise", m * k * n, (m, k, n, 64))], params)
    assert forward == pytest.approx(2 * m * k * n / (FP32 * 0.1), rel=1e-6)
    both = device_s([conv("conv_depthwise_backward", 2 * m * k * n, (m, k, n, 64))], params)
    assert both == pytest.approx(2 * m * k * n / (FP32 * 0.1) + 2 * m * k * n / (FP32 * 0.01), rel=1e-6)
    # the first layer's backward computes the weight's gradient alone
    weight_only = device_s([conv("conv_depthwise_backward", m * k * n, (m, k, n, 64))], params)
    assert weight_only == pytest.approx(2 * m * k * n / (FP32 * 0.01), rel=1e-6)
    # a fit made before PyTorch's depthwise kernels were told from cuDNN's (0: none): cuDNN's grouped rule
    older = replace(BASE, depthwise_eff=0.0, depthwise_wgrad_eff=0.0)
    for kernel in ("conv_depthwise", "conv_depthwise_backward"):
        assert device_s([conv(kernel, m * k * n, (m, k, n, 64))], older) == pytest.approx(
            device_s([conv(kernel.replace("depthwise", "grouped"), m * k * n, (m, k, n, 64))], older), rel=1e-12)


def test_a_bound_of_bytes_per_sm_clock_caps_the_memory_rate_from_one_byte():
    """sm_bytes_per_clock (0: no bound, else 1 to 64): an H100's 132 SMs at 1,980 MHz move at
    most 132 x 1.98e9 x b bytes a second."""
    from vitbench.timemodel.gpu_model import memory_rate

    assert memory_rate(H100, replace(BASE, sm_bytes_per_clock=0.0)) == pytest.approx(BANDWIDTH * 0.5)
    assert memory_rate(H100, replace(BASE, sm_bytes_per_clock=1.0)) == pytest.approx(132 * 1980e6)
    assert memory_rate(H100, replace(BASE, sm_bytes_per_clock=64.0)) == pytest.approx(BANDWIDTH * 0.5)  # above the DRAM's


def test_a_fit_that_never_told_the_two_apart_prices_pytorch_depthwise_as_cudnn_grouped():
    """The consumer cards' fits (depthwise_eff 0) price a native depthwise convolution exactly as
    they did before the kinds were told apart: as a cuDNN grouped one."""
    ops_native = [conv("conv_depthwise", 10**9, (10**8, 9, 1, 64)), conv("conv_depthwise_backward", 2 * 10**9, (10**8, 9, 1, 64))]
    ops_grouped = [conv("conv_grouped", 10**9, (10**8, 9, 1, 64)), conv("conv_grouped_backward", 2 * 10**9, (10**8, 9, 1, 64))]
    assert device_s(ops_native) == pytest.approx(device_s(ops_grouped), rel=1e-12)
    assert device_s(ops_grouped) == pytest.approx(3 * 2 * 10**9 / (2 * FP32 * 0.25), rel=1e-6)


@pytest.mark.parametrize("card, fp32_over_half", [("h100", 2.0), ("a100", 2.0), ("v100", 2.0), ("t4", 2.0),
                                                    ("rtx4090", 1.0), ("rtx3090", 1.0), ("l4", 1.0), ("a10", 1.0)])
def test_cudnn_grouped_kernels_in_float32_run_at_the_cuda_cores_float32_rate(card, fp32_over_half):
    """cuDNN's grouped kernels run on CUDA cores. Where those run half precision at twice FP32's
    rate or more (half2: Hopper 133.8 vs 66.9 TFLOP/s, A100 78 vs 19.5, V100 31.4 vs 15.7, T4
    twice, by their whitepapers) a float32 grouped convolution of the same MACs takes twice the
    half-precision one's compute time; on GA102 and AD10x (half at FP32's rate) the same time.
    Compute-bound here: 10^10 MACs on 1 byte."""
    spec = gpu(card)
    half = conv("conv_grouped", 10**10, (10**9, 9, 1, 64), dtype="float16")
    single = conv("conv_grouped", 10**10, (10**9, 9, 1, 64), dtype="float32")
    assert device_s([half], spec=spec) == pytest.approx(2 * 10**10 / (2 * spec.fp32_tflops * 1e12 * 0.25), rel=1e-9)
    assert device_s([single], spec=spec) == pytest.approx(fp32_over_half * device_s([half], spec=spec), rel=1e-9)


def test_cudnn_grouped_kernels_slow_down_with_few_channels():
    """At channels_half output channels a grouped kernel runs at half its rate: 64 channels with
    channels_half 64 take twice as long as with no channel term; 4096 channels nearly as long."""
    params = replace(BASE, grouped_channels_half=64.0)
    few = conv("conv_grouped", 10**10, (10**9, 9, 1, 64))
    many = conv("conv_grouped", 10**10, (10**9, 9, 1, 4096))
    plain = device_s([few])
    assert device_s([few], params) == pytest.approx(2 * plain, rel=1e-6)
    assert device_s([many], params) == pytest.approx(plain * (4096 + 64) / 4096, rel=1e-6)


def test_half_precision_nchw_convolutions_rewrite_their_layout():
    params = replace(BASE, layout_passes=2.0)
    moved = 10**9
    m, k, n = 128 * 132 * 50, 1000, 1024  # whole waves of 128 x 128 tiles
    compute = 2 * m * k * n / (989.4e12 * 0.4)  # a large fp16 convolution at conv_eff
    plain = device_s([conv("conv", m * k * n, (m, k, n), moved)], params)
    nchw = device_s([conv("conv_nchw", m * k * n, (m, k, n), moved)], params)
    assert plain == pytest.approx(compute, rel=1e-3)
    assert nchw - plain == pytest.approx(2.0 * moved / (BANDWIDTH * 0.5), rel=1e-6)


def test_backward_convolutions_run_at_their_own_efficiency():
    params = replace(BASE, conv_backward_eff=0.1)
    forward = device_s([conv("conv", 10**12, (10**6, 10**3, 10**3))], params)
    backward = device_s([conv("conv_backward", 10**12, (10**6, 10**3, 10**3))], params)
    assert backward / forward == pytest.approx(0.4 / 0.1, rel=1e-3)
    # 0: the forward's (fits made before the two were told apart)
    assert device_s([conv("conv_backward", 10**12, (10**6, 10**3, 10**3))]) == pytest.approx(forward, rel=1e-9)


def test_batch_norm_in_training_passes_over_its_tensors_again():
    moved = 10**9
    once = device_s([Op("add", "elementwise", 0, moved, (), "bfloat16", "add")])
    norm = device_s([Op("native_batch_norm", "elementwise", 0, moved, (), "bfloat16", "native_batch_norm")])
    back = device_s([Op("native_batch_norm_backward", "elementwise", 0, moved, (), "bfloat16", "native_batch_norm_backward")])
    assert once == pytest.approx(moved / (BANDWIDTH * 0.5), rel=1e-9)
    assert norm / once == pytest.approx(1.5) and back / once == pytest.approx(5 / 3)
    legit = device_s([Op("_native_batch_norm_legit", "elementwise", 0, moved, (), "bfloat16", "_native_batch_norm_legit")])
    assert legit / once == pytest.approx(1.5)  # the same kernel under the name torch.compile's decomposition gives it
    # cuDNN's (PyTorch's choice on a GPU in float32 and float16: what a GPU's trace records)
    cudnn = device_s([Op("cudnn_batch_norm", "elementwise", 0, moved, (), "float16", "cudnn_batch_norm")])
    cudnn_back = device_s([Op("cudnn_batch_norm_backward", "elementwise", 0, moved, (), "float16",
                              "cudnn_batch_norm_backward")])
    assert cudnn / once == pytest.approx(1.5) and cudnn_back / once == pytest.approx(5 / 3)
    assert TRAFFIC_PASSES["native_layer_norm_backward"] == pytest.approx(5 / 3)
    # the step's bytes stay the trace's (only the pricing knows the passes)
    assert op_table([Op("native_batch_norm", "elementwise", 0, moved, (), "bfloat16", "native_batch_norm")]).total_bytes == moved


def test_an_sm_bound_rate_makes_a_card_with_more_bandwidth_but_the_same_sms_little_faster():
    """The H200 has 1.43x the H100's bandwidth and the same 132 SMs at the same clock: with PyTorch's
    kernels bound at 8 bytes an SM a clock (132 x 1.98 GHz x 8 = 2.09 TB/s), both run them at that rate."""
    capped = replace(BASE, bandwidth_eff=0.85, sm_bytes_per_clock=8.0)
    sustained_100, sustained_200 = H100.at_sustained_rates(), H200.at_sustained_rates()
    assert memory_rate(sustained_100, capped) == pytest.approx(132 * 1.98e9 * 8)
    assert memory_rate(sustained_200, capped) == pytest.approx(132 * 1.98e9 * 8)
    free = replace(capped, sm_bytes_per_clock=0.0)
    assert memory_rate(sustained_200, free) / memory_rate(sustained_100, free) == pytest.approx(4300 / 3001, rel=1e-3)


def test_which_fit_prices_which_card(monkeypatch):
    from vitbench.timemodel import gpu_model

    data = dict(gpu_model.parameter_file())
    assert fit_source(gpu("h100")) == "datacenter" and fit_source(gpu("h200")) == "datacenter"
    assert fit_source(gpu("rtx4090")) == "ada" and fit_source(gpu("rtx3090")) == "ampere"
    # a data-centre generation with a fit of its own (NVIDIA's figures) uses it; without one, the Hopper fit
    for card in ("a100", "v100", "t4", "l4"):
        own = f"datacenter-{gpu(card).generation}"
        assert fit_source(gpu(card)) == (own if own in data["generations"] else "datacenter")
    assert "datacenter-ada" not in data["generations"] and fit_source(gpu("l4")) == "datacenter"


def test_bands_widen_for_a_card_not_measured_and_for_kernels_not_priced():
    from vitbench.timemodel.gpu_model import profile_for
    from vitbench.timemodel.prediction_rows import TRANSFER_WIDENING, UNPRICED_P90, error_band

    h100, l4 = profile_for(gpu("h100")), profile_for(gpu("l4"))
    measured = error_band(h100, "timm:vit_base_patch16_224", "infer")
    overall = h100.validation["datacenter"]["all"]
    assert measured["pred_error_p90"] >= overall["p90"] and "one of the fit's cards" in measured["pred_error_basis"]
    transferred = error_band(l4, "timm:vit_base_patch16_224", "infer")
    assert transferred["pred_error_p90"] == pytest.approx(round(measured["pred_error_p90"] * TRANSFER_WIDENING, 4))
    assert "not measured" in transferred["pred_error_basis"]
    warned = error_band(h100, "timm:vit_base_patch16_224", "infer", warned=True)
    assert warned["pred_error_p90"] == pytest.approx(max(measured["pred_error_p90"], UNPRICED_P90))
    assert warned["pred_error_median"] == measured["pred_error_median"]


def test_memory_kind_prices_unknown_operators():
    table = op_table([Op("some_new_op", "elementwise", 0, 100, (), "float16", "some_new_op")])
    assert list(table.kind) == [MEMORY]


def test_the_tiny_product_warning_starts_at_ten_million_macs():
    from vitbench.timemodel.prediction_rows import gpu_kernel_warnings

    def tiny(macs: int) -> Op:
        return Op("linear", "linear", macs, 2 * macs, (macs // 16, 4, 4), "float16", "gemm")

    big = Op("linear", "linear", 4096**3, 2 * 3 * 4096**2, (4096, 4096, 4096), "float16", "gemm")
    assert [w["code"] for w in gpu_kernel_warnings([tiny(10**7), big])] == ["gpu-unpriced-kernels"]
    assert gpu_kernel_warnings([tiny(10**7 - 16), big]) == []  # launch-bound, priced so


def test_a_trace_that_misses_more_than_one_percent_of_the_counted_macs_is_warned():
    from types import SimpleNamespace

    from vitbench.timemodel.prediction_rows import trace_warnings

    def codes(counted, traced, mode="infer"):
        return [w["code"] for w in trace_warnings({"macs": counted}, SimpleNamespace(macs=traced), mode)]

    assert codes(1000, 990) == [] and codes(1000, 1010) == []
    assert codes(1000, 989) == ["trace-misses-work"] and codes(1000, 1011) == ["trace-misses-work"]
    assert codes(1, 3) == ["trace-misses-work"]  # one MAC counted is a count
    assert codes(0, 3) == [] and codes(None, 3) == [] and codes(1000, 10, "train") == []


@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
def test_a_gpu_row_names_its_card_and_a_cpu_row_none():
    from _calibrations import synthetic

    import vitbench

    [cpu] = vitbench.predict("vit-ti/16", device="cpu", calibration=synthetic())  # no calibration of this machine
    [h100] = vitbench.predict("vit-ti/16", device="h100")
    assert "device_name" not in dict(cpu)
    assert h100["device_name"] == "H100 SXM"


def test_a_calibrated_cards_band_says_whether_its_configurations_were_held_out():
    from types import SimpleNamespace

    from vitbench.timemodel.prediction_rows import error_band

    def band(held_out):
        validation = {"calibration": {"n": 12, "median": 0.03, "p90": 0.08, "held_out": held_out}}
        return error_band(SimpleNamespace(calibrated_on="2026-11-28", validation=validation), "timm:resnet50", "infer")

    assert band(True) == {"pred_error_median": 0.03, "pred_error_p90": 0.08,
                          "pred_error_basis": "held-out configurations of this card's calibration (n=12)"}
    assert band(False)["pred_error_basis"] == ("the fit's residuals on this card's calibration (n=12); "
                                               "not an error on held-out models")


def test_casts_and_operators_that_launch_nothing_are_light_dispatches():
    ops = [Op("_to_copy", "elementwise", 0, 10**6, (), "bfloat16", "_to_copy"),
           Op("to", "elementwise", 0, 10**6, (), "bfloat16", "to"),
           Op("dropout", "elementwise", 0, 10**6, (), "float16", "dropout", aliases=True),
           Op("add", "elementwise", 0, 10**6, (), "float16", "add")]
    assert list(op_table(ops).light) == [1, 1, 1, 0]


def test_an_fp32_convolution_runs_on_tf32_tensor_cores_as_cudnn_allows_by_default():
    """PyTorch lets cuDNN use TF32 for convolutions unless told not to (allow_tf32 is True for
    cuDNN): an A100's fp32 convolution is priced at its 156 TF32 TFLOP/s, not its 19.5 FP32."""
    a100 = gpu("a100")
    params = replace(BASE, conv_eff=1.0)
    big = conv("conv", 10**12, (10**6, 10**3, 10**3), dtype="float32")
    assert device_s([big], params, a100) == pytest.approx(2 * 10**12 / 156e12, rel=0.01)
