"""The report's issue-12 behaviour: measured conclusions only from stable rows (withheld with the
reason otherwise), measured transformer-vs-CNN pairs and a resolution column in user studies,
source-document sections only in the default study, honest axes and distinct colours, and
`report --threads/--device/--runs`."""

from __future__ import annotations

import re

import pytest

from vitbench.analytic import complexity
from vitbench.cli import main
from vitbench.presets import resolve
from vitbench.specs import spec_key
from vitbench.store import Store
from vitbench.studies import report

UNSTABLE = (
    "unstable timing: CV 30.0%, IQR/median 20.0% over 7 samples (> 10%); rerun with --threads N "
    "(fewer than the cores), a longer --min-time, and close other programs using the device"
)


def _row(model: str, mode: str, precision: str, batch: int, samples: list[float], **extra):
    spec = resolve(model)
    row = complexity(spec, batch).as_record()
    median = sorted(samples)[len(samples) // 2]
    row.update(
        id=f"{model}-{mode}-{precision}-{batch}", index=0, spec_key=spec_key(spec), status="ok", device="cpu",
        mode=mode, precision=precision, throughput_img_s=batch / median, latency_p50_s=median,
        latency_iqr_s=0.0, latency_cv=0.0, n_samples=len(samples), samples_s=samples,
        env_torch="2.x", env_threads=1, env_device_name="test cpu",
    )
    row.update(extra)
    return row


def _store(path):
    """slides-vit (ViT) and slides-cnn (CNN), both 32 px, measured in three settings:
    infer fp32 batch 8: the CNN row is unstable -> withheld;
    train fp32 batch 8: both stable, samples far apart -> concluded;
    infer bf16 batch 8: both stable but their sample ranges overlap -> withheld."""
    fast, slow = [0.010, 0.011, 0.012, 0.011, 0.010], [0.040, 0.041, 0.042, 0.041, 0.040]
    near_a, near_b = [0.020, 0.021, 0.022, 0.023, 0.024], [0.021, 0.022, 0.023, 0.024, 0.025]
    with Store.open(path) as store:
        for batch in (1, 8):
            store.add(_row("slides-vit", "infer", "fp32", batch, slow))
            store.add(_row("slides-cnn", "infer", "fp32", batch, fast, **(
                {"warnings": UNSTABLE, "latency_cv": 0.30} if batch == 8 else {})))
        store.add(_row("slides-vit", "train", "fp32", 8, slow))
        store.add(_row("slides-cnn", "train", "fp32", 8, fast))
        store.add(_row("slides-vit", "infer", "bf16", 8, near_a))
        store.add(_row("slides-cnn", "infer", "bf16", 8, near_b))


@pytest.fixture(scope="module")
def measured_text(tmp_path_factory):
    root = tmp_path_factory.mktemp("measured")
    _store(root / "store")
    return report(root / "store", root / "rep", plots=False).report.read_text()  # the text is under test


def _conclusions(text: str) -> list[str]:
    block = text.split("## Conclusions", 1)[1].split("\n## ", 1)[0]
    return [line[2:] for line in block.splitlines() if line.startswith("- ")]


def test_unstable_pair_is_withheld_with_the_reason(measured_text):
    lines = _conclusions(measured_text)
    withheld = [c for c in lines if c.startswith("Measured, withheld: slides-vit vs slides-cnn (cpu, infer, fp32, 32 px, batch 8)")]
    # a short, complete reason (the row's CV is 30%) in the conclusion; the warning in full in the withheld table
    assert len(withheld) == 1 and withheld[0].endswith("the slides-cnn row is unstable (unstable timing, spread 30%).")
    assert "1 of 8 measured rows are unstable" in measured_text
    table = measured_text.split("Measured rows withheld from the conclusions", 1)[1].split("<sub>", 1)[0]
    assert UNSTABLE in table and "slides-cnn-infer-fp32-8" in table


def test_stable_pair_is_concluded_with_ratios_from_the_counts(measured_text):
    vit, cnn = complexity(resolve("slides-vit")).macs, complexity(resolve("slides-cnn")).macs
    # throughputs: 8 / 0.041 (ViT median) and 8 / 0.011 (CNN median); ratio 0.011 / 0.041
    expected = (
        f"Measured: slides-vit vs slides-cnn (cpu, train, fp32, 32 px, batch 8): {vit / cnn:.3g}x the MACs per image, "
        f"{0.011 / 0.041:.3g}x the throughput ({8 / 0.041:.4g} vs {8 / 0.011:.4g} img/s)."
    )
    assert expected in _conclusions(measured_text)


def test_overlapping_ranges_withhold_the_order(measured_text):
    # bf16: ViT samples 20-24 ms, CNN 21-25 ms at batch 8: IQRs 8/0.023..8/0.021 and 8/0.024..8/0.022 overlap
    overlap = [c for c in _conclusions(measured_text) if "interquartile ranges overlap" in c]
    assert len(overlap) == 1 and overlap[0].startswith("Measured, withheld: slides-vit vs slides-cnn (cpu, infer, bf16, 32 px, batch 8)")
    assert "the order is not resolved" in overlap[0]


def test_measured_table_has_resolution_and_marker(measured_text):
    table = measured_text.split("Measured: throughput", 1)[1]
    assert re.search(r"\|\s*resolution \(px\)\s*\|", table)
    # the unstable CNN row: marker beside its throughput, 8 / 0.011 = 727.3 img/s, spread 30%
    assert re.search(rf"\|\s*{8 / 0.011:.4g} \(! unstable 30%\)\s*\|", table)


def _analytic_store(path, extra=()):
    """Analytic rows: ViT-B/16 and ResNet-50 at 224/384/512 px, plus (model, overrides) ``extra``."""
    configs = [(m, {"img_size": res}) for m in ("vit-b/16", "resnet50") for res in (224, 384, 512)] + list(extra)
    with Store.open(path) as store:
        for i, (model, overrides) in enumerate(configs):
            spec = resolve(model, **overrides)
            row = complexity(spec).as_record()
            text = ",".join(f"{k}={v}" for k, v in overrides.items())
            row.update(id=f"{model}-{text}", index=i, spec_key=spec_key(spec), status="ok", overrides=text)
            store.add(row)


def test_source_sections_only_in_the_default_study(tmp_path):
    from vitbench.reading import read_results
    from vitbench.reporting.study import render_report

    extra = [("cifar-vit/4", {"patch_size": p}) for p in (4, 8, 16)] + [(f"vit-s/{p}", {}) for p in (8, 16, 32)]
    _analytic_store(tmp_path / "store", extra)
    user = report(tmp_path / "store", tmp_path / "user", plots=False).report.read_text()
    assert "Resolution: ViT against CNN" in user and "Source check" not in user
    records, sidecar = read_results(tmp_path / "store")
    default = render_report(records, tmp_path / "default", sidecar=sidecar, command="x", sources=True, plots=False).report.read_text()
    assert "Source check: ViT-B/16 vs ResNet-50 across resolutions (the chapter “Vision Transformers”)" in default
    assert "seed 0" not in default  # documents are named by title, never by their internal number
    # the notebook prints 18,975,234 / 19,024,386 / 19,313,154 parameters at P = 4, 8, 16 (its lines 89, 114, 134)
    assert [complexity(resolve("cifar-vit/4", patch_size=p)).params for p in (4, 8, 16)] == [18975234, 19024386, 19313154]
    assert "equal the notebook's printed ones for 3 of 3 patch sizes" in default
    # the tutorial gives 21M for every ViT-S; the farthest of ours is ViT-S/32
    worst = max((complexity(resolve(f"vit-s/{p}")).params for p in (8, 16, 32)), key=lambda n: abs(n - 21e6))
    assert worst == complexity(resolve("vit-s/32")).params
    assert f"at most {100 * (worst - 21e6) / 21e6:+.1f}% (vit-s/32" in default
    for title in ("CIFAR ViT patch-size study (the notebook “Vision Transformers: From Theory to Practice”)",
                  "ViT-S/B/L/H x /8, /16, /32 (the tutorial “Tutorial 4.1: Vision Transformer (ViT)”)"):
        assert title in default and title not in user


def test_source_figures_are_numbers():
    from vitbench.reporting.study.figures import source_figures

    figures = source_figures()
    values = [v for row in figures["notebook_patch"]["rows"] + figures["chapter_resolution"]["rows"] for v in row.values()]
    values += list(figures["tutorial_params"]["sizes"].values())
    assert all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    assert figures["chapter_resolution"]["rows"][0] == {"img_size": 224, "cnn": 4.1e9, "vit": 4.2e9}  # 002:341


def test_parameter_axis_spans_whole_decades():
    from vitbench.reporting import plots

    # the CIFAR ViT: 18,975,234 / 19,024,386 / 19,313,154 parameters at P = 4, 8, 16 (the notebook)
    groups = [{"label": "cifar-vit", "patch_size": [4, 8, 16], "macs": [1.25e9, 3.2e8, 9.6e7],
               "params": [18_975_234, 19_024_386, 19_313_154]}]
    fig = plots.patch_size_figure(groups)
    low, high = fig.axes[1].get_ylim()
    assert fig.axes[1].get_yscale() == "log" and (low, high) == (10.0, 100.0)  # millions: 10 M .. 100 M


def test_colours_are_not_reused_and_throughput_has_error_bars():
    from matplotlib.container import ErrorbarContainer

    from vitbench.reporting import plots

    for n in (3, 15, 25):
        assert len(set(map(tuple, plots.colors(n)))) == n
    series = [plots.Series(f"m{i}", [1, 8], [10.0 + i, 50.0 + i], "-", lo=[9.0 + i, 45.0 + i], hi=[11.0 + i, 55.0 + i]) for i in range(15)]
    ax = plots.by_batch_figure(series, "throughput", "t").axes[0]
    lines = [line for line in ax.get_lines() if line.get_label().startswith("m")]
    assert len({line.get_color() if isinstance(line.get_color(), str) else tuple(line.get_color()) for line in lines}) == 15
    assert sum(isinstance(c, ErrorbarContainer) for c in ax.containers) == 15


def test_bad_measure_values_are_refused_before_anything_runs(tmp_path):
    from vitbench.errors import VitbenchError

    path = tmp_path / "m.yaml"
    path.write_text("models: [mnist-vit]\nstages: [analytic, measured]\nmeasure: {device: cpu}\n")
    for flags, message in (({"threads": 0}, "--threads=0"), ({"device": "tpu"}, "--device='tpu'"), ({"runs": -1}, "--runs=-1")):
        with pytest.raises(VitbenchError, match=message):
            report(path, tmp_path / "out", **flags)
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_measure_flags_reach_the_measured_rows(tmp_path):
    pytest.importorskip("torch")
    path = tmp_path / "m.yaml"
    path.write_text(
        "models: [mnist-vit]\nbatch_sizes: [1]\nstages: [analytic, measured]\n"
        "measure: {device: auto, threads: 2, mode: [infer], min_run_time_s: 0.05, warmup: 1}\n"
    )
    assert main(["report", str(path), "--out", str(tmp_path / "rep"), "-q", "--threads", "1", "--device", "cpu", "--runs", "2"]) == 0
    from vitbench.reading import read_results

    (row,) = [r for r in read_results(tmp_path / "rep")[0] if r.get("throughput_img_s")]
    assert (row["threads"], row["device"], row["runs"]) == (1, "cpu", 2)
    assert len(row["run_medians_s"]) == 2
    text = (tmp_path / "rep" / "report.md").read_text()
    # the reproduce line: the flags as given, paths relative (never this machine's absolute path)
    assert "--out rep --threads 1 --device cpu --runs 2`" in text and str(tmp_path) not in text


@pytest.mark.parametrize("flags", [["--threads", "1"], ["--device", "cpu"], ["--runs", "3"]])
def test_measure_flags_are_refused_for_existing_results(tmp_path, capsys, flags):
    _analytic_store(tmp_path / "store")
    assert main(["report", str(tmp_path / "store"), "--out", str(tmp_path / "o"), "-q", *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"vitbench: error: {flags[0]}")


@pytest.mark.parametrize("flags", [["--threads", "0"], ["--device", "tpu"], ["--runs", "x"]])
def test_bad_measure_flags_exit_2(tmp_path, capsys, flags):
    assert main(["report", "--out", str(tmp_path / "o"), "-q", *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"argument {flags[0]}" in err[0]
    assert not (tmp_path / "o").exists()  # refused before any run


def test_an_interrupted_rerun_leaves_the_previous_report_whole(tmp_path):
    """A second `vitbench report` stopped part-way (issue: at 50 of 67 rows it left rows.jsonl
    with 50 rows, results.json deleted and report.md describing the old run) changes nothing in
    the report folder; --resume finishes the new one and swaps it in."""
    from vitbench.sweeps.run import SweepInterrupted

    path = tmp_path / "s.yaml"
    path.write_text("name: s\nmodels: [cifar-vit/4]\ngrid: {img_size: [32, 64, 96, 128], depth: [1, 2, 3]}\n")
    out = tmp_path / "rep"
    report(path, out, plots=False)
    files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    before = {p: (out / p).read_bytes() for p in files}
    assert {"report.md", "results.json", "rows.jsonl"} <= {str(p) for p in files}

    seen = []

    def stop_after_five(row):
        seen.append(row)
        if len(seen) == 5:
            raise KeyboardInterrupt

    with pytest.raises(SweepInterrupted) as stopped:
        report(path, out, plots=False, on_row=stop_after_five)
    # The message names the report folder and the report's own way to finish, not the staging folder.
    assert stopped.value.out == out and ".building" not in str(stopped.value)
    assert "5 of 12 rows saved" in str(stopped.value) and "--resume" in str(stopped.value)
    assert sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file()) == files
    assert all((out / p).read_bytes() == data for p, data in before.items())  # byte for byte

    result = report(path, out, plots=False, resume=True)
    assert result.out == out and result.report == out / "report.md" and result.rows == 12
    assert result.sweep.out == out and len(result.sweep.records) == 12
    assert result.sweep.skipped == 5 and result.sweep.ran == 7  # the interrupted run's rows kept
    assert not (tmp_path / ".rep.building").exists() and not (tmp_path / ".rep.old").exists()
