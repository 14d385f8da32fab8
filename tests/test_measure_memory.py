"""Measured peak memory on the CPU (profiler memory events) and its breakdown by category.

Expected values come from the built model: parameter count x 4 bytes (fp32)."""

from __future__ import annotations

import pytest

from vitbench.analytic import params
from vitbench.measure.memory import CATEGORIES, peak_memory, summarize_timeline
from vitbench.models import build_model
from vitbench.presets import resolve
from vitbench.settings import RunSettings

SMALL_VIT = resolve("mnist-vit")  # the assignment's MNIST ViT: 28 px, 1 channel, 106 K params


def _module_params(spec) -> tuple[int, int]:
    module = build_model(spec)
    tensors = [p for p in module.parameters() if p.requires_grad]
    return sum(p.numel() for p in tensors), len(tensors)


@pytest.fixture(scope="module")
def adamw_train():
    return peak_memory(SMALL_VIT, RunSettings(device="cpu", mode="train", batch_size=8, threads=1))


def test_fp32_adamw_states_are_exactly_16_bytes_per_parameter(adamw_train):
    n, tensors = _module_params(SMALL_VIT)
    assert n == params(SMALL_VIT)
    r = adamw_train
    assert r["mem_params_bytes"] == 4 * n  # fp32 weights
    assert r["mem_grads_bytes"] == 4 * n  # one fp32 gradient per weight
    assert r["mem_optimizer_bytes"] == 8 * n  # exp_avg + exp_avg_sq
    assert r["mem_params_bytes"] + r["mem_grads_bytes"] + r["mem_optimizer_bytes"] == 4 * 4 * n
    assert r["mem_optimizer_steps_bytes"] == 4 * tensors  # AdamW's fp32 step counter per tensor


def test_peak_is_the_largest_instant_and_has_a_breakdown(adamw_train):
    r = adamw_train
    composition = r["peak_composition"]
    assert sum(composition.values()) == r["peak_memory_bytes"]
    assert set(composition) <= set(CATEGORIES)
    n, _ = _module_params(SMALL_VIT)
    # at the peak the weights and the optimizer state are resident, plus the saved activations
    assert composition["params"] == 4 * n and composition["optimizer"] == 8 * n
    assert r["mem_activations_bytes"] > 0
    assert r["peak_memory_bytes"] >= 12 * n + r["mem_activations_bytes"] // 2
    # the input batch: 8 x 1 x 28 x 28 fp32 images (+ int64 labels)
    assert r["mem_inputs_bytes"] >= 8 * 28 * 28 * 4
    assert r["memory_method"] == "profiler_memory_events"
    assert r["peak_reserved_bytes"] is None  # CUDA only


def test_sgd_momentum_keeps_one_buffer_per_parameter():
    n, _ = _module_params(SMALL_VIT)
    r = peak_memory(SMALL_VIT, RunSettings(device="cpu", mode="train", batch_size=4, optimizer="sgd-momentum", threads=1))
    assert r["mem_optimizer_bytes"] == 4 * n
    assert r["mem_optimizer_steps_bytes"] == 0
    assert r["mem_params_bytes"] + r["mem_grads_bytes"] + r["mem_optimizer_bytes"] == 12 * n


def test_plain_sgd_keeps_no_optimizer_state():
    n, _ = _module_params(SMALL_VIT)
    r = peak_memory(SMALL_VIT, RunSettings(device="cpu", mode="train", batch_size=4, optimizer="sgd", threads=1))
    assert r["mem_optimizer_bytes"] == 0
    assert r["mem_params_bytes"] + r["mem_grads_bytes"] == 8 * n


def test_inference_holds_no_gradients_or_optimizer_state():
    n, _ = _module_params(SMALL_VIT)
    r = peak_memory(SMALL_VIT, RunSettings(device="cpu", mode="infer", batch_size=8, threads=1))
    assert r["mem_params_bytes"] == 4 * n
    assert r["mem_grads_bytes"] == 0 and r["mem_optimizer_bytes"] == 0
    assert 4 * n < r["peak_memory_bytes"]


@pytest.mark.slow
def test_activations_grow_with_the_batch(adamw_train):
    bigger = peak_memory(SMALL_VIT, RunSettings(device="cpu", mode="train", batch_size=16, threads=1))
    ratio = bigger["mem_activations_bytes"] / adamw_train["mem_activations_bytes"]
    assert 1.7 < ratio < 2.3  # activations scale with the batch (twice the images)
    assert bigger["mem_params_bytes"] == adamw_train["mem_params_bytes"]


def test_summarize_timeline_by_hand():
    zero = dict.fromkeys(CATEGORIES, 0)
    states = [
        {**zero, "params": 100, "optimizer": 200},
        {**zero, "params": 100, "optimizer": 200, "activations": 500},
        {**zero, "params": 100, "optimizer": 200, "activations": 100, "grads": 100},
    ]
    out = summarize_timeline(states)
    assert out["peak_memory_bytes"] == 800
    assert out["mem_activations_bytes"] == 500 and out["mem_grads_bytes"] == 100
    assert out["peak_composition"] == {"params": 100, "optimizer": 200, "activations": 500}


def test_auto_batch_is_rejected_for_a_single_pass():
    from vitbench.errors import SpecError

    with pytest.raises(SpecError, match="batch_size"):
        peak_memory(SMALL_VIT, RunSettings(device="cpu", batch_size="auto"))


def test_cublas_workspace_formula_follows_pytorchs_defaults_and_the_environment():
    from vitbench.measure.budget import cuda_workspace_bytes

    # PyTorch's documented defaults: ":4096:8" from Hopper on, ":4096:2:16:8" before; 1 MiB cuBLASLt
    assert cuda_workspace_bytes("train", True, {}) == 2 * 4096 * 8 * 1024 + 1024 * 1024
    assert cuda_workspace_bytes("infer", False, {}) == (4096 * 2 + 16 * 8) * 1024 + 1024 * 1024
    assert cuda_workspace_bytes("infer", True, {"CUBLAS_WORKSPACE_CONFIG": ":16:8", "CUBLASLT_WORKSPACE_SIZE": "0"}) == 16 * 8 * 1024


def test_cpu_runs_have_no_device_overhead_and_no_workspace_column():
    from vitbench.measure.budget import device_overhead_bytes, prediction_columns
    from vitbench.measure.target import resolve_measured
    from vitbench.settings import RunSettings

    assert device_overhead_bytes("cpu", "train") == 0
    columns = prediction_columns(resolve_measured("vit-ti/16"), RunSettings(device="cpu", mode="train"), 4, "cpu")
    assert set(columns) == {"pred_peak_memory_bytes", "pred_activations_bytes"}
    # the memory model's own figures for the same step, not a CPU workspace on top
    from vitbench.analytic.memory import memory_estimate
    from vitbench.presets import resolve

    estimate = memory_estimate(resolve("vit-ti/16"), 4, "train", "fp32", "adamw")
    assert columns == {"pred_peak_memory_bytes": estimate.peak_bytes, "pred_activations_bytes": estimate.activations_bytes}


def test_the_predicted_activations_column_is_filled_beside_the_measured_one():
    """Issue: "predicted activations" was empty in every row of the report."""
    from vitbench.measure.budget import prediction_columns
    from vitbench.measure.target import resolve_measured
    from vitbench.settings import RunSettings

    columns = prediction_columns(resolve_measured("cifar-vit/4"), RunSettings(device="cpu", mode="infer"), 2, "cpu")
    assert 0 < columns["pred_activations_bytes"] < columns["pred_peak_memory_bytes"]
