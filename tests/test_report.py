"""Reports: rendered markdown with tables, PNG plots and conclusions computed from the numbers."""

from __future__ import annotations

import re
import textwrap

import pytest

from vitbench.analytic import complexity
from vitbench.analytic.scaling import attention_linear_crossover
from vitbench.cli import main
from vitbench.presets import resolve
from vitbench.specs import spec_key
from vitbench.store import Store
from vitbench.studies import report

STUDY = """
    name: mini
    description: a small analytic study
    studies:
      - name: patch
        models: [cifar-vit/4]
        grid: {patch_size: [4, 8, 16]}
      - name: resolution
        models: [vit-ti/16, vit-b/16, resnet50]
        grid: {img_size: [224, 384, 512]}
      - name: ablation
        models: [ablation-vit, ablation-vit-nopos, ablation-vit-meanpool, ablation-vit-pos2d]
"""


def test_attention_outgrows_linear_layers_at_2d_plus_m():
    # Per layer: attention matmuls 2 n^2 d; linear layers qkv 3 n d^2 + proj n d^2 + fc1/fc2 2 n d m.
    # 2 n^2 d > n d (4d + 2m)  <=>  n > 2d + m.  ViT-B: 2*768 + 3072 = 4608, so the first n is 4609.
    assert attention_linear_crossover(768, 12, 3072) == (4609, 4608)
    # ViT-S: 2*384 + 1536 = 2304; the ablation ViT: 2*256 + 512 = 1024.
    assert attention_linear_crossover(384, 6, 1536) == (2305, 2304)
    assert attention_linear_crossover(256, 8, 512) == (1025, 1024)


@pytest.fixture(scope="module")
def mini_report(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    path = root / "mini.yaml"
    path.write_text(textwrap.dedent(STUDY))
    result = report(str(path), root / "out")
    return result, (root / "out" / "report.md").read_text()


@pytest.mark.slow
def test_report_has_tables_plots_and_a_reproduce_line(mini_report):
    result, text = mini_report
    assert {p.name for p in result.plots} >= {"patch_size.png", "resolution.png", "attention_share.png"}
    for plot in result.plots:
        assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({plot.name})" in text
    assert text.count("\n|---") + text.count("\n|--") >= 5  # markdown tables
    assert "**Reproduce:** `vitbench report " in text and "mini.yaml" in text
    assert "FLOPs = 2 x MACs" in text
    assert (result.out / "results.csv").exists() and (result.out / "tables" / "resolution.csv").exists()


def test_the_returned_paths_point_at_the_finished_report_not_its_staging_folder(mini_report):
    # The report is built in a staging folder and swapped in; every path handed back, the
    # sweep's results store included, must name where the files now are.
    result, _ = mini_report
    assert result.sweep.out == result.out and result.out.name == "out"
    assert not any(part.endswith(".building") for part in result.sweep.out.parts)
    assert len(result.sweep.records) == result.rows > 0
    assert result.report.parent == result.out and result.report.exists()


def test_resolution_conclusion_matches_an_independent_scan(mini_report):
    _, text = mini_report
    # ViT-B/16 vs ResNet-50 never cross: check three resolutions directly.
    for res in (32, 224, 1024):
        assert complexity(resolve("vit-b/16", img_size=res)).macs > complexity(resolve("resnet50", img_size=res)).macs
    assert "vit-b/16 vs resnet50, analytic scan (multiples of 16 px, 16-1024 px): no crossover: vit-b/16 needs more MACs" in text
    assert "Sweep rows: no change of order: vit-b/16 needs more MACs than resnet50 at 224, 384, 512 px" in text
    # ViT-Ti/16 passes ResNet-50 between 896 and 928 px (the scan steps by 16 px).
    at = {res: complexity(resolve("vit-ti/16", img_size=res)).macs - complexity(resolve("resnet50", img_size=res)).macs for res in (912, 928)}
    assert at[912] < 0 < at[928]
    assert "vit-ti/16 vs resnet50, analytic scan (multiples of 16 px, 16-1024 px): the curves cross between 912 and 928 px" in text
    assert "vit-ti/16 needs fewer MACs than resnet50 at 16-912 px, more at 928-1024 px" in text
    ratio = complexity(resolve("vit-b/16")).macs / complexity(resolve("resnet50")).macs
    assert f"{ratio:.3g}x at 224" in text  # 17.56 G / 4.089 G = 4.3x


def test_patch_and_ablation_conclusions_are_computed(mini_report):
    _, text = mini_report
    p4, p16 = complexity(resolve("cifar-vit/4")), complexity(resolve("cifar-vit/16"))
    assert f"multiplies MACs per image by {p4.macs / p16.macs:.3g}x" in text
    # Ablation: no positions removes n d = 17 * 256 = 4,352 parameters; mean pooling drops the
    # CLS token (256) and one position (256): 512.
    assert "ablation-vit-nopos: -4,352 params, +0 MACs" in text
    assert "ablation-vit-meanpool: -512 params" in text
    assert "from n = 4,609 tokens" in text


def _measured_store(path):
    """A store of measured-looking rows with known numbers, to check what the report computes."""
    spec = resolve("mnist-vit")
    with Store.open(path) as store:
        for mode in ("infer", "train"):
            for batch in (1, 2, 4, 8):
                row = complexity(spec, batch).as_record()
                row.update(
                    id=f"{mode}{batch}", index=batch, spec_key=spec_key(spec), status="ok", device="cpu",
                    mode=mode, precision="fp32", throughput_img_s=100.0 * batch ** 0.5,
                    latency_p50_s=batch / (100.0 * batch ** 0.5), n_samples=7, samples_s=[0.01, 0.011],
                    # exactly 3 MiB + 1 MiB per image
                    peak_memory_bytes=3 * 2**20 + batch * 2**20,
                    pred_peak_memory_bytes=2 * 2**20 + batch * 2**20,
                    # the time model: predicted = measured x (1 + 0.02 b) in inference, x 0.9 in training
                    pred_latency_s=batch / (100.0 * batch ** 0.5) * (1 + 0.02 * batch if mode == "infer" else 0.9),
                    pred_basis="calibration:cpu:test cpu:2 threads:torch 2.x",
                    env_torch="2.x", env_threads=2, env_device_name="test cpu",
                )
                store.add(row)


@pytest.mark.slow
def test_measured_sections_from_a_store(tmp_path, capsys):
    _measured_store(tmp_path / "store")
    assert main(["report", str(tmp_path / "store"), "--out", str(tmp_path / "rep"), "-q"]) == 0
    text = (tmp_path / "rep" / "report.md").read_text()
    names = {p.name for p in (tmp_path / "rep").glob("*.png")}
    assert {"throughput_vs_batch.png", "peak_memory_vs_batch.png", "memory_predicted_vs_measured.png"} <= names
    # Least squares over (b, 3 MiB + b MiB): intercept 3 MiB, slope 1 MiB per image.
    assert "peak memory ~ 3.00 MiB + 1.00 MiB per image" in text
    # throughput 100 -> 100 * sqrt(8) = 282.8 img/s: 2.83x
    assert "100 img/s at batch 1 -> 282.8 img/s at batch 8 (2.83x)" in text
    # measured / predicted: (3 + b) / (2 + b) for b = 1, 2, 4, 8: median of 4/3, 5/4, 7/6, 11/10
    ratios = sorted([4 / 3, 5 / 4, 7 / 6, 11 / 10])
    assert f"median {(ratios[1] + ratios[2]) / 2:.3f}" in text
    assert "torch 2.x" in text and "test cpu" in text
    assert (tmp_path / "rep" / "results.json").exists()
    # time model: |predicted / measured - 1| = 0.02 b for b = 1, 2, 4, 8 in inference (median of
    # 2%, 4%, 8%, 16% = 6%; 90th percentile by nearest rank: 16%), 10% for every training row
    assert "time_predicted_vs_measured.png" in names
    assert "infer: |predicted / measured - 1| median 6.0%, 90th percentile 16.0% over 4 configurations" in text
    assert "train: |predicted / measured - 1| median 10.0%, 90th percentile 10.0% over 4 configurations" in text


@pytest.mark.slow
def test_report_refuses_to_overwrite_other_results(tmp_path, capsys):
    _measured_store(tmp_path / "a")
    _measured_store(tmp_path / "b")
    assert main(["report", str(tmp_path / "a"), "--out", str(tmp_path / "b"), "-q"]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "a"), "--out", str(tmp_path / "b"), "-q", "--force"]) == 0


@pytest.mark.slow  # about 1 s or more: the default suite stays under 2 minutes on 2 cores (CI runs -m slow)
def test_rerunning_a_study_into_another_sweeps_results_needs_force(tmp_path, capsys):
    _measured_store(tmp_path / "store")  # results of a sweep that is not "mini"
    path = tmp_path / "mini.yaml"
    path.write_text("name: mini\nmodels: [vit-ti/16]\n")
    assert main(["report", str(path), "--out", str(tmp_path / "store"), "-q"]) == 2
    assert "another sweep" in capsys.readouterr().err
    assert main(["report", str(path), "--out", str(tmp_path / "fresh"), "-q"]) == 0
    assert main(["report", str(path), "--out", str(tmp_path / "fresh"), "-q"]) == 0  # its own rows: rerun


@pytest.mark.parametrize("name", ["missing-dir", "notes.txt"])
def test_bad_report_source_is_one_line_exit_2(tmp_path, capsys, name):
    if name.endswith(".txt"):
        (tmp_path / name).write_text("hello")
    assert main(["report", str(tmp_path / name), "--out", str(tmp_path / "o"), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("vitbench: error:")


@pytest.mark.slow
def test_a_real_measured_sweep_renders(tmp_path):
    pytest.importorskip("torch")
    path = tmp_path / "m.yaml"
    path.write_text(textwrap.dedent("""
        models: [mnist-vit]
        batch_sizes: [1, 4]
        stages: [analytic, measured]
        measure: {device: cpu, mode: [infer], min_run_time_s: 0.05, warmup: 1, runs: 2}
    """))
    result = report(str(path), tmp_path / "out")
    text = result.report.read_text()
    rows = [r for r in result.sweep.records if r["status"] == "ok"]
    assert len(rows) == 2 and all(r["throughput_img_s"] > 0 for r in rows)
    assert "throughput_vs_batch.png" in text
    assert re.search(r"mnist-vit infer fp32: [\d.]+ img/s at batch 1", text)
