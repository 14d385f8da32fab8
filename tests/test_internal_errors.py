"""User errors against vitbench's own (issue 47): a user's model or input failing is a row, or one
line and exit code 2; an exception vitbench's own code raises is exit code 3 with its traceback
(on standard error under ``VITBENCH_DEBUG=1``), never a row that blames the user's model.

A bug is injected by replacing a core function with ``len``: the call then raises TypeError in
vitbench's own frame, as a real bug there would (a stand-in defined in this file would raise in a
frame of the test's, which vitbench rightly counts as foreign code)."""

from __future__ import annotations

import textwrap

import pytest

from vitbench.cli import main
from vitbench.errors import ModelError, VitbenchError, foreign_call, model_code, raised_by_vitbench


def _run(argv, capsys, monkeypatch, debug: bool) -> tuple[int, str, str]:
    if debug:
        monkeypatch.setenv("VITBENCH_DEBUG", "1")
    else:
        monkeypatch.delenv("VITBENCH_DEBUG", raising=False)
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _assert_internal(code: int, out: str, err: str, debug: bool, where: str) -> None:
    assert code == 3, (code, out, err)
    assert "internal error: TypeError: len() takes exactly one argument" in err
    assert "refused" not in out and "its forward failed" not in out + err  # not blamed on the model
    if debug:
        assert "Traceback (most recent call last)" in err and where in err
    else:
        assert "Traceback" not in err and "set VITBENCH_DEBUG=1 for a traceback" in err


@pytest.mark.parametrize("debug", [False, True], ids=["plain", "VITBENCH_DEBUG"])
def test_an_internal_bug_while_counting_is_exit_3_not_a_refused_row(debug, capsys, monkeypatch):
    """The dispatch counter's own mapping breaks, inside the boundary around the model's forward:
    analyze ends with exit 3 (before: a row with status=error, its stack lost)."""
    import vitbench.counters.dispatch as dispatch

    monkeypatch.setattr(dispatch, "custom_mapping", len)
    code, out, err = _run(["analyze", "vit-ti/16", "--counters", "dispatch", "--format", "csv"], capsys, monkeypatch, debug)
    _assert_internal(code, out, err, debug, "dispatch_count")


@pytest.mark.parametrize("debug", [False, True], ids=["plain", "VITBENCH_DEBUG"])
def test_an_internal_bug_inside_a_traced_forward_is_not_the_models_failure(debug, capsys, monkeypatch):
    """The operator recorder breaks while the model's forward runs under it: predict says
    internal error, exit 3, not "refused: its forward failed" (exit 2) as it said before."""
    import vitbench.timemodel.ops as ops
    from vitbench.timemodel import run

    monkeypatch.setattr(ops, "describe", len)
    monkeypatch.setattr(run, "_OPS_CACHE", {})  # traced here, not remembered from an earlier test in this process
    argv = ["predict", "vit-ti/16", "--device", "h100", "--no-trace-cache", "--format", "csv"]
    code, out, err = _run(argv, capsys, monkeypatch, debug)
    _assert_internal(code, out, err, debug, "__torch_dispatch__")


@pytest.mark.parametrize("debug", [False, True], ids=["plain", "VITBENCH_DEBUG"])
def test_an_internal_bug_while_measuring_is_exit_3_not_an_error_row(debug, capsys, monkeypatch):
    """profile in this process (--runs 1): the measuring boundary keeps a model's failure as a
    row, but vitbench's own exception ends the command with its traceback."""
    import vitbench.measure.single as single

    monkeypatch.setattr(single, "measure_batch", len)
    argv = ["profile", "mnist-vit", "--runs", "1", "--min-time", "0.01", "--warmup", "1", "--min-samples", "1",
            "--no-memory", "--format", "csv"]
    code, out, err = _run(argv, capsys, monkeypatch, debug)
    _assert_internal(code, out, err, debug, "measure_run")


BROKEN = textwrap.dedent('''
    import torch

    class TypeErrorInForward(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(12, 2)

        def forward(self, x):
            return self.linear(x.flatten(1)) + len(None)  # the user's bug: a TypeError

    def forward_fails():
        return TypeErrorInForward()

    def constructor_fails():
        raise TypeError("the user's constructor is broken")

    def tiny():
        return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 2))
''')


@pytest.fixture
def user_models(tmp_path, monkeypatch):
    (tmp_path / "usermodels.py").write_text(BROKEN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VITBENCH_DEBUG", raising=False)


def test_a_user_models_type_error_in_forward_is_still_its_refused_row(user_models, capsys):
    """The same exception type as the injected bug, raised in the user's code: the user's to fix
    (a refused row, exit 2), the other model still counted."""
    code = main(["analyze", "py:./usermodels.py:forward_fails", "py:./usermodels.py:tiny", "--img-size", "2",
                 "--format", "csv"])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert "refused" in out and "object of type 'NoneType' has no len()" in out and "internal error" not in err
    assert "py:./usermodels.py:tiny" in out


@pytest.mark.parametrize("reference, said", [
    ("py:./usermodels.py:constructor_fails", "could not be built: TypeError: the user's constructor is broken"),
    ("py:./usermodels.py:tiny+no_such_keyword=1", "no_such_keyword"),
])
def test_a_user_constructor_that_raises_is_one_line_exit_2(reference, said, user_models, capsys):
    """A TypeError from the user's factory, or from calling it with a keyword it does not take
    (raised by Python at vitbench's call: :func:`vitbench.errors.foreign_call`), is the user's."""
    code = main(["analyze", reference, "--img-size", "2"])
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("vitbench")]
    assert code == 2 and len(err) == 1, err
    assert said in err[0] and "internal error" not in err[0]


def test_a_user_model_failing_while_measured_is_still_an_error_row(user_models, capsys):
    code = main(["profile", "py:./usermodels.py:forward_fails", "--img-size", "2", "--runs", "1",
                 "--min-time", "0.01", "--warmup", "1", "--min-samples", "1", "--no-memory", "--format", "csv"])
    out, err = capsys.readouterr()
    assert code == 3  # every configuration failed: a run failed (as before issue 47)
    assert ",error," in out and "object of type 'NoneType' has no len()" in out
    assert "internal error" not in err and "Traceback" not in err


# --- the classification itself -------------------------------------------------------------------
def _caught(call) -> BaseException:
    try:
        call()
    except BaseException as exc:  # noqa: BLE001 - the exception is what the test looks at
        return exc
    raise AssertionError("did not raise")


def test_raised_by_vitbench_looks_at_the_innermost_frame():
    from vitbench.errors import shown

    def foreign():
        raise TypeError("the user's")

    assert raised_by_vitbench(_caught(lambda: shown(None, limit=object())))  # a TypeError in errors.py
    assert not raised_by_vitbench(_caught(foreign))  # this file is not vitbench's code
    assert not raised_by_vitbench(_caught(lambda: foreign_call(foreign)))
    assert not raised_by_vitbench(_caught(lambda: foreign_call(foreign, "an argument it does not take")))
    assert not raised_by_vitbench(TypeError("never raised"))


def test_model_code_converts_only_what_foreign_code_raised():
    def users():
        raise ValueError("theirs")

    with pytest.raises(ModelError) as info:
        with model_code():
            users()
    assert isinstance(info.value, VitbenchError) and info.value.exit_code == 2
    assert info.value.detail == "ValueError: theirs" and "in users" in info.value.traceback_text
    with pytest.raises(ModelError):  # raised by the call into foreign code: foreign
        with model_code():
            foreign_call(len)
    with pytest.raises(TypeError):  # raised in vitbench's own frame: passes unchanged
        with model_code():
            from vitbench.errors import shown

            shown(None, limit=object())


#: the boundaries that catch every exception, each justified where it is: the one around code
#: vitbench does not own, the command's (exit 3), a sweep's row, a measuring worker's row, the
#: step thread, which hands what a step raised to the thread that waits for it, and a worker that
#: prepares models for a prediction (``predict --jobs``: what fails there, vitbench's own bug
#: included, the prediction does again itself, where it raises as it does without workers)
BOUNDARIES = {("vitbench/errors.py", "model_code"), ("vitbench/cli/__init__.py", "_main"),
              ("vitbench/sweeps/rows.py", "row"), ("vitbench/measure/worker.py", "main"),
              ("vitbench/measure/step_thread.py", "_serve"), ("vitbench/timemodel/pretrace.py", "prepare")}


@pytest.mark.slow
def test_every_exception_is_caught_only_at_the_boundaries():
    """No ``except Exception`` (or a bare ``except``, or ``except BaseException``) that does not
    end by re-raising what it caught, outside :data:`BOUNDARIES`: anywhere else one would turn
    vitbench's own bug into a row or a fallback."""
    import ast
    from pathlib import Path

    import vitbench

    root = Path(vitbench.__file__).parent
    found = set()
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for handler in (n for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler)):
            broad = handler.type is None or (isinstance(handler.type, ast.Name) and handler.type.id in ("Exception", "BaseException"))
            last = handler.body[-1]
            if not broad or (isinstance(last, ast.Raise) and last.exc is None):  # cleanup, then re-raised as it is
                continue
            function = parents[handler]
            while not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
                function = parents[function]
            found.add((str(path.relative_to(root.parent)), getattr(function, "name", "<module>")))
    assert found == BOUNDARIES
