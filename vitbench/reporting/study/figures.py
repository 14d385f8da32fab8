"""The source documents' figures (``vitbench/data/source_figures.yaml``) that the default study's
report sets beside vitbench's own numbers. Data, not code: edit the YAML, not this module."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

PATH = Path(__file__).resolve().parents[2] / "data" / "source_figures.yaml"


@functools.cache
def source_figures() -> dict[str, Any]:
    """The parsed figures file: notebook_patch, ablation, chapter_resolution, tutorial_params,
    measured_pairs (each with the ``source`` lines it quotes)."""
    import yaml

    with open(PATH, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def measured_pairs() -> list[tuple[str, str]]:
    """(a, b) model pairs the documents compare."""
    return [(a, b) for a, b in source_figures()["measured_pairs"]["pairs"]]
