"""Every example in the README and in docs/*.md runs verbatim (issue 12), in reading order, in one
scratch folder (the pages of ``readme_examples.SEPARATE_PAGES`` in their own, in
tests/test_readme_measuring.py).

The examples run the real `vitbench` command of this environment; they take minutes (the default
study, sweeps, measurements), so they are marked slow: `pytest tests/ -m slow` (CI runs it).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from readme_examples import (
    DOCS_INDEX,
    README,
    SEPARATE_PAGES,
    all_examples,
    chained_examples,
    make_scratch,
    page_examples,
    pages,
    run_example,
)

EXAMPLES = chained_examples()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return make_scratch(tmp_path_factory.mktemp("readme"))


def test_the_readme_has_examples_and_every_skip_says_why():
    every = all_examples()
    assert len([e for e in every if e.action == "run"]) >= 10
    assert [e for e in every if e.action in ("skip", "file") and not e.argument] == []


def test_every_docs_page_is_in_the_reading_order_and_the_readme_is_short():
    """docs/README.md lists every page (so none of their examples goes untested); the README
    stays a front page (issue: 878 lines, profile alone 186)."""
    listed = set(pages())
    assert {p for p in DOCS_INDEX.parent.glob("*.md") if p != DOCS_INDEX} <= listed
    assert all(p.exists() for p in listed)
    assert {p.name for p in listed} >= set(SEPARATE_PAGES)
    assert len(README.read_text(encoding="utf-8").splitlines()) < 300
    assert [e for e in EXAMPLES if e.path == README and e.action == "run"], "the README's quickstart runs"


def test_the_pages_run_apart_write_no_file_the_others_read():
    """A page run in its own scratch folder writes no output file (``-o``, ``--out``, ``--save``)
    that the chained pages' examples could read."""
    written = re.compile(r"(?:-o|--out|--save|--store)\s+(\S+)")
    for name in SEPARATE_PAGES:
        for example in page_examples(name):
            assert written.findall(example.code) == [], example.where


@pytest.mark.slow
@pytest.mark.unsampled  # each example builds on the files the ones before it wrote
@pytest.mark.parametrize("example", EXAMPLES, ids=[e.label for e in EXAMPLES])
def test_readme_example_runs_verbatim(example, scratch):
    run_example(example, scratch)


def test_a_timing_gate_may_fail_only_where_it_reports_its_runs_unstable(tmp_path):
    """``<!-- readme: timing ... -->``: exit 0 passes, exit 1 passes only with the gate's own
    stability warning in its output; an unmarked example must exit 0."""
    from readme_examples import UNSTABLE, examples

    page = tmp_path / "page.md"
    page.write_text(f"<!-- readme: timing shared machine -->\n```bash\necho '{UNSTABLE}'; exit 1\n```\n\n"
                    "<!-- readme: timing shared machine -->\n```bash\necho 'REGRESSION'; exit 1\n```\n\n"
                    f"```bash\necho '{UNSTABLE}'; exit 1\n```\n", encoding="utf-8")
    noisy, unexplained, unmarked = examples(page)
    assert (noisy.timing, unexplained.timing, unmarked.timing) == (True, True, False)
    run_example(noisy, tmp_path)
    for example in (unexplained, unmarked):
        with pytest.raises(AssertionError, match="exited 1 .expected 0."):
            run_example(example, tmp_path)
