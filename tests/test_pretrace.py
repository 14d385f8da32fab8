"""Preparing many models in worker processes before a prediction (``PredictSettings.jobs``,
``predict --jobs``; vitbench/timemodel/pretrace.py): which models go to the workers, what one
worker's task leaves in the caches (the prediction then neither resolves, counts nor traces
again), that a model a worker cannot do is left to the prediction, and that the rows are those
of a prediction in one process."""

from __future__ import annotations

import dataclasses

import pytest

import vitbench
from vitbench.errors import SpecError
from vitbench.timemodel import pretrace
from vitbench.timemodel.predict_settings import MAX_JOBS, PredictSettings
from vitbench.timemodel.pretrace import close_workers, model_tasks, needs_preparing, prepare, prepare_in_workers


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    from vitbench.timemodel import run

    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("VITBENCH_TRACE_DIR", str(tmp_path / "cache" / "traces"))  # not the session's shared traces
    run._OPS_CACHE.clear()  # the in-process memo must not answer for the disk caches
    yield
    close_workers()  # no worker outlives its test (each was started for this test's cache directory)


def _never(target, batch):
    return None


def test_a_task_per_named_model_with_every_mode_batch_precision_and_device_type():
    import torch

    settings = PredictSettings(device="h100,cpu", mode=["infer", "train"], batch_size=[1, 8], precision=["bf16", "fp32"])
    live = torch.nn.Linear(2, 2)
    tasks = model_tasks(["timm:resnet18", live, "vit-s/16", "timm:resnet18"], {"img_size": 160}, None, settings, _never)
    assert [t.model for t in tasks] == ["timm:resnet18", "vit-s/16"]  # once each; a live module is the prediction's
    task = tasks[0]
    assert (task.modes, task.batches, task.precisions, task.device_types) == (("infer", "train"), (1, 8),
                                                                                ("bf16", "fp32"), ("cpu", "cuda"))
    assert task.overrides == {"img_size": 160} and task.optimizer == "adamw" and task.refusal is _never
    # tf32 is traced as fp32 (the trace is the same; only the pricing differs): one trace for both
    [gpu_only] = model_tasks(["vit-s/16"], {}, None, PredictSettings(device="h100", precision=["tf32", "fp32"]), _never)
    assert (gpu_only.precisions, gpu_only.device_types) == (("fp32",), ("cuda",))


def test_one_job_or_one_model_starts_no_worker(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a worker pool was started")

    monkeypatch.setattr("vitbench.timemodel.pretrace.ProcessPoolExecutor", refuse)
    tasks = model_tasks(["vit-ti/16", "vit-s/16"], {}, None, PredictSettings(), _never)
    assert prepare_in_workers(tasks, 1) == 0 and prepare_in_workers(tasks[:1], 8) == 0


def test_the_workers_are_kept_for_the_next_call_with_the_same_jobs_and_environment(tmp_path, monkeypatch):
    """A user asking batch size by batch size starts the workers once; another ``jobs``, or another
    cache directory (a worker reads it from its environment), gets new ones. Nothing is spawned
    here: a pool starts its workers when it is given tasks."""
    first = pretrace._pool(2)
    assert pretrace._pool(2) is first
    other = pretrace._pool(3)
    assert other is not first and pretrace._pool(3) is other
    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert pretrace._pool(3) is not other
    close_workers()
    assert pretrace._KEPT == {}


def test_a_broken_pool_is_not_kept(monkeypatch):
    from concurrent.futures.process import BrokenProcessPool

    class Broken:
        def map(self, function, tasks):
            raise BrokenProcessPool("a worker died")

        def shutdown(self, wait=True, cancel_futures=False):
            pass

    monkeypatch.setattr(pretrace, "_pool", lambda jobs: pretrace._KEPT.setdefault("pool", Broken()))
    monkeypatch.setattr(pretrace, "needs_preparing", lambda task: True)
    tasks = model_tasks(["vit-ti/16", "vit-s/16"], {}, None, PredictSettings(), _never)
    assert prepare_in_workers(tasks, 2) == 0  # the prediction does them itself
    assert "pool" not in pretrace._KEPT


def test_py_factories_and_malformed_references_are_left_to_the_prediction():
    tasks = model_tasks(["py:mypkg.models:build", "timm:", "vit-ti/16"], {}, None, PredictSettings(), _never)
    assert [t.model for t in tasks] == ["vit-ti/16"]  # a py: factory is never cached; a bad name is refused later


def test_a_preset_whose_trace_is_cached_needs_no_worker_and_one_whose_trace_is_not_does():
    settings = PredictSettings(device="h100", batch_size=2, precision="bf16")
    [task] = model_tasks(["mnist-vit"], {}, None, settings, _never)
    assert needs_preparing(task) is True
    vitbench.predict("mnist-vit", settings)  # traces it into the cache
    assert needs_preparing(task) is False
    [other_batch] = model_tasks(["mnist-vit"], {}, None, PredictSettings(device="h100", batch_size=4, precision="bf16"),
                                _never)
    assert needs_preparing(other_batch) is True
    refused = dataclasses.replace(other_batch, refusal=lambda target, batch: "too large")  # refused rows trace nothing
    assert needs_preparing(refused) is False


@pytest.mark.parametrize("jobs", [0, -1, MAX_JOBS + 1, True, 2.0, "2"])
def test_jobs_must_be_a_whole_number_of_processes(jobs):
    with pytest.raises(SpecError) as caught:
        PredictSettings(jobs=jobs)
    assert caught.value.field == "jobs"


def test_the_cli_refuses_no_jobs_in_one_line(capsys):
    from vitbench.cli import main

    assert main(["predict", "vit-ti/16", "--jobs", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--jobs" in err[0] and "0" in err[0]


@pytest.mark.slow  # builds, counts and traces a timm model: about 2 s
def test_a_prepared_model_is_priced_from_the_caches_without_resolving_counting_or_tracing_again(monkeypatch):
    pytest.importorskip("timm")
    from vitbench.timemodel import ops

    settings = PredictSettings(device="h100", batch_size=[2, 4], precision="bf16")
    [task] = model_tasks(["timm:regnety_002"], {}, None, settings, _never)
    assert needs_preparing(task) is True  # nothing of it in the caches
    assert prepare(task) is True
    assert needs_preparing(task) is False  # resolution, counts and traces all there: no worker is started for it

    def fail(*args, **kwargs):
        raise AssertionError("built again")

    monkeypatch.setattr(ops, "trace_target_batches", fail)  # tracing
    monkeypatch.setattr("vitbench.models.materialize.light_build", fail)  # resolving and counting build the model
    rows = vitbench.predict("timm:regnety_002", settings)
    assert [r["status"] for r in rows] == ["ok", "ok"] and rows[0]["macs"] > 0 and rows[0]["pred_latency_s"] > 0


def test_a_model_a_worker_cannot_resolve_is_left_to_the_prediction():
    [task] = model_tasks(["timm:no_such_model_anywhere"], {}, None, PredictSettings(device="h100"), _never)
    assert prepare(task) is False  # no exception: the prediction resolves it again and says why (one line, exit 2)


@pytest.mark.slow  # starts two worker processes: about 8 s
def test_an_unknown_model_among_others_is_refused_as_without_workers():
    with pytest.raises(SpecError, match="unknown timm model"):
        vitbench.predict(["timm:no_such_model_anywhere", "vit-ti/16"], device="h100", jobs=2)


@pytest.mark.slow  # starts two worker processes (torch imported in each): about 15 s on 2 cores
def test_rows_in_two_worker_processes_are_those_of_one_process(tmp_path, monkeypatch):
    pytest.importorskip("timm")

    def rows(jobs: int) -> list[tuple]:
        from vitbench.timemodel import run

        monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path / f"cache{jobs}"))
        monkeypatch.setenv("VITBENCH_TRACE_DIR", str(tmp_path / f"cache{jobs}" / "traces"))
        run._OPS_CACHE.clear()
        found = vitbench.predict(["timm:resnet18", "vit-s/16", "timm:regnety_002"],
                                 device="h100", mode=["infer", "train"], batch_size=[2, 8], precision="bf16", jobs=jobs)
        return [(r["model"], r["mode"], r["batch_size"], r.get("params"), r.get("macs"), r.get("pred_latency_s"),
                 r["status"], r.get("error")) for r in found]

    alone, together = rows(1), rows(2)
    assert together == alone
    assert [r[6] for r in together].count("ok") == 12
    assert any((tmp_path / "cache2" / "traces").glob("*.json.gz"))
