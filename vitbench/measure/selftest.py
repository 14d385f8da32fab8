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

from vitbench.settings import RunSettings
from vitbench.specs import ViTSpec

#: a ViT small enough that every check takes about a second on a laptop CPU
TINY_VIT = ViTSpec(name="selftest-vit", img_size=32, patch_size=8, embed_dim=64, depth=2, num_heads=2, num_classes=10)
CHECKS = ("environment", "timing", "attention-kernel", "peak-memory", "oom", "batch-size-auto", "trace", "isolate")


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
    fields = dict(device=device, batch_size=8, min_run_time_s=0.2, warmup=1, memory=False, threads=None)
    fields.update(changes)
    return RunSettings(**fields)


def _ok(record: dict) -> None:
    _require(record["status"] == "ok", f"status={record['status']}: {record.get('error')}")


def check_environment(device: str) -> str:
    from vitbench.measure.env import environment

    env = environment(device)
    missing = [k for k in ("env_device_name", "env_torch", "env_threads", "vitbench_version") if not env.get(k)]
    _require(not missing, f"missing {', '.join(missing)}")
    if device.startswith("cuda"):
        _require(bool(env.get("env_cuda")), "no CUDA version recorded")
    return f"{env['env_device_name']}, torch {env['env_torch']}, {env['env_threads']} threads"


def check_timing(device: str) -> str:
    from vitbench.measure.profile import measure

    r = measure(TINY_VIT, _base(device))
    _ok(r)
    _require(r["n_samples"] >= 5 and len(r["samples_s"]) == r["n_samples"], "too few samples")
    _require(all(s > 0 and math.isfinite(s) for s in r["samples_s"]), "non-positive sample")
    _require(math.isclose(r["throughput_img_s"], 8 / r["latency_p50_s"]), "throughput != batch / median")
    _require(r["latency_p90_s"] >= r["latency_p50_s"], "p90 below median")
    return f"{r['throughput_img_s']:.0f} img/s, median {r['latency_p50_s'] * 1e3:.2f} ms over {r['n_samples']} samples"


def check_attention_kernel(device: str) -> str:
    from vitbench.measure.profile import measure

    sdpa = measure(TINY_VIT, _base(device, min_run_time_s=0.05))
    _ok(sdpa)
    _require(sdpa["attention_kernel"] not in (None, "unknown", "explicit"), f"SDPA kernel not seen ({sdpa['attention_kernel']})")
    math_ = measure(TINY_VIT, _base(device, min_run_time_s=0.05, attention="math"))
    _ok(math_)
    _require(math_["attention_kernel"] == "explicit", f"explicit attention reported as {math_['attention_kernel']}")
    return f"sdpa -> {sdpa['attention_kernel']}; math -> explicit"


def check_peak_memory(device: str) -> str:
    from vitbench.analytic import params
    from vitbench.measure.memory import peak_memory

    r = peak_memory(TINY_VIT, _base(device, mode="train", memory=True))
    p = params(TINY_VIT)
    states = r["mem_params_bytes"] + r["mem_grads_bytes"] + r["mem_optimizer_bytes"]
    # fp32 AdamW: weights, gradients, exp_avg and exp_avg_sq = 4 copies of 4-byte parameters
    _require(states == 16 * p, f"params+grads+optimizer = {states} B, expected 16 x {p} = {16 * p} B")
    _require(r["peak_memory_bytes"] >= states, "peak below the persistent state")
    _require(r["mem_activations_bytes"] > 0, "no activations recorded")
    return f"peak {r['peak_memory_bytes']} B; params+grads+AdamW state = 16 x {p} B exactly"


def check_oom(device: str) -> str:
    from vitbench.measure.profile import measure

    # Far more than the cap: on CUDA set_per_process_memory_fraction, on the CPU RLIMIT_DATA.
    big = measure(TINY_VIT, _base(device, mode="train", batch_size=16384, memory_limit_bytes=64 * 2**20))
    _require(big["status"] == "oom", f"expected status=oom, got {big['status']}: {big.get('error')}")
    after = measure(TINY_VIT, _base(device, min_run_time_s=0.05))
    _ok(after)
    return f"batch 16384 under a 64 MiB cap -> oom ({(big['error'] or '')[:60]}...); next configuration ok"


def check_auto(device: str) -> str:
    from vitbench.measure.profile import measure

    # CUDA's caching allocator reserves 20 MiB segments for mid-sized tensors: a roomier cap
    cap, limit = (128 if device.startswith("cuda") else 16) * 2**20, 4096
    r = measure(TINY_VIT, _base(device, mode="train", batch_size="auto", memory_limit_bytes=cap, max_batch_size=limit, min_run_time_s=0.05))
    _ok(r)
    batch, probes = r["batch_size"], r["auto_probes"]
    _require(batch >= 1, "no batch fits")
    _require(any(not ok for _, ok in probes), f"no probe up to {limit} failed under a {cap >> 20} MiB cap")
    first_failure = min(b for b, ok in probes if not ok)
    _require(first_failure == batch + 1, f"bisection ended at {batch} but {first_failure} failed")
    return f"largest batch under a {cap >> 20} MiB cap: {batch} ({len(probes)} probes, {batch + 1} fails)"


def check_trace(device: str) -> str:
    from vitbench.measure.profile import measure

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
    from vitbench.measure.profile import measure

    r = measure(TINY_VIT, _base(device, min_run_time_s=0.05, isolate=True))
    _ok(r)
    _require(r.get("isolate") is True and r["n_samples"] >= 5, "no record from the subprocess")
    return f"subprocess measured {r['throughput_img_s']:.0f} img/s"


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
    from vitbench.measure.env import resolve_device

    device = resolve_device(device)
    for name in only or CHECKS:
        start = time.perf_counter()
        try:
            detail, passed = _FUNCTIONS[name](device), True
        except CheckFailed as exc:
            detail, passed = str(exc), False
        except Exception as exc:  # a crash in a path is that path failing
            detail, passed = f"{exc.__class__.__name__}: {exc}", False
        yield CheckResult(name, passed, detail, time.perf_counter() - start)
