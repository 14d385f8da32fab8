"""The time model's machinery: the traced operators, a synthetic calibration's exact predictions,
the breakdown adding up, monotonicity in depth, and the calibration file's round trip and
refusals. (Accuracy against measurement is a benchmark, not a test.)"""

from __future__ import annotations

import json

import pytest

from vitbench.analytic import complexity
from vitbench.predict.calibration import Calibration, CalibrationError, load, save
from vitbench.predict.model import BREAKDOWN, predict_ops
from vitbench.predict.ops import Op, trace_target_ops
from vitbench.models.references import resolve

RATE = 1e10  # MAC/s everywhere in the synthetic calibration


def synthetic(**changes) -> Calibration:
    rows = [[m, k, n, RATE] for m in (1, 10**6) for k in (1, 10**6) for n in (1, 10**6)]
    fields = dict(device="cpu", device_name="synthetic", threads=1, torch="2.15.0", gemm={"float32": rows},
                  conv_efficiency=0.5, attention_efficiency=0.25, overhead_s=1e-6, bandwidth_bytes_s=1e9)
    fields.update(changes)
    return Calibration(**fields)


def test_synthetic_calibration_gives_known_predictions_exactly():
    cal = synthetic()
    ops = [
        Op("addmm", "linear", 10**8, 10**6, (1000, 100, 1000), "float32"),        # compute-bound: 1e8 / 1e10
        Op("convolution", "conv", 10**8, 10**6, (1000, 100, 1000), "float32"),    # at half the rate
        Op("_scaled_dot_product_flash_attention_for_cpu", "attention", 10**8, 10**6, (1000, 64, 1000), "float32"),
        Op("gelu", "elementwise", 0, 4 * 10**6, (), "float32"),                   # memory-bound: 4e6 / 1e9
        Op("addmm", "linear", 10, 10**8, (1, 10, 1), "float32"),                  # memory-bound matmul: 1e8 / 1e9
        Op("add_", "optimizer", 0, 10**3, (), "float32"),
    ]
    p = predict_ops(ops, cal)
    assert p.components_s["linear"] == pytest.approx(1e-2 + 1e-1)
    assert p.components_s["conv"] == pytest.approx(2e-2)
    assert p.components_s["attention"] == pytest.approx(4e-2)
    assert p.components_s["elementwise"] == pytest.approx(4e-3)
    assert p.components_s["optimizer"] == pytest.approx(1e-6)
    assert p.components_s["overhead"] == pytest.approx(6e-6)
    assert p.latency_s == pytest.approx(1e-2 + 1e-1 + 2e-2 + 4e-2 + 4e-3 + 1e-6 + 6e-6)
    assert p.ops == 6 and p.macs == 3 * 10**8 + 10


@pytest.mark.parametrize("name, mode", [("vit-ti/16", "infer"), ("resnet18", "train"), ("mnist-vit", "train")])
def test_breakdown_sums_to_the_total(name, mode):
    p = predict_ops(trace_target_ops(resolve(name), 2, mode), synthetic())
    assert set(p.components_s) == set(BREAKDOWN)
    assert sum(p.components_s.values()) == p.latency_s  # exactly: the total is their sum
    columns = p.columns(2)
    assert columns["pred_throughput_img_s"] == 2 / p.latency_s
    assert sum(columns[f"pred_{c}_s"] for c in BREAKDOWN) == columns["pred_latency_s"]


@pytest.mark.parametrize("name", ["vit-ti/16", "cifar-vit/8", "resnet18", "slides-cnn"])
def test_traced_inference_macs_are_the_analytic_macs(name):
    target = resolve(name)
    ops = trace_target_ops(target, 3, "infer")
    assert sum(op.macs for op in ops) == 3 * complexity(target.spec).macs


def test_training_step_has_backward_and_optimizer_operators():
    ops = trace_target_ops(resolve("mnist-vit"), 2, "train")
    names = {op.name for op in ops}
    assert "native_layer_norm_backward" in names
    optimizer_ops = [op for op in ops if op.component == "optimizer"]
    assert optimizer_ops and all(op.macs == 0 for op in optimizer_ops)
    forward = sum(op.macs for op in trace_target_ops(resolve("mnist-vit"), 2, "infer"))
    assert sum(op.macs for op in ops) > 2 * forward  # backward is about twice the forward


def test_more_depth_never_predicts_less_time():
    cal = synthetic()
    times = [predict_ops(trace_target_ops(resolve("mnist-vit+depth=" + str(d)), 4, mode), cal).latency_s
             for mode in ("infer", "train") for d in (1, 2, 4)]
    assert times[0] < times[1] < times[2] and times[3] < times[4] < times[5]


def test_calibration_round_trip(tmp_path):
    cal = synthetic(notes={"why": "test"})
    path = save(cal, tmp_path / "cal.json")
    assert load(path, "2.15.0+cpu") == cal
    assert load(path).gemm_rate((37, 512, 99)) == pytest.approx(RATE)


@pytest.mark.parametrize("text, reason", [
    ("{not json", "not JSON"),
    (json.dumps({"schema_version": 99}), "schema_version"),
    (json.dumps({"schema_version": 1, "device": "cpu"}), "damaged"),
])
def test_damaged_calibration_is_refused_with_the_reason(tmp_path, text, reason):
    path = tmp_path / "cal.json"
    path.write_text(text)
    with pytest.raises(CalibrationError, match=reason):
        load(path)


def test_calibration_from_another_torch_is_refused(tmp_path):
    path = save(synthetic(torch="2.13.0"), tmp_path / "cal.json")
    with pytest.raises(CalibrationError, match="made under torch 2.13.0, this is torch 2.15.0"):
        load(path, "2.15.0")


def test_nonpositive_bandwidth_is_refused(tmp_path):
    path = tmp_path / "cal.json"
    path.write_text(synthetic(bandwidth_bytes_s=-1.0).to_json())
    with pytest.raises(CalibrationError, match="bandwidth_bytes_s"):
        load(path)
