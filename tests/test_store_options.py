"""StoreOptions: the store options of a sweep travel as one record from ``vitbench.sweep``'s
keyword arguments to the runner and the job-array launcher (and into each pickled array job)."""

from __future__ import annotations

import pickle

import pytest

from vitbench.store import StoreError, StoreOptions
from vitbench.sweeps import sweep
from vitbench.sweeps.launchers import ArrayOptions, ShardJob, run_submitit

KEYWORDS = {
    "resume": True, "force": False, "allow_foreign": True, "retry_failed": True, "export": ["csv", "parquet"],
    "sync": "always", "sync_interval_s": 2.5, "sync_every": 7,
}
EXPECTED = StoreOptions(
    resume=True, force=False, allow_foreign=True, retry_failed=True, export=("csv", "parquet"), sync="always",
    sync_interval_s=2.5, sync_every=7,
)


def _capture(monkeypatch, module, name):
    seen = {}

    def fake(plan, directory, **kw):
        seen.update(kw, directory=directory)
        return "ran"

    monkeypatch.setattr(module, name, fake)
    return seen


def test_sweep_keywords_become_one_record_for_the_runner(tmp_path, monkeypatch):
    import vitbench.sweeps.launch as launch

    seen = _capture(monkeypatch, launch, "execute")
    assert sweep(models=["cifar-vit/4"], grid={"depth": [1]}, out=tmp_path / "s", yes=True, **KEYWORDS) == "ran"
    assert seen["options"] == EXPECTED and seen["yes"] is True and seen["directory"] == tmp_path / "s"


def test_sweep_keywords_become_one_record_for_the_job_array(tmp_path, monkeypatch):
    import vitbench.sweeps.launchers as launchers

    seen = _capture(monkeypatch, launchers, "run_submitit")
    result = sweep(models=["cifar-vit/4"], grid={"depth": [1]}, out=tmp_path / "s", launcher="submitit",
                   launcher_options={"jobs": 3, "poll_s": 0.5}, **KEYWORDS)
    assert result == "ran"
    assert seen["options"] == EXPECTED and seen["array"] == ArrayOptions(jobs=3, poll_s=0.5)


def test_an_unknown_launcher_option_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(TypeError, match="bogus"):
        sweep(models=["cifar-vit/4"], grid={"depth": [1]}, out=tmp_path / "s", launcher="submitit", launcher_options={"bogus": 1})
    assert not (tmp_path / "s").exists()


def test_an_array_job_resumes_its_own_store_with_the_sweeps_other_options(tmp_path):
    from vitbench.sweeps.run import resolve_plan

    plan = resolve_plan(None, models=["cifar-vit/4"], grid={"depth": [1, 2]})
    job = pickle.loads(pickle.dumps(ShardJob(plan, tmp_path / "jobs", 2, StoreOptions(
        resume=False, force=True, allow_foreign=True, retry_failed=True, export=("parquet",), sync="always", sync_every=7,
    ))))  # submitit pickles the job
    assert job.options == StoreOptions(
        resume=True, force=False, allow_foreign=False, retry_failed=True, export=("parquet",), sync="always", sync_every=7,
    )
    assert job.store_dir(2) == tmp_path / "jobs" / "shard-0002-of-0002"


@pytest.mark.parametrize("options, message", [
    (StoreOptions(export=("xlsx",)), "--export=xlsx: unknown format 'xlsx'"),
    (StoreOptions(export=()), "--export=: unknown format ''"),
    (StoreOptions(sync="never"), "--sync='never': must be one of interval, always"),
    (StoreOptions(sync_interval_s=-1), "--sync-interval=-1: must be a number of seconds"),
    (StoreOptions(sync_every=0), "sync_every=0: must be a positive integer"),
])
def test_options_that_make_no_sense_are_refused_before_the_store_is_touched(tmp_path, options, message):
    from vitbench.sweeps.run import execute, resolve_plan

    plan = resolve_plan(None, models=["cifar-vit/4"], grid={"depth": [1]})
    for launch in (lambda: execute(plan, tmp_path / "s", options=options), lambda: run_submitit(plan, tmp_path / "s", options=options)):
        with pytest.raises(StoreError) as caught:
            launch()
        assert str(caught.value).startswith(message)
        assert not (tmp_path / "s").exists()


def test_a_single_export_format_given_as_text_is_one_format():
    assert StoreOptions(export="parquet").export == ("parquet",)
    assert StoreOptions(export=["csv"]).export == ("csv",)


def test_the_default_options_are_the_default_sweep_settings():
    # launchers open a store with StoreOptions() when given none: the same as a sweep asked nothing
    from vitbench.sweeps.settings import SweepSettings

    assert StoreOptions() == SweepSettings().store_options()
    assert not StoreOptions().resume and not StoreOptions().retry_failed  # retry_failed needs resume
