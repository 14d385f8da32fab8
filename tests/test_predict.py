"""The time model's machinery: the traced operators, a synthetic calibration's exact predictions,
the breakdown adding up, monotonicity in depth, the fast path equal to a full trace, the
calibration file's round trip and refusals, the fits, training cost, datasheet devices, the CLI
and the sweep stage. (Accuracy against measurement is a benchmark, benchmarks/predict, not a
test; one real calibration runs under -m slow.)"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from _calibrations import RATE, synthetic  # noqa: F401 - synthetic: other test files import it from here

import vitbench
from vitbench.analytic import complexity
from vitbench.errors import SpecError
from vitbench.models.references import resolve
from vitbench.timemodel.calibration.cache import calibration_key, load, save
from vitbench.timemodel.calibration.fitting import fit_affine, fit_steps
from vitbench.timemodel.calibration.schema import SCHEMA_VERSION, CalibrationError
from vitbench.timemodel.cost import training_cost
from vitbench.timemodel.fast import Predictor
from vitbench.timemodel.model import BREAKDOWN, predict_ops
from vitbench.timemodel.ops import Op, trace_target_ops
from vitbench.timemodel.probes import StepTiming


def test_synthetic_calibration_gives_known_predictions_exactly():
    cal = synthetic(in_step_factor=2.0)
    ops = [
        Op("addmm", "linear", 10**8, 10**6, (1000, 100, 1000), "float32", "gemm"),     # compute-bound: 1e8 / 1e10
        Op("convolution", "conv", 10**8, 10**6, (1000, 100, 1000), "float32", "conv"),  # at half the rate
        Op("_scaled_dot_product_flash_attention_for_cpu", "attention", 10**8, 10**6, (1000, 64, 1000), "float32", "attention"),
        Op("gelu", "elementwise", 0, 4 * 10**6, (), "float32", "gelu"),                 # its fit: 2 us + 4e6 / 5e8
        Op("addmm", "linear", 10, 10**8, (1, 10, 1), "float32", "gemm"),                # memory-bound matmul: 1e8 / 1e9
        Op("add_", "optimizer", 0, 10**3, (), "float32", "add_"),                       # default: 1 us + 1e3 / 1e9
    ]
    p = predict_ops(ops, cal, "train")
    # compute kernels are not scaled by in_step_factor; the rest (fixed and variable) are
    assert p.components_s["linear"] == pytest.approx(1e-2 + 1e-1, rel=1e-12)
    assert p.components_s["conv"] == pytest.approx(2e-2, rel=1e-12)
    assert p.components_s["attention"] == pytest.approx(4e-2, rel=1e-12)
    assert p.components_s["elementwise"] == pytest.approx(2 * 8e-3, rel=1e-12)
    assert p.components_s["optimizer"] == pytest.approx(2 * 1e-6, rel=1e-12)
    assert p.components_s["overhead"] == pytest.approx(5 * 4e-6 + 5e-7 + 2 * 2e-6 + 2 * 1e-6, rel=1e-12)
    assert p.latency_s == sum(p.components_s.values())
    assert p.ops == 6 and p.macs == 3 * 10**8 + 10 and p.bytes == 4 * 10**6 + 10**8 + 3 * 10**6 + 10**3


@pytest.mark.parametrize("name, mode", [("vit-ti/16", "infer"), ("resnet18", "train"), ("mnist-vit", "train")])
@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
@pytest.mark.unsampled
def test_breakdown_sums_to_the_total(name, mode):
    p = predict_ops(trace_target_ops(resolve(name), 2, mode), synthetic(), mode)
    assert set(p.components_s) == set(BREAKDOWN)
    assert sum(p.components_s.values()) == p.latency_s  # exactly: the total is their sum
    columns = p.columns(2)
    assert columns["pred_throughput_img_s"] == 2 / p.latency_s
    assert sum(columns[f"pred_{c}_s"] for c in BREAKDOWN) == columns["pred_latency_s"]


@pytest.mark.parametrize("name", ["vit-ti/16", "cifar-vit/8", "resnet18", "slides-cnn", "vit-ti/16+attention=math"])
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


def test_optimizer_operators_come_per_parameter_with_its_state():
    """AdamW's steady-state step per parameter, synthesised from the template, moves bytes in
    proportion to the parameter: 4 tensors of its size (param, grad, exp_avg, exp_avg_sq)."""
    target = resolve("mnist-vit")
    ops = [op for op in trace_target_ops(target, 2, "train") if op.component == "optimizer"]
    params = sum(p.numel() for p in vitbench.build_model(target).parameters())
    big = [op for op in ops if op.name == "addcdiv_"]
    assert len(big) == len(list(vitbench.build_model(target).parameters()))
    # addcdiv_(param, exp_avg, denom): reads three tensors and writes one of the parameter's size
    assert sum(op.bytes for op in big) == 4 * 4 * params


@pytest.mark.slow  # a few seconds: kept out of the 3-minute default run
def test_more_depth_never_predicts_less_time():
    cal = synthetic()
    for mode in ("infer", "train"):
        times = [predict_ops(trace_target_ops(resolve(f"mnist-vit+depth={d}"), 4, mode), cal, mode).latency_s for d in (1, 2, 4, 8)]
        assert times == sorted(times) and len(set(times)) == 4
        fast = Predictor(cal)
        quick = [fast.predict(resolve(f"mnist-vit+depth={d}"), 4, mode).latency_s for d in (1, 2, 4, 8)]
        assert quick == sorted(quick)


def test_two_traces_are_aligned_only_operator_by_operator():
    from vitbench.timemodel.fast import _aligned

    def op(name, shape=(4, 8, 8)):
        return Op(name, "linear", 1, 1, shape, "float32", "gemm")

    assert _aligned([op("addmm"), op("mm")], [op("addmm", (6, 8, 8)), op("mm", (6, 8, 8))])
    assert not _aligned([op("addmm"), op("mm")], [op("mm"), op("addmm")])  # the same length, other operators
    assert not _aligned([op("addmm")], [op("addmm"), op("mm")])
    assert not _aligned([op("addmm")], [op("addmm", (6, 8))])


@pytest.mark.parametrize("name", ["vit-ti/16+depth=5", "resnet18", "cifar-vit/4+pool=mean"])
@pytest.mark.parametrize("mode", ["infer", "train"])
@pytest.mark.slow
def test_fast_path_equals_a_full_trace(name, mode):
    """A sweep's shortcuts (batch-affine operators from two anchor batches, depth-affine time)
    give the full trace's prediction."""
    cal = synthetic(in_step_factor=1.3)
    target = resolve(name)
    fast = Predictor(cal)
    for batch in (1, 2, 5, 16):
        full = predict_ops(trace_target_ops(target, batch, mode), cal, mode)
        quick = fast.predict(target, batch, mode)
        assert quick.ops == full.ops and quick.macs == full.macs and quick.bytes == full.bytes
        assert quick.latency_s == pytest.approx(full.latency_s, rel=1e-9)
        for component in BREAKDOWN:
            assert quick.components_s[component] == pytest.approx(full.components_s[component], rel=1e-9, abs=1e-15)


@pytest.mark.slow  # five traces: a few seconds
def test_the_fast_path_traces_an_architecture_once_and_a_deep_vit_at_depths_1_and_2(monkeypatch):
    """What makes a sweep quick: vitbench's own model is traced once per architecture (at batch 1
    and the two anchors), every other batch is computed from those; on a CPU a ViT deeper than 2
    is traced at depths 1 and 2 only; a library's model is traced per configuration."""
    from vitbench.timemodel import ops as step_ops

    calls = []  # (depth, batches) of every trace (a single batch's trace is one of these too)
    real_batches = step_ops.trace_target_batches

    def batches(target, sizes, *args):
        calls.append((getattr(target.spec, "depth", None), tuple(sizes)))
        return real_batches(target, sizes, *args)

    monkeypatch.setattr(step_ops, "trace_target_batches", batches)
    fast = Predictor(synthetic())
    deep = resolve("mnist-vit+depth=6")
    for batch in (1, 4, 16, 64):
        fast.predict(deep, batch, "infer")
    assert calls == [(1, (1, 2, 3)), (2, (1, 2, 3))]
    calls.clear()
    fast.predict(resolve("mnist-vit+depth=3"), 4, "infer")  # three is deeper than 2: traced at depths 1 and 2 too
    assert calls == [(1, (1, 2, 3)), (2, (1, 2, 3))]
    calls.clear()
    shallow = resolve("mnist-vit+depth=2")
    for batch in (4, 16):
        fast.predict(shallow, batch, "infer")
    assert calls == [(2, (1, 2, 3))]
    calls.clear()
    live = replace(shallow, source="py")  # not vitbench's own builder: no shortcut
    for batch in (4, 16, 4):
        fast.predict(live, batch, "infer")
    assert calls == [(2, (4,)), (2, (16,))]  # the repeated configuration is not traced again


def test_gemm_rate_interpolates_on_the_grid():
    rows = [[m, k, n, (1e9 if m == 1 else 4e9) * (2 if k == 1024 else 1)] for m in (1, 100) for k in (16, 1024) for n in (16, 1024)]
    cal = synthetic(gemm={"float32": rows})
    assert cal.gemm_rate((1, 16, 16)) == 1e9 and cal.gemm_rate((100, 1024, 16)) == 8e9  # grid points, exactly
    assert cal.gemm_rate((10, 16, 16)) == pytest.approx(2e9)  # halfway in log m: the geometric mean
    assert cal.gemm_rate((10**6, 10**6, 10**6)) == 8e9  # beyond the grid: its edge
    with pytest.raises(CalibrationError, match="no bfloat16"):
        cal.gemm_rate((10, 16, 16), "bfloat16")


def test_fit_affine_recovers_overhead_and_bandwidth():
    sizes = [1e3, 1e5, 1e7]
    overhead, bandwidth = fit_affine(sizes, [2e-6 + s / 5e10 for s in sizes])
    assert overhead == pytest.approx(2e-6) and bandwidth == pytest.approx(5e10)


def test_fit_steps_recovers_the_step_model():
    truth = {"infer": 6e-6, "train": 9e-6, "optimizer": 1e-6}
    steps = []
    for i, (ops, opt, compute, memory) in enumerate([(40, 0, 1e-3, 2e-3), (40, 0, 5e-2, 1e-2), (400, 200, 3e-3, 4e-3),
                                                      (420, 200, 9e-2, 3e-2), (60, 0, 1e-4, 5e-4), (300, 180, 2e-3, 1e-3)]):
        mode = "infer" if opt == 0 else "train"
        framework = truth[mode] * (ops - opt) + truth["optimizer"] * opt
        steps.append(StepTiming(f"p{i}", mode, compute + 1.25 * memory + framework, compute + memory, ops, opt, compute))
    factor, framework = fit_steps(steps)
    assert factor == pytest.approx(1.25)
    assert framework == pytest.approx(truth)


def test_calibration_round_trip(tmp_path):
    cal = synthetic(notes={"why": "test"})
    path = save(cal, tmp_path / "cal.json")
    assert load(path, cal.torch) == cal
    assert load(path).gemm_rate((37, 512, 99)) == pytest.approx(RATE)


@pytest.mark.parametrize("text, reason", [
    ("{not json", "not (valid )?JSON"),
    (json.dumps({"schema_version": 99}), "schema_version is 99"),
    (json.dumps({"schema_version": SCHEMA_VERSION, "device": "cpu"}), "damaged"),
    ("\xff\xfe", "not (valid )?JSON"),
])
def test_damaged_calibration_is_refused_with_the_reason(tmp_path, text, reason):
    path = tmp_path / "cal.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CalibrationError, match=reason):
        load(path)


def test_calibration_from_another_torch_is_refused(tmp_path):
    path = save(synthetic(torch="2.13.0"), tmp_path / "cal.json")
    with pytest.raises(CalibrationError, match="made under torch 2.13.0, this is torch 2.15.0"):
        load(path, "2.15.0")


@pytest.mark.parametrize("change, field", [
    (dict(bandwidth_bytes_s=-1.0), "bandwidth_bytes_s"), (dict(in_step_factor=float("nan")), "in_step_factor"),
    (dict(gemm={"float32": [[1, 1, 1, 1e9], [2, 1, 1, 1e9], [1, 2, 1, 1e9]]}), "do not fill a grid"),
    (dict(ops={"gelu": [1e-6, 0]}), "ops"), (dict(basis="guess"), "basis"), (dict(threads=0), "threads"),
])
def test_invalid_calibration_values_are_refused(tmp_path, change, field):
    path = tmp_path / "cal.json"
    path.write_text(synthetic(**change).to_json())
    with pytest.raises(CalibrationError, match=field):
        load(path)


def test_calibration_key_names_device_threads_and_torch():
    assert calibration_key("cpu", "AMD EPYC 7B13", 2, "2.15.0+cu132") == "cpu-AMD-EPYC-7B13-t2-torch2.15.0"
    assert calibration_key("cpu", "x", 1, "2.15.0") != calibration_key("cpu", "x", 2, "2.15.0")


def test_training_cost_formula():
    cost = training_cost(0.5, 32, 10, 1000, 3.0)
    assert cost["pred_steps_per_epoch"] == 32  # ceil(1000 / 32): the last, partial batch is a step
    assert cost["pred_epoch_s"] == 16.0
    assert cost["pred_train_hours"] == pytest.approx(160 / 3600)
    assert cost["pred_cost"] == pytest.approx(3.0 * 160 / 3600)


@pytest.mark.slow
def test_predict_api_rows_with_training_cost_and_measured_basis():
    cal = synthetic()
    measured = [{"model": "mnist-vit", "mode": "train", "batch_size": 8, "precision": "fp32", "latency_p50_s": 0.25, "status": "ok"},
                {"model": "cifar-vit/8", "overrides": "depth=2", "mode": "train", "batch_size": 8, "precision": "fp32",
                 "latency_p50_s": 9.0, "status": "ok"}]  # another configuration of cifar-vit/8: not this one's
    rows = vitbench.predict(["mnist-vit", "cifar-vit/8"], mode="train", batch_size=[8], calibration=cal,
                            epochs=2, dataset_size=100, price_per_hour=10.0, measured=measured)
    by_model = {r["model"]: r for r in rows}
    mnist, cifar = by_model["mnist-vit"], by_model["cifar-vit/8"]
    assert mnist["cost_basis"] == "measured" and mnist["pred_epoch_s"] == 13 * 0.25
    assert mnist["pred_ratio"] == mnist["pred_latency_s"] / 0.25
    assert cifar["cost_basis"] == "predicted" and cifar["pred_epoch_s"] == 13 * cifar["pred_latency_s"]
    assert cifar["pred_cost"] == pytest.approx(10.0 * 2 * cifar["pred_epoch_s"] / 3600)
    for row in rows:
        assert row["status"] == "ok" and row["pred_basis"].startswith("calibration:cpu:synthetic")
        assert row["params"] == complexity(resolve(row["model"]).spec).params


def test_predict_a_live_module_and_an_untraceable_one():
    import torch
    from torch import nn

    class Broken(nn.Module):
        def forward(self, x):
            raise RuntimeError("no forward here")

    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
    rows = vitbench.predict([model, Broken()], input_size=(3, 32, 32), calibration=synthetic(), batch_size=2)
    assert rows[0]["status"] == "ok" and rows[0]["pred_macs"] == 2 * (30 * 30 * 8 * 27 + 32)
    # its own forward failed: the user's to fix (issue 33), a refused row, not an internal error
    assert rows[1]["status"] == "refused" and "its forward failed" in rows[1]["error"] and "no forward here" in rows[1]["error"]
    assert torch.is_tensor(next(model.parameters()))  # the user's module is left alone


@pytest.mark.parametrize("reference", ["py:./own_resnet.py:resnet18+img_size=224", "torchvision:resnet18", "timm:resnet18"])
def test_every_reference_kind_is_predicted(reference, tmp_path, monkeypatch):
    """A py: factory (the user's own: torchvision's functions are refused as py: factories),
    torchvision: and timm: give the same network (ResNet-18 at 224 px): the same MACs per step,
    hence the same prediction within the head's few operators."""
    (tmp_path / "own_resnet.py").write_text("import torchvision\n\ndef resnet18():\n    return torchvision.models.resnet18()\n")
    monkeypatch.chdir(tmp_path)
    [row] = vitbench.predict(reference, batch_size=2, calibration=synthetic())
    assert row["status"] == "ok" and row["pred_latency_s"] > 0
    [ours] = vitbench.predict("resnet18", batch_size=2, calibration=synthetic())
    assert row["pred_macs"] == pytest.approx(ours["pred_macs"], rel=0.001)


@pytest.mark.slow  # about 1-3 s: the default suite stays under 2 minutes
def test_a_gpu_device_is_priced_by_the_gpu_model_not_a_datasheet_roofline():
    [row] = vitbench.predict("vit-ti/16", device="h100", precision="bf16", batch_size=64)
    assert row["pred_basis"] == "gpu-model:h100 (hopper, datacenter's parameters)" and row["threads"] is None
    assert row["device_name"] == "H100 SXM" and row["pred_host_s"] > 0 and row["pred_device_s"] > 0
    assert "lower bound" not in (Path(__file__).parents[1] / "docs" / "time.md").read_text()


@pytest.mark.parametrize("kwargs, field", [
    (dict(device="h10"), "device"), (dict(batch_size=0), "batch_size"), (dict(mode="eval"), "mode"),
    (dict(precision="fp16"), "precision"), (dict(epochs=3), "dataset_size"), (dict(epochs=-1, dataset_size=5), "epochs"),
    (dict(price_per_hour=2.0), "price_per_hour"), (dict(device="h100", threads=2), "threads"),
    # threads: a positive int up to 1,024 (True is an int to Python, not a count); a dataset up to 10^13 images
    (dict(threads=True), "threads"), (dict(threads=2.0), "threads"), (dict(threads=1025), "threads"),
    (dict(epochs=1, dataset_size=10**13 + 1), "dataset_size"),
])
def test_predict_bad_input_names_the_field(kwargs, field):
    with pytest.raises(SpecError) as caught:
        vitbench.predict("vit-ti/16", calibration=synthetic(), **kwargs)
    assert caught.value.field == field


def test_unknown_device_lists_the_known_ones():
    with pytest.raises(SpecError, match="known: cpu, cuda, v100.*a100.*l4.*h100.*h200.*b200.*rtx3090.*rtx4090.*rtx5090"):
        vitbench.predict("vit-ti/16", device="tpu")


def test_a_calibration_file_asked_for_by_name_and_damaged_is_refused_not_replaced(tmp_path, monkeypatch):
    """--calibration FILE that cannot be used is the user's mistake: one line naming the file
    and the reason, exit 2, and no 30-second calibration run in its place."""
    from vitbench.cli import main
    from vitbench.timemodel import run

    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path / "cache"))
    calls = []
    monkeypatch.setattr(run, "calibrate", lambda device, threads, precisions, on_step=None: calls.append(threads) or synthetic(threads=threads))
    damaged = tmp_path / "cal.json"
    damaged.write_text(f'{{"schema_version": {SCHEMA_VERSION}, "gemm": ')
    with pytest.raises(CalibrationError, match=r"--calibration=.*cal.json.*refused \(damaged: not (valid )?JSON"):
        vitbench.predict("mnist-vit", calibration=damaged, threads=1)
    assert main(["predict", "mnist-vit", "--calibration", str(tmp_path / "missing.json"), "--threads", "1"]) == 2
    assert calls == []  # nothing calibrated in its place


def test_cached_calibration_from_another_torch_is_replaced(tmp_path, monkeypatch):
    import torch

    from vitbench.measure.env import cpu_model
    from vitbench.timemodel import run
    from vitbench.timemodel.calibration.cache import cache_path

    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path))
    path = cache_path("cpu", cpu_model() or "", 1, torch.__version__)
    path.parent.mkdir(parents=True)
    path.write_text(synthetic(torch="1.0.0").to_json())
    monkeypatch.setattr(run, "calibrate", lambda device, threads, precisions, on_step=None: synthetic(threads=threads))
    [row] = vitbench.predict("mnist-vit", threads=1)
    assert any(w["code"] == "calibration-refused" and "made under torch 1.0.0" in w["message"] and "recalibrated" in w["message"] for w in row["warnings"])
    assert load(path).torch == torch.__version__


def _cli(*args, env=None):
    import os

    return subprocess.run([sys.executable, "-m", "vitbench", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


@pytest.mark.slow  # a few seconds: kept out of the 3-minute default run
def test_cli_predict_with_a_calibration_file(tmp_path):
    path = save(synthetic(), tmp_path / "cal.json")
    done = _cli("predict", "mnist-vit", "resnet18", "--mode", "infer,train", "--batch-size", "1,4", "--calibration", str(path),
                "--epochs", "3", "--dataset-size", "1000", "--format", "csv")
    assert done.returncode == 0, done.stderr
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert len(rows) == 8 and {r["model"] for r in rows} == {"mnist-vit", "resnet18"}
    for r in rows:
        parts = sum(float(r[f"pred_{c}_s"]) for c in BREAKDOWN)
        assert math.isclose(parts, float(r["pred_latency_s"]), rel_tol=1e-12)
        assert int(r["pred_steps_per_epoch"]) == math.ceil(1000 / int(r["batch_size"]))


@pytest.mark.parametrize("args, message", [
    (("predict", "vit-ti/16", "--device", "h10"), "device='h10': unknown device; known: cpu, cuda, v100"),
    (("predict", "vit-ti/16", "--device", "a100,h10"), "device='h10': unknown device"),
    (("predict", "vit-ti/16", "--device", "t4", "--precision", "bf16"), "precision='bf16': T4 (turing) has no bf16"),
    (("predict", "vit-ti/16", "--batch-size", "auto", "--device", "h100"), "batch_size='auto'"),
    (("predict", "vit-ti/16", "--epochs", "0"), "--epochs"),
    (("calibrate", "--device", "h100"), "device='h100': must be cpu or cuda"),
])
def test_cli_bad_input_is_one_line_and_exit_2(args, message):
    done = _cli(*args)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


@pytest.mark.slow
def test_sweep_predict_stage(tmp_path, monkeypatch):
    import torch

    from vitbench.measure.env import cpu_model
    from vitbench.timemodel.calibration.cache import cache_path

    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path / "cache"))
    save(synthetic(threads=1), cache_path("cpu", cpu_model() or "", 1, torch.__version__))
    result = vitbench.sweep(models=["mnist-vit"], grid={"depth": [1, 3, 6]}, batch_sizes=[1, 4], stages=["analytic", "predict"],
                            measure={"device": "cpu", "mode": ["infer", "train"], "threads": 1}, out=tmp_path / "sweep")
    rows = result.records
    assert len(rows) == 12 and all(r["status"] == "ok" for r in rows)
    cal = synthetic(threads=1)
    for r in rows:
        assert sum(r[f"pred_{c}_s"] for c in BREAKDOWN) == pytest.approx(r["pred_latency_s"], rel=1e-12)
        full = predict_ops(trace_target_ops(resolve("mnist-vit+" + r["overrides"]), r["batch_size"], r["mode"]), cal, r["mode"])
        assert r["pred_latency_s"] == pytest.approx(full.latency_s, rel=1e-9)


@pytest.mark.slow
@pytest.mark.unsampled
def test_real_calibration_is_quick_and_sane(tmp_path):
    """A real calibration of this CPU at one thread: every part present and its numbers within
    physical bounds (no CPU core does 10^13 MAC/s or moves 10^13 bytes/s). How long it takes is
    benchmarks/predict's business (accuracy.py reports it), not a test's."""
    from vitbench.timemodel.calibration.worker import calibrate

    cal = calibrate("cpu", 1)
    peak = max(r[3] for r in cal.gemm["float32"])
    assert 1e8 < peak < 1e13 and 1e8 < cal.bandwidth_bytes_s < 1e13
    assert {"gemm", "conv", "conv_backward", "conv_grouped", "attention", "attention_backward"} <= set(cal.efficiency)
    assert set(cal.framework_s) == {"infer", "train", "optimizer"} and cal.in_step_factor > 0
    assert {"native_layer_norm", "gelu", "add_", "bernoulli_"} <= set(cal.ops)
    assert load(save(cal, tmp_path / "c.json"), cal.torch) == cal


@pytest.mark.parametrize("layout", ["cache dir is a file", "cache entry is a folder"])
def test_a_cache_that_cannot_be_written_never_costs_the_prediction(layout, tmp_path, monkeypatch):
    """Issue: with VITBENCH_CACHE_DIR a file (or the cache entry a folder), predict calibrated
    for 70-80 s, then exited 2 with no prediction (save() raised OutputFileError, which the
    cache's OSError handler did not catch). The prediction comes back, with a warning."""
    import torch

    from vitbench.measure.env import cpu_model
    from vitbench.timemodel import run
    from vitbench.timemodel.calibration.cache import cache_path

    cache = tmp_path / "cache"
    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(cache))
    if layout == "cache dir is a file":
        cache.write_text("not a folder")
    else:
        cache_path("cpu", cpu_model() or "", 1, torch.__version__).mkdir(parents=True)
    monkeypatch.setattr(run, "calibrate", lambda device, threads, precisions, on_step=None: synthetic(threads=threads))
    [row] = vitbench.predict("mnist-vit", threads=1)
    assert row["status"] == "ok" and row["pred_latency_s"] > 0
    assert any(w["code"] == "calibration-not-saved" for w in row["warnings"])


def test_a_step_refused_from_its_spec_needs_no_calibration(monkeypatch, tmp_path):
    """Every configuration refused before tracing (a weight no memory holds): no calibration runs
    first (on a machine without one cached, that was a minute before the one-line refusal)."""
    from vitbench.timemodel import run

    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path))

    def no_calibration(*args, **kwargs):
        raise AssertionError("calibrated although nothing is priced")

    monkeypatch.setattr(run, "calibrate", no_calibration)
    (row,) = run.predict("vit-s/16", mlp_ratio=1e9)
    assert row["status"] == "refused" and "largest weight" in row["error"]
    assert row["pred_basis"] == "none: refused before pricing"


@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
def test_rows_priced_by_a_calibration_made_on_a_busy_machine_say_so():
    """A calibration measured while other processes held the cores (1.6 of 2 busy, 1 thread) is
    kept, and every row it prices carries calibration-busy; a quiet one (0.1 busy) carries none."""
    busy = synthetic(notes={"machine": {"cpus": 2, "threads": 1, "busy_cores": 1.6, "loadavg_1m_start": 3.0}})
    quiet = synthetic(notes={"machine": {"cpus": 2, "threads": 1, "busy_cores": 0.1, "loadavg_1m_start": 0.2}})
    rows = vitbench.predict(["vit-ti/16", "resnet18"], batch_size=[1, 2], calibration=busy)
    assert len(rows) == 4 and all("calibration-busy" in [w["code"] for w in r["warnings"]] for r in rows)
    [row] = vitbench.predict("vit-ti/16", calibration=quiet)
    assert "calibration-busy" not in [w["code"] for w in row["warnings"]]


def test_the_auto_run_device_predicts_for_cuda_only_where_cuda_is(monkeypatch):
    import torch

    from vitbench.timemodel.run import predict_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert predict_device("auto") == "cpu" and predict_device("cpu") == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert predict_device("auto") == "cuda" and predict_device("cpu") == "cpu"


def test_a_calibration_file_without_the_precisions_rates_or_at_other_threads_is_refused(tmp_path):
    from vitbench.timemodel.run import resolve_calibration

    path = save(synthetic(threads=2), tmp_path / "cal.json")  # float32 rates only, two threads
    found, warnings = resolve_calibration("cpu", 2, ("fp32",), path)
    assert found.threads == 2 and warnings == []
    with pytest.raises(CalibrationError, match=r"refused \(no bfloat16 rates \(calibrated: float32\)\)"):
        resolve_calibration("cpu", 2, ("fp32", "bf16"), path)
    with pytest.raises(SpecError, match="was made at threads=2") as caught:
        resolve_calibration("cpu", 4, ("fp32",), path)
    assert caught.value.field == "threads"


def test_the_in_process_trace_memo_is_emptied_past_256_configurations(monkeypatch):
    from vitbench.timemodel import run

    monkeypatch.setattr(run, "cached_trace", lambda *args, **kwargs: ["op"])
    monkeypatch.setattr(run, "_OPS_CACHE", {("old", i): [] for i in range(257)})
    assert run.traced_ops(resolve("mnist-vit"), 1, "infer", "fp32", "adamw") == ["op"]
    assert len(run._OPS_CACHE) == 1
    monkeypatch.setattr(run, "_OPS_CACHE", {("old", i): [] for i in range(256)})
    run.traced_ops(resolve("mnist-vit"), 1, "infer", "fp32", "adamw")
    assert len(run._OPS_CACHE) == 257  # at 256 it is kept


def test_tf32_is_priced_on_the_tensor_cores():
    """An A100's TF32 tensor cores do 156 TFLOP/s against 19.5 in plain FP32: ViT-B/16's matrix
    products at batch 64 run several times faster in tf32."""
    [fp32] = vitbench.predict("vit-b/16", device="a100", precision="fp32", batch_size=64)
    [tf32] = vitbench.predict("vit-b/16", device="a100", precision="tf32", batch_size=64)
    assert tf32["pred_linear_s"] < fp32["pred_linear_s"] / 3
