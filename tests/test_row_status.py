"""A result row's ``status`` is a closed set (:class:`vitbench.RowStatus`) whose members are their
text: files hold the same words as before, a row read back from a file answers with the member,
and no module of vitbench compares a status with a bare literal (a typo there would be silent)."""

from __future__ import annotations

import ast
import csv
import io
import json
from pathlib import Path

import pytest

import vitbench
from vitbench import RowStatus
from vitbench.reading import read_results
from vitbench.row_status import FAILED, has_result

TEXTS = ("ok", "error", "oom", "refused", "invalid")
PACKAGE = Path(vitbench.__file__).parent


def test_members_are_their_text_in_every_form():
    assert [member.value for member in RowStatus] == list(TEXTS)
    for member, text in zip(RowStatus, TEXTS):
        assert member == text and hash(member) == hash(text) and RowStatus(text) is member
        assert str(member) == f"{member}" == "%s" % member == format(member, "") == text  # noqa: UP031 - % is one of the forms tested
        assert json.dumps({"status": member}) == json.dumps({"status": text})
        out = io.StringIO()
        csv.writer(out).writerow([member])
        assert out.getvalue().strip() == text
    assert {"oom": 1}[RowStatus.OOM] == 1  # a tally keyed by text reads the member, and back
    with pytest.raises(ValueError):
        RowStatus("OK")  # the case is part of the text


def test_the_failed_statuses_are_those_a_resume_runs_again():
    from vitbench.sweeps.run import FAILED_STATUSES

    assert FAILED == FAILED_STATUSES == (RowStatus.ERROR, RowStatus.OOM)


@pytest.mark.parametrize("row, expected", [
    ({"status": "ok"}, True), ({}, True), ({"status": None}, True),
    ({"status": "error"}, False), ({"status": RowStatus.REFUSED}, False), ({"status": "invalid"}, False),
    ({"status": ""}, False),
])
def test_has_result(row, expected):
    assert has_result(row) is expected
    assert vitbench.Row(row).ok is expected


def test_the_typed_attribute_gives_the_member_for_text_read_back():
    assert vitbench.Row({"status": "oom"}).status is RowStatus.OOM
    assert vitbench.Row({"status": RowStatus.ERROR}).status is RowStatus.ERROR
    assert vitbench.Row({}).status is None
    hand_made = vitbench.Row({"status": "skipped"})  # a hand-made file's word: given as it is, not refused
    assert hand_made.status == "skipped" and not isinstance(hand_made.status, RowStatus) and not hand_made.ok


def test_a_refused_prediction_carries_the_member_and_writes_the_text(tmp_path):
    [row] = vitbench.predict("vit-b/16", device="h100", depth=2000)  # refused from the spec: nothing built
    assert row["status"] is RowStatus.REFUSED and row.status is RowStatus.REFUSED
    path = tmp_path / "rows.csv"
    vitbench.Records([row]).to_csv(path)
    with path.open() as handle:
        [written] = list(csv.DictReader(handle))
    assert written["status"] == "refused"
    records, _ = read_results(path)
    assert records[0]["status"] == "refused" and vitbench.Row(records[0]).status is RowStatus.REFUSED


def test_an_invalid_sweep_configuration_is_a_row_with_the_member(tmp_path):
    result = vitbench.sweep(models=["vit-s/16"], grid={"img_size": [48, 64], "patch_size": [32]}, stages=["analytic"],
                            out=tmp_path / "s")
    invalid, ok = sorted(result.records, key=lambda r: r["error"] is None)
    assert invalid["status"] == "invalid" and vitbench.Row(invalid).status is RowStatus.INVALID and "48" in invalid["error"]
    assert vitbench.Row(ok).status is RowStatus.OK
    assert result.statuses == {RowStatus.INVALID: 1, RowStatus.OK: 1} and sorted(result.statuses) == ["invalid", "ok"]


def _status_literal_comparisons(source: str) -> list[int]:
    """Lines comparing something named status with a bare status text (``== "ok"``, ``in ("ok",
    None)``, ``.get("status", "ok")``) or assigning one to a status (``status="oom"``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        texts: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            texts = [node.left, *node.comparators]
            texts += [e for c in node.comparators if isinstance(c, (ast.Tuple, ast.List, ast.Set)) for e in c.elts]
            mentions = "status" in ast.unparse(node)
        elif isinstance(node, ast.keyword) and node.arg == "status":
            texts, mentions = [node.value], True
        elif isinstance(node, ast.Dict):
            texts = [v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant) and k.value == "status"]
            mentions = True
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith(".get") and node.args[:1] and \
                isinstance(node.args[0], ast.Constant) and node.args[0].value == "status":
            texts, mentions = node.args[1:], True
        else:
            continue
        if mentions and any(isinstance(t, ast.Constant) and t.value in TEXTS for t in texts):
            found.append(node.lineno)
    return sorted(set(found))


def test_the_scan_sees_each_form_of_a_bare_status_text():
    source = ('a = r["status"] == "ok"\nb = r.get("status") in ("ok", None)\nc = r.get("status", "ok")\n'
              'row.update(status="oom")\nd = {"status": "error"}\ne = r["status"] == RowStatus.OK\nf = x == "ok"\n')
    assert _status_literal_comparisons(source) == [1, 2, 3, 4, 5]


def test_no_module_compares_or_writes_a_status_as_bare_text():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "row_status.py":
            continue
        source = path.read_text()
        if "status" not in source:  # nothing to parse: no comparison or keyword can name a status
            continue
        lines = _status_literal_comparisons(source)
        if lines:
            found[path.relative_to(PACKAGE).as_posix()] = lines
    assert found == {}
