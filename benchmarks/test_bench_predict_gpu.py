"""How fast a GPU prediction is (torch and vitbench already imported), side by side:

- a lone prediction traced from scratch (``trace_cache=False``) and the same configuration read
  from the disk trace cache (the in-process memo cleared both times), as a ratio;
- re-pricing one traced step for another device (``predict_gpu`` on a trace in hand);
- one trace priced for five devices in one call against five single-device calls.

A whole published file (1,300+ timm models) is ``benchmarks/gpu_published/`` (trace_all.py
traces, fit_validate.py prices); its timings are in reports/gpu-published/report.md.
"""

from __future__ import annotations

import pytest

DEVICES = ("a100", "h100", "l4", "rtx4090", "rtx5090")


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VITBENCH_TRACE_DIR", str(tmp_path / "traces"))
    return tmp_path


@pytest.mark.parametrize("model, mode", [("vit-s/16", "infer"), ("timm:resnet50", "infer"), ("vit-s/16", "train")])
def test_lone_prediction_cached_against_traced(benchmark, run_timed, report, cache, model, mode):
    import vitbench
    from vitbench.timemodel import run

    def traced():
        run._OPS_CACHE.clear()
        return vitbench.predict(model, device="rtx4090", mode=mode, precision="fp16", batch_size=8, trace_cache=False)

    def cached():
        run._OPS_CACHE.clear()
        return vitbench.predict(model, device="rtx4090", mode=mode, precision="fp16", batch_size=8)

    cached()  # fills the disk cache
    times = {"traced": [], "cached": []}
    import time

    for _ in range(5):  # interleaved, so both see the same machine
        for name, fn in (("traced", traced), ("cached", cached)):
            start = time.perf_counter()
            rows = fn()
            times[name].append(time.perf_counter() - start)
            assert rows[0]["status"] == "ok"
    import statistics

    traced_s, cached_s = (statistics.median(times[k]) for k in ("traced", "cached"))
    _, median_s = run_timed(cached, rounds=5)
    benchmark.extra_info.update(traced_s=traced_s, cached_s=cached_s, ratio=traced_s / cached_s)
    report(f"predict {model} {mode} on rtx4090, batch 8", f"traced {traced_s * 1e3:.0f} ms, cached {cached_s * 1e3:.1f} ms "
           f"({traced_s / cached_s:.0f}x)")


def test_repricing_a_trace_for_another_device(benchmark, run_timed, report, cache):
    from vitbench.models.references import resolve_all
    from vitbench.timemodel.gpu_model import predict_gpu, profile_for
    from vitbench.timemodel.gpus import gpu
    from vitbench.timemodel.run import traced_ops

    target = resolve_all(["vit-b/16"], {})[0]
    ops = traced_ops(target, 256, "train", "bf16", "adamw", "cuda")
    profiles = [profile_for(gpu(d)) for d in DEVICES]

    def price():
        return [predict_gpu(ops, p, "train") for p in profiles]

    result, median_s = run_timed(price, rounds=20)
    assert all(p.latency_s > 0 for p in result)
    per_device = median_s / len(DEVICES)
    benchmark.extra_info.update(per_device_s=per_device, ops=len(ops))
    assert per_device < 0.010  # issue 43: re-pricing a trace for another device within 10 ms
    report("re-price ViT-B/16 training step (batch 256) per device", f"{per_device * 1e3:.2f} ms ({len(ops)} operators)")


def test_one_trace_for_five_devices_against_five_calls(benchmark, run_timed, report, cache):
    import statistics
    import time

    import vitbench
    from vitbench.timemodel import run

    def together():
        run._OPS_CACHE.clear()
        return vitbench.predict("vit-s/16", device=",".join(DEVICES), batch_size=64, precision="bf16", trace_cache=False)

    def apart():
        out = []
        for device in DEVICES:
            run._OPS_CACHE.clear()
            out += vitbench.predict("vit-s/16", device=device, batch_size=64, precision="bf16", trace_cache=False)
        return out

    times = {"together": [], "apart": []}
    for _ in range(3):
        for name, fn in (("together", together), ("apart", apart)):
            start = time.perf_counter()
            rows = fn()
            times[name].append(time.perf_counter() - start)
            assert len(rows) == len(DEVICES)
    a, b = statistics.median(times["together"]), statistics.median(times["apart"])
    run_timed(together, rounds=3)
    benchmark.extra_info.update(together_s=a, apart_s=b)
    report("ViT-S/16 on 5 GPUs: one call vs five", f"{a * 1e3:.0f} ms vs {b * 1e3:.0f} ms ({b / a:.1f}x)")
