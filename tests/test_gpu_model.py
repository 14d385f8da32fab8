"""The GPU cost model (vitbench/timemodel/gpu_model.py): each rule of its docstring, on
operators whose answer can be worked out by hand; tracing for CUDA without a GPU; the trace
cache; one trace priced for several devices; the deployed form; and the fit, which must
recover a model it did not see from data made with known parameters."""

from __future__ import annotations

import json
import math

import pytest

import vitbench
from vitbench.errors import SpecError
from vitbench.timemodel.gpu_model import (
    MEMORY,
    NONE,
    GenerationParams,
    GpuProfile,
    kernel_times,
    op_table,
    predict_gpu,
    predict_table,
    step_time,
)
from vitbench.timemodel.gpus import gpu
from vitbench.timemodel.ops import Op

PARAMS = GenerationParams(gemm_eff=0.5, conv_eff=0.4, attention_eff=0.3, k_half=0.0001, bandwidth_eff=0.5,
                          grouped_eff=0.25, l2_gain=1.0, launch_floor_s=2e-6, kernel_tail_s=0.0, host_infer_s=5e-6,
                          host_train_s=8e-6)
H100 = gpu("h100")


def profile(params: GenerationParams = PARAMS, spec=H100) -> GpuProfile:
    return GpuProfile(spec, params, spec.generation)


def gemm(m: int, k: int, n: int, dtype: str = "float16", moved: int | None = None) -> Op:
    size = 2 if dtype != "float32" else 4
    return Op("mm", "linear", m * k * n, size * (m * k + k * n + m * n) if moved is None else moved, (m, k, n), dtype, "gemm")


def test_a_large_gemm_runs_at_the_fitted_fraction_of_the_tensor_peak():
    m = k = n = 128 * 132  # exactly one wave of 128 x 128 tiles per SM... 132 x 132 tiles = 132 waves
    p = predict_gpu([gemm(m, k, n)], profile(), "infer")
    expected = 2 * m * k * n / (989.4e12 * 0.5)
    assert p.device_s == pytest.approx(expected, rel=1e-3)
    # fp32 runs on CUDA cores unless TF32 is asked for
    fp32 = predict_gpu([gemm(m, k, n, "float32")], profile(), "infer")
    tf32 = predict_gpu([gemm(m, k, n, "float32")], profile(), "infer", tf32=True)
    assert fp32.device_s == pytest.approx(2 * m * k * n / (67e12 * 0.5), rel=1e-3)
    assert tf32.device_s == pytest.approx(2 * m * k * n / (494.7e12 * 0.5), rel=1e-3)


def test_one_tile_too_many_costs_a_whole_wave():
    """132 SMs: 132 tiles of 128 x 128 fill one wave; 133 need two (half idle), unless 64 x 64
    tiles (at 0.8 of the rate) do better: 532 small tiles = 5 waves of 132, 0.806 full."""
    full = predict_gpu([gemm(128 * 132, 8192, 128, moved=1)], profile(), "infer").device_s
    over = predict_gpu([gemm(128 * 133, 8192, 128, moved=1)], profile(), "infer").device_s
    work = 133 / 132
    small_tiles = 133 * 4
    small = 0.8 * small_tiles / (math.ceil(small_tiles / 132) * 132)
    assert over / full == pytest.approx(work / small, rel=1e-3)
    assert over / full > 1.2


def test_memory_bound_operators_move_their_bytes_at_the_achieved_bandwidth_and_l2_helps():
    op = Op("add", "elementwise", 0, 10**9, (), "float16", "add")
    p = predict_gpu([op], profile(), "infer")
    assert p.device_s == pytest.approx(10**9 / (3.35e12 * 0.5), rel=1e-9)
    small = Op("add", "elementwise", 0, 40 * 2**20, (), "float16", "add")  # fits the 50 MB L2
    l2 = GenerationParams(**{**PARAMS.__dict__, "l2_gain": 4.0})
    assert predict_gpu([small], profile(l2), "infer").device_s == pytest.approx(
        predict_gpu([small], profile(), "infer").device_s / 4, rel=1e-9)
    # a gigabyte is 20 times the L2: only the L2's share of it is helped
    share = H100.l2_bytes / 10**9
    assert predict_gpu([op], profile(l2), "infer").device_s == pytest.approx(
        predict_gpu([op], profile(), "infer").device_s * (share / 4 + 1 - share), rel=1e-9)


def test_operators_that_launch_nothing_cost_nothing_on_the_device():
    dropout = Op("dropout", "elementwise", 0, 10**9, (), "float16", "dropout", aliases=True)
    table = op_table([dropout])
    assert table.kind[0] == NONE and table.launches[0] == 0
    raw, device = kernel_times(table, H100, PARAMS)
    assert raw[0] == 0 and device[0] == 0


def test_every_kernel_takes_at_least_the_launch_floor_and_the_host_bounds_small_steps():
    tiny = [Op("add", "elementwise", 0, 64, (), "float16", "add")] * 100
    p = predict_gpu(tiny, profile(), "infer")
    # the host dispatches 100 operators at 5 us; each 2 us kernel waits for its dispatch
    assert p.host_s == pytest.approx(100 * 5e-6)
    assert p.latency_s == pytest.approx(100 * 5e-6 + 2e-6)
    assert p.components_s["overhead"] == pytest.approx(p.latency_s - p.components_s["elementwise"])
    assert sum(p.components_s.values()) == pytest.approx(p.latency_s, rel=1e-12)


def test_every_launched_kernel_adds_its_tail():
    big = Op("add", "elementwise", 0, 10**9, (), "float16", "add")
    tailed = GenerationParams(**{**PARAMS.__dict__, "kernel_tail_s": 4e-6})
    assert predict_gpu([big], profile(tailed), "infer").device_s == pytest.approx(
        predict_gpu([big], profile(), "infer").device_s + 4e-6, rel=1e-12)
    assert predict_gpu([big.__class__(**{**big.__dict__, "aliases": True})], profile(tailed), "infer").device_s == 0


def test_the_step_is_the_pipeline_of_host_and_device():
    import numpy as np

    # d_i = max(d_{i-1}, h_i) + t_i, worked by hand
    device = np.array([1.0, 5.0, 1.0])
    host = np.array([2.0, 3.0, 10.0])
    d = 0.0
    for t, h in zip(device, host):
        d = max(d, h) + t
    assert step_time(device, host) == d == 11.0


def test_the_optimizer_runs_as_foreach_kernels():
    per_param = [Op("add_", "optimizer", 0, 4096, (), "float32", "add_")] * 100
    table = op_table(per_param)
    assert len(table.kind) == 1 and table.kind[0] == MEMORY
    assert table.launches[0] == math.ceil(100 / 48) and table.bytes[0] == 409600


def test_dropout_in_eval_costs_nothing(monkeypatch, tmp_path):
    """The same network with dropout layers and with none (nn.Identity dispatches nothing): the
    same predicted kernels; the dropouts cost only their host dispatch."""
    import torch

    monkeypatch.setenv("VITBENCH_TRACE_DIR", str(tmp_path / "traces"))

    def net(dropout: bool):
        layer = torch.nn.Dropout(0.5) if dropout else torch.nn.Identity()
        return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(256, 1024), layer, torch.nn.GELU(),
                                   torch.nn.Dropout(0.5) if dropout else torch.nn.Identity(), torch.nn.Linear(1024, 10))

    with_dropout, without = (vitbench.predict(net(flag), device="rtx4090", precision="fp16", batch_size=512,
                                              input_size=(1, 16, 16))[0] for flag in (True, False))
    assert with_dropout["status"] == without["status"] == "ok"
    assert with_dropout["pred_ops"] == without["pred_ops"] + 2
    assert with_dropout["pred_device_s"] == pytest.approx(without["pred_device_s"], rel=1e-12)
    assert with_dropout["pred_elementwise_s"] == pytest.approx(without["pred_elementwise_s"], rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["timm:mvitv2_small", "timm:samvit_large_patch16"])
def test_models_that_failed_under_cpu_autocast_fp16_trace_for_the_gpu(name, monkeypatch, tmp_path):
    """Traced under CUDA's autocast policy (fake CUDA tensors), as timm ran them: CPU autocast
    left one bmm operand in fp32 ("expected scalar type Half but found Float")."""
    monkeypatch.setenv("VITBENCH_TRACE_DIR", str(tmp_path / "traces"))
    [row] = vitbench.predict(name, device="rtx4090", precision="fp16", batch_size=2)
    assert row["status"] == "ok", row["error"]
    assert row["pred_macs"] > 0 and row["pred_latency_s"] > 0


@pytest.mark.slow  # about 1-3 s: the default suite stays under 2 minutes
def test_one_trace_is_priced_for_several_devices_and_cached_on_disk(monkeypatch, tmp_path):
    from vitbench.timemodel import ops as ops_module
    from vitbench.timemodel import run

    monkeypatch.setenv("VITBENCH_TRACE_DIR", str(tmp_path / "traces"))
    calls = []
    real = ops_module.trace_target_batches
    monkeypatch.setattr(ops_module, "trace_target_batches", lambda *a, **k: calls.append(a[1:3]) or real(*a, **k))
    run._OPS_CACHE.clear()
    rows = vitbench.predict("vit-ti/16", device="a100,H100,l4,a100", precision="bf16", batch_size=256)
    assert [r["device"] for r in rows] == ["a100", "h100", "l4"]
    assert len(calls) == 1
    assert len(set(r["pred_macs"] for r in rows)) == 1
    assert rows[1]["pred_latency_s"] < rows[0]["pred_latency_s"] < rows[2]["pred_latency_s"] * 1.01
    run._OPS_CACHE.clear()
    again = vitbench.predict("vit-ti/16", device="a100", precision="bf16", batch_size=256)
    assert len(calls) == 1, "a repeated configuration is read from the trace cache"
    assert again[0]["pred_latency_s"] == rows[0]["pred_latency_s"]
    entries = list((tmp_path / "traces").iterdir())
    assert len(entries) == 1
    entries[0].write_bytes(b"\x1f\x8b damaged")
    run._OPS_CACHE.clear()
    assert vitbench.predict("vit-ti/16", device="a100", precision="bf16", batch_size=256)[0]["pred_latency_s"] == \
        rows[0]["pred_latency_s"]
    assert len(calls) == 2, "a damaged entry is traced again"


@pytest.mark.slow
def test_the_deployed_form_is_what_reparam_prices(monkeypatch, tmp_path):
    monkeypatch.setenv("VITBENCH_TRACE_DIR", str(tmp_path / "traces"))
    trained, deployed = (vitbench.predict("timm:mobileone_s0", device="rtx4090", precision="fp16", batch_size=64,
                                          reparam=flag)[0] for flag in (False, True))
    assert deployed["reparam"] is True and "reparam" not in trained
    assert deployed["pred_ops"] < trained["pred_ops"] / 1.5  # branches and batch norms fused away
    assert deployed["pred_latency_s"] < trained["pred_latency_s"]


@pytest.mark.parametrize("kwargs, field, match", [
    (dict(device="t4", precision="bf16"), "precision", "no bf16"),
    (dict(device="cpu", precision="tf32"), "precision", "needs a GPU"),
    (dict(device="a100,tpu"), "device", "unknown device"),
    (dict(device="a100", reparam="yes"), "reparam", "true or false"),
])
def test_gpu_settings_are_checked(kwargs, field, match):
    with pytest.raises(SpecError, match=match) as caught:
        vitbench.predict("vit-ti/16", **kwargs)
    assert caught.value.field == field


def test_rows_carry_the_validations_error_band():
    [row] = vitbench.predict("timm:resnet18", device="rtx4090", precision="fp16", batch_size=64)
    assert row["pred_error_basis"]
    if row["pred_error_p90"] is not None:
        assert 0 < row["pred_error_median"] <= row["pred_error_p90"] < 2


def test_the_fit_recovers_predictions_from_data_made_with_known_parameters():
    """Step times generated by known parameters, over varied synthetic steps; the fit starts
    elsewhere and must reproduce held-out steps' times within 2%."""
    import random

    from vitbench.timemodel.gpu_fit import Observation, fit

    truth = GenerationParams(gemm_eff=0.62, conv_eff=0.45, attention_eff=0.35, k_half=48.0, bandwidth_eff=0.7,
                             grouped_eff=0.2, l2_gain=2.5, launch_floor_s=3e-6, kernel_tail_s=2e-6, host_infer_s=12e-6,
                             host_train_s=20e-6)
    spec = gpu("rtx4090")
    rng = random.Random(0)

    def step() -> list[Op]:
        batch = rng.choice([1, 4, 32, 256, 1024])
        ops = []
        for _ in range(rng.randint(5, 60)):
            width = rng.choice([64, 256, 768, 2048])
            kind = rng.random()
            if kind < 0.3:
                ops.append(gemm(batch * 197, width, width))
            elif kind < 0.45:
                m, k, n = batch * 56 * 56, width * 9, width
                ops.append(Op("convolution", "conv", m * k * n, 2 * (m * k // 9 + k * n + m * n), (m, k, n), "float16", "conv"))
            elif kind < 0.55:
                m, k, n = batch * 12 * 197, 64, 197
                ops.append(Op("_flash_attention_forward", "attention", 2 * m * k * n, 8 * m * k, (m, k, n), "float16", "attention"))
            elif kind < 0.65:
                m = batch * 28 * 28 * width
                ops.append(Op("convolution", "conv", m * 9, 4 * m, (m, 9, 1), "float16", "conv_grouped"))
            else:
                ops.append(Op("add", "elementwise", 0, batch * 197 * width * 6, (), "float16", "add"))
        return ops

    def observations(count: int) -> list[Observation]:
        out = []
        for _ in range(count):
            table = op_table(step())
            mode = rng.choice(["infer", "train"])
            latency = predict_table(table, profile(truth, spec), mode).latency_s
            out.append(Observation(table, spec, mode, latency))
        return out

    train, test = observations(120), observations(40)
    fitted = fit(train, max_evaluations=200)
    from vitbench.timemodel.gpu_fit import log_errors

    errors = [abs(e) for e in log_errors(test, fitted)]
    assert max(errors) < 0.02, (fitted, max(errors))
    assert max(abs(e) for e in log_errors(test, GenerationParams())) > 0.1  # the starting point was far off


def test_the_fits_stacked_evaluation_equals_pricing_each_step():
    import random

    from vitbench.timemodel.gpu_fit import Observation, Stacked, predicted

    rng = random.Random(1)
    observations = []
    for index in range(12):
        ops = [gemm(rng.choice([64, 4096]), rng.choice([32, 768]), rng.choice([64, 3072])) if rng.random() < 0.5 else
               Op("add", "elementwise", 0, rng.choice([64, 10**7]), (), "float16", "add", aliases=rng.random() < 0.2)
               for _ in range(rng.randint(1, 30))]
        spec = gpu(rng.choice(["rtx4090", "a100"]))
        observations.append(Observation(op_table(ops), spec, rng.choice(["infer", "train"]), 1.0, tf32=index % 3 == 0))
    stacked = Stacked(observations).latencies(PARAMS)
    assert list(stacked) == pytest.approx(predicted(observations, PARAMS), rel=1e-12)


def test_native_fast_paths_are_priced_by_their_work():
    """A user's nn.TransformerEncoder in inference runs PyTorch's fused fast path
    (_transformer_encoder_layer_fwd), which no FLOP formula sees: it was priced at 0.14x its
    measured time with 89.7 M of 358 M MACs. The trace now has all of them: FlopCounterMode on
    the same module with the fast path not taken (training mode, real tensors) is the reference."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, dropout=0.0)
    encoder = torch.nn.Sequential(torch.nn.Flatten(2), torch.nn.Linear(16, 64))

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = encoder
            self.blocks = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

        def forward(self, x):
            return self.blocks(self.embed(x)).mean(1)

    net = Net()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    # the math kernel: FlopCounterMode counts the CPU flash kernel as 0 before torch 2.15
    with FlopCounterMode(display=False) as counter, sdpa_kernel(SDPBackend.MATH):
        net.train()(torch.randn(2, 3, 4, 4))
    expected = counter.get_total_flops() // 2
    from test_predict import synthetic

    for device in ("cpu", "rtx4090"):
        kwargs = {"calibration": synthetic()} if device == "cpu" else {}
        [row] = vitbench.predict(net.eval(), device=device, batch_size=2, input_size=(3, 4, 4), **kwargs)
        assert row["status"] == "ok"
        assert row["pred_macs"] == expected, device


# --- issue 43: the model's own promises, the host apart from the device, data-centre cards --------

def _row(model: str, device: str, batch: int, mode: str = "infer", **kwargs) -> dict:
    [row] = vitbench.predict(model, device=device, batch_size=batch, mode=mode, precision="bf16", **kwargs)
    assert row["status"] == "ok", row["error"]
    return row


@pytest.mark.parametrize("model, priced", [
    ("vit-ti/16", ("attention", "linear", "elementwise", "optimizer", "overhead")),
    ("resnet18", ("conv", "linear", "elementwise", "optimizer", "overhead")),
])
@pytest.mark.slow
def test_every_component_is_priced_and_they_sum_to_the_step(model, priced):
    """Each kind of work a training step holds gets a positive time, and the components add up
    to the latency exactly (a model that priced a component at zero, or lost one, fails here)."""
    for device in ("h100", "rtx4090"):
        row = _row(model, device, 32, "train")
        parts = {c: row[f"pred_{c}_s"] for c in ("attention", "linear", "conv", "elementwise", "optimizer", "overhead")}
        assert all(parts[c] > 0 for c in priced), parts
        assert sum(parts.values()) == pytest.approx(row["pred_latency_s"], rel=1e-9)
        # the kernels alone and the host alone each bound the step from below
        assert row["pred_latency_s"] >= max(row["pred_host_s"], row["pred_device_s"]) * (1 - 1e-9)


@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
def test_the_bound_says_whether_a_faster_gpu_would_help():
    small, large = _row("resnet18", "h100", 1), _row("resnet18", "h100", 256)
    assert small["pred_bound"] == "host" and small["pred_host_s"] > small["pred_device_s"]
    assert large["pred_bound"] == "device" and large["pred_device_s"] > large["pred_host_s"]


def test_the_host_is_the_hosts_not_the_gpus():
    """One host dispatches for whatever card it drives: the same host time on an L4 and an A100
    (the old per-generation fit put 69 us an operator on Ampere's host and 0.5 us on Ada's), and
    a stated dispatch time scales it."""
    l4, a100 = _row("resnet18", "l4", 1), _row("resnet18", "a100", 1)
    assert l4["pred_host_s"] == a100["pred_host_s"] > 0
    fast = _row("resnet18", "a100", 1, host_dispatch="5us")
    slow = _row("resnet18", "a100", 1, host_dispatch="10us")
    assert slow["pred_host_s"] == pytest.approx(2 * fast["pred_host_s"], rel=1e-9)
    assert fast["pred_host_s"] < a100["pred_host_s"]


@pytest.mark.slow
def test_l4_and_a100_come_in_a_plausible_order():
    """At batch 1 the step is the host's (the same machine drives either card): a tie within a few
    percent, never the L4 4x faster as the per-generation host fit said. At batch 64 the kernels
    set it, and the A100 sustains 3.8x the L4's tensor rate and 7x its memory bandwidth: it must be
    at least twice as fast."""
    l4, a100 = _row("timm:convnext_tiny", "l4", 1), _row("timm:convnext_tiny", "a100", 1)
    assert a100["pred_latency_s"] <= l4["pred_latency_s"] <= 1.05 * a100["pred_latency_s"]
    l4, a100 = _row("timm:convnext_tiny", "l4", 64), _row("timm:convnext_tiny", "a100", 64)
    assert l4["pred_latency_s"] > 2 * a100["pred_latency_s"]
    assert a100["pred_bound"] == l4["pred_bound"] == "device"


def test_a_data_centre_card_is_priced_at_its_sustained_rate():
    """A large bf16 GEMM on an H200 runs at its measured 790 TFLOP/s x the fit's efficiency (not the
    datasheet's 989); a consumer card keeps its datasheet."""
    from vitbench.timemodel.gpu_model import profile_for

    m = k = n = 128 * 132
    op = gemm(m, k, n, "bfloat16", moved=1)
    h200 = profile_for(gpu("h200"))
    params = h200.params
    expected = 2 * m * k * n / (790.29e12 * params.gemm_eff * k / (k + params.k_half))
    assert predict_gpu([op], h200, "infer").device_s == pytest.approx(expected + params.kernel_tail_s, rel=1e-6)
    rtx = profile_for(gpu("rtx4090"))
    assert rtx.priced_spec is rtx.spec and h200.priced_spec.fp16_tflops == pytest.approx(790.29)


def test_host_dispatch_is_checked_and_measured():
    from vitbench.timemodel.host import parse_host_dispatch, resolve_host

    assert parse_host_dispatch("12us") == pytest.approx(12e-6) and parse_host_dispatch(3e-5) == 3e-5
    assert parse_host_dispatch("default") is None and parse_host_dispatch("measured") == "measured"
    for bad in ("fast", "-3us", "0", "5 parsecs", True, float("nan"), "1e9"):
        with pytest.raises(SpecError) as caught:
            parse_host_dispatch(bad)
        assert caught.value.field == "host_dispatch"
    host = resolve_host("measured")
    # a CPU dispatches an eager operator in microseconds, never in a nanosecond or a millisecond
    assert 1e-6 < host.infer_s < 1e-3 and host.train_s > host.infer_s and "measured" in host.source
    from vitbench.timemodel.host import CUDA_LAUNCH_S, measure_cpu_dispatch_s

    cpu = measure_cpu_dispatch_s(repeats=2, min_time_s=0.01)  # the CPU's part alone: PyTorch's dispatcher, per operator
    assert 1e-7 < cpu < 1e-3 and host.infer_s > CUDA_LAUNCH_S
    with pytest.raises(SpecError, match="GPU devices"):
        vitbench.predict("vit-ti/16", device="cpu", host_dispatch="5us")


def test_kernels_the_model_cannot_price_are_warned_in_the_row():
    """Talking-heads attention mixes over 4 heads: matrix products with k = n = 4 that cuBLAS runs
    far below its rate; the row says so instead of a silent 10x."""
    from vitbench.timemodel.prediction_rows import gpu_kernel_warnings

    tiny = Op("linear", "linear", 9_834_496 * 16, 2 * 9_834_496 * 8, (9_834_496, 4, 4), "float16", "gemm")
    big = gemm(4096, 4096, 4096, "float16")
    assert [w["code"] for w in gpu_kernel_warnings([tiny, big])] == ["gpu-unpriced-kernels"]
    assert gpu_kernel_warnings([big]) == []
    depthwise = Op("conv2d", "conv", 10**8, 10**9, (10**7, 9, 1), "float16", "conv_grouped")
    assert "depthwise" in gpu_kernel_warnings([depthwise, big])[0]["message"]
    row = _row("vit-ti/16", "h100", 8)
    assert row["pred_warning"] is None and not [w for w in row["warnings"] if w["code"] == "gpu-unpriced-kernels"]


def test_attention_on_five_dimensional_tensors_is_priced_as_the_math_path():
    """NesT calls scaled_dot_product_attention on (B, heads, blocks, N, C) tensors: no fused kernel
    takes 5-D inputs, so PyTorch materialises the N x N maps (two batched products, a softmax).
    The operator is priced as a batched product whose bytes include 4 passes over the maps; on
    4-D inputs it stays the fused kernel, its inputs and output alone."""
    import torch

    from vitbench.timemodel.ops import describe

    sdpa = torch.ops.aten.scaled_dot_product_attention.default
    five = torch.empty(2, 3, 4, 16, 8, dtype=torch.float16, device="meta")  # 2 x 3 heads x 4 blocks, N 16
    four = torch.empty(2, 3, 64, 8, dtype=torch.float16, device="meta")
    math_op = describe(sdpa, (five, five, five), {}, torch.empty_like(five))
    fused_op = describe(sdpa, (four, four, four), {}, torch.empty_like(four))
    assert math_op.kernel == "bmm" and fused_op.kernel == "attention"
    tensors = 4 * 2 * 3 * 64 * 8 * 2            # q, k, v and the output, fp16: the same in both
    maps = 2 * 3 * 4 * 16 * 16 * 2              # the 16 x 16 maps of every block and head, fp16
    assert fused_op.bytes == tensors and math_op.bytes == tensors + 4 * maps


def test_the_math_paths_maps_are_queries_by_keys_and_only_sdpa_forward_takes_it():
    """Cross-attention on 5-D tensors (5 queries, 7 keys a block): the maps are 5 x 7, counted from
    the queries' rows and the keys' rows, not from one of them squared. Only the forward SDPA
    operators on other than 4-D tensors take the math path; the answer is a bool."""
    import torch

    from vitbench.timemodel.attention_paths import math_attention, math_attention_bytes

    q = torch.empty(2, 3, 4, 5, 8, dtype=torch.float16, device="meta")
    k = torch.empty(2, 3, 4, 7, 8, dtype=torch.float16, device="meta")
    assert math_attention_bytes((q, k, k)) == 4 * (2 * 3 * 4 * 5) * 7 * 2  # 4 passes, 120 x 7 maps, 2 bytes
    four = torch.empty(2, 3, 5, 8, dtype=torch.float16, device="meta")
    assert math_attention("scaled_dot_product_attention", (q, k, k)) is True
    assert math_attention("_scaled_dot_product_efficient_attention", (q, k, k)) is True
    assert math_attention("scaled_dot_product_attention", (q, k, four)) is True  # the queries decide
    # the aten operators' traced arguments end in flags and scales, not tensors
    assert math_attention("_scaled_dot_product_efficient_attention", (q, k, k, None, False, 0.0, False)) is True
    for name, args in [("scaled_dot_product_attention", (four, four, four)), ("bmm", (q, k)), ("mm", (q, k)),
                       ("scaled_dot_product_attention", (four, four, q)),
                       ("_scaled_dot_product_efficient_attention_backward", (q, k, k)),
                       ("scaled_dot_product_attention", ())]:
        assert math_attention(name, args) is False, name


def test_channels_last_is_asked_for_and_prices_convolutions_without_cudnns_relayout(tmp_path):
    """``channels_last=True`` (``predict --channels-last``, as ``profile --channels-last`` and
    NVIDIA's AMP CNN benchmarks run) traces the model in NHWC: the same MACs, and a half-precision
    convolution on a GPU pays none of cuDNN's NCHW relayout passes, so the convolutions cost less."""
    from vitbench.cli import main

    asked = dict(device="a100", batch_size=2, precision="bf16")
    nchw = vitbench.predict("slides-cnn", **asked)[0]
    nhwc = vitbench.predict("slides-cnn", channels_last=True, **asked)[0]
    assert nhwc["channels_last"] is True and "channels_last" not in nchw
    assert nhwc["macs"] == nchw["macs"] and nhwc["params"] == nchw["params"]
    assert 0 < nhwc["pred_conv_s"] < nchw["pred_conv_s"]
    with pytest.raises(SpecError) as caught:
        vitbench.PredictSettings(channels_last="yes")
    assert caught.value.field == "channels_last"
    out = tmp_path / "rows.json"
    assert main(["predict", "slides-cnn", "--device", "a100", "--precision", "bf16", "--channels-last", "-q",
                 "--format", "json", "-o", str(out)]) == 0
    assert [row["channels_last"] for row in json.loads(out.read_text())["records"]] == [True]


def test_the_step_is_the_latest_a_kernel_queue_drains():
    """d_N = max over i of (h_i + the kernels from i on): kernels of 1, 2, 3 s dispatched at
    0, 5, 6 s end at max(0 + 6, 5 + 5, 6 + 3) = 10 s; no kernels, no time."""
    import numpy as np

    from vitbench.timemodel.gpu_model import step_time

    assert step_time(np.array([1.0, 2.0, 3.0]), np.array([0.0, 5.0, 6.0])) == 10.0
    assert step_time(np.array([1.0, 2.0, 3.0]), np.array([0.0, 0.0, 0.0])) == 6.0  # the device's own sum
    assert step_time(np.array([]), np.array([])) == 0.0


def test_a_card_profile_names_its_card():
    from vitbench.timemodel.gpu_model import profile_for

    profile = profile_for(gpu("h100"))
    assert profile.device == "h100" and profile.device_name == "H100 SXM"  # NVIDIA's product name


def test_the_local_gpu_is_priced_by_its_name_and_refused_without_one(monkeypatch):
    """``--device cuda``: this machine's card, looked up by the name CUDA reports; without a CUDA
    device, or with a card the catalogue lacks, one line naming the field (no guess)."""
    import torch

    from vitbench.timemodel.gpu_pricing import gpu_profile

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SpecError, match="no CUDA device here; name a GPU instead: .*h100"):
        gpu_profile("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *args: "NVIDIA H100 80GB HBM3")  # as an H100 SXM reports it
    assert gpu_profile("cuda").device == "h100"
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *args: "Tesla K80")
    with pytest.raises(SpecError, match="Tesla K80 is not in the GPU catalogue"):
        gpu_profile("cuda")
    assert gpu_profile("l4").device == "l4"


@pytest.mark.parametrize("text, seconds", [
    ("0.00002s", 2e-5), ("0.00002", 2e-5), ("12us", 12e-6), ("12µs", 12e-6), ("12 US", 12e-6), ("0.5ms", 5e-4),
    ("800ns", 8e-7), (3e-5, 3e-5), ("default", None), ("measured", "measured")])
def test_a_stated_host_dispatch_is_read_in_any_unit(text, seconds):
    """A bare number is seconds; s, ms, us (or µs) and ns in any case."""
    from vitbench.timemodel.host import parse_host_dispatch

    got = parse_host_dispatch(text)
    assert got == (pytest.approx(seconds, rel=1e-12) if isinstance(seconds, float) else seconds)


def test_views_are_not_operators_and_a_kernel_is_named_for_the_gpu_only_when_asked():
    """A view (view, transpose, ...) moves no data: no Op. A half-precision NCHW convolution is
    cuDNN's NCHW kernel only when traced for a GPU; described for the CPU (the default) it is a
    plain convolution."""
    import torch

    from vitbench.timemodel.ops import describe

    x = torch.empty(2, 8, dtype=torch.float16, device="meta")
    assert describe(torch.ops.aten.view.default, (x, [4, 4]), {}, x.view(4, 4)) is None
    assert describe(torch.ops.aten.transpose.int, (x, 0, 1), {}, x.transpose(0, 1)) is None
    conv = torch.ops.aten.convolution.default
    image = torch.empty(8, 64, 56, 56, dtype=torch.float16, device="meta")
    weight = torch.empty(64, 64, 3, 3, dtype=torch.float16, device="meta")
    args = (image, weight, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    out = torch.empty(8, 64, 56, 56, dtype=torch.float16, device="meta")
    assert describe(conv, args, {}, out).kernel == "conv"
    assert describe(conv, args, {}, out, for_gpu=True).kernel == "conv_nchw"



def test_a_training_trace_with_no_class_count_takes_the_classes_from_the_scores():
    """A module whose class count vitbench does not know: scores (batch, classes) are trained with
    cross-entropy against labels drawn from their width; any other output with the mean square."""
    import torch

    from vitbench.timemodel.ops import trace_ops

    scores = trace_ops(lambda: torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(192, 10)), (3, 8, 8), None, 2, "train")
    names = [op.name for op in scores]
    assert names[:3] == ["addmm", "_log_softmax", "nll_loss_forward"] and "pow" not in names
    features = trace_ops(lambda: torch.nn.Conv2d(3, 4, 3), (3, 8, 8), None, 2, "train")
    assert [op.name for op in features][:3] == ["convolution", "pow", "mean"]
