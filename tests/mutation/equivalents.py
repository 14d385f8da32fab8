"""Equivalent mutants of the whole-core run, by module: read and judged to change nothing any
caller could observe, each with the reason (``function|operator|before -> after`` names the
mutant, see :mod:`tests.mutation.mutants`). The targets' older list, by name alone, is
:data:`tests.mutation.targets.EQUIVALENT`."""

from __future__ import annotations

EQUIVALENT_BY_MODULE: dict[str, dict[str, str]] = {
    "vitbench/analytic/memory/cnn.py": {
        "_inputs|return|return image -> return None":
            "the image is held by the caller for the whole step (never dropped): a convolution that "
            "also saves and releases it, or a None it skips, leaves every count the same",
    },
}
