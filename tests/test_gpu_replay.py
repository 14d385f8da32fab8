"""The GPU measurements recorded on lent cards, replayed through the fitting code without a GPU:
the data-centre fit (benchmarks/gpu/fit_datacenter.py) and the calibration on a card
(vitbench.timemodel.gpu_calibration.fit_on_card) read the H100's 48 + 31 + 5 and the H200's 48 steps."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import asdict
from pathlib import Path

import pytest

from vitbench.timemodel.calibration.schema import CalibrationError
from vitbench.timemodel.gpu_records import RECORDED, recorded

ROOT = Path(__file__).resolve().parents[1]


def test_the_recorded_measurements_are_all_read():
    rows = recorded(ROOT)
    counts = {}
    for row in rows:
        counts[(row.machine, row.source)] = counts.get((row.machine, row.source), 0) + 1
    assert counts == {("h100-vm", "calibration"): 48, ("h100-vm", "predict_vs_profile"): 31,
                      ("h100-vm", "profile"): 4, ("h200-vm", "calibration"): 48,
                      ("h100-vm", "bare_loop"): 1}  # its other 3 steps re-measure predict-vs-profile ones
    assert all(row.measured_s > 0 and row.card in ("h100", "h200") for row in rows)
    assert {relative for *_, relative in RECORDED} <= {str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()}


def _fit_script():
    spec = importlib.util.spec_from_file_location("fit_datacenter", ROOT / "benchmarks" / "gpu" / "fit_datacenter.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_published_data_centre_parameters_are_what_the_fit_makes_of_the_recorded_steps():
    """gpu_params.json's data-centre entry is reproducible: the fit script, run on the recorded
    steps, gives the same parameters (to the 4 digits written) and the default host is the H100
    machine's, with the torch release that traced them. With another release (each traces a step
    a little differently) the pair gemm_eff / k_half, which only their product pins, may move:
    there the two parameter sets must predict the recorded steps alike (median within 3%)."""
    import statistics

    import torch

    from vitbench.timemodel.gpu_fit import Stacked
    from vitbench.timemodel.gpu_model import GenerationParams
    from vitbench.timemodel.gpu_records import observations

    measured = recorded(ROOT)
    fitted, hosts, host_bound, light = _fit_script().fit_all(measured)
    published = json.loads((ROOT / "vitbench" / "data" / "gpu_params.json").read_text())
    entry = published["generations"]["datacenter"]
    if entry["traced_with"] == f"torch {torch.__version__.split('+')[0]}":
        assert entry["light_dispatch"] == light
        for name, value in asdict(fitted).items():
            if name not in ("host_infer_s", "host_train_s"):
                assert entry["params"][name] == pytest.approx(value, rel=2e-3), name
        assert published["hosts"]["default"]["infer_s"] == pytest.approx(hosts["h100-vm"][0], rel=2e-3)
    else:
        stacked = Stacked(observations(measured, hosts), entry["light_dispatch"])
        ours = stacked.latencies(GenerationParams.from_dict(entry["params"]))
        again = stacked.latencies(fitted)
        assert statistics.median(abs(a / b - 1) for a, b in zip(again, ours)) < 0.03
    assert host_bound >= 40


@pytest.mark.slow
def test_a_calibration_replayed_on_the_h200s_steps_beats_a_fit_that_never_saw_that_card():
    """A user calibrates a card the published fit has not seen: here the prior is the data-centre
    fit of the H100's steps alone (the published one has seen the H200's 48, and predicts them
    in sample), and the calibration on the H200's steps must beat it on the held-out ones."""
    import dataclasses

    from vitbench.timemodel.gpu_calibration import HOLD_OUT, fit_on_card
    from vitbench.timemodel.gpu_fit import at_bounds
    from vitbench.timemodel.gpu_model import profile_for
    from vitbench.timemodel.gpu_records import observations
    from vitbench.timemodel.gpus import gpu

    params, hosts, _, light = _fit_script().fit_all([m for m in recorded(ROOT) if m.machine == "h100-vm"])
    host = dict(host_infer_s=hosts["h100-vm"][0], host_train_s=hosts["h100-vm"][1])
    prior = dataclasses.replace(profile_for(gpu("h200")), params=dataclasses.replace(params, **host),
                                light_dispatch=light)
    steps = [m for m in recorded(ROOT) if m.machine == "h200-vm"]
    result = fit_on_card(observations(steps), prior)
    assert sum(result.held_out) == len(steps) // HOLD_OUT
    assert result.holdout_error_median < result.prior_holdout_error_median
    # the host comes from the batch-1 (host-bound) steps: that VM's 20-60 us an operator
    assert 10e-6 < result.params.host_infer_s < 60e-6 and result.host_bound >= 8
    # nothing the data could not identify ran to a bound: only what the prior already had there
    fixed = ("launch_floor_s", "kernel_tail_s", "l2_gain", "host_infer_s", "host_train_s")
    assert set(at_bounds(result.params, fixed)) <= set(at_bounds(prior.params, fixed))


@pytest.mark.slow
def test_a_calibration_worse_than_the_published_fit_on_its_held_out_steps_is_refused():
    """Steps the published fit predicts exactly where they are held out, and at half its time
    where they are fitted: whatever the fit makes of the fitted ones predicts the held-out ones
    worse than the published parameters, and the calibration is refused in one line."""
    import dataclasses

    from vitbench.timemodel.gpu_calibration import HOLD_OUT, fit_on_card
    from vitbench.timemodel.gpu_fit import Stacked
    from vitbench.timemodel.gpu_model import profile_for
    from vitbench.timemodel.gpu_records import observations
    from vitbench.timemodel.gpus import gpu

    prior = profile_for(gpu("h100"))
    steps = [m for m in recorded(ROOT) if m.machine == "h100-vm" and m.source == "predict_vs_profile" and m.batch_size >= 64]
    made = observations(steps)
    exact = Stacked(made, prior.light_dispatch).latencies(prior.params)
    made = [dataclasses.replace(o, measured_s=float(t) * (1.0 if i % HOLD_OUT == HOLD_OUT - 1 else 0.5))
            for i, (o, t) in enumerate(zip(made, exact))]
    with pytest.raises(CalibrationError, match="held-out configurations worse than the published") as caught:
        fit_on_card(made, prior)
    assert "\n" not in str(caught.value)


def test_too_few_steps_to_fit_and_judge_are_refused():
    from vitbench.timemodel.gpu_calibration import fit_on_card
    from vitbench.timemodel.gpu_model import profile_for
    from vitbench.timemodel.gpus import gpu

    with pytest.raises(CalibrationError, match="at least"):
        fit_on_card([], profile_for(gpu("h100")))


def test_a_measured_record_is_frozen_and_a_card_outside_the_catalogue_is_refused():
    import dataclasses

    from vitbench.timemodel.gpu_records import Measured, observations

    record = Measured("vm", "h999", "calibration", "vit-ti/16", "infer", 1, "bf16", 0.001)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.card = "h100"
    with pytest.raises(ValueError, match="^card 'h999' is not in the GPU catalogue$"):
        observations([record])


def test_each_kind_of_recorded_file_is_read_as_it_is_written(tmp_path):
    """A profile CSV's median step, its optimizer (empty for inference) and layout, a failed row
    left out; bare_loop.json's ViT labelled as what it built (timm's); a configuration measured
    again on the same machine (here the bare loop's ResNet-50) read from the first file only."""
    from vitbench.timemodel.gpu_records import read_file

    data = tmp_path / "reports" / "h100" / "data"
    data.mkdir(parents=True)
    (data / "gpu_calibration.json").write_text(json.dumps({"observations": [
        {"model": "resnet18", "mode": "infer", "batch_size": 1, "precision": "bf16", "measured_s": 0.003}]}))
    (data / "predict_vs_profile.csv").write_text(
        "model,mode,batch_size,precision,status,measured_s\nresnet50,train,128,bf16,ok,0.06\n"
        "vit-b/16,infer,64,bf16,error,\n")
    (data / "profile_auto.csv").write_text(
        "model,mode,batch_size,precision,channels_last,optimizer,status,latency_p50_s\n"
        "vit-b/16,infer,1024,bf16,false,,ok,0.116\nresnet50,train,1024,bf16,true,sgd,ok,0.44\n"
        "resnet50,infer,2048,bf16,false,,oom,\n")
    (data / "bare_loop.json").write_text(json.dumps({"cases": [
        {"model": "vit-b/16", "mode": "train", "batch": 128, "precision": "bf16", "bare_median_s": 0.0546},
        {"model": "resnet50", "mode": "train", "batch": 128, "precision": "bf16", "bare_median_s": 0.0598}]}))
    (tmp_path / "benchmarks" / "gpu" / "data").mkdir(parents=True)
    (tmp_path / "benchmarks" / "gpu" / "data" / "h200_calibration.json").write_text(json.dumps({"observations": [
        {"model": "resnet18", "mode": "infer", "batch_size": 1, "precision": "bf16", "measured_s": 0.004}]}))

    profile = read_file(data / "profile_auto.csv", "m", "h100", "profile")
    assert [(p.model, p.mode, p.batch_size, p.measured_s, p.optimizer, p.channels_last) for p in profile] == [
        ("vit-b/16", "infer", 1024, 0.116, "adamw", False), ("resnet50", "train", 1024, 0.44, "sgd", True)]
    rows = recorded(tmp_path)
    assert [(r.machine, r.source, r.model, r.mode, r.batch_size, r.measured_s) for r in rows] == [
        ("h100-vm", "calibration", "resnet18", "infer", 1, 0.003),
        ("h100-vm", "predict_vs_profile", "resnet50", "train", 128, 0.06),
        ("h100-vm", "profile", "vit-b/16", "infer", 1024, 0.116),
        ("h100-vm", "profile", "resnet50", "train", 1024, 0.44),
        ("h100-vm", "bare_loop", "timm:vit_base_patch16_224", "train", 128, 0.0546),
        ("h200-vm", "calibration", "resnet18", "infer", 1, 0.004)]


@pytest.mark.parametrize("column, value", [("compile", "true"), ("attention", "math")])
def test_a_recorded_step_the_trace_would_not_reproduce_is_refused(tmp_path, column, value):
    from vitbench.timemodel.gpu_records import read_file

    path = tmp_path / "profile.csv"
    row = {"model": "vit-b/16", "mode": "infer", "batch_size": "64", "precision": "bf16", "status": "ok",
           "latency_p50_s": "0.01", "compile": "false", "attention": "sdpa", column: value}
    path.write_text(",".join(row) + "\n" + ",".join(row.values()) + "\n")
    with pytest.raises(ValueError, match=f"vit-b/16 infer batch 64 was measured with .*{column}={value}"):
        read_file(path, "m", "h100", "profile")


def test_the_networks_recorded_under_two_names_are_one_network():
    """SAME_NETWORK's pairs count the same parameters and MACs (vitbench's counter), so leaving one
    name out of a fit and keeping the other would keep the network."""
    import vitbench
    from vitbench.timemodel.gpu_records import SAME_NETWORK

    names = [name for pair in SAME_NETWORK.items() for name in pair]
    counted = {row["model"]: (row["params"], row["macs"]) for row in vitbench.analyze(names)}
    for alias, name in SAME_NETWORK.items():
        assert counted[alias] == counted[name], (alias, name)
    # torchvision's ViT_B_16 weights metadata: 86,567,656 parameters, 17.56 "GFLOPS" (MACs)
    assert counted["vit-b/16"][0] == 86_567_656 and round(counted["vit-b/16"][1] / 1e9, 2) == 17.56


def test_leaving_a_model_out_leaves_out_every_step_of_its_network(monkeypatch):
    """leave_one_model_out refits without any step of the held-out network, under either name and
    from any file, and judges all its non-calibration steps."""
    from vitbench.timemodel.gpu_records import Measured, network

    fit = _fit_script()
    measured = [Measured("h100-vm", "h100", source, model, "infer", 64, "bf16", 0.01)
                for source, model in (("calibration", "resnet18"), ("predict_vs_profile", "vit-b/16"),
                                      ("predict_vs_profile", "timm:vit_base_patch16_224"), ("profile", "vit-b/16"),
                                      ("bare_loop", "timm:vit_base_patch16_224"), ("predict_vs_profile", "resnet50"))]
    fitted_on = []
    monkeypatch.setattr(fit, "fit_hosts", lambda rest, params, candidates: ({}, 0, 0.3))
    monkeypatch.setattr(fit, "fit_device", lambda rest, hosts, params, light: fitted_on.append(rest) or params)
    monkeypatch.setattr(fit, "errors_of", lambda mine, hosts, params, light: [0.0] * len(mine))
    judged = fit.leave_one_model_out(measured, None, 0.3)
    assert [len(rest) for rest in fitted_on] == [5, 2]  # resnet50 held out, then the ViT-B/16 network
    assert {m.model for m in fitted_on[1]} == {"resnet18", "resnet50"}
    assert [(m.source, m.model) for m, _ in judged] == [
        ("predict_vs_profile", "resnet50"), ("predict_vs_profile", "vit-b/16"),
        ("predict_vs_profile", "timm:vit_base_patch16_224"), ("profile", "vit-b/16"),
        ("bare_loop", "timm:vit_base_patch16_224")]
    assert all(network(m.model) != "vit-b/16" for m in fitted_on[1])
