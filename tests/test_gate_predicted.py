"""The noise-free time gate (docs/gate.md): predicted step time under a calibration committed with
the baseline is a function of the model's traced operators alone, so it is identical on a loaded
runner, and a small change in the model's work is caught with no timing noise to hide it."""

from __future__ import annotations

import multiprocessing
import shutil
from pathlib import Path

import pytest

import vitbench
from vitbench.gate import compare
from vitbench.specs import ViTSpec

ROOT = Path(__file__).resolve().parents[1]
#: a GPU calibration as `vitbench calibrate --device cuda --save` writes it (made on an H100)
CALIBRATION = ROOT / "reports" / "h100" / "data" / "gpu_calibration.json"
BASE = ViTSpec(name="gate-model", img_size=224, patch_size=16, embed_dim=192, depth=40, num_heads=3)


def _burn(seconds: float) -> None:
    import time

    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        sum(i * i for i in range(1000))


def _predict(spec, calibration):
    # the traces come from the (test-private) trace cache after the first call: what is checked
    # here is that pricing them under the calibration does not depend on the machine's load
    return vitbench.predict(spec, device="h100", mode=["infer", "train"], batch_size=64, precision="bf16",
                            calibration=calibration)


@pytest.fixture(scope="module")
def calibration(tmp_path_factory):
    return shutil.copy(CALIBRATION, tmp_path_factory.mktemp("gate") / "calibration.json")


@pytest.fixture(scope="module")
def baseline(calibration):
    return _predict(BASE, calibration)


@pytest.mark.slow
def test_predicted_time_is_identical_on_a_loaded_machine(calibration, baseline):
    quiet = baseline
    busy = [multiprocessing.Process(target=_burn, args=(30.0,)) for _ in range(2)]
    for process in busy:
        process.start()
    try:
        loaded = _predict(BASE, calibration)
    finally:
        for process in busy:
            process.terminate()
            process.join()
    assert [r["pred_latency_s"] for r in quiet] == [r["pred_latency_s"] for r in loaded]
    assert all(r["pred_basis"].startswith("gpu-model:h100 (calibrated on") for r in quiet)
    assert compare(quiet, loaded, ["pred_latency_s:+2%"]).exit_code == 0


@pytest.mark.slow
def test_two_percent_more_work_fails_the_predicted_time_gate(calibration, baseline):
    # one more block of 40: 2.5% more MACs, and as many more kernels
    deeper = _predict(ViTSpec(**{**BASE.__dict__, "depth": 41}), calibration)
    assert all(1.02 < d["macs"] / b["macs"] < 1.03 for b, d in zip(baseline, deeper))
    result = compare(baseline, deeper, ["pred_latency_s:+2%"])
    assert result.exit_code == 1
    assert {(r.configuration, r.metric) for r in result.failed_rows} == {
        (f"gate-model 224px b64 h100 {mode} bf16", "pred_latency_s") for mode in ("infer", "train")}
    # the same change under a looser rule passes: the gate is the rule, not noise
    assert compare(baseline, deeper, ["pred_latency_s:+3%"]).exit_code == 0
