"""CUDA paths: CUDA-event timing, allocator peak memory, an OOM induced with
``torch.cuda.set_per_process_memory_fraction``, the attention kernel SDPA picked. Skipped
without a CUDA device (see tests/conftest.py and the skipif below)."""

from __future__ import annotations

import pytest
import torch

from vitbench.analytic import params
from vitbench.measure.profile import RunSettings, measure
from vitbench.specs import ViTSpec

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

TINY = ViTSpec(name="tiny-vit", img_size=32, patch_size=8, embed_dim=64, depth=2, num_heads=2, num_classes=10)
FAST = dict(device="cuda", batch_size=8, min_run_time_s=0.1, warmup=2, runs=1)


def test_cuda_timing_memory_and_environment():
    r = measure(TINY, RunSettings(**FAST, mode="train"))
    assert r["status"] == "ok", r["error"]
    assert r["device"] == "cuda"
    assert r["env_device_name"] == torch.cuda.get_device_name()
    assert r["env_cuda"] == torch.version.cuda
    assert r["memory_method"] == "cuda_allocator"
    n = params(TINY)
    # the allocator's peak holds at least fp32 weights, gradients and AdamW's two moments
    assert r["peak_memory_bytes"] >= 16 * n
    assert r["peak_reserved_bytes"] >= r["peak_memory_bytes"]
    if r.get("mem_params_bytes") is not None:  # the profiler's breakdown, when available
        assert r["mem_params_bytes"] == 4 * n and r["mem_optimizer_bytes"] == 8 * n
        # gradients are made during the step: the profiler sees CUDA's allocator blocks, each
        # tensor rounded up to a multiple of 512 B
        assert r["mem_grads_bytes"] == sum(-(-4 * p.numel() // 512) * 512 for p in _tiny_parameters())
    # the allocator's peak: the tensors and cuBLAS's workspaces (two handles in training)
    assert r["pred_peak_memory_bytes"] == pytest.approx(r["peak_memory_bytes"], rel=0.1)
    assert r["throughput_img_s"] == pytest.approx(8 / r["latency_p50_s"])


def test_cuda_oom_is_a_row_and_memory_is_released():
    before = torch.cuda.memory_allocated()
    rows = [
        measure(TINY, RunSettings(**{**FAST, "batch_size": 1 << 16, "mode": "train", "memory_limit_bytes": 64 * 2**20, "memory_check": False})),
        measure(TINY, RunSettings(**FAST)),
    ]
    assert [r["status"] for r in rows] == ["oom", "ok"]
    assert "OutOfMemoryError" in rows[0]["error"]
    assert torch.cuda.memory_allocated() <= before + 2**20  # nothing of the failed run is pinned


def _tiny_parameters():
    from vitbench.models import build_model

    return list(build_model(TINY).parameters())


def test_cuda_auto_batch_under_a_cap():
    from vitbench.measure.oom import cpu_headroom

    cap = 256 * 2**20
    torch.cuda.empty_cache()
    held = torch.cuda.memory_reserved()
    r = measure(TINY, RunSettings(**{**FAST, "batch_size": "auto", "memory_limit_bytes": cap, "max_batch_size": 1 << 14}))
    assert r["status"] == "ok", r["error"]
    # starts from the memory model (validated on the CPU: on CUDA it may step down), measures,
    # and the allocator's peak stays within the cap
    assert r["auto_method"] == "plan" and r["batch_size_plan"] >= r["batch_size"] >= 1
    assert r["auto_attempts"][-1] == [r["batch_size"], True]
    # the tensors' peak within the cap; what the allocator reserves within it plus the headroom
    # (oom.MemoryCap) beyond what the process held before
    assert r["peak_memory_bytes"] <= cap
    assert r["peak_reserved_bytes"] <= held + cap + cpu_headroom(cap)


def test_cuda_auto_batch_search_pins_the_edge():
    from torch import nn

    module = nn.Sequential(nn.Conv2d(3, 32, 4, stride=4), nn.GELU(), nn.Flatten(), nn.Linear(32 * 8 * 8, 10))
    module.image_size = 32
    r = measure(module, RunSettings(**{**FAST, "batch_size": "auto", "memory_limit_bytes": 256 * 2**20, "max_batch_size": 1 << 14}))
    assert r["status"] == "ok", r["error"]
    assert r["peak_memory_bytes"] <= 256 * 2**20
    if r["auto_method"] == "search":  # the memory model could not plan it: the search's probes
        probes = dict((b, ok) for b, ok in r["auto_probes"])
        found = max(b for b, ok in probes.items() if ok)
        assert probes.get(found + 1) is False or found == 1 << 14
    else:  # planned from the step traced on fake tensors (so on an H100), then stepped down while
        # the measured peak exceeds the cap: cuDNN's convolution workspaces are not in the plan
        # (on an H100: plan 8152, measured at 6495)
        assert r["auto_method"] == "plan" and r["auto_probes"] == []
        assert 1 <= r["batch_size"] <= min(r["batch_size_plan"], 1 << 14)
        assert r["auto_attempts"][-1] == [r["batch_size"], True]
        assert all(not ok for _, ok in r["auto_attempts"][:-1])


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_cuda_half_precision_attention_kernel(precision):
    if precision == "bf16" and not torch.cuda.is_bf16_supported():
        pytest.skip("no bf16 on this GPU")
    r = measure(TINY, RunSettings(**FAST, precision=precision, mode="train"))
    assert r["status"] == "ok", r["error"]
    assert r["attention_kernel"] in ("flash", "mem_efficient", "cudnn", "math")
    assert r["peak_precision"] == precision


def test_cuda_clock_times_gpu_work():
    from vitbench.measure.timer import time_steps

    a = torch.randn(2048, 2048, device="cuda")

    def run(n):
        for _ in range(n):
            a @ a

    timing = time_steps(run, "cuda", min_run_time_s=0.1, warmup=2)
    # 2 x 2048^3 FLOPs per matmul: faster than 1 PFLOP/s would be implausible
    assert min(timing.samples_s) > 2 * 2048**3 / 1e15

