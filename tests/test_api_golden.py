"""The typed API (issue 47) renders exactly what the dict-returning API rendered: for ``predict``
(CPU, a refused row, two GPUs), ``choose``, ``profile`` (CPU, tiny) and ``sweep``, the rows'
CSV (``Records.to_csv`` and the DataFrame's), JSON (the results document and the CLI's) and
markdown, and the CLI's markdown of predict and choose, are byte for byte the files the code
before the change wrote (tests/data/golden_api/, by ``tests/_golden_api.py``; cells that vary
between runs masked, see there). A change meant to change an output (the GPU cost model's
parameters move choose's and the GPU predict's numbers) writes them again:
``python tests/_golden_api.py --write``, the diff read."""

from __future__ import annotations

import math
import re

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
        if same_torch():
            assert text == expected[name], f"{name} differs from the API's before the typed API"
        else:  # another torch traces a step a little differently: the same text, the numbers close
            words, numbers = _words_and_numbers(text)
            golden_words, golden_numbers = _words_and_numbers(expected[name])
            assert words == golden_words, f"{name} differs from the API's before the typed API"
            assert all(_close(a, b) for a, b in zip(numbers, golden_numbers)), f"{name}: numbers moved more than 5%"


#: how far a number may move between the torch release the files were written with and another
#: (tests/test_choose.py: 2.14 and 2.15 differ by up to 3% in a step's time)
OTHER_TORCH_TOLERANCE = 0.05


def same_torch() -> bool:
    """Whether the installed torch is the release the golden files were written with
    (``tests/data/golden_api/TORCH_VERSION``): then they must match byte for byte."""
    import torch

    return torch.__version__.split("+")[0] == (GOLDEN / "TORCH_VERSION").read_text().strip()


def _words_and_numbers(text: str) -> tuple[list[str], list[str]]:
    number = r"-?\d+(?:\.\d+)?(?:e-?\d+)?"
    text = re.sub(r"\s+", " ", re.sub(r"-{3,}", "---", text))
    return re.split(number, text), re.findall(number, text)


def _close(a: str, b: str) -> bool:
    """The same digits, or two finite numbers within OTHER_TORCH_TOLERANCE of each other."""
    if a == b:
        return True
    x, y = float(a), float(b)
    return math.isfinite(x) and math.isfinite(y) and abs(x - y) <= OTHER_TORCH_TOLERANCE * max(abs(x), abs(y))


def test_numbers_that_move_with_torch_are_told_from_a_changed_text():
    """The comparison used under another torch: numbers may move by 5%, nothing else."""
    assert _words_and_numbers("| h100 | 363 ms | 0.154 |") [0] == _words_and_numbers("| h100 | 368 ms | 0.154 |")[0]
    assert _close("363", "368") and not _close("363", "400") and _close("8e999", "8e999") and not _close("8e999", "9e999")
    assert _words_and_numbers("h100 wins")[0] != _words_and_numbers("a100 wins")[0]


def test_the_golden_files_are_not_vacuous():
    """Each case wrote rows with numbers in them, not an empty table."""
    for case in CASES:
        text = (GOLDEN / f"{case}.records.csv").read_text()
        assert len(text.splitlines()) >= 2, case
    assert "pred_latency_s" in (GOLDEN / "predict_cpu.records.csv").read_text().splitlines()[0]
