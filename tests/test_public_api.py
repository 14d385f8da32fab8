"""The public API stays small, documented and simple at its core (issue 47: ``predict`` took 19
parameters plus ``**field_overrides`` in 112 lines, ``sweep`` 24; none of the API documented its
arguments).

The public API is every function the package root exports (``vitbench._EXPORTS``) and every
public function of vitbench/api.py (:func:`_api_docs.public_api`). Each one:

- takes at most 8 parameters. A settings object counts as one. ``**keywords`` is not counted
  when the docstring's Args say what it takes: in predict, choose, profile, plan_records and
  sweep it forwards to the one builder of the command's settings (the keyword form builds the
  same frozen object, validated in the same place), the other names being spec fields to
  override (or, for sweep, the plan's); in resolve and with_overrides, analyze, it is the spec's
  fields. An undocumented ``**kwargs`` counts as one parameter.
- has at most 60 lines of code: its lines less its docstring (documentation is not code a
  reader must follow; the Args sections alone would otherwise crowd the limit).
- has a Google-style docstring: ``Args:`` naming every parameter (and no other), ``Returns:``
  and ``Raises:``.

docs/api.md's reference section is rendered from those docstrings (``tests/_api_docs.py``). The
core packages' mean cyclomatic complexity (radon's ``cc -a``: every function, method and class
block) is at most 5.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from pathlib import Path

import pytest
from _api_docs import API_DOC, public_api, render, section
from radon.complexity import cc_visit, sorted_results

import vitbench

PACKAGE = Path(vitbench.__file__).parent
MAX_PARAMETERS = 8
MAX_CODE_LINES = 60
CORE = ("gate", "timemodel", "store", "analytic", "counters")
MAX_MEAN_CC = 5.0

#: functions of the API whose module another branch of issue 47 (or of the default study) is
#: changing at the time of writing; each is to be fixed there, and then taken off this list (the
#: tests fail while a name is listed that no longer needs to be)
PENDING_SIZE = {
    "report": "vitbench/studies.py (12 parameters, 67 lines): the default-study work (h46) changes its signature",
}
PENDING_DOCS = {
    "report": "vitbench/studies.py: the default-study work (h46)",
    "calibrate": "vitbench/timemodel/calibration/worker.py: the CPU calibration work (h46)",
    "compare": "vitbench/gate/comparing.py: the gate's one public compare (h47gate)",
}


def functions() -> dict[str, object]:
    return {name: value for name, value in public_api().items() if not inspect.isclass(value)}


def sections(doc: str) -> dict[str, list[str]]:
    """A Google-style docstring's sections: heading (``Args``) -> its lines."""
    found: dict[str, list[str]] = {}
    current = None
    for line in doc.splitlines():
        heading = re.fullmatch(r"(Args|Arguments|Returns|Yields|Raises|Attributes|Examples?|Note):", line)
        if heading:
            current = found.setdefault(heading.group(1), [])
        elif current is not None and line and not line.startswith(" "):
            current = None
        elif current is not None:
            current.append(line)
    return found


def documented_arguments(doc: str) -> list[str]:
    """The names an ``Args:`` section documents (``**keywords`` with its stars)."""
    return [m.group(1) for line in sections(doc).get("Args", []) for m in [re.match(r"    (\*{0,2}\w+)( \(.*?\))?:", line)] if m]


def parameter_names(function) -> list[str]:
    out = []
    for p in inspect.signature(function).parameters.values():
        out.append(("**" if p.kind is p.VAR_KEYWORD else "*" if p.kind is p.VAR_POSITIONAL else "") + p.name)
    return out


def counted_parameters(function) -> int:
    """Its parameters, a ``**keywords`` its Args document not counted."""
    documented = set(documented_arguments(inspect.getdoc(function) or ""))
    return sum(1 for name in parameter_names(function) if not (name.startswith("**") and name in documented))


def code_lines(function) -> int:
    """Lines of the function less its docstring's (and its decorators')."""
    return code_lines_of(inspect.getsource(function))


def code_lines_of(source: str) -> int:
    """Lines of the (first) function defined in ``source`` less its docstring's."""
    node = ast.parse(textwrap.dedent(source)).body[0]
    lines = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        lines -= first.end_lineno - first.lineno + 1
    return lines


def size_problems(function) -> list[str]:
    problems = []
    if counted_parameters(function) > MAX_PARAMETERS:
        problems.append(f"{counted_parameters(function)} parameters")
    if code_lines(function) > MAX_CODE_LINES:
        problems.append(f"{code_lines(function)} lines of code")
    return problems


def doc_problems(function) -> list[str]:
    doc = inspect.getdoc(function) or ""
    if not doc:
        return ["no docstring"]
    found = sections(doc)
    problems = [f"no {name}: section" for name in ("Returns", "Raises") if name not in found]
    names, documented = parameter_names(function), documented_arguments(doc)
    if names and "Args" not in found:
        problems.append("no Args: section")
    elif documented != names:
        problems.append(f"Args document {documented}, the parameters are {names}")
    return problems


def test_no_public_function_is_long_or_takes_many_parameters():
    found = {name: size_problems(f) for name, f in functions().items()}
    over = {name: problems for name, problems in found.items() if problems}
    assert sorted(over) == sorted(PENDING_SIZE), over


def test_every_public_function_documents_its_arguments_returns_and_raises():
    found = {name: doc_problems(f) for name, f in functions().items()}
    undocumented = {name: problems for name, problems in found.items() if problems}
    assert sorted(undocumented) == sorted(PENDING_DOCS), undocumented


def test_the_checks_see_a_long_signature_and_missing_sections():
    def wide(a, b, c, d, e, f, g, h, i):
        """Args:
            a: one.

        Returns:
            nothing.
        """

    def forwarded(a, **kwargs):
        """Forwards.

        Args:
            a: one.
            **kwargs: the settings' fields.

        Returns:
            None.

        Raises:
            SpecError: never.
        """

    def hidden(a, **kwargs):
        """Args:
            a: one.
        """

    assert counted_parameters(wide) == 9 and size_problems(wide) == ["9 parameters"]
    assert counted_parameters(forwarded) == 1 and doc_problems(forwarded) == []
    assert counted_parameters(hidden) == 2  # an undocumented **kwargs counts
    assert "no Raises: section" in doc_problems(wide)
    assert any("the parameters are" in p for p in doc_problems(wide))
    source = 'def long():\n    """Doc,\n    two lines."""\n' + "    x = 1\n" * 59 + "    return x\n"
    assert code_lines_of(source) == 61  # the def, 59 assignments, the return


def test_the_api_reference_in_docs_is_rendered_from_the_code():
    """docs/api.md holds the reference this code renders (``python tests/_api_docs.py --write``)."""
    assert section(API_DOC.read_text()) == render()


def radon_mean(package: str) -> tuple[float, int]:
    """``radon cc -a`` of ``vitbench/<package>``: the mean over every block (functions, methods,
    classes) and the number of blocks."""
    blocks = [b for path in sorted((PACKAGE / package).rglob("*.py")) for b in sorted_results(cc_visit(path.read_text()))]
    return sum(b.complexity for b in blocks) / len(blocks), len(blocks)


@pytest.mark.parametrize("package", CORE)
def test_the_core_packages_are_simple_on_average(package):
    mean, blocks = radon_mean(package)
    assert blocks > 20 and mean <= MAX_MEAN_CC, f"{package}: mean CC {mean:.2f} over {blocks} blocks"


def test_the_mean_is_radons_own(tmp_path):
    """The mean above is what ``radon cc -a`` prints for a package."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "radon", "cc", "-a", str(PACKAGE / "store")], capture_output=True,
                         text=True, check=True).stdout
    printed = float(re.search(r"Average complexity: \w \(([0-9.]+)\)", out).group(1))
    assert radon_mean("store")[0] == pytest.approx(printed, rel=1e-12)
