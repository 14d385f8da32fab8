"""A CPU calibration says how long it takes and shows its steps as they start (issue 46: the first
`predict` calibrated for 155 s, silently, where its help said about 30 s), and is quicker where
that costs no accuracy: in a training step, an operator call like one already timed is not timed
again; a call as long as 25 timing blocks is timed once. The real measurement is replaced: these tests are about
the counting and relaying, not the rates."""

from __future__ import annotations

import json
import sys
import time

import pytest
from _calibrations import synthetic

from vitbench.cli import main
from vitbench.timemodel import probes
from vitbench.timemodel.calibration import CPU_CALIBRATION_TIME, worker


def test_the_worker_s_progress_lines_reach_on_step_and_the_rest_of_stderr_is_kept():
    marker = worker.PROGRESS_MARKER
    code = (f"import sys; print('{marker}0 2 matrix products', file=sys.stderr, flush=True); "
            f"print('a warning', file=sys.stderr); print('{marker}1 2 probes', file=sys.stderr); print('{{}}')")
    heard: list[tuple[int, int, str]] = []
    status, out, err = worker._run_worker([sys.executable, "-c", code], {}, 60.0, lambda *step: heard.append(step))
    assert status == 0 and out.strip() == "{}" and err == "a warning\n"
    assert heard == [(0, 2, "matrix products"), (1, 2, "probes")]
    assert worker._progress(f"{marker}x 2 y") is None and worker._progress("plain") is None


def test_a_worker_past_its_time_is_stopped():
    with pytest.raises(worker.CalibrationError, match="took over 0 s"):
        worker._run_worker([sys.executable, "-c", "import time; time.sleep(30)"], {}, 0.2, None)


def test_the_steps_are_the_grid_rows_the_additions_the_probes_and_the_kernel_grids():
    labels = worker.calibration_steps(("bfloat16", "float32"))
    assert len(labels) == 2 * len(worker.GEMM_M) + 1 + 2 * len(probes.probes()) + 2
    assert labels[0] == "matrix products, bfloat16, m = 1 (25 shapes)"
    assert labels[len(worker.GEMM_M)] == "matrix products, float32, m = 1 (25 shapes)"
    assert labels[-1].startswith("convolutions (")


def test_the_probes_announce_each_step_in_the_order_counted(monkeypatch):
    monkeypatch.setattr(probes, "run_probe", lambda *a, **k: ([], 1e-3))
    monkeypatch.setattr(probes, "median_seconds", lambda *a, **k: 1e-4)
    heard: list[str] = []
    probes.time_probes(time.process_time, 1, 0.002, on_step=heard.append)
    monkeypatch.setattr(probes, "ATTENTION_GRID", ((2, 4, 8),))
    monkeypatch.setattr(probes, "CONV_LIST", ((1, 3, 8, 4, 3, 1, 1),))

    class Untimed(probes.OpTimer):  # a dispatch mode's first use imports torch._dynamo: seconds
        def mode(self):
            import contextlib

            return contextlib.nullcontext()

    monkeypatch.setattr(probes, "OpTimer", Untimed)
    probes.time_kernels(time.process_time, 1, 0.002, on_step=heard.append)
    assert heard == [*probes.probe_steps(), *probes.kernel_steps()]


class Clock:
    """A CPU clock that advances ``per_call`` seconds each time ``run`` is called."""

    def __init__(self, per_call: float) -> None:
        self.now, self.per_call, self.calls = 0.0, per_call, 0

    def __call__(self) -> float:
        return self.now

    def run(self) -> None:
        self.calls += 1
        self.now += self.per_call


def test_a_long_call_is_timed_once_after_its_warm_up():
    long = Clock(0.05)  # 25 blocks of 2 ms
    assert probes.median_seconds(long.run, long, 1, 0.002) == pytest.approx(0.05)
    assert long.calls == 2
    short = Clock(0.049)  # just under: three blocks of one call
    assert probes.median_seconds(short.run, short, 1, 0.002) == pytest.approx(0.049)
    assert short.calls == 4
    quick = Clock(0.0005)  # four calls a block of 2 ms
    probes.median_seconds(quick.run, quick, 1, 0.002)
    assert quick.calls == 1 + 3 * 4


def test_a_call_like_one_already_timed_takes_its_time():
    torch = pytest.importorskip("torch")
    timed: list[int] = []
    real = probes.median_seconds

    def counting(run, clock, threads, block_s, blocks=3):
        timed.append(1)
        return real(run, clock, threads, block_s, blocks)

    timer = probes.OpTimer(time.process_time, 1, 1e-4)
    a, b, c = torch.randn(8, 8), torch.randn(8, 8), torch.randn(8, 4)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(probes, "median_seconds", counting)
        with torch.inference_mode(), timer.mode():
            torch.mm(a, b)
            torch.mm(b, a)  # the same shapes: not timed again
            torch.mm(a, c)  # another shape: timed
    assert len(timer.samples) == 3 and len(timed) == 2
    assert timer.samples[0][1] == timer.samples[1][1]
    # an inference step's copies are timed anew (its operators' sum is fitted against)
    timed.clear()
    anew = probes.OpTimer(time.process_time, 1, 1e-4, reuse=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(probes, "median_seconds", counting)
        with torch.inference_mode(), anew.mode():
            torch.mm(a, b)
            torch.mm(b, a)
    assert len(anew.samples) == 2 and len(timed) == 2
    assert probes.call_key("mm", (a, b), {}) == probes.call_key("mm", (b, a), {})
    assert probes.call_key("mm", (a, b), {}) != probes.call_key("mm", (a, b.t()), {})  # strides differ
    assert probes.call_key("add", (a, 1), {}) != probes.call_key("add", (a, 2), {})


def test_calibrate_states_its_time_and_shows_each_step(monkeypatch, tmp_path, capsys):
    def fake(device, threads, precisions, on_step=None):
        for index, label in enumerate(("matrix products, float32, m = 1 (25 shapes)", "probe tokens-32px-d32, infer")):
            on_step(index, 2, label)
        return synthetic()

    monkeypatch.setattr(worker, "calibrate", fake)
    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["calibrate", "--format", "json"]) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines[0] == f"vitbench: calibrate: calibrating the CPU in a worker process ({CPU_CALIBRATION_TIME})"
    assert "vitbench: calibrate: [1/2] matrix products, float32, m = 1 (25 shapes)" in lines
    assert "vitbench: calibrate: [2/2] probe tokens-32px-d32, infer" in lines
    assert json.loads(captured.out)["records"][0]["device"] == "cpu"


def test_a_prediction_that_calibrates_tells_each_step(monkeypatch, tmp_path):
    from vitbench.timemodel import run

    def fake(device, threads, precisions, on_step=None):
        on_step(0, 19, "matrix products, float32, m = 1 (25 shapes)")
        return synthetic(threads=threads)

    monkeypatch.setattr(run, "calibrate", fake)
    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path / "cache"))
    heard: list[str] = []
    run.resolve_calibration("cpu", 1, on_calibrate=heard.append)
    assert heard[0].startswith("calibrating the CPU at 1 thread (once per machine") and CPU_CALIBRATION_TIME in heard[0]
    assert heard[1] == "calibration [1/19] matrix products, float32, m = 1 (25 shapes)"


def test_only_a_training_step_reuses_the_times_of_its_copies(monkeypatch):
    pytest.importorskip("torch")
    made: list[bool] = []
    real = probes.OpTimer

    class Recording(real):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self.reuse)

    monkeypatch.setattr(probes, "OpTimer", Recording)
    monkeypatch.setattr(probes, "median_seconds", lambda *a, **k: 1e-4)
    for mode in ("infer", "train"):
        probes.run_probe(lambda: probes.conv_network(4), (1, 3, 8, 8), mode, time.process_time, 1, 1e-4)
    assert made == [False, True]


def test_a_long_whole_step_is_still_timed_in_blocks():
    step = Clock(0.5)
    assert probes.median_seconds(step.run, step, 1, 0.008, blocks=5, long_once=False) == pytest.approx(0.5)
    assert step.calls == 6


def test_the_token_probes_written_out_attention_is_scaled_dot_product_attention():
    """The third block writes attention out (scores, softmax, product: the operators of a
    model without SDPA); with the fused blocks' weights it computes what SDPA does."""
    import torch

    net = probes.token_network(8, 4, 16, 2).eval()
    fused, written = net.blocks[0], net.blocks[2]
    written.load_state_dict(fused.state_dict())
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        torch.testing.assert_close(written(x), fused(x))


def test_a_probe_records_its_forward_and_a_training_probe_its_dropout_backward_and_optimizer(monkeypatch):
    monkeypatch.setattr(probes, "median_seconds", lambda *a, **k: 1e-4)
    recorded = {}
    for mode in ("infer", "train"):
        samples, step_s = probes.run_probe(lambda: probes.token_network(8, 4, 16, 2), (2, 3, 8, 8), mode,
                                           time.process_time, 1, 1e-4)
        recorded[mode] = {op.name for op, _ in samples}
        assert step_s == 1e-4
    assert {"conv2d", "linear", "scaled_dot_product_attention", "layer_norm", "softmax"} <= recorded["infer"]
    assert {"bernoulli_", "convolution_backward", "addcdiv_"} <= recorded["train"]  # dropout, backward, AdamW


@pytest.mark.slow  # builds five models and runs each once at 224 px: about 5 s
def test_the_calibrations_convolutions_are_layers_of_the_models_people_run():
    """The stems and patch embeddings, ResNet's 3x3 and 1x1 layers, ConvNeXt's depthwise 7x7,
    MobileNet-V3's narrow and depthwise layers and a CIFAR ResNet-18's (torchvision's with the
    usual 3x3 stem and no max-pool, at 32 px) of the list are those models' own layers, read
    from torchvision's, timm's and vitbench's modules by a hook on every Conv2d (channels in,
    input size, channels out, kernel, stride, groups)."""
    import timm
    import torch
    import torchvision

    from vitbench.models.references import resolve

    def layers(model, size: int = 224) -> set[tuple[int, ...]]:
        found = set()

        def hook(module, inputs, _):
            found.add((module.in_channels, inputs[0].shape[-1], module.out_channels, module.kernel_size[0],
                       module.stride[0], module.groups))

        for module in model.modules():
            if isinstance(module, torch.nn.Conv2d):
                module.register_forward_hook(hook)
        with torch.no_grad():
            model.eval()(torch.zeros(1, 3, size, size))
        return found

    models = {"resnet50": torchvision.models.resnet50(), "vit-ti/16": resolve("vit-ti/16").build(),
              "convnext_tiny": timm.create_model("convnext_tiny"),
              "mobilenet_v3_large": torchvision.models.mobilenet_v3_large(),
              "mobilenet_v3_small": torchvision.models.mobilenet_v3_small()}
    cifar = torchvision.models.resnet18(num_classes=10)
    cifar.conv1, cifar.maxpool = torch.nn.Conv2d(3, 64, 3, 1, 1, bias=False), torch.nn.Identity()
    seen = set().union(*(layers(model) for model in models.values()), layers(cifar, 32))
    synthetic = {(16, 56, 16, 3, 1, 1), (64, 56, 64, 3, 1, 64)}  # a narrow 3x3 and a depthwise 3x3 at 56 px
    listed = {conv[1:] for conv in probes.CONV_LIST}
    assert listed - synthetic <= seen, sorted(listed - synthetic - seen)
    assert len(listed - synthetic) == 21
