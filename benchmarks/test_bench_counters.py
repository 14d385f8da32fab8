"""Traced counters: the dispatch counter on ViT-H/14 at 224 (under 3 s, under 1.5 GB peak
resident memory on a 2-core machine); ``vitbench analyze`` of timm's ViT-H/14 in a fresh process
(under 5 s wall, interpreter start and imports included); and, for reference, fvcore on ViT-B/16."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

import pytest

try:
    from vitbench.counters import count
except ImportError as exc:  # the counters module is optional for this suite while it is written
    pytest.skip(f"vitbench.counters is not available ({exc})", allow_module_level=True)

from vitbench.analytic import complexity
from vitbench.presets import resolve

TIME_BUDGET_S = 3.0
RSS_BUDGET_BYTES = 1.5e9
ANALYZE_BUDGET_S = 5.0
TIMM_VIT_H = "timm:vit_huge_patch14_224"  # 632 M parameters, 167 GMACs at 224 px

# Runs in a fresh interpreter so that the peak resident set is this job's alone: imports, the
# meta-device model and the counting. ru_maxrss is in KiB on Linux.
# The clocks start after `import torch` (a fixed start-up cost of any torch program), so the
# first, cold call is timed with its one-off initialisation. CPU time is recorded beside wall
# time: counting on the meta device is single-threaded Python, so the two agree on an idle
# machine, and CPU time stays honest when other jobs share the cores.
_CHILD = """
import json, resource, time
start = time.perf_counter()
import torch
from vitbench.counters import count
from vitbench.presets import resolve
imported, cpu0 = time.perf_counter(), time.process_time()
record = count(resolve("vit-h/14"), counters=("dispatch",))
done, cpu1 = time.perf_counter(), time.process_time()
print(json.dumps({"import_s": imported - start, "seconds": done - imported, "cpu_s": cpu1 - cpu0,
                  "maxrss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "dispatch_macs": record["dispatch_macs"]}))
"""


def test_dispatch_vit_h14(benchmark, run_timed, report):
    spec = resolve("vit-h/14")
    record, median_s = run_timed(lambda: count(spec, counters=("dispatch",)), rounds=3)
    benchmark.extra_info.update(model="vit-h/14", median_s=median_s)
    report("dispatch counter, ViT-H/14 at 224 (warm)", f"median {median_s:.2f} s")
    # The dispatch counter sees every matmul: it must agree with the closed form exactly.
    assert record["dispatch_macs"] == complexity(spec, 1).macs
    assert median_s < TIME_BUDGET_S


@pytest.mark.slow
def test_dispatch_vit_h14_fresh_process_time_and_peak_memory(report):
    if not sys.platform.startswith("linux"):
        pytest.skip("ru_maxrss units are KiB only on Linux")
    # A time budget is a capability claim: the best of up to three fresh processes counts, so a
    # burst of load from elsewhere on a 2-core machine does not decide it. Memory: the worst.
    runs = []
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        if runs[-1]["seconds"] < TIME_BUDGET_S:
            break
    best = min(runs, key=lambda r: r["seconds"])
    peak = max(r["maxrss_bytes"] for r in runs)
    report(
        "dispatch counter, ViT-H/14 at 224 (fresh process)",
        f"first count {best['seconds']:.2f} s wall, {best['cpu_s']:.2f} s CPU (best of {len(runs)}; "
        f"after {best['import_s']:.2f} s importing torch), peak RSS {peak / 2**20:.0f} MiB",
    )
    assert all(r["dispatch_macs"] == complexity(resolve("vit-h/14"), 1).macs for r in runs)
    assert best["seconds"] < TIME_BUDGET_S, (
        f"cold count took {best['seconds']:.2f} s wall ({best['cpu_s']:.2f} s CPU): is the machine busy?"
    )
    assert peak < RSS_BUDGET_BYTES


def test_fvcore_vit_b16(benchmark, run_timed, report):
    """Reference: fvcore traces the real module on CPU (it calls a MAC a "flop")."""
    spec = resolve("vit-b/16")
    record, median_s = run_timed(lambda: count(spec, counters=("fvcore",)), rounds=3)
    benchmark.extra_info.update(model="vit-b/16", median_s=median_s)
    report("fvcore counter, ViT-B/16 at 224", f"median {median_s:.2f} s")
    assert record["fvcore_macs"] == complexity(spec, 1).macs


def _analyze_fresh_process() -> dict:
    """``vitbench analyze timm:vit_huge_patch14_224`` as a user runs it: wall time from spawning
    the interpreter to its exit (imports of torch, torchvision and timm included), and the CPU
    time it used (children's rusage)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "vitbench", "analyze", TIMM_VIT_H, "--format", "json"],
        capture_output=True, text=True, timeout=300,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads(done.stdout)["records"][0]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "record": record}


def test_analyze_timm_vit_h_fresh_process(report):
    """Issue 11: analyze of a timm ViT-H-sized model within 5 s wall in a fresh process on a
    2-core machine. Best of up to three processes (a burst of load from elsewhere does not decide
    a capability claim); CPU time is reported beside wall time."""
    pytest.importorskip("timm")
    runs = []
    for _ in range(3):
        runs.append(_analyze_fresh_process())
        if runs[-1]["wall_s"] < ANALYZE_BUDGET_S:
            break
    best = min(runs, key=lambda r: r["wall_s"])
    report(
        f"vitbench analyze {TIMM_VIT_H} (fresh process)",
        f"{best['wall_s']:.2f} s wall, {best['cpu_s']:.2f} s CPU (best of {len(runs)})",
    )
    record = best["record"]
    # torchvision's vit_h_14 at 224 px (weights metadata: 632,045,800) without the 1000-class
    # head (1280 x 1000 + 1000): timm's default vit_huge_patch14_224 is headless (num_classes=0)
    assert record["module_params"] == 632_045_800 - (1280 * 1000 + 1000)
    assert record["params"] == record["module_params"]
    assert record["dispatch_macs"] == record["macs"] and record["agree"] is True
    assert best["wall_s"] < ANALYZE_BUDGET_S, (
        f"analyze took {best['wall_s']:.2f} s wall ({best['cpu_s']:.2f} s CPU): is the machine busy?"
    )
