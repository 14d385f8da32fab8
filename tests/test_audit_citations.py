"""Citations a reader can follow (issue 34: the audit cited "notebook l.89", a line of our copy of a
notebook the reader does not have). A claim is cited by its document's short name and the heading
it sits under, as the document spells it; the claims report lists each document's title and file
name. Against the source documents themselves (shared/seeds, when present): every claim's section
is the nearest heading above its line, and every heading the report's source figures quote is in
the document."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vitbench.claims import load_catalogue
from vitbench.documents import DOCUMENTS, where

SEEDS = Path(__file__).resolve().parents[2] / "shared" / "seeds"


def test_a_citation_names_the_document_and_a_heading_never_a_line():
    assert where("000_a915cedd80df1eca.txt", "Model Configuration", "#params=18975234") == "notebook § Model Configuration"
    assert where("004", None, "106  K") == "assignment, “106 K”"  # no section: the quoted phrase
    claims = load_catalogue()
    assert all(c.section for c in claims), [c.id for c in claims if not c.section]
    assert not any(re.search(r"\bl\.\d", where(c.file, c.section, c.quote)) for c in claims)


def test_the_claims_report_cites_sections_and_lists_the_files():
    text = (Path(__file__).resolve().parents[1] / "reports" / "claims.md").read_text()
    assert not re.search(r"\bl\.\d", text)
    assert "| notebook § Model Configuration" in text
    for number in DOCUMENTS:
        assert re.search(rf"`{number}_[0-9a-f]+\.txt`", text), number


def _seed(number: str) -> list[str]:
    files = sorted(SEEDS.glob(f"{number}_*.txt"))
    if not files:
        pytest.skip(f"the source documents are not here ({SEEDS})")
    return files[0].read_text(encoding="utf-8").splitlines()


def _is_heading(line: str, section: str) -> bool:
    """A markdown heading (``#### Model Configuration``) or a plain-text title line."""
    return line.strip().lstrip("#").strip() == section


def test_every_claims_section_is_the_heading_above_its_line():
    wrong = []
    for claim in load_catalogue():
        lines = _seed(claim.file.split("_", 1)[0])
        above = [i for i, line in enumerate(lines[:claim.line], 1) if _is_heading(line, claim.section)]
        if not above:
            wrong.append(f"{claim.id}: no heading {claim.section!r} above line {claim.line}")
    assert not wrong, wrong


def test_the_source_figures_quote_headings_that_are_in_the_documents():
    import yaml

    data = yaml.safe_load((Path(__file__).resolve().parents[1] / "vitbench" / "data" / "source_figures.yaml").read_text())
    text = "\n".join("\n".join(_seed(number)) for number in DOCUMENTS)
    quoted = [q for entry in data.values() for q in re.findall(r"“([^”]+)”", entry["source"])]
    assert len(quoted) >= 8
    assert [q for q in quoted if q not in text] == []
