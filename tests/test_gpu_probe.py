"""The GPU session's prepared script (issue 48), checked without a GPU: probe.sh parses, the
kernel-records reducer charges kernels, launch calls and synchronisations to the right operator
(synthetic CUDA-like profiler events), a real CPU run of ``kernel_records.py`` appends one
configuration's rows at a time under the documented columns, and the timm harness wrapper maps
every configuration of ``predict_vs_profile.py`` and hides fvcore from the harness."""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

GPU = Path(__file__).resolve().parent.parent / "benchmarks" / "gpu"
TINY = "vit-ti/16+depth=1+img_size=32"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"gpu_{name}", GPU / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kr = _load("kernel_records")
tc = _load("timm_cases")


def _rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def test_probe_script_parses_and_names_the_new_phases():
    subprocess.run(["bash", "-n", str(GPU / "probe.sh")], check=True)
    text = (GPU / "probe.sh").read_text()
    for phase in ("kernels)", "timm)", "calibrate)", "predict)", "traces)"):
        assert phase in text


@pytest.mark.slow  # traces a training step three ways: a few seconds
def test_trace_parity_runs_here_and_the_two_traces_count_the_same_macs(tmp_path, monkeypatch):
    """On the device it compares the in-thread trace with the GPU's own; here (no GPU) with the
    CPU trace: the same MACs, and a row saying what differs (cuDNN's batch norm on a GPU)."""
    trace_parity = _load("trace_parity")
    monkeypatch.setattr(trace_parity, "CONFIGS", (("resnet18", "fp16"),))
    monkeypatch.setattr(sys, "argv", ["trace_parity.py", "--out", str(tmp_path / "parity.csv"), "--batch", "2"])
    assert trace_parity.main() == 0
    _, rows = _rows(tmp_path / "parity.csv")
    sides = {row["side"]: row for row in rows}
    assert set(sides) == {"in-thread", "on the CPU (no GPU here)", "differing (in-thread, reference)"}
    assert sides["in-thread"]["macs"] == sides["on the CPU (no GPU here)"]["macs"] != "0"
    assert "cudnn_batch_norm float16" in sides["differing (in-thread, reference)"]["attention"]


# --- the reducer on CUDA-like events ---------------------------------------------------------

def _event(name, start, end, parent=None, kernels=(), device=None, shapes=None, dtypes=None):
    from torch.autograd import DeviceType
    from torch.autograd.profiler_util import Kernel

    event = SimpleNamespace(
        name=name, device_type=device or DeviceType.CPU, is_async=False, cpu_parent=parent, cpu_children=[],
        kernels=[Kernel(k, 0, us) for k, us in kernels], input_shapes=shapes or [], input_dtypes=dtypes or [],
        time_range=SimpleNamespace(elapsed_us=lambda: end - start))
    if parent is not None:
        parent.cpu_children.append(event)
    return event


def test_reducer_charges_kernels_launches_and_waits_to_their_operator():
    from torch.autograd import DeviceType

    linear = _event("aten::linear", 0, 100)
    t = _event("aten::t", 10, 20, linear)
    addmm = _event("aten::addmm", 20, 90, linear, kernels=[("sm90_gemm", 50.0)], shapes=[[8, 4], [4, 4]],
                   dtypes=["c10::BFloat16", "c10::BFloat16"])
    launch = _event("cudaLaunchKernel", 30, 40, addmm)
    item = _event("aten::item", 100, 300)
    dense = _event("aten::_local_scalar_dense", 110, 290, item, kernels=[("Memcpy DtoH (Device -> Pinned)", 2.0)])
    copy = _event("cudaMemcpyAsync", 120, 130, dense)
    wait = _event("cudaStreamSynchronize", 130, 280, dense)
    sync = _event("cudaDeviceSynchronize", 300, 400)
    device = [_event("sm90_gemm", 0, 50, device=DeviceType.CUDA),
              _event("Memcpy DtoH (Device -> Pinned)", 0, 2, device=DeviceType.CUDA),
              _event("stray_kernel", 0, 7, device=DeviceType.CUDA)]
    events = [linear, t, addmm, launch, item, dense, copy, wait, sync, *device]

    rows, per_step = kr.reduce_events(events, steps=1)
    by_op = {r["op"]: r for r in rows}
    assert set(by_op) == {"aten::linear", "aten::t", "aten::addmm", "aten::item", "aten::_local_scalar_dense",
                          "cudaDeviceSynchronize", kr.UNATTRIBUTED}  # launch calls are charged, not rows
    assert by_op["aten::linear"]["host_self_us"] == 20  # 100 - t (10) - addmm (70)
    assert (by_op["aten::addmm"]["host_self_us"], by_op["aten::addmm"]["runtime_us"]) == (70, 10)  # launch included
    assert (by_op["aten::addmm"]["device_us"], by_op["aten::addmm"]["launches"]) == (50, 1)
    assert by_op["aten::addmm"]["kernels"] == "sm90_gemm" and by_op["aten::addmm"]["parent"] == "aten::linear"
    assert json.loads(by_op["aten::addmm"]["input_shapes"]) == [[8, 4], [4, 4]]
    assert json.loads(by_op["aten::addmm"]["input_dtypes"]) == ["c10::BFloat16", "c10::BFloat16"]
    dense_row = by_op["aten::_local_scalar_dense"]
    assert (dense_row["host_self_us"], dense_row["runtime_us"], dense_row["sync_us"]) == (30, 160, 150)  # the wait is not dispatch
    assert (by_op["cudaDeviceSynchronize"]["sync_us"], by_op["cudaDeviceSynchronize"]["host_self_us"]) == (100, 0)
    assert (by_op[kr.UNATTRIBUTED]["kernels"], by_op[kr.UNATTRIBUTED]["device_us"]) == ("stray_kernel", 7)
    assert per_step["host_self_us"] == 20 + 10 + 70 + 20 + 30
    assert per_step["device_us"] == 50 + 2 + 7 and per_step["unattributed_device_us"] == 7
    assert per_step["sync_us"] == 250 and per_step["aten_calls"] == 5 and per_step["launches"] == 3
    assert kr.reduce_events(events, steps=2)[1]["host_self_us"] == per_step["host_self_us"] / 2


def test_the_list_covers_the_calibration_suite_and_the_families():
    from vitbench.timemodel.gpu_calibration import SUITE

    configs = kr.configurations()
    assert len(configs) == len(set(configs))
    assert set(SUITE) <= set(configs)
    assert 20 <= len({m for m, *_ in configs if m.startswith("timm:")}) <= 30
    for family in ("vit_", "deit", "swin", "convnext", "resnet", "efficientnet", "mobilenet", "regnet",
                   "efficientformerv2", "nest", "cait", "vgg"):
        assert any(family in m for m, *_ in configs), family
    assert {p for *_, p in configs} >= {"bf16", "fp16", "fp32", "tf32"}
    assert any(mode == "train" and m.startswith("timm:") for m, mode, *_ in configs)


# --- a real run on the CPU --------------------------------------------------------------------

def test_a_cpu_run_appends_each_configuration_as_it_finishes(tmp_path, monkeypatch):
    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path / "cache"))
    out, summary = tmp_path / "k.csv", tmp_path / "k_summary.csv"
    quick = ["--device", "cpu", "--out", str(out), "--profile-steps", "2", "--warmup", "1", "--min-run-time", "0.01"]

    assert kr.main([*quick, "--config", f"{TINY},infer,1,fp32"]) == 0
    columns, first = _rows(out)
    assert tuple(columns) == kr.RECORD_COLUMNS
    assert first and {(r["model"], r["mode"], r["batch_size"], r["precision"]) for r in first} == {(TINY, "infer", "1", "fp32")}
    assert all(r["kernels"] == "" and float(r["device_us"]) == 0 for r in first)  # CPU activities only
    assert all(int(r["calls"]) % 2 == 0 for r in first if r["op"].startswith("aten::"))  # 2 identical steps
    assert any(r["op"] == "aten::addmm" and float(r["host_self_us"]) > 0 for r in first)
    assert {r["step_wall_s"] for r in first} != {""} and {r["profile_steps"] for r in first} == {"2"}
    text = out.read_text()

    assert kr.main([*quick, "--config", f"{TINY},infer,2,fp32", "--config", "resnet18,infer,1,fp16"]) == 0
    assert out.read_text().startswith(text)  # appended, the first configuration's rows untouched
    assert out.read_text().count("model,mode,batch_size") == 1
    _, both = _rows(out)
    assert {r["batch_size"] for r in both} == {"1", "2"}
    scolumns, rows = _rows(summary)
    assert tuple(scolumns) == kr.SUMMARY_COLUMNS
    assert [(r["batch_size"], r["status"]) for r in rows] == [("1", "ok"), ("2", "ok"), ("1", "skipped")]
    assert float(rows[0]["host_self_s"]) > 0 and float(rows[0]["aten_calls"]) > 0 and int(rows[0]["rows"]) == len(first)

    assert kr.main([*quick, "--config", f"{TINY},infer,3,fp32", "--max-seconds", "0"]) == 0  # stops before it
    assert kr.main([*quick, "--config", f"{TINY},infer,1,fp32", "--resume"]) == 0  # already done: skipped
    assert len(_rows(summary)[1]) == 3 and _rows(out)[1] == both
    meta = json.loads((tmp_path / "k_meta.json").read_text())
    assert meta["argv"][0] == "kernel_records.py" and meta["device"] == "cpu"


# --- timm's harness ---------------------------------------------------------------------------

def test_every_predict_vs_profile_case_maps_to_timm_arguments():
    cases = tc.cases()
    sys.path.insert(0, str(GPU))
    try:
        from predict_vs_profile import CASES
    finally:
        sys.path.remove(str(GPU))
    assert sorted(cases) == sorted(CASES) and cases[0][3] == "fp16"
    keys = [tc.key_of(i, c) for i, c in enumerate(cases)]
    assert len(set(keys)) == len(keys) and all("/" not in k and ":" not in k for k in keys)
    for case in cases:
        args = tc.timm_args(case)
        assert "--use-train-size" in args and "--no-retry" in args and args[args.index("-b") + 1] == str(case[2])
        assert ("--opt" in args) == (case[1] == "train")
    assert tc.timm_args(("vit-b/16", "infer", 8, "bf16"))[:2] == ["--model", "vit_base_patch16_224"]
    assert tc.timm_args(("timm:convnext_tiny", "train", 8, "fp16"))[-3:] == ["--amp", "--opt", "adamw"]


def test_the_harness_copy_is_timms_file_with_its_source():
    text = (GPU / "timm_benchmark.py").read_text()
    head = text.splitlines()[:9]
    assert head[0] == "#!/usr/bin/env python3"
    assert any("github.com/huggingface/pytorch-image-models/blob/" in line for line in head)
    assert "has_fvcore_profiling" in text and "def write_results" in text


@pytest.mark.slow
def test_the_harness_runs_without_counting_flops(tmp_path):
    """A tiny timm model on the CPU through the wrapper: timed, and no FLOP count (fvcore is
    hidden even where it is installed)."""
    out = tmp_path / "r.json"
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import timm_cases; "
            "timm_cases.run_harness(sys.argv[2:])")
    subprocess.run([sys.executable, "-c", code, str(GPU), "--model", "test_vit", "--device", "cpu", "-b", "2",
                    "--bench", "inference", "--num-warm-iter", "1", "--num-bench-iter", "5",
                    "--results-file", str(out), "--results-format", "json"], check=True, capture_output=True, timeout=300)
    result = json.loads(out.read_text())
    assert result["infer_samples_per_sec"] > 0
    assert "infer_gmacs" not in result


def test_dtypes_come_from_the_raw_events_when_function_events_lack_them():
    op = _event("aten::mm", 0, 10, shapes=[[2, 2], [2, 2]])
    op.input_dtypes, op.id = None, 41
    rows, _ = kr.reduce_events([op], steps=1, dtypes={41: ["c10::Half", "c10::Half"]})
    assert json.loads(rows[0]["input_dtypes"]) == ["c10::Half", "c10::Half"]
    assert json.loads(kr.reduce_events([op], steps=1)[0][0]["input_dtypes"]) == []
