"""Typed settings and rows at the API (issue 47): a frozen settings object per command family that
the CLI builds and the API takes (the keyword form builds the same object, validated in one
place), and rows that stay dicts while answering by typed attribute, units in the names."""

from __future__ import annotations

import copy
import csv
import json
import pickle

import pytest
from _golden_api import GOLDEN, VOLATILE_PREFIXES

import vitbench
from vitbench.cli import build_parser
from vitbench.errors import SpecError
from vitbench.store.layout import StoreError
from vitbench.sweeps.schema import SweepFileError
from vitbench.typed_rows import ChoiceRow, ErrorBand, MeasuredRow, PredictionRow, Row, columns_of


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path / "cache"))


def _header(name: str) -> set[str]:
    with open(GOLDEN / name, newline="") as f:
        return set(next(csv.reader(f)))


# ----------------------------------------------------------------------------------- settings


def test_predict_settings_hold_one_canonical_form():
    a = vitbench.PredictSettings(device="H100, a100", mode="train", batch_size=8, precision="bf16")
    b = vitbench.PredictSettings(device=["h100", "a100-80gb"], mode=("train",), batch_size=[8], precision=["bf16"])
    assert a == b
    assert a.device == ("h100", "a100") and a.mode == ("train",) and a.batch_size == (8,)
    assert a.replace(batch_size=[1, 2]).batch_size == (1, 2)
    with pytest.raises(AttributeError):
        a.device = ("l4",)  # frozen


@pytest.mark.parametrize("keywords, field", [
    ({"device": "tpu"}, "device"), ({"mode": "eval"}, "mode"), ({"batch_size": 0}, "batch_size"),
    ({"precision": "fp16"}, "precision"),  # fp16 on the CPU
    ({"optimizer": "lion"}, "optimizer"), ({"threads": 0}, "threads"),
    ({"device": "h100", "threads": 2}, "threads"), ({"reparam": "yes"}, "reparam"),
    ({"trace_cache": 1}, "trace_cache"), ({"epochs": 3}, "dataset_size"),
    ({"price_per_hour": 2.0}, "price_per_hour"), ({"device": "h100", "price_per_hour": "l4=1"}, "price_per_hour"),
    ({"host_dispatch": "12us"}, "host_dispatch"),  # a GPU host's time, asked for the CPU
])
def test_a_wrong_setting_is_one_spec_error_naming_its_field(keywords, field):
    with pytest.raises(SpecError) as caught:
        vitbench.PredictSettings(**keywords)
    assert caught.value.field == field


def test_the_keyword_form_and_the_settings_form_ask_the_same_question():
    settings = vitbench.PredictSettings(device="h100,l4", batch_size=2, precision="bf16")
    by_object = vitbench.predict("mnist-vit", settings)
    by_keywords = vitbench.predict("mnist-vit", device="h100,l4", batch_size=2, precision="bf16")
    changed = vitbench.predict("mnist-vit", vitbench.PredictSettings(device="a100"), device="h100,l4", batch_size=2,
                               precision="bf16")
    assert len(by_object) == len(by_keywords) == len(changed) == 2
    for row, *others in zip(by_object, by_keywords, changed):
        for other in others:
            differing = {k: (row.get(k), other.get(k)) for k in set(row) | set(other)
                         if k != "pred_seconds" and row.get(k) != other.get(k)}
            assert differing == {}
    assert [r.device for r in by_object] == ["h100", "l4"]


def test_other_keywords_are_spec_fields_and_a_wrong_settings_object_is_refused():
    [row] = vitbench.predict("vit-b/16", device="h100", depth=2000)  # a spec field: refused from the spec
    assert row["overrides"] == "depth=2000" and row.status == "refused" and not row.ok
    with pytest.raises(TypeError, match="PredictSettings"):
        vitbench.predict("mnist-vit", vitbench.RunSettings())
    with pytest.raises(SpecError, match="img_sise"):
        vitbench.predict("mnist-vit", device="h100", img_sise=32)


def test_choose_settings_are_checked_once_and_the_cli_builds_them():
    with pytest.raises(SpecError) as caught:
        vitbench.ChooseSettings(device="cpu")
    assert caught.value.field == "device"
    with pytest.raises(SpecError) as caught:
        vitbench.ChooseSettings(device="h100", sort="cost")
    assert caught.value.field == "sort"
    from vitbench.cli.choose import choose_settings

    args = build_parser().parse_args(["choose", "vit-b/16", "--device", "h100,l4", "--gpus", "8", "--epochs", "3",
                                      "--dataset-size", "1000", "--precision", "bf16"])
    assert choose_settings(args) == vitbench.ChooseSettings(device=("h100", "l4"), gpus=8, epochs=3, dataset_size=1000,
                                                            precision="bf16")


def test_the_cli_builds_the_predict_settings_the_api_takes():
    from vitbench.cli.common import run_settings_from
    from vitbench.cli.predict import predict_settings

    args = build_parser().parse_args(["predict", "vit-b/16", "--device", "h100,a100", "--batch-size", "1,64",
                                      "--mode", "infer,train", "--precision", "bf16", "--epochs", "2",
                                      "--dataset-size", "100", "--price-per-hour", "h100=2"])
    assert predict_settings(args, run_settings_from(args)) == vitbench.PredictSettings(
        device="h100,a100", batch_size=[1, 64], mode=["infer", "train"], precision="bf16", epochs=2.0, dataset_size=100,
        price_per_hour="h100=2")


def test_sweep_settings_are_checked_once(tmp_path):
    settings = vitbench.SweepSettings(shard="2/4", export="parquet")
    assert settings.shard == (2, 4) and settings.export == ("parquet",)
    assert settings.store_options().export == ("parquet",)
    with pytest.raises(SweepFileError, match="retry-failed"):
        vitbench.SweepSettings(retry_failed=True)
    with pytest.raises(SweepFileError, match="shard"):
        vitbench.SweepSettings(shard="5/4")
    with pytest.raises(StoreError, match="export"):
        vitbench.SweepSettings(export=["xlsx"])
    with pytest.raises(TypeError, match="modles"):
        vitbench.sweep(modles=["mnist-vit"], out=tmp_path / "s")


def test_a_sweep_with_settings_is_the_sweep_with_keywords(tmp_path):
    a = vitbench.sweep(models=["mnist-vit"], grid={"depth": [1, 2]}, out=tmp_path / "a")
    b = vitbench.sweep(None, vitbench.SweepSettings(out=tmp_path / "b"), models=["mnist-vit"], grid={"depth": [1, 2]})
    stable = lambda rows: [{k: v for k, v in r.items() if not k.startswith(VOLATILE_PREFIXES)} for r in rows]  # noqa: E731
    assert stable(a.records) == stable(b.records) and len(a.records) == 2
    assert all(type(r) is Row for r in a.records) and a.records[0].model == "mnist-vit"


def test_plan_settings_and_the_keyword_form():
    budget = 8 * 2**30
    by_object = vitbench.plan_records(["vit-s/16"], vitbench.PlanSettings(memory_bytes=budget, batch_size=8))
    by_keywords = vitbench.plan_records(["vit-s/16"], memory_bytes=budget, batch_size=8)
    assert by_object == by_keywords and by_object[0]["fits"] is True and by_object[0].batch_size == 8
    with pytest.raises(SpecError, match="memory_bytes"):
        vitbench.PlanSettings()
    with pytest.raises(SpecError) as caught:
        vitbench.PlanSettings(batch_size=8, attention="flash")
    assert caught.value.field == "attention"
    with pytest.raises(TypeError, match="memory"):
        vitbench.plan_records(["vit-s/16"], memory=budget)


# ----------------------------------------------------------------------------------------- rows


def test_a_prediction_row_answers_by_attribute_and_stays_the_dict():
    [h100, l4] = vitbench.predict("mnist-vit", device="h100,l4", batch_size=2, precision="bf16", epochs=1,
                                  dataset_size=1000, price_per_hour="h100=2.5")
    assert isinstance(h100, PredictionRow) and isinstance(h100, dict)
    assert h100.latency_s == h100["pred_latency_s"] > 0
    assert h100.throughput_img_s == pytest.approx(2 / h100.latency_s)
    assert h100.cost == h100["pred_cost"] > 0 and l4.cost is None  # no price for the l4
    assert h100.train_hours == h100["pred_train_hours"]
    assert set(h100.components_s) <= {"attention", "linear", "conv", "elementwise", "optimizer", "overhead"}
    band = h100.error_band
    assert band == ErrorBand(h100["pred_error_median"], h100["pred_error_p90"], h100["pred_error_basis"])
    low, high = band.bounds(h100.latency_s)
    assert low < h100.latency_s < high
    h100["pred_latency_s"] = 1.0  # a row changed by key answers with the change
    assert h100.latency_s == 1.0
    with pytest.raises(AttributeError, match="read-only"):
        h100.latency_s = 2.0


def test_a_cpu_row_has_no_error_band_and_warnings_are_typed():
    from _calibrations import synthetic

    [row] = vitbench.predict("mnist-vit", batch_size=2, calibration=synthetic(), epochs=1, dataset_size=10)
    assert row.error_band is None
    assert sum(row.components_s.values()) == row.latency_s  # on the CPU the components sum to the step
    assert [w.code for w in row.warnings] == ["cost-from-inference"]
    assert row.warnings[0].message == row["warnings"][0]["message"]


def test_typed_rows_serialise_as_the_dicts_they_are():
    row = PredictionRow({"model": "m", "pred_latency_s": 0.5, "batch_size": 2, "warnings": []})
    plain = dict(row)
    assert json.dumps(row) == json.dumps(plain)
    assert pickle.loads(pickle.dumps(row)) == row and type(pickle.loads(pickle.dumps(row))) is PredictionRow
    assert copy.deepcopy(row) == row and type(copy.copy(row)) is PredictionRow
    assert vitbench.Records([row]).to_csv() == vitbench.Records([plain]).to_csv()
    assert row.cost is None and row.latency_s == 0.5  # a column the row lacks reads as None


@pytest.mark.parametrize("row_type, files", [
    (PredictionRow, ("predict_cpu.records.csv", "predict_gpu.records.csv", "predict_refused.records.csv")),
    (ChoiceRow, ("choose.records.csv", "predict_refused.records.csv")),
    (MeasuredRow, ("profile.records.csv",)),
])
def test_every_typed_attribute_reads_a_column_the_command_writes(row_type, files):
    """An attribute whose column no row of its command has would always read None: each reads a
    column of the command's rows as written before the typed API (the golden files' headers; a
    refused prediction's for ``overrides``). ``measured_latency_s`` and ``pred_ratio`` come only
    with ``--measured``."""
    written = set().union(*(_header(name) for name in files))
    missing = {name: c.key for name, c in columns_of(row_type).items() if c.key not in written}
    assert missing == ({"measured_latency_s": "measured_latency_s", "ratio": "pred_ratio"} if row_type is not MeasuredRow
                       else {}), missing


def test_profile_rows_are_measured_rows(monkeypatch):
    from vitbench.measure import profile as profiling

    monkeypatch.setattr(profiling, "measure", lambda target, settings, on_run=None: {
        "model": target.name, "batch_size": settings.batch_size, "latency_p50_s": 0.25, "status": "ok"})
    seen = []
    rows = vitbench.profile(["mnist-vit"], vitbench.RunSettings(device="cpu"), batch_size=[1, 2], on_row=seen.append)
    assert [type(r) for r in rows] == [MeasuredRow, MeasuredRow] and seen == rows
    assert [r.batch_size for r in rows] == [1, 2] and rows[0].latency_p50_s == 0.25
