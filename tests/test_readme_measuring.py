"""docs/measuring.md's examples run verbatim, in order, in a scratch folder of their own: apart
from the other pages' (tests/test_readme.py) so that pytest-xdist runs the two beside each other
(each file goes to one worker; the profile examples alone take minutes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from readme_examples import make_scratch, page_examples, run_example

EXAMPLES = page_examples("measuring.md")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return make_scratch(tmp_path_factory.mktemp("readme-measuring"))


def test_the_page_has_examples_that_run():
    assert [e for e in EXAMPLES if e.action == "run"]


@pytest.mark.slow
@pytest.mark.unsampled  # in order: a later example may read what an earlier one wrote
@pytest.mark.parametrize("example", EXAMPLES, ids=[e.label for e in EXAMPLES])
def test_measuring_example_runs_verbatim(example, scratch):
    run_example(example, scratch)
