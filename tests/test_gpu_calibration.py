"""A GPU calibration (``vitbench calibrate --device cuda``): its file, how predict uses it, what it
refuses, and that the fit finds parameters that reproduce step times made with known ones. The
measuring itself needs a GPU: tests/test_measure_cuda.py and benchmarks/gpu/probe.sh."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

import vitbench
from vitbench.errors import SpecError
from vitbench.measure.stats import quantile
from vitbench.timemodel.calibration.schema import CalibrationError
from vitbench.timemodel.gpu_calibration import SUITE, GpuCalibration, load, observation, save
from vitbench.timemodel.gpu_fit import Stacked, fit
from vitbench.timemodel.gpu_model import profile_for
from vitbench.timemodel.gpus import gpu

CALIBRATION = Path(__file__).resolve().parents[1] / "reports" / "h100" / "data" / "gpu_calibration.json"


def _calibration(device: str = "h100", **params) -> GpuCalibration:
    spec = gpu(device)
    values = {**dataclasses.asdict(profile_for(spec).params), **params}
    return GpuCalibration(device=spec.key, device_name=spec.name, torch="2.15.0", vitbench=vitbench.__version__,
                          params=values, start_from="ada", observations=[{"model": "x"}] * 12,
                          fit_error_median=0.04, fit_error_p90=0.09, start_error_median=0.3,
                          rates=profile_for(spec).rates)


def test_file_round_trip_and_prediction_with_it(tmp_path):
    slower = _calibration(gemm_eff=profile_for(gpu("h100")).params.gemm_eff / 4)
    path = save(slower, tmp_path / "cal.json")
    assert load(path) == slower
    published, = vitbench.predict("vit-b/16", device="h100", batch_size=64, precision="bf16")
    calibrated, = vitbench.predict("vit-b/16", device="h100", batch_size=64, precision="bf16", calibration=path)
    assert calibrated["pred_basis"] == "gpu-model:h100 (calibrated on H100 SXM)" != published["pred_basis"]
    # a quarter of the matrix products' efficiency: ViT-B/16 at batch 64 is mostly matrix products
    assert calibrated["pred_linear_s"] == pytest.approx(4 * published["pred_linear_s"], rel=0.05)
    assert calibrated["pred_latency_s"] > 1.5 * published["pred_latency_s"]
    assert calibrated["pred_error_median"] == 0.04 and calibrated["pred_error_p90"] == 0.09
    assert "residuals" in calibrated["pred_error_basis"] and "n=12" in calibrated["pred_error_basis"]


def test_another_cards_calibration_is_refused(tmp_path):
    path = save(_calibration("a100"), tmp_path / "a100.json")
    with pytest.raises(SpecError, match="made on .*a100.*--device h100") as caught:
        vitbench.predict("vit-ti/16", device="h100", calibration=path)
    assert caught.value.field == "calibration"


def test_a_gpu_calibration_is_not_a_cpu_one(tmp_path):
    path = save(_calibration(), tmp_path / "gpu.json")
    with pytest.raises(SpecError, match="is a GPU calibration") as caught:
        vitbench.predict("vit-ti/16", device="cpu", calibration=path)
    assert caught.value.field == "calibration"


@pytest.mark.parametrize("change, match", [
    (lambda d: d.update(kind="something"), "not a GPU calibration"),
    (lambda d: d.update(format=99), "format 99"),
    (lambda d: d["params"].update(gemm_eff=50.0), r"params.gemm_eff=50.0 is outside its bounds"),
    (lambda d: d["params"].pop("k_half"), "params must name attention_eff"),
    (lambda d: d["params"].update(warp_eff=0.5), "params must name attention_eff"),
    (lambda d: d["params"].update(host_train_s="fast"), "host_train_s='fast'"),
    (lambda d: d["params"].update(layout_passes=-1.0), r"params.layout_passes=-1.0 is outside its bounds"),
])
def test_damaged_files_are_refused_with_the_reason(tmp_path, change, match):
    data = json.loads(_calibration().to_json())
    change(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CalibrationError, match=match):
        load(path)


def test_a_calibration_made_before_the_newer_parameters_is_read_with_them_at_zero(tmp_path):
    """reports/h100/data/gpu_calibration.json was saved by a vitbench whose cost model had no
    convolution-backward, depthwise, layout or SM parameters: each is 0 (what prices a step as
    that vitbench did: gpu_model.GenerationParams), the others are the file's."""
    saved = json.loads(CALIBRATION.read_text())
    assert "layout_passes" not in saved["params"]  # the file predates them
    loaded = load(CALIBRATION)
    assert {name: loaded.params[name] for name in saved["params"]} == saved["params"]
    assert {name: loaded.params[name] for name in set(loaded.params) - set(saved["params"])} == {
        "conv_backward_eff": 0.0, "grouped_wgrad_eff": 0.0, "grouped_channels_half": 0.0, "layout_passes": 0.0,
        "depthwise_eff": 0.0, "depthwise_wgrad_eff": 0.0, "sm_bytes_per_clock": 0.0}
    row = vitbench.predict("vit-ti/16", device="h100", batch_size=8, precision="bf16", calibration=CALIBRATION)[0]
    assert row["status"] == "ok" and row["pred_latency_s"] > 0


def test_a_file_that_is_not_a_calibration_is_refused_by_predict(tmp_path):
    path = tmp_path / "cpu.json"
    path.write_text('{"schema_version": 2}')
    with pytest.raises(SpecError, match="not a GPU calibration") as caught:
        vitbench.predict("vit-ti/16", device="h100", calibration=path)
    assert caught.value.field == "calibration"


@pytest.mark.parametrize("args, message", [
    (("--device", "h100"), "device='h100': must be cpu or cuda"),
    (("--device", "tpu"), "device='tpu': unknown device"),
])
def test_calibrate_cli_refuses_in_one_line(args, message):
    done = subprocess.run([sys.executable, "-m", "vitbench", "calibrate", *args], capture_output=True, text=True)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_calibrate_cuda_without_a_gpu_is_one_line():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    done = subprocess.run([sys.executable, "-m", "vitbench", "calibrate", "--device", "cuda"], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip() == "vitbench: error: device='cuda': no CUDA device here: a GPU calibration is measured on the GPU"


def test_suite_is_mostly_device_bound_with_a_few_host_bound_steps():
    """The device's parameters can only be identified from steps its kernels set: most of the
    suite is large models at batches that fill a data-centre card (64 and up), a few batch-1
    steps give the host's dispatch; every kind of work is there, and each fold of the
    cross-validation (every HOLD_OUT-th) holds both kinds."""
    from vitbench.timemodel.gpu_calibration import HOLD_OUT

    assert {mode for _, mode, _, _ in SUITE} == {"infer", "train"}
    assert {p for *_, p in SUITE} == {"fp32", "tf32", "bf16"}
    large = [c for c in SUITE if c[2] >= 64]
    small = [c for c in SUITE if c[2] == 1]
    assert len(large) >= 3 * len(small) and len(small) >= 4
    assert {"vit-b/16", "vit-l/16", "resnet50", "resnet101", "timm:convnext_tiny"} <= {m for m, *_ in large}
    for fold in range(HOLD_OUT):
        held = [c for i, c in enumerate(SUITE) if i % HOLD_OUT == fold]
        assert any(c[2] >= 64 for c in held) and any(c[2] == 1 for c in held), fold
    assert all(batch & (batch - 1) == 0 for _, _, batch, _ in SUITE)  # powers of two, as people run them


def test_a_fit_needs_twice_the_held_out_stride_of_configurations():
    """The configurations are split into 4 folds, each predicted by a fit of the others: fewer
    than 8 leave too few to fit and to judge; refused before anything is fitted."""
    from vitbench.timemodel.gpu_calibration import fit_on_card

    with pytest.raises(CalibrationError, match=r"^only 7 configurations measured; at least 8 are needed"):
        fit_on_card([None] * 7, profile_for(gpu("h100")))


def test_a_calibration_of_a_card_this_vitbench_does_not_know_is_refused_when_used():
    unknown = dataclasses.replace(_calibration(), device="mi300x")
    with pytest.raises(CalibrationError, match="device 'mi300x' is not in this vitbench's GPU catalogue"):
        unknown.profile()


@pytest.mark.slow
def test_the_fit_recovers_step_times_made_with_known_parameters():
    """Step times made by the cost model with parameters unlike the starting ones: the fit
    reproduces them (it has the same model; what it cannot know is which parameters made them)."""
    spec = gpu("h100")
    start = profile_for(spec).params
    hidden = dataclasses.replace(start, gemm_eff=start.gemm_eff * 0.6, bandwidth_eff=start.bandwidth_eff * 0.8,
                                 host_train_s=start.host_train_s * 2 + 5e-6)
    cases = [(m, mode, b, "bf16") for m in ("vit-ti/16", "resnet18") for mode in ("infer", "train") for b in (1, 64)]
    observations = [observation(*case, 1.0, spec) for case in cases]
    made = Stacked(observations).latencies(hidden)
    observations = [dataclasses.replace(o, measured_s=float(t)) for o, t in zip(observations, made)]
    before = [abs(p / m - 1) for p, m in zip(Stacked(observations).latencies(start), made)]
    fitted = fit(observations, start)
    after = [abs(p / m - 1) for p, m in zip(Stacked(observations).latencies(fitted), made)]
    assert max(before) > 0.1
    assert max(after) < 0.01


def test_the_fits_p90_is_linear_between_order_statistics():
    assert quantile([4.0, 1.0, 3.0, 2.0], 0.5) == 2.5
    assert quantile([1.0, 2.0, 3.0, 4.0, 5.0], 0.9) == pytest.approx(4.6)
    assert quantile([7.0], 0.9) == 7.0


def test_a_parameter_within_1_percent_of_its_log_range_from_a_bound_is_at_it():
    """conv_eff's bounds are 0.05 and 1.5 (a log range of ln 30 = 3.40): 0.05 and 1.49 are at a
    bound, 0.052 (ln 1.04 = 0.039 away, 1.15% of the range) is not; a parameter at 0 is "none"."""
    from vitbench.timemodel.gpu_fit import BOUNDS, at_bounds
    from vitbench.timemodel.gpu_model import GenerationParams

    assert BOUNDS["conv_eff"] == (0.05, 1.5)
    base = GenerationParams(conv_eff=0.4, sm_bytes_per_clock=0.0)
    assert "conv_eff" not in at_bounds(base) and "sm_bytes_per_clock" not in at_bounds(base)
    assert "conv_eff" in at_bounds(dataclasses.replace(base, conv_eff=0.05))
    assert "conv_eff" in at_bounds(dataclasses.replace(base, conv_eff=1.49))
    assert "conv_eff" not in at_bounds(dataclasses.replace(base, conv_eff=0.052))
    assert "conv_eff" not in at_bounds(dataclasses.replace(base, conv_eff=0.05), fixed=("conv_eff",))



def test_a_calibration_object_prices_as_its_file_does(tmp_path):
    slower = _calibration(gemm_eff=profile_for(gpu("h100")).params.gemm_eff / 4)
    asked = dict(device="h100", batch_size=8, precision="bf16")
    from_file, = vitbench.predict("vit-ti/16", calibration=save(slower, tmp_path / "cal.json"), **asked)
    from_object, = vitbench.predict("vit-ti/16", calibration=slower, **asked)
    assert from_object["pred_latency_s"] == from_file["pred_latency_s"]
    assert from_object["pred_basis"] == "gpu-model:h100 (calibrated on H100 SXM)"


def test_a_damaged_calibration_given_is_refused_naming_the_option(tmp_path):
    from vitbench.timemodel.gpu_pricing import gpu_pricing

    data = json.loads(_calibration().to_json())
    data["format"] = 99
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CalibrationError, match=rf"^--calibration='{path}': refused \(format 99, "):
        gpu_pricing("h100", path)


def test_the_local_cards_cached_calibration_prices_it_and_a_damaged_one_is_a_warning(tmp_path, monkeypatch):
    """``--device cuda`` with no --calibration: this card's calibration from the cache (made by
    ``vitbench calibrate --device cuda``); a damaged one is refused in a warning and the
    published fit prices the row."""
    import torch

    from vitbench.timemodel.gpu_calibration import cache_path
    from vitbench.timemodel.gpu_pricing import gpu_pricing

    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *args: "NVIDIA H100 80GB HBM3")
    published, warnings = gpu_pricing("cuda", None)
    assert warnings == [] and published.calibrated_on == ""
    path = cache_path("NVIDIA H100 80GB HBM3", torch.__version__)
    assert path.parent == tmp_path / "calibrations"
    save(_calibration(), path)
    profile, warnings = gpu_pricing("cuda", None)
    assert warnings == [] and profile.calibrated_on == "H100 SXM" and profile.validation["calibration"]["n"] == 12
    path.write_text("{not json")
    profile, warnings = gpu_pricing("cuda", None)
    assert profile.calibrated_on == "" and profile.params == published.params
    assert [w["code"] for w in warnings] == ["calibration-refused"]
    assert warnings[0]["message"].startswith(f"cached GPU calibration {path} refused (")


def test_the_calibration_cache_is_under_xdg_cache_home_or_home_and_names_are_cut_at_48(tmp_path, monkeypatch):
    from vitbench.timemodel.calibration.cache import cache_dir, file_safe

    monkeypatch.delenv("VITBENCH_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "vitbench" / "calibrations"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "vitbench" / "calibrations"
    assert file_safe("NVIDIA H100 80GB HBM3") == "NVIDIA-H100-80GB-HBM3"
    assert file_safe("x" * 60) == "x" * 48 and file_safe("/ /") == "unknown"


def _gemm_and_copy_observations():
    """Four steps of matrix products and copies on an H100, their times made by the cost model
    with half the published gemm_eff and 0.7 of its bandwidth_eff; those two parameters free."""

    from vitbench.timemodel.gpu_fit import Observation
    from vitbench.timemodel.gpu_model import GenerationParams, op_table
    from vitbench.timemodel.ops import Op

    spec = gpu("h100")
    # no SM bound on the copies (sm_bytes_per_clock 0): their time is bandwidth_eff's alone
    start = dataclasses.replace(profile_for(spec).params, sm_bytes_per_clock=0.0)

    def gemm(size):
        return Op("mm", "linear", size ** 3, 6 * size * size, (size, size, size), "bfloat16", "gemm")

    def copy(nbytes):
        return Op("add", "elementwise", 0, nbytes, (), "bfloat16", "add")

    tables = [op_table([gemm(s)] * 4 + [copy(s * s * 8)] * 4) for s in (1024, 2048, 4096, 8192)]
    observations = [Observation(t, spec, "infer", 1.0) for t in tables]
    hidden = dataclasses.replace(start, gemm_eff=start.gemm_eff * 0.5, bandwidth_eff=start.bandwidth_eff * 0.7)
    made = Stacked(observations).latencies(hidden)
    observations = [dataclasses.replace(o, measured_s=float(t)) for o, t in zip(observations, made)]
    fixed = [f.name for f in dataclasses.fields(GenerationParams) if f.name not in ("gemm_eff", "bandwidth_eff")]
    return observations, start, hidden, fixed


@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
def test_the_fit_finds_the_parameters_that_made_the_times_and_starts_where_it_is_told():
    observations, start, hidden, fixed = _gemm_and_copy_observations()
    fitted = fit(observations, start, fixed=fixed)
    assert fitted.gemm_eff == pytest.approx(hidden.gemm_eff, rel=1e-6)
    assert fitted.bandwidth_eff == pytest.approx(hidden.bandwidth_eff, rel=1e-6)
    assert fitted.k_half == start.k_half  # fixed
    low = dataclasses.replace(start, gemm_eff=0.1)  # near its lower bound, 0.05
    once = fit(observations, low, fixed=fixed, max_evaluations=1)  # stopped where it started
    assert (once.gemm_eff, once.bandwidth_eff) == pytest.approx((0.1, start.bandwidth_eff), rel=1e-12)


def test_a_prior_weight_holds_a_parameter_at_the_prior_and_the_others_take_up_the_data():
    observations, start, hidden, fixed = _gemm_and_copy_observations()
    held = fit(observations, start, fixed=fixed, prior_weight={"gemm_eff": 100.0})
    assert held.gemm_eff == pytest.approx(start.gemm_eff, rel=1e-4)  # the prior is the start unless given
    assert held.bandwidth_eff < 0.5 * hidden.bandwidth_eff  # the copies absorb the slower products
    toward = fit(observations, start, fixed=fixed, prior_weight={"gemm_eff": 100.0},
                 prior=dataclasses.replace(start, gemm_eff=start.gemm_eff * 0.8))
    assert toward.gemm_eff == pytest.approx(0.8 * start.gemm_eff, rel=1e-4)
    free = fit(observations, start, fixed=fixed, prior_weight={"bandwidth_eff": 0.0})  # a weight of 0: not held
    assert free.gemm_eff == pytest.approx(hidden.gemm_eff, rel=1e-6)


@pytest.mark.parametrize("name, value, taken", [
    ("conv_eff", 1.2, True),             # efficiencies may pass 1: GeForce cards run above the rated boost clock
    ("conv_eff", 1.6, False),
    ("depthwise_eff", 0.01, True), ("depthwise_eff", 0.004, False),
    ("grouped_channels_half", 1.5, True), ("grouped_channels_half", 0.5, False),
    ("sm_bytes_per_clock", 0.5, False),  # 0 (no bound, an older file) or 1 to 64 bytes a clock
    ("sm_bytes_per_clock", 0.0, True),
    ("l2_gain", 10.0, True), ("l2_gain", 10.5, False),
])
def test_a_calibrations_parameters_are_read_within_their_bounds(tmp_path, name, value, taken):
    data = json.loads(_calibration().to_json())
    data["params"][name] = value
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(data))
    if taken:
        assert load(path).params[name] == value
    else:
        with pytest.raises(CalibrationError, match=rf"^params\.{name}={value!r} is outside its bounds \["):
            load(path)


def test_a_calibration_fits_the_configurations_measured_and_reports_those_that_failed(monkeypatch, tmp_path):
    """``calibrate --device cuda``'s loop with the measurement and the fit stood in for (no GPU
    here): a configuration that failed or has no time is reported and left out of the fit; the
    progress file is gone once the calibration is made."""
    import torch

    from vitbench.timemodel import gpu_calibration
    from vitbench.timemodel.gpu_calibration import CardFit, calibrate_gpu

    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *args: "NVIDIA H100 80GB HBM3")
    times = {"a": {"status": "ok", "latency_p50_s": 0.002}, "b": {"status": "error", "error": "OOM"},
             "c": {"status": "ok", "latency_p50_s": None}, "d": {"status": "ok", "latency_p50_s": 0.004}}
    monkeypatch.setattr(gpu_calibration, "measure_step", lambda model, *args: times[model])
    monkeypatch.setattr(gpu_calibration, "observation", lambda model, mode, batch, precision, seconds, spec: (model, seconds))
    fitted_on = []

    def fit_on_card(observations, start):
        fitted_on.extend(observations)
        return CardFit(start.params, [0.0021, 0.0039], [0.0022, 0.0037], 3.0, 0.05, 0.06, 0.3, 0.075, 0.08, 0)

    monkeypatch.setattr(gpu_calibration, "fit_on_card", fit_on_card)
    said = []
    suite = [(model, "infer", 8, "bf16") for model in "abcd"]
    calibration = calibrate_gpu(suite, on_progress=said.append)
    assert fitted_on == [("a", 0.002), ("d", 0.004)]
    assert [o["model"] for o in calibration.observations] == ["a", "d"]
    # each configuration's step as the saved fit prices it and as a fit that did not see it did
    assert [(o["fitted_s"], o["held_out_s"], o["held_out"]) for o in calibration.observations] == [
        (0.0021, 0.0022, True), (0.0039, 0.0037, True)]
    assert (calibration.prior_weight, calibration.fit_error_median, calibration.fit_error_p90, calibration.start_error_median,
            calibration.holdout_error_median, calibration.holdout_error_p90, calibration.prior_holdout_error_median) == (
        3.0, 0.05, 0.06, 0.3, 0.075, 0.08, 0.3)  # the prior judged on every configuration: one error
    assert calibration.device == "h100" and calibration.device_name == "NVIDIA H100 80GB HBM3"
    assert said == ["[1/4] a infer batch 8 bf16: 2.000 ms", "[2/4] b infer 8 bf16: skipped (error: OOM)",
                    "[3/4] c infer 8 bf16: skipped (no time measured)", "[4/4] d infer batch 8 bf16: 4.000 ms"]
    assert list((tmp_path / "calibrations").iterdir()) == []


def test_a_refused_fit_keeps_what_was_measured(monkeypatch, tmp_path):
    """Minutes of GPU time are not lost with a refused fit: calibrate_gpu raises
    CalibrationRefused holding every configuration measured (not those that failed) and the
    file beside the cache entry that keeps them; the progress file is gone, so that the next
    calibration measures afresh instead of refitting the refused steps."""
    import torch

    from vitbench.timemodel import gpu_calibration
    from vitbench.timemodel.gpu_calibration import CalibrationRefused, calibrate_gpu
    from vitbench.timemodel.gpu_records import read_file

    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *args: "NVIDIA H200")
    times = {"a": {"status": "ok", "latency_p50_s": 0.002}, "b": {"status": "error", "error": "OOM"}}
    monkeypatch.setattr(gpu_calibration, "measure_step", lambda model, *args: times[model])
    monkeypatch.setattr(gpu_calibration, "observation", lambda *args: args)

    def refuse(observations, start):
        raise CalibrationError("the fit predicts its 1 configurations ... no better than the published parameters")

    monkeypatch.setattr(gpu_calibration, "fit_on_card", refuse)
    with pytest.raises(CalibrationRefused, match="^the fit predicts its 1 configurations") as caught:
        calibrate_gpu([("a", "train", 64, "tf32"), ("b", "infer", 8, "bf16")])
    assert (caught.value.device, caught.value.device_name, caught.value.torch_version) == ("h200", "NVIDIA H200", torch.__version__)
    assert caught.value.measured == [dict(model="a", mode="train", batch_size=64, precision="tf32", measured_s=0.002)]
    [kept] = (tmp_path / "calibrations").iterdir()
    assert caught.value.path == kept and kept.name.startswith("cuda-NVIDIA-H200-torch") and ".refused-" in kept.name
    assert [(r.model, r.measured_s) for r in read_file(kept, "vm", "h200", "calibration")] == [("a", 0.002)]


@pytest.mark.parametrize("cache", ["writable", "a file"])
def test_calibrate_cuda_refused_is_one_line_naming_the_kept_step_times(monkeypatch, capsys, tmp_path, cache):
    """`vitbench calibrate --device cuda` whose fit is refused: exit 2, one line with the reason and
    the file holding the measured step times (beside the card's cache entry; in the temporary
    folder when the cache cannot be written), which the recorded-measurement reader reads back."""
    import re
    import tempfile

    import torch

    from vitbench.cli import main
    from vitbench.timemodel import gpu_calibration
    from vitbench.timemodel.gpu_calibration import MEASUREMENTS_KIND, CalibrationRefused
    from vitbench.timemodel.gpu_records import read_file

    root = tmp_path / "cache"
    if cache == "a file":
        root.write_text("not a folder")
    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(root))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    measured = [dict(model="vit-b/16", mode="infer", batch_size=256, precision="bf16", measured_s=0.03),
                dict(model="resnet50", mode="train", batch_size=128, precision="tf32", measured_s=0.06)]

    def refused(**kwargs):
        raise CalibrationRefused("the fit predicts its 2 configurations no better", "h100", "NVIDIA H100 80GB HBM3",
                                 "2.15.0", measured)

    monkeypatch.setattr(gpu_calibration, "calibrate_gpu", refused)
    assert main(["calibrate", "--device", "cuda", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    kept = re.fullmatch(r"vitbench: error: the fit predicts its 2 configurations no better; its 2 measured step times "
                        r"are kept in '(.+)'\n", err)
    assert kept, err
    path = Path(kept.group(1))
    if cache == "writable":
        assert path.parent == root / "calibrations"
        assert re.fullmatch(r"cuda-NVIDIA-H100-80GB-HBM3-torch2\.15\.0\.refused-\d{8}T\d{6}\.json", path.name)
    else:
        assert path.parent == tmp_path and path.name.startswith("vitbench-gpu-measurements-")
    document = json.loads(path.read_text())
    assert document["kind"] == MEASUREMENTS_KIND and document["refused"] == "the fit predicts its 2 configurations no better"
    rows = read_file(path, "my-vm", "h100", "calibration")
    assert [(r.model, r.mode, r.batch_size, r.precision, r.measured_s) for r in rows] == [
        ("vit-b/16", "infer", 256, "bf16", 0.03), ("resnet50", "train", 128, "tf32", 0.06)]
