"""Memory caps that hold: --batch-size auto starts from the memory model (`vitbench plan`) and
verifies it, never measuring a peak above the cap; the cap applies from the first allocation;
configurations the memory model rules out are refused without running.

Each capped measurement runs in a fresh worker process (``isolate=True``), as a user's would."""

from __future__ import annotations

import resource

import pytest
from _fresh import in_fresh_process

from vitbench.analytic import params
from vitbench.analytic.memory import plan
from vitbench.measure.profile import measure
from vitbench.presets import resolve
from vitbench.settings import RunSettings
from vitbench.specs import ViTSpec, with_overrides

TINY = ViTSpec(name="tiny-vit", img_size=32, patch_size=8, embed_dim=64, depth=2, num_heads=2, num_classes=10)
MiB = 2**20


def _auto(spec, cap: int, mode: str = "train", **extra) -> dict:
    settings = RunSettings(device="cpu", mode=mode, batch_size="auto", memory_limit_bytes=cap, threads=1,
                           runs=1, isolate=True, min_run_time_s=0.05, warmup=1, memory=False, **extra)
    return measure(spec, settings)


def _check_auto(spec, cap: int, mode: str = "train") -> None:
    r = _auto(spec, cap, mode)
    assert r["status"] == "ok", r["error"]
    planned = plan(spec, cap, mode)  # the memory model, as `vitbench plan --memory` says
    assert r["batch_size_plan"] == planned and r["auto_method"] == "plan"
    # plan and profile agree within two batch steps (the plan measured first; if it did not fit, a
    # step down; alone it is at most one, but run beside another test process the 96 MiB inference
    # case measured 1553 and 1397 over the cap and fitted at 1257: a known gap, not yet explained);
    # the measured peak never exceeds the cap
    attempts = r["auto_attempts"]
    assert attempts[0][0] == planned and len(attempts) <= 3 and attempts[-1] == [r["batch_size"], True], attempts
    assert r["batch_size"] >= 0.7 * planned, (r["batch_size"], planned)  # the plan's peak at most 1.4x the cap
    assert r["peak_memory_bytes"] is not None and r["peak_memory_bytes"] <= cap
    assert r["memory_limit_bytes"] == cap  # the row records the cap


@pytest.mark.slow
def test_auto_batch_agrees_with_plan_and_never_exceeds_the_cap():
    _check_auto(TINY, 16 * MiB)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["train", "infer"])
@pytest.mark.parametrize("cap_mib", [12, 24, 32, 48, 64, 96, 128])
def test_auto_batch_at_several_caps(cap_mib, mode):
    _check_auto(TINY, cap_mib * MiB, mode)


@pytest.mark.slow
@pytest.mark.parametrize("model, cap, planned", [("vit-ti/16", 512 * MiB, 15), ("vit-s/16", 2 * 2**30, 31)])
def test_auto_batch_of_the_issue(model, cap, planned):
    # issue 12: auto chose 31 under 512 MiB (measured peak 968 MiB) where plan says 15, and 63
    # under 2 GiB on vit-s/16 where plan says 31 (row ok, no peak)
    spec = resolve(model)
    assert plan(spec, cap, "train") == planned
    _check_auto(spec, cap)


@pytest.mark.slow  # a few seconds: kept out of the default run
@in_fresh_process
def test_the_cap_applies_from_the_first_allocation():
    # vit-b/16 at depth 96: 4 x 680 M bytes of fp32 weights alone, far over a 256 MiB cap. Run
    # anyway (memory_check off): the cap must stop it while building, before the weights exist
    # (the batch-1 prewarm used to run uncapped: depth 100000 under 3 GiB reached 9.2 GB)
    spec = with_overrides(resolve("vit-b/16"), depth=96)
    weights = 4 * params(spec)
    assert weights > 2.7e9
    r = measure(spec, RunSettings(device="cpu", batch_size=1, memory_limit_bytes=256 * MiB, threads=1, runs=1,
                                  isolate=True, memory_check=False, min_run_time_s=0.05, warmup=1))
    assert r["status"] == "oom", r["error"]
    worker_peak_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # KiB on Linux
    assert worker_peak_rss < weights / 2  # the interpreter, torch, the cap and its headroom


def test_refused_rows_name_the_prediction_and_do_not_run():
    huge = with_overrides(resolve("vit-b/16"), depth=100000)
    r = measure(huge, RunSettings(device="cpu", memory_limit_bytes=3 * 2**30, runs=1))
    assert r["status"] == "refused" and "memory limit" in r["error"] and str(4 * params(huge)) in r["error"]
    assert r["memory_limit_bytes"] == 3 * 2**30 and r["params"] == params(huge)
    over_ram = measure(huge, RunSettings(device="cpu", batch_size="auto", runs=1))
    assert over_ram["status"] == "refused" and "this machine's memory" in over_ram["error"]
