"""Which files the columnar gate (:mod:`vitbench.gate.columnar`) answers itself and which it leaves
to the record path, on small hand-written files: keys by ``spec_key`` (one architecture under two
names, a renamed model), a file without warnings, environment differences, failed rows and a text
column under a rule are answered on columns, with the record path's result; a configuration
repeated in a file is pooled by the record path. "Answered on columns" is checked with the record
path switched off."""

from __future__ import annotations

import dataclasses

import pytest

from vitbench.gate import EnvDifference, RuleError, Verdict, compare, comparing, verdicts
from vitbench.gate.array_verdicts import Verdicts
from vitbench.reporting.gate import render

RUNS = '"[0.0100,0.0101,0.0102,0.0099,0.0100]"'
SLOW = '"[0.0130,0.0131,0.0132,0.0129,0.0130]"'


def _files(tmp_path, base: str, cur: str):
    (tmp_path / "a.csv").write_text(base)
    (tmp_path / "b.csv").write_text(cur)
    return tmp_path / "a.csv", tmp_path / "b.csv"


def _on_columns(monkeypatch, files, rules=None, **flags):
    """The columnar gate's result, the record path switched off (it raises if the gate falls back)."""
    def off(*args, **kwargs):
        raise AssertionError("the record path was taken")

    with monkeypatch.context() as patch:
        patch.setattr(comparing, "COLUMNAR_MIN_BYTES", 0)
        patch.setattr(verdicts, "_compare_records", off)
        result = compare(*files, rules, **flags)
    assert isinstance(result.rows, Verdicts)
    return result


def _on_records(monkeypatch, files, rules=None, **flags):
    monkeypatch.setattr(comparing, "COLUMNAR_MIN_BYTES", 1 << 60)
    return compare(*files, rules, **flags)


def _same(columnar, records):
    assert [dataclasses.replace(r, p_value=None) for r in columnar.rows] == [
        dataclasses.replace(r, p_value=None) for r in records.rows]
    for mine, theirs in zip(columnar.rows, records.rows):
        assert (mine.p_value is None) == (theirs.p_value is None)
        assert mine.p_value is None or mine.p_value == pytest.approx(theirs.p_value, rel=1e-9)
    mine, theirs = columnar.as_dict(rows=False), records.as_dict(rows=False)
    assert mine == theirs
    assert render(columnar, "table") == render(records, "table") or _close(columnar, records)


def _close(columnar, records):  # p-values agree to rounding: their text may differ in the last digit
    import re

    def cut(text):
        return re.sub(r"(\d\.\d{6})\d*", r"\1", text)

    return cut(render(columnar, "json")) == cut(render(records, "json"))


HEADER = "model,spec_key,batch_size,status,throughput_img_s,params,run_medians_s,warnings,env_torch\n"


def test_rows_match_on_the_spec_key_and_two_names_of_one_architecture_stay_apart(tmp_path, monkeypatch):
    base = HEADER + (f"vit-s,k1,8,ok,800.0,22,{RUNS},,2.14\n"
                     f"deit-s,k1,8,ok,800.0,22,{RUNS},,2.14\n"
                     f"resnet,k2,8,ok,800.0,11,{RUNS},,2.14\n")
    cur = HEADER + (f"vit-s,k1,8,ok,615.0,22,{SLOW},,2.14\n"
                    f"deit-s,k1,8,ok,800.0,22,{RUNS},,2.14\n"
                    f"resnet-50,k2,8,ok,800.0,11,{RUNS},,2.14\n")  # renamed: the same architecture
    files = _files(tmp_path, base, cur)
    columnar = _on_columns(monkeypatch, files, ["throughput:-5%", "params:0"])
    assert columnar.key_columns == ("spec_key", "model", "batch_size")
    assert [(r.configuration, r.verdict) for r in columnar.rows if r.metric == "throughput_img_s"] == [
        ("vit-s b8", "REGRESSION"), ("deit-s b8", "ok")]
    assert list(columnar.added) == ["resnet-50 b8"] and list(columnar.removed) == ["resnet b8"]
    _same(columnar, _on_records(monkeypatch, files, ["throughput:-5%", "params:0"]))


def test_one_name_per_architecture_keys_on_the_spec_key_alone(tmp_path, monkeypatch):
    base = HEADER + f"vit-s,k1,8,ok,800.0,22,{RUNS},,2.14\nvit-s,k2,8,ok,400.0,86,{RUNS},,2.14\n"
    cur = HEADER + f"vit-small,k1,8,ok,800.0,22,{RUNS},,2.14\nvit-s,k2,8,ok,400.0,86,{RUNS},,2.14\n"
    files = _files(tmp_path, base, cur)
    columnar = _on_columns(monkeypatch, files, ["params:0"])
    assert columnar.key_columns == ("spec_key", "batch_size") and columnar.passed
    assert [r.configuration for r in columnar.rows if r.metric == "params"] == ["vit-small b8", "vit-s b8"]
    _same(columnar, _on_records(monkeypatch, files, ["params:0"]))


def test_a_spec_key_missing_in_a_row_keys_on_the_model(tmp_path, monkeypatch):
    base = HEADER + f"vit-s,k1,8,ok,800.0,22,{RUNS},,2.14\nvit-b,,8,ok,400.0,86,{RUNS},,2.14\n"
    files = _files(tmp_path, base, base)
    columnar = _on_columns(monkeypatch, files, ["params:0"])
    assert columnar.key_columns == ("model", "batch_size")
    _same(columnar, _on_records(monkeypatch, files, ["params:0"]))


def test_files_without_warnings_are_answered_on_columns(tmp_path, monkeypatch):
    plain = "model,batch_size,status,throughput_img_s,run_medians_s\n" + f"a,8,ok,800.0,{RUNS}\nb,8,ok,800.0,{RUNS}\n"
    warned = "model,batch_size,status,throughput_img_s,run_medians_s,warnings\n" + (
        f"a,8,ok,615.0,{SLOW},busy machine: load 3\nb,8,ok,800.0,{RUNS},\n")
    for base, cur in ((plain, plain), (plain, warned), (warned, plain)):
        files = _files(tmp_path, base, cur)
        columnar = _on_columns(monkeypatch, files, ["throughput:-5%"])
        _same(columnar, _on_records(monkeypatch, files, ["throughput:-5%"]))
    assert _on_columns(monkeypatch, _files(tmp_path, plain, warned), ["throughput:-5%"]).warnings == (
        "current a b8: busy machine: load 3",)


def test_environment_differences_are_found_on_columns(tmp_path, monkeypatch):
    header = "model,batch_size,status,params,env_torch,env_cpu,vitbench_version\n"
    base = header + "a,8,ok,22,2.14,x86,0.9\nb,8,ok,22,2.14,,0.9\nc,8,ok,22,2.13,x86,0.9\n"
    cur = header + "a,8,ok,22,2.15,x86,0.9\nb,8,ok,22,2.15,x86,1.1\n"
    files = _files(tmp_path, base, cur)
    columnar = _on_columns(monkeypatch, files, ["params:0"], allow_missing_rows=True)
    assert columnar.env_differences == (EnvDifference("env_torch", ("2.14",), ("2.15",)),
                                        EnvDifference("vitbench_version", ("0.9",), ("0.9", "1.1")))
    _same(columnar, _on_records(monkeypatch, files, ["params:0"], allow_missing_rows=True))


def test_a_run_that_now_fails_is_a_regression_on_columns(tmp_path, monkeypatch):
    header = "model,batch_size,status,throughput_img_s,params,run_medians_s\n"
    base = header + f"a,8,ok,800.0,22,{RUNS}\nb,8,oom,,22,\nc,8,ok,800.0,22,{RUNS}\n"
    cur = header + f"a,8,error,,22,\nb,8,oom,,22,\nc,8,,800.0,22,{RUNS}\n"
    files = _files(tmp_path, base, cur)
    columnar = _on_columns(monkeypatch, files, ["throughput:-5%", "params:0"])
    assert [(r.configuration, r.metric, r.verdict) for r in columnar.rows][:1] == [("a b8", "status", "REGRESSION")]
    assert "b b8: status oom in baseline, oom in current; metrics not compared" in columnar.warnings
    _same(columnar, _on_records(monkeypatch, files, ["throughput:-5%", "params:0"]))


@pytest.mark.parametrize("side", ["baseline", "current"])
def test_a_rule_on_a_text_column_is_refused_on_columns(tmp_path, monkeypatch, side):
    header = "model,batch_size,status,throughput_img_s,note\n"
    empty, text = header + "a,8,ok,800.0,\nb,8,ok,800.0,\n", header + "a,8,ok,800.0,\nb,8,ok,800.0,fast\n"
    files = _files(tmp_path, *((text, empty) if side == "baseline" else (empty, text)))
    messages = []
    for path in (_on_columns, _on_records):
        with pytest.raises(RuleError) as caught:
            path(monkeypatch, files, ["note:0"])
        messages.append(str(caught.value))
    assert messages[0] == messages[1] == "--fail-on='note:0': 'note' is not a numeric column (it holds 'fast')"


def test_a_configuration_repeated_in_one_file_is_pooled_by_the_record_path(tmp_path, monkeypatch):
    header = "model,batch_size,status,throughput_img_s\n"
    files = _files(tmp_path, header + "a,8,ok,800.0\nb,8,ok,800.0\n", header + "a,8,ok,790.0\na,8,ok,770.0\nb,8,ok,800.0\n")
    monkeypatch.setattr(comparing, "COLUMNAR_MIN_BYTES", 0)
    result = compare(*files, ["throughput:-5%"])
    assert type(result.rows) is tuple  # left to the record path
    assert [(r.configuration, r.current) for r in result.rows] == [("a b8", 780.0), ("b b8", 800.0)]
    assert result.warnings[0].startswith("current: 1 configuration(s) appear more than once")


# runs that do not vary: p is 0 or 1 by the sign of the difference of the sides' mean logarithms,
# which numpy's sums (columns) and math.fsum (records) can put on either side of 0 for neighbouring
# floats (found by a search over 6- and 7-run sides); the columnar gate leaves them to the record path
@pytest.mark.parametrize("runs, before, after", [
    (6, 42.31002472399721, 42.31002472399723),   # fsum: +1 ulp of difference; numpy: none
    (7, 5.3974551734429, 5.397455173442901),      # fsum: none; numpy: +1 ulp
])
def test_runs_that_do_not_vary_get_the_record_paths_verdict(tmp_path, monkeypatch, runs, before, after):
    def text(step):
        return ("model,batch_size,status,latency_p50_s,run_medians_s\n"
                f'm,8,ok,{step!r},"[{", ".join([repr(step)] * runs)}]"\n')

    files = _files(tmp_path, text(before), text(after))
    monkeypatch.setattr(comparing, "COLUMNAR_MIN_BYTES", 0)
    columnar = compare(*files, ["latency_p50:0"])
    records = _on_records(monkeypatch, files, ["latency_p50:0"])
    assert [(r.verdict, r.p_value) for r in columnar.rows] == [(r.verdict, r.p_value) for r in records.rows]
    assert {r.verdict for r in records.rows} <= {"REGRESSION", "not significant"}


@pytest.mark.parametrize("rule", ["latency_p50:-5%", "throughput:+5%", "latency_p50:+5%", "throughput:-5%"])
def test_rules_failing_either_way_are_decided_on_columns(tmp_path, monkeypatch, rule):
    """A rule that fails on a speed-up (its boundary a step below 1x) as well as on a slow-down."""
    header = "model,batch_size,status,latency_p50_s,throughput_img_s,run_medians_s\n"
    base = header + f"a,8,ok,0.01,800.0,{RUNS}\nb,8,ok,0.01,800.0,{RUNS}\n"
    cur = header + (f"a,8,ok,0.013,615.0,{SLOW}\n"
                    'b,8,ok,0.0077,1040.0,"[0.0077,0.00771,0.00772,0.00769,0.0077]"\n')
    files = _files(tmp_path, base, cur)
    columnar = _on_columns(monkeypatch, files, [rule])
    _same(columnar, _on_records(monkeypatch, files, [rule]))
    slower = rule in ("latency_p50:+5%", "throughput:-5%")
    assert [r.configuration for r in columnar.regressions] == (["a b8"] if slower else ["b b8"])


def test_a_p_within_rounding_of_alpha_gets_the_record_paths_verdict(tmp_path, monkeypatch):
    """The runs' p on columns (numpy's sums) is 6e-14 below the record path's 0.46753070278615994
    here (found by a search over 3-run sides); with alpha that p, the record path says "not
    significant" (p is not below alpha) and so must the columnar gate."""
    base = [0.010072792854653987, 0.010171578240480006, 0.010142560226558704]
    cur = [0.010808179609424378, 0.01067261998187691, 0.010457154239715733]

    def text(runs):
        return ("model,batch_size,status,latency_p50_s,run_medians_s\n"
                f'm,8,ok,{sorted(runs)[1]!r},"[{", ".join(map(repr, runs))}]"\n')

    files = _files(tmp_path, text(base), text(cur))
    alpha = 0.46753070278615994
    monkeypatch.setattr(comparing, "COLUMNAR_MIN_BYTES", 0)
    columnar = compare(*files, ["latency_p50:+5%"], alpha=alpha)
    records = _on_records(monkeypatch, files, ["latency_p50:+5%"], alpha=alpha)
    assert [(r.verdict, r.p_value) for r in records.rows] == [("not significant", alpha)]
    assert [(r.verdict, r.p_value) for r in columnar.rows] == [("not significant", alpha)]


def test_the_columnar_rows_and_labels_are_sequences(tmp_path, monkeypatch):
    header = "model,batch_size,status,throughput_img_s,params\n"
    base = header + "a,8,ok,800.0,1\nb,8,ok,800.0,2\nc,8,oom,,3\nd,8,ok,800.0,4\ne,8,ok,800.0,5\n"
    cur = header + "a,8,ok,800.0,1\nb,8,ok,700.0,2\nc,8,ok,800.0,3\nf,8,ok,800.0,4\ng,8,ok,800.0,5\n"
    files = _files(tmp_path, base, cur)
    result = _on_columns(monkeypatch, files, ["throughput:-5%", "params:0"], allow_missing_rows=True)
    rows = result.rows
    listed = list(rows)
    assert [(r.configuration, r.metric, r.verdict) for r in listed] == [
        ("a b8", "throughput_img_s", "ok"), ("a b8", "params", "ok"), ("b b8", "throughput_img_s", "REGRESSION"),
        ("b b8", "params", "ok")]  # c failed in the baseline: no rows, a warning
    assert len(rows) == 4 and [rows[i] for i in range(4)] == listed
    assert rows[-1] == listed[-1] and rows[-4] == listed[0] and rows[1:3] == listed[1:3] and rows[::-2] == listed[::-2]
    for index in (4, -5):
        with pytest.raises(IndexError):
            rows[index]
    assert result.configurations() == 2 and list(result.counts().items()) == [("ok", 3), ("REGRESSION", 1)]
    assert result.added == ("f b8", "g b8") and result.added == ["f b8", "g b8"]
    assert result.added != ("f b8",) and result.added != 5
    assert result.added[-1] == "g b8" and result.added[0:1] == ["f b8"] and len(result.removed) == 2
    assert repr(result.removed) == "('d b8', 'e b8')"
    with pytest.raises(TypeError):
        hash(result.added)


def test_plain_configurations_are_decided_on_arrays_and_only_odd_ones_left_to_the_record_path(tmp_path, monkeypatch):
    # the columnar gate's speed (issue 45) is that plain configurations never reach the record
    # path; a configuration whose runs hold a value no measurement gives is left to it, alone
    header = "model,batch_size,status,throughput_img_s,run_medians_s\n"
    base = header + f"a,8,ok,800.0,{RUNS}\nb,8,ok,800.0,{RUNS}\nc,8,ok,800.0,{RUNS}\n"
    cur = header + f'a,8,ok,615.0,{SLOW}\nb,8,ok,800.0,{RUNS}\nc,8,ok,800.0,"[0.0100,-0.0101,0.0102]"\n'
    result = _on_columns(monkeypatch, _files(tmp_path, base, cur), ["throughput:-5%"])
    assert sorted(result.rows.scalar) == [2]  # c, the third configuration in the current file's order
    one_run = cur.replace('"[0.0100,-0.0101,0.0102]"', '"[0.0100]"')
    assert sorted(_on_columns(monkeypatch, _files(tmp_path, base, one_run), ["throughput:-5%"]).rows.scalar) == []
    _same(result, _on_records(monkeypatch, _files(tmp_path, base, cur), ["throughput:-5%"]))


@pytest.mark.parametrize("rule", ["peak_memory:0.5%", "peak_memory:+0.5%", "peak_memory:-0.5%"])
def test_a_metric_that_stays_at_zero_holds_a_relative_rule_on_columns(tmp_path, monkeypatch, rule):
    # 0 -> 0 is no change (0%), not a change of unknown sign: within any relative threshold
    header = "model,batch_size,status,peak_memory_bytes\n"
    files = _files(tmp_path, header + "a,8,ok,0\nb,8,ok,100\n", header + "a,8,ok,0\nb,8,ok,100\n")
    columnar = _on_columns(monkeypatch, files, [rule])
    assert [(r.configuration, r.verdict) for r in columnar.rows] == [("a b8", Verdict.OK), ("b b8", Verdict.OK)]
    assert columnar.passed
    _same(columnar, _on_records(monkeypatch, files, [rule]))
