"""``vitbench selftest``: exercise every measurement path on a tiny model, so that a user can
confirm the tool works on a machine before trusting a sweep. Each check returns pass/fail with
a one-line detail; nothing here prints."""

from __future__ import annotations

import json
import math
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from vitbench.analytic import params
from vitbench.analytic.memory import plan
from vitbench.errors import ModelError, model_code
from vitbench.measure.budget import device_overhead_bytes
from vitbench.measure.env import environment, resolve_device
from vitbench.measure.machine import machine_state
from vitbench.measure.memory import peak_memory
from vitbench.measure.profile import measure
from vitbench.measure.single import step_down
from vitbench.models import build_model
from vitbench.row_status import RowStatus
from vitbench.settings import SELFTEST_CHECKS, RunSettings
from vitbench.specs import ViTSpec

#: a ViT small enough that every check takes about a second on a laptop CPU
TINY_VIT = ViTSpec(name="selftest-vit", img_size=32, patch_size=8, embed_dim=64, depth=2, num_heads=2, num_classes=10)
CHECKS = SELFTEST_CHECKS


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    detail: str
    seconds: float


class CheckFailed(Exception):
    pass


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def _base(device: str, **changes) -> RunSettings:
    fields = dict(device=device, batch_size=8, min_run_time_s=0.2, warmup=1, memory=False, threads=None, runs=1)
    fields.update(changes)
    return RunSettings(**fields)


def _ok(record: dict) -> None:
    _require(record["status"] == RowStatus.OK, f"status={record['status']}: {record.get('error')}")


def check_environment(device: str) -> str:
    env = environment(device)
    missing = [k for k in ("env_device_name", "env_torch", "env_threads", "vitbench_version") if not env.get(k)]
    _require(not missing, f"missing {', '.join(missing)}")
    if device.startswith("cuda"):
        _require(bool(env.get("env_cuda")), "no CUDA version recorded")

    state = machine_state(device)
    _require(state["machine_cpus"] >= 1, "no CPU count")
    busy = state["machine_busy_cores"]
    load = "" if busy is None else f"; other processes busy on {busy:.1f} of {state['machine_cpus']} cores"
    return f"{env['env_device_name']}, torch {env['env_torch']}, {env['env_threads']} threads{load}"


def check_timing(device: str) -> str:
    r = measure(TINY_VIT, _base(device))
    _ok(r)
    _require(r["n_samples"] >= 5 and len(r["samples_s"]) == r["n_samples"], "too few samples")
    _require(all(s > 0 and math.isfinite(s) for s in r["samples_s"]), "non-positive sample")
    _require(math.isclose(r["throughput_img_s"], 8 / r["latency_p50_s"]), "throughput != batch / median")
    _require(r["latency_p90_s"] >= r["latency_p50_s"], "p90 below median")
    return f"{r['throughput_img_s']:.0f} img/s, median {r['latency_p50_s'] * 1e3:.2f} ms over {r['n_samples']} samples"


def check_attention_kernel(device: str) -> str:
    sdpa = measure(TINY_VIT, _base(device, min_run_time_s=0.05))
    _ok(sdpa)
    _require(sdpa["attention_kernel"] not in (None, "unknown", "explicit"), f"SDPA kernel not seen ({sdpa['attention_kernel']})")
    math_ = measure(TINY_VIT, _base(device, min_run_time_s=0.05, attention="math"))
    _ok(math_)
    _require(math_["attention_kernel"] == "explicit", f"explicit attention reported as {math_['attention_kernel']}")
    return f"sdpa -> {sdpa['attention_kernel']}; math -> explicit"


def check_peak_memory(device: str) -> str:
    r = peak_memory(TINY_VIT, _base(device, mode="train", memory=True))
    p = params(TINY_VIT)

    # fp32 AdamW: weights, exp_avg and exp_avg_sq = 3 copies of 4-byte parameters, exactly (they
    # exist before the profiled step: their sizes are the tensors')
    _require(r["mem_params_bytes"] == 4 * p, f"params {r['mem_params_bytes']} B, expected 4 x {p} = {4 * p} B")
    _require(r["mem_optimizer_bytes"] == 8 * p, f"AdamW state {r['mem_optimizer_bytes']} B, expected 8 x {p} = {8 * p} B")
    # gradients, made during the step: on CUDA the profiler sees the caching allocator's blocks,
    # each tensor rounded up to a multiple of 512 B (seen on an H100: biases and norms of 64
    # floats take 512 B)
    block = 512 if device.startswith("cuda") else 1
    grads = sum(-(-4 * t.numel() // block) * block for t in build_model(TINY_VIT).parameters())
    _require(r["mem_grads_bytes"] == grads, f"gradients {r['mem_grads_bytes']} B, expected {grads} B")
    states = r["mem_params_bytes"] + grads + r["mem_optimizer_bytes"]
    _require(r["peak_memory_bytes"] >= states, "peak below the persistent state")
    _require(r["mem_activations_bytes"] > 0, "no activations recorded")
    rounded = f" (gradients in 512-byte blocks: +{grads - 4 * p} B)" if grads > 4 * p else " exactly"
    return f"peak {r['peak_memory_bytes']} B; params+grads+AdamW state = 16 x {p} B{rounded}"


def check_oom(device: str) -> str:
    # Far more than the cap: on CUDA set_per_process_memory_fraction, on the CPU RLIMIT_DATA.
    # The memory model refuses it before running; with the check off it runs and fails.
    settings = _base(device, mode="train", batch_size=16384, memory_limit_bytes=64 * 2**20)
    refused = measure(TINY_VIT, settings)
    _require(refused["status"] == RowStatus.REFUSED, f"expected status=refused, got {refused['status']}: {refused.get('error')}")
    big = measure(TINY_VIT, settings.replace(memory_check=False))
    _require(big["status"] == RowStatus.OOM, f"expected status=oom, got {big['status']}: {big.get('error')}")
    after = measure(TINY_VIT, _base(device, min_run_time_s=0.05))
    _ok(after)
    return f"batch 16384 under a 64 MiB cap -> refused by the memory model; run anyway -> oom ({(big['error'] or '')[:50]}...); next configuration ok"


def check_auto(device: str) -> str:
    # CUDA's caching allocator reserves 20 MiB segments for mid-sized tensors: a roomier cap
    cap = (128 if device.startswith("cuda") else 16) * 2**20
    r = measure(TINY_VIT, _base(device, mode="train", batch_size="auto", memory_limit_bytes=cap, min_run_time_s=0.05))
    _ok(r)

    # the plan fills the cap less cuBLAS's workspaces on CUDA (measure.budget.cuda_workspace_bytes)
    batch, planned = r["batch_size"], plan(TINY_VIT, cap - device_overhead_bytes(device, "train"), "train")
    _require(r["batch_size_plan"] == planned, f"started from {r['batch_size_plan']}, `plan` says {planned}")
    _require(batch in (planned, step_down(planned)), f"measured at batch {batch}, more than one step from plan's {planned}")
    _require(r["peak_memory_bytes"] is not None and r["peak_memory_bytes"] <= cap, f"measured peak {r['peak_memory_bytes']} B above the {cap} B cap")
    return f"batch {batch} under a {cap >> 20} MiB cap (plan: {planned}), measured peak {r['peak_memory_bytes'] / 2**20:.1f} MiB"


def check_trace(device: str) -> str:
    with tempfile.TemporaryDirectory(prefix="vitbench-trace-") as tmp:
        r = measure(TINY_VIT, _base(device, min_run_time_s=0.05, trace_dir=tmp))
        _ok(r)
        files = r.get("trace_files") or []
        _require(len(files) >= 1, "no trace file written")
        data = json.loads(Path(files[0]).read_text())
        _require(len(data.get("traceEvents", [])) > 0, "trace has no events")
        detail = f"{len(data['traceEvents'])} events"
        try:
            from torch_tb_profiler.profiler.data import RunProfileData
        except ImportError:
            return detail + " (torch-tb-profiler not installed: TensorBoard load not checked)"
        name = Path(files[0]).name.split(".")[0]
        loaded = RunProfileData.parse(name, None, files[0], tmp)
        _require(loaded.has_runtime or loaded.events, "TensorBoard's profiler plugin found no events")
    return detail + "; TensorBoard's profiler plugin loads it"


def check_isolate(device: str) -> str:
    r = measure(TINY_VIT, _base(device, min_run_time_s=0.05, runs=2))
    _ok(r)
    _require(r.get("isolate") is True and r["runs"] == 2 and len(r["run_medians_s"]) == 2, "no records from two worker processes")
    _require(r["n_samples"] == sum(len(s) for s in r["run_samples_s"]) >= 10, "the runs' samples were not pooled")
    return f"2 worker processes measured {r['throughput_img_s']:.0f} img/s (run medians {', '.join(f'{m * 1e3:.2f}' for m in r['run_medians_s'])} ms)"


_FUNCTIONS: dict[str, Callable[[str], str]] = {
    "environment": check_environment,
    "timing": check_timing,
    "attention-kernel": check_attention_kernel,
    "peak-memory": check_peak_memory,
    "oom": check_oom,
    "batch-size-auto": check_auto,
    "trace": check_trace,
    "isolate": check_isolate,
}


def run_checks(device: str = "auto", only: tuple[str, ...] | None = None) -> Iterator[CheckResult]:
    """Yield one :class:`CheckResult` per check as it finishes."""
    device = resolve_device(device)
    for name in only or CHECKS:
        start = time.perf_counter()
        try:
            with model_code():  # torch, the device, the machine: their error is the path failing
                detail, passed = _FUNCTIONS[name](device), True
        except CheckFailed as exc:
            detail, passed = str(exc), False
        except ModelError as exc:  # a crash in a path is that path failing (vitbench's own bug is raised)
            detail, passed = exc.detail, False
        yield CheckResult(name, passed, detail, time.perf_counter() - start)
