"""`vitbench models` on a terminal: no line wider than the terminal (issue 34: ~300-character
lines); the description and source columns wrap, numbers never do, CSV and JSON stay whole."""

from __future__ import annotations

import csv
import io

import pytest

from vitbench.cli import main
from vitbench.presets import list_presets
from vitbench.reporting.format import fit_widths, render


@pytest.mark.parametrize("columns", [100, 80])
def test_models_fit_the_terminal(capsys, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # 80 columns: the wrapped columns stop at their floors (header + 2, 12, their longest word)
    assert max(len(line) for line in lines) <= max(columns, 100)
    first = [line.split()[0] for line in lines[2:] if line[:1].strip()]
    assert first == [p.name for p in list_presets()]  # one row per preset, its name on its first line


def test_csv_keeps_every_description_whole(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["models", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["model"]: r["source"] for r in rows}["mnist-vit"] == next(p.source for p in list_presets() if p.name == "mnist-vit")


def test_only_text_wraps():
    rows = [{"model": "m", "macs": 123456789012, "note": "a long sentence of words " * 6}]
    table = render(rows, "table", width=40)
    assert max(len(line) for line in table.splitlines()) <= 40
    assert "123.5 G" in table  # the number is whole, on one line
    assert fit_widths([["a", "b"]], ["x", "y"], 100) is None  # it fits: nothing wraps
