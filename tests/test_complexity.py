"""No function in the package is more complex than the next engineer can change safely: radon's
cyclomatic complexity (branches, loops, boolean operators, comprehensions and handlers each
count one) at most 20 everywhere (issue: ``run_submitit`` 41, ``Calibration.check`` 39)."""

from __future__ import annotations

from pathlib import Path

import pytest
from radon.complexity import cc_visit

import vitbench

PACKAGE = Path(vitbench.__file__).parent
LIMIT = 20


def _blocks(path: Path):
    for block in cc_visit(path.read_text()):
        yield block
        # closures are listed only under their function (methods are in the list already)
        yield from getattr(block, "closures", ())


@pytest.mark.slow
def test_no_function_is_more_complex_than_the_limit():
    over = sorted({
        f"{path.relative_to(PACKAGE.parent)}:{block.lineno} {block.fullname} {block.complexity}"
        for path in PACKAGE.rglob("*.py")
        for block in _blocks(path)
        if block.complexity > LIMIT
    })
    assert over == []


def test_the_measure_sees_a_complex_function():
    # the check above is not vacuous: radon counts 21 for 21 branches
    source = "def f(x):\n" + "".join(f"    if x == {i}:\n        return {i}\n" for i in range(20)) + "    return -1\n"
    (blocks,) = cc_visit(source)
    assert blocks.complexity == 21
