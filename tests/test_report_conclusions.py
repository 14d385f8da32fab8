"""Issue 34: the report's conclusions say what the rows say. Every change of order between two
sampled curves (non-monotone ones included), a predicted-time section for predict-only results,
CPU-time wording for `--clock cpu` rows, withheld reasons in full, agreement claims about the
counters that ran, full model names, no empty columns, and plot labels that do not overlap.
Expected values come from hand-made rows or from the analytic model directly."""

from __future__ import annotations

import pytest

from vitbench.analytic import complexity
from vitbench.presets import resolve
from vitbench.reporting.study import render_report
from vitbench.reporting.study.crossings import changes, sentence, stretches
from vitbench.specs import spec_from_dict, spec_key

RESOLUTIONS = (64, 80, 96, 112, 128, 144, 160, 176, 224, 288)
CONVNEXT_T = {"kind": "convnext", "depths": [3, 3, 9, 3], "dims": [96, 192, 384, 768]}  # timm's convnext_tiny


def _conclusions(text: str) -> list[str]:
    block = text.split("## Conclusions", 1)[1].split("\n## ", 1)[0]
    return [line[2:] for line in block.splitlines() if line.startswith("- ")]


def _section(text: str, title: str) -> str:
    """The section under the heading that holds ``title`` (not its line in the table of contents)."""
    heading = next(line for line in text.splitlines() if line.startswith("## ") and title in line)
    return text.split(heading + "\n", 1)[1].split("\n## ", 1)[0]


def _render(tmp_path, records, **kwargs):
    return render_report(records, tmp_path / "rep", command="vitbench report test", **kwargs).report.read_text()


# --- changes of order on sampled curves ---------------------------------------------------------------
def test_every_change_of_order_is_found_on_a_non_monotone_curve():
    # hand-made: a is above b at 1, 2, 4, 6, 7 and below at 3, 5 -> four changes, between 2-3, 3-4, 4-5, 5-6
    xs, a = [1, 2, 3, 4, 5, 6, 7], [5, 5, 1, 5, 1, 5, 5]
    b = [3] * 7
    assert [(c.before, c.at, c.order) for c in changes(xs, a, b)] == [(2, 3, -1), (3, 4, 1), (4, 5, -1), (5, 6, 1)]
    text = sentence("A", "B", xs, a, b)
    assert text == (
        "the order changes 4 times between 2 and 6 px: A needs more MACs than B at 1-2 px, fewer at 3 px, "
        "more at 4 px, fewer at 5 px, more at 6-7 px"
    )


def test_one_crossing_no_crossing_ties_and_gaps():
    assert sentence("A", "B", [1, 2, 3], [1, 2, 9], [5, 5, 5]) == (
        "the curves cross between 2 and 3 px (the only change of order): A needs fewer MACs than B at 1-2 px, more at 3 px"
    )
    assert sentence("A", "B", [1, 2], [9, 9], [1, 1]) == "no change of order: A needs more MACs than B at 1-2 px, every point compared"
    # a tie is a stretch of its own; a point where one curve has no value is left out
    assert [(s.xs, s.order) for s in stretches([1, 2, 3, 4], [1, 5, None, 9], [2, 5, 1, 1])] == [((1,), -1), ((2,), 0), ((4,), 1)]
    assert "as many MACs as B" in sentence("A", "B", [1, 2], [5, 5], [5, 6])


def test_long_alternations_are_counted_not_truncated():
    xs = list(range(1, 21))
    a = [2 if x % 2 else 0 for x in xs]  # above at odd x, below at even x: 19 changes
    text = sentence("A", "B", xs, a, [1] * 20)
    assert text.startswith("the order changes 19 times between 1 and 20 px: A needs more MACs than B at 1 px (then 18 shorter stretches)")
    assert text.endswith("fewer at 20 px")


def _analytic(model: str, spec, i: int) -> dict:
    row = complexity(spec).as_record()
    res = spec.img_size[0]
    row.update(model=model, id=f"{model}-{res}", index=i, spec_key=spec_key(spec), status="ok", overrides=f"img_size={res}", study="s")
    return row


@pytest.fixture(scope="module")
def vit_vs_convnext():
    vit = [resolve("vit-s/16", img_size=r) for r in RESOLUTIONS]
    cnn = [spec_from_dict({**CONVNEXT_T, "img_size": [r, r]}) for r in RESOLUTIONS]
    records = [_analytic("vit-s/16", s, i) for i, s in enumerate(vit)] + [_analytic("timm:convnext_tiny", s, 20 + i) for i, s in enumerate(cnn)]
    more = {r: complexity(v).macs > complexity(c).macs for r, v, c in zip(RESOLUTIONS, vit, cnn)}
    return records, more


def test_resolution_conclusion_reports_every_flip_of_a_cnn_against_a_vit(tmp_path, vit_vs_convnext):
    records, more = vit_vs_convnext
    flips = [(a, b) for a, b in zip(RESOLUTIONS, RESOLUTIONS[1:]) if more[a] != more[b]]
    assert len(flips) >= 3  # the case of the issue: ConvNeXt's MACs step with its feature-map sizes
    [line] = [c for c in _conclusions(_render(tmp_path, records, plots=False)) if c.startswith("Resolution: vit-s/16 vs timm:convnext_tiny")]
    rows_part = line.split("Sweep rows: ", 1)[1]
    assert rows_part.startswith(f"the order changes {len(flips)} times between {flips[0][0]} and {flips[-1][1]} px")
    for _, at in flips:  # each stretch named by its resolutions
        assert f"{'more' if more[at] else 'fewer'} at {at}" in rows_part
    last = [r for r in RESOLUTIONS if r >= flips[-1][1]]  # the last stretch: every row from the last flip on
    assert rows_part.endswith(f"{'more' if more[288] else 'fewer'} at {', '.join(map(str, last))} px.")
    assert "from 96 px (first multiple" not in line  # the single wrong threshold of the issue
    assert "timm:convnext_tiny" in line and "timm: " not in line


@pytest.mark.slow
def test_crossover_labels_do_not_overlap(tmp_path):
    from vitbench.reporting import plots

    regions = [{"start": 80 + 4 * i, "end": 176 - 4 * i, "macs": 1e9, "label": f"pair {i}: order changes 6x, 80-176 px"} for i in range(4)]
    curve = plots.Series("v", [64, 288], [1e8, 1e10])
    path = plots.resolution([curve], [], regions, tmp_path / "r.png", "scan: multiples of 16 px")
    assert path.exists()
    fig = plots.resolution_figure([curve], [], regions, "scan: multiples of 16 px")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in fig.axes[0].texts if t.get_text().startswith("pair")]
    assert len(boxes) == 4
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


# --- predicted time --------------------------------------------------------------------------------------
def _predicted(model: str, res: int, batch: int, step: float, linear: float, i: int) -> dict:
    spec = resolve(model, img_size=res)
    row = complexity(spec, batch).as_record()
    row.update(
        id=f"{model}-{res}-{batch}", index=i, spec_key=spec_key(spec), status="ok", overrides=f"img_size={res}",
        mode="infer", precision="fp32", device="cpu", pred_latency_s=step, pred_throughput_img_s=batch / step,
        pred_linear_s=linear, pred_attention_s=step - linear, pred_basis="calibration:test",
    )
    return row


def _predict_rows() -> list[dict]:
    """vit-ti/16 at 160/192/224 px (batch 1) and at 224 px batch 4; the time dips at 192 px on purpose."""
    return [
        _predicted("vit-ti/16", 160, 1, 0.010, 0.008, 0),
        _predicted("vit-ti/16", 192, 1, 0.009, 0.003, 1),
        _predicted("vit-ti/16", 224, 1, 0.020, 0.015, 2),
        _predicted("vit-ti/16", 224, 4, 0.040, 0.030, 3),
    ]


@pytest.fixture(scope="module")
def predict_only(tmp_path_factory):
    root = tmp_path_factory.mktemp("predicted")
    result = render_report(_predict_rows(), root / "rep", command="vitbench report test", plots=False)  # the text is under test
    return result, result.report.read_text()


@pytest.mark.slow
def test_a_predict_only_report_draws_time_and_breakdown(tmp_path):
    result = render_report(_predict_rows(), tmp_path / "rep", command="vitbench report test")
    assert {"predicted_time.png", "predicted_breakdown.png"} <= {p.name for p in result.plots}
    for name in ("predicted_time.png", "predicted_breakdown.png"):
        assert f"]({name})" in result.report.read_text() and (tmp_path / "rep" / name).read_bytes()[:4] == b"\x89PNG"


def test_a_predict_only_report_has_a_predicted_time_section(predict_only):
    result, text = predict_only
    assert "Predicted step time (time model)" in text and "Predicted vs measured step time" not in text
    lines = _conclusions(text)
    # per image: 10, 9, 20 ms at batch 1 and 40 / 4 = 10 ms at batch 4: fastest 192 px (1 / 0.009), slowest 224 px batch 1
    assert (f"Predicted time (time model, 4 configurations): the highest predicted throughput is {1 / 0.009:.4g} img/s "
            "(vit-ti/16 img_size=192 infer fp32 batch 1), the lowest 50 img/s (vit-ti/16 img_size=224 infer fp32 batch 1).") in lines
    # against resolution at batch 1: 10 ms -> 20 ms, and it falls once (160 -> 192 px)
    assert ("Predicted time, vit-ti/16 infer fp32 batch 1: predicted time per image 10 ms at 160 px -> 20 ms at 224 px "
            "(2x; rows at 160, 192, 224); not monotone: it falls once: from 160 to 192.") in lines
    # against batch at 224 px: 20 ms -> 10 ms per image, falling only: no "not monotone"
    assert ("Predicted time, vit-ti/16 img_size=224 infer fp32: predicted time per image 20 ms at batch 1 -> 10 ms at batch 4 "
            "(0.5x; rows at 1, 4).") in lines
    # largest component: linear in 160 (8 of 10 ms), 224 b1 (15 of 20), 224 b4 (30 of 40); attention at 192 (6 of 9)
    assert any(c.startswith("Predicted time, largest component of the step, of 4 configurations: linear layers in 3") and
               "attention in 1 (e.g. vit-ti/16 img_size=192 infer fp32 batch 1)" in c for c in lines)


def test_predicted_rows_beside_measured_rows_get_both_sections(tmp_path):
    row = _predicted("vit-ti/16", 224, 1, 0.020, 0.015, 0)
    row.update(throughput_img_s=40.0, latency_p50_s=0.025, n_samples=5, samples_s=[0.025] * 5, env_torch="2.x")
    text = _render(tmp_path, [row], plots=False)
    assert "Predicted step time (time model)" in text and "Predicted vs measured step time" in text
    assert "infer: |predicted / measured - 1| median 20.0%" in text  # 0.020 / 0.025 - 1


# --- measured rows: clock, withheld reasons, full names -------------------------------------------------
BUSY = {
    "code": "busy-machine",
    "message": ("busy machine while measuring: load average 6.6 on 2 cores, and this process got 41% of its threads' "
                "time; the other processes' demand inflates wall time and its spread"),
    "advice": "rerun on an idle machine or with --clock cpu",
}


def _measured(model: str, spec, batch: int, median: float, **extra) -> dict:
    row = complexity(spec, batch).as_record()
    row.update(
        model=model, id=f"{model}-{batch}", index=batch, spec_key=spec_key(spec), status="ok", device="cpu", mode="infer",
        precision="fp32", throughput_img_s=batch / median, latency_p50_s=median, latency_iqr_s=0.0, latency_cv=0.0,
        n_samples=5, samples_s=[median] * 5, env_torch="2.x", env_threads=1, env_device_name="test cpu", clock="wall",
    )
    row.update(extra)
    return row


def test_cpu_clock_rows_are_called_cpu_time(tmp_path):
    spec = resolve("mnist-vit")
    rows = [_measured("mnist-vit", spec, b, 0.01 * b ** 0.5, clock="cpu") for b in (1, 4)]
    text = _render(tmp_path, rows, plots=False)
    assert "timing clock: CPU time (--clock cpu" in text
    table = _section(text, "Measured: throughput")
    assert "img/s (CPU time)" in table and "latency p50 (CPU time)" in table
    assert "Times are CPU time: the rows were timed with `--clock cpu`" in table
    assert any(c.startswith("Measured (CPU time): mnist-vit infer fp32: 100 img/s at batch 1 -> 200 img/s at batch 4") for c in _conclusions(text))
    wall = _render(tmp_path / "wall", [dict(r, clock="wall") for r in rows], plots=False)
    assert "CPU time" not in wall.replace("unless a heading says CPU time", "")


def test_withheld_reasons_are_whole_and_full_model_names_stay(tmp_path):
    spec = spec_from_dict({**CONVNEXT_T, "img_size": [64, 64]})
    rows = [
        _measured("timm:convnext_tiny", spec, 1, 0.02),
        _measured("timm:convnext_tiny", spec, 8, 0.08, warnings=[BUSY]),
    ]
    text = _render(tmp_path, rows, plots=False)
    lines = _conclusions(text)
    assert "Measured, withheld: timm:convnext_tiny infer fp32: the row at batch 8 is unstable." in lines
    assert not any("..." in c for c in lines)
    table = text.split("Measured rows withheld from the conclusions", 1)[1].split("<sub>", 1)[0]
    assert BUSY["message"] in table and "| busy machine " in table


@pytest.mark.slow
def test_withheld_points_are_hollow_in_the_plot():
    from vitbench.reporting import plots

    series = [plots.Series("m", [1, 8], [10.0, 50.0], "-", extra={"withheld": [False, True]})]
    ax = plots.by_batch_figure(series, "throughput", "t").axes[0]
    hollow = [line for line in ax.get_lines() if line.get_markerfacecolor() in ("white", (1.0, 1.0, 1.0, 1.0)) and len(line.get_xdata())]
    assert len(hollow) == 1 and list(hollow[0].get_ydata()) == [50.0]
    assert any(t.get_text().startswith("hollow: row withheld") for t in ax.get_legend().get_texts())


@pytest.mark.slow
def test_equal_series_are_nudged_apart():
    from vitbench.reporting import plots

    series = [plots.Series(f"m{i}", [1, 8], [10.0, 50.0], "-") for i in range(3)]
    ax = plots.by_batch_figure(series, "memory", "t").axes[0]
    xs = [tuple(line.get_xdata()) for line in ax.get_lines() if line.get_label().startswith("m")]
    assert len(set(xs)) == 3 and all(abs(x[0] - 1) < 0.1 for x in xs)  # apart, yet beside batch 1


# --- counters, memory columns ---------------------------------------------------------------------------
def _counted(model: str, dispatch_delta: int = 0, fvcore: bool = False) -> dict:
    spec = resolve(model)
    row = complexity(spec).as_record()
    row.update(id=model, index=0, spec_key=spec_key(spec), status="ok", dispatch_macs=row["macs"] + dispatch_delta)
    if fvcore:
        row["fvcore_macs"] = row["macs"]
    return row


def test_agreement_names_only_the_counters_that_ran(tmp_path):
    text = _render(tmp_path, [_counted("vit-ti/16"), _counted("resnet18")], plots=False)
    assert ("Counter agreement: analytic and dispatch MACs agree exactly for 2 of 2 configurations counted "
            "(vit-ti/16, resnet18); fvcore did not run.") in _conclusions(text)
    text = _render(tmp_path / "b", [_counted("vit-ti/16", fvcore=True), _counted("resnet18", 7, fvcore=True)], plots=False)
    assert ("Counter agreement: analytic, fvcore and dispatch MACs agree exactly for 1 of 2 configurations counted "
            "(vit-ti/16); they differ for resnet18.") in _conclusions(text)


def test_empty_activation_columns_are_left_out(tmp_path):
    spec = resolve("mnist-vit")
    rows = [_measured("mnist-vit", spec, b, 0.01, peak_memory_bytes=2**20 * (3 + b), pred_peak_memory_bytes=2**20 * (2 + b)) for b in (1, 2)]
    section = _section(_render(tmp_path, rows, plots=False), "Predicted vs measured peak memory")
    assert "predicted peak" in section and "predicted activations" not in section
    rows[0]["pred_activations_bytes"] = 2**20
    section = _section(_render(tmp_path / "b", rows, plots=False), "Predicted vs measured peak memory")
    assert "predicted activations" in section and "measured activations" not in section


def test_csv_tables_hold_the_cited_rows(predict_only):
    result, _ = predict_only
    table = (result.out / "tables" / "predicted_breakdown.csv").read_text().splitlines()
    assert len(table) == 1 + 4 and "largest" in table[0]
    assert any(line.startswith("vit-ti/16,img_size=192,") and ",attention" in line for line in table)


def test_attention_dots_belong_to_a_drawn_family_or_say_they_do_not():
    from vitbench.reporting.study.attention import _points

    rows = [dict(_analytic(m, resolve(m), i), tokens=197, attn_matmul_share=0.1) for i, m in enumerate(["vit-ti/16", "vit-s/16"])]
    series = _points(rows, [(192, 768, 3)])  # only ViT-Ti's family (d=192, m=768, 3 heads) has a line
    assert [s.label for s in series] == ["sweep rows, d=192, m=768", "sweep rows of other families (no line)"]
    assert [len(s.x) for s in series] == [1, 1]
