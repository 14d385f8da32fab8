"""The typed API (issue 47) renders exactly what the dict-returning API rendered: for ``predict``
(CPU, a refused row, two GPUs), ``choose``, ``profile`` (CPU, tiny) and ``sweep``, the rows'
CSV (``Records.to_csv`` and the DataFrame's), JSON (the results document and the CLI's) and
markdown, and the CLI's markdown of predict and choose, are byte for byte the files the code
before the change wrote (tests/data/golden_api/, by ``tests/_golden_api.py``; cells that vary
between runs masked, see there). A change meant to change an output (the GPU cost model's
parameters move choose's and the GPU predict's numbers) writes them again:
``python tests/_golden_api.py --write``, the diff read."""

from __future__ import annotations

import pytest
from _golden_api import CASES, GOLDEN, outputs

#: seconds each (tracing several models' steps), or measuring (profile: its row's columns may
#: differ between machines, a GPU's, a governor's): with the slow tests; the default run checks
#: the small cases, one trace each, and the sweep
SLOW = {"predict_cpu", "predict_gpu", "choose", "profile", "cli"}


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VITBENCH_CACHE_DIR", str(tmp_path / "cache"))


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW else c for c in [*CASES, "cli"]])
def test_outputs_are_byte_for_byte_those_of_the_api_before(case, tmp_path):
    found = outputs(case, tmp_path)
    expected = {path.name: path.read_text() for path in GOLDEN.glob(f"{case}.*")} if case != "cli" else {
        path.name: path.read_text() for path in GOLDEN.glob("cli_*")}
    assert sorted(found) == sorted(expected)
    for name, text in found.items():
        assert text == expected[name], f"{name} differs from the API's before the typed API"


def test_the_golden_files_are_not_vacuous():
    """Each case wrote rows with numbers in them, not an empty table."""
    for case in CASES:
        text = (GOLDEN / f"{case}.records.csv").read_text()
        assert len(text.splitlines()) >= 2, case
    assert "pred_latency_s" in (GOLDEN / "predict_cpu.records.csv").read_text().splitlines()[0]
