"""``py:`` is code, with a contract (issue 33): a standard-library (or vitbench) module is refused
from its name, imported nothing; a factory that is not the user's own Python function or an
nn.Module class is refused before it is called; and every other argument, path and setting is
checked before the user's module is imported (a factory file that leaves a marker when imported
shows it was not); a dry run imports nothing. Limits from the spec refuse, before tracing, a
model whose largest weight would not fit in memory."""

from __future__ import annotations

import sys
import textwrap

import pytest

from vitbench.cli import main
from vitbench.errors import SpecError

FACTORY = textwrap.dedent('''
    import pathlib
    pathlib.Path(__file__).with_name("imported.txt").write_text("imported")
    from torch import nn

    def build(depth=1, img_size=8):
        return nn.Sequential(*[nn.Conv2d(3, 3, 3, padding=1) for _ in range(depth)])
''')


@pytest.fixture
def factory_dir(tmp_path, monkeypatch):
    (tmp_path / "mine.py").write_text(FACTORY)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _one_line(capsys) -> str:
    err = [line for line in capsys.readouterr().err.strip().splitlines() if line.startswith("vitbench")]
    assert len(err) == 1, err
    return err[0]


# --- refused from the name: nothing imported, nothing run -------------------------------------
@pytest.mark.parametrize("reference", [
    "py:os:popen+cmd=touch {marker}",
    "py:subprocess:getoutput+cmd=touch {marker}",
    "py:shutil:rmtree+path={folder}",
    "py:os.path:exists",
    "py:builtins:exec+source=1",
])
def test_a_standard_library_module_is_refused_before_it_is_imported(reference, tmp_path, capsys):
    marker, folder = tmp_path / "ran", tmp_path / "keep"
    folder.mkdir()
    assert main(["analyze", reference.format(marker=marker, folder=folder)]) == 2
    line = _one_line(capsys)
    assert "standard library" in line and "nothing was imported" in line
    assert not marker.exists() and folder.is_dir()


def test_a_standard_library_file_given_by_its_path_is_refused(tmp_path, capsys):
    import shutil

    folder = tmp_path / "keep"
    folder.mkdir()
    assert main(["analyze", f"py:{shutil.__file__}:rmtree+path={folder}"]) == 2
    assert "standard library" in _one_line(capsys)
    assert folder.is_dir()


def test_vitbench_own_modules_are_refused(capsys):
    assert main(["analyze", "py:vitbench.sweeps.launch:sweep"]) == 2
    assert "vitbench's own modules" in _one_line(capsys)


def test_the_static_check_imports_nothing(tmp_path, monkeypatch):
    from vitbench.models.sources.py_factory import check_reference

    (tmp_path / "untouched_pkg").mkdir()
    (tmp_path / "untouched_pkg" / "__init__.py").write_text("raise SystemExit('imported')\n")
    (tmp_path / "untouched_pkg" / "models.py").write_text("def build():\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert check_reference("py:untouched_pkg.models", "untouched_pkg.models:build", {}) == str(tmp_path / "untouched_pkg" / "models.py")
    assert "untouched_pkg" not in sys.modules
    with pytest.raises(SpecError, match="standard library"):
        check_reference("py:json", "json:loads", {})
    with pytest.raises(SpecError, match="no such file"):
        check_reference("py:./nowhere.py", "./nowhere.py:build", {})


# --- refused after the import, before the call ------------------------------------------------
def test_a_standard_library_function_re_exported_by_the_users_module_is_not_called(tmp_path, monkeypatch, capsys):
    keep = tmp_path / "keep"
    keep.mkdir()
    (tmp_path / "sneaky.py").write_text("import functools, os\nfrom shutil import rmtree\n"
                                        f"touch = functools.partial(os.system, 'touch {tmp_path / 'ran'}')\n")
    monkeypatch.chdir(tmp_path)
    assert main(["analyze", f"py:./sneaky.py:rmtree+path={keep}"]) == 2
    assert "shutil.rmtree" in _one_line(capsys) and keep.is_dir()
    assert main(["analyze", "py:./sneaky.py:touch"]) == 2
    assert "builtin_function_or_method" in _one_line(capsys)  # a partial of os.system, unwrapped
    assert not (tmp_path / "ran").exists()


def test_a_factory_that_returns_no_module_is_refused(tmp_path, monkeypatch, capsys):
    (tmp_path / "notmodule.py").write_text("def build(img_size=8):\n    return 42\n")
    monkeypatch.chdir(tmp_path)
    assert main(["analyze", "py:./notmodule.py:build"]) == 2
    assert "not an nn.Module" in _one_line(capsys)


def test_the_users_own_factory_still_runs(factory_dir, capsys):
    assert main(["analyze", "py:./mine.py:build", "--img-size", "8", "--format", "csv"]) == 0
    assert (factory_dir / "imported.txt").exists()


# --- every other argument is checked before the user's module is imported ----------------------
@pytest.mark.parametrize("argv", [
    ["predict", "py:./mine.py:build", "--calibration", "/nonexistent.json"],
    ["predict", "py:./mine.py:build", "--device", "nosuch"],
    ["predict", "py:./mine.py:build", "--epochs", "1e308", "--dataset-size", "10"],
    ["analyze", "py:./mine.py:build", "--counters", "nosuch"],
    ["profile", "py:./mine.py:build", "--trace-dir", "{tmp}/mine.py"],
    ["profile", "py:./mine.py:build", "--warmup", "100000000000000000000"],
    ["sweep", "--model", "py:./mine.py:build", "--export", "xml", "--out", "{tmp}/s"],
    ["sweep", "--model", "py:./mine.py:build", "--stages", "nosuch", "--out", "{tmp}/s"],
    ["sweep", "--model", "py:./mine.py:build", "--out", "{tmp}/mine.py"],
    ["sweep", "--model", "py:./mine.py:build", "--out", "/proc/vitbench-x"],
    ["sweep", "--model", "py:./mine.py:build", "--out", "{tmp}/full"],
    ["sweep", "--model", "py:./mine.py:build", "--batch-size", "100000000000000000000000", "--dry-run"],
    ["sweep", "--model", "py:./mine.py:build", "--export", "xml", "--dry-run"],
])
def test_a_mistake_is_reported_before_the_users_module_is_imported(argv, factory_dir, capsys):
    (factory_dir / "full").mkdir()
    (factory_dir / "full" / "rows.jsonl").write_text('{"id": "x"}\n')
    assert main([a.format(tmp=factory_dir) for a in argv]) == 2
    _one_line(capsys)
    assert not (factory_dir / "imported.txt").exists()


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a machine without CUDA")
def test_device_cuda_without_a_gpu_is_refused_before_the_import(factory_dir, capsys):
    assert main(["predict", "py:./mine.py:build", "--device", "cuda"]) == 2
    assert "cuda" in _one_line(capsys)
    assert not (factory_dir / "imported.txt").exists()


def test_a_dry_run_imports_nothing_and_lists_the_ids_the_run_writes(factory_dir, capsys):
    from vitbench.store import read_store

    argv = ["sweep", "--model", "py:./mine.py:build", "--depth", "1,2", "--img-size", "8", "--stages", "analytic"]
    assert main([*argv, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert not (factory_dir / "imported.txt").exists()
    listed = {w for line in out.splitlines() for w in line.split() if len(w) == 32 and set(w) <= set("0123456789abcdef")}
    assert len(listed) == 2
    assert main([*argv, "--out", str(factory_dir / "s"), "-q"]) == 0
    assert (factory_dir / "imported.txt").exists()
    assert {r["id"] for r in read_store(factory_dir / "s")[0]} == listed


def test_a_sweep_file_naming_a_standard_library_function_runs_nothing(tmp_path, capsys):
    marker = tmp_path / "ran"
    sweep_file = tmp_path / "s.yaml"
    sweep_file.write_text(f'models: ["py:os:popen+cmd=touch {marker}"]\n')
    for extra in (["--dry-run"], ["--out", str(tmp_path / "out")]):
        assert main(["sweep", str(sweep_file), *extra]) == 2
        assert "standard library" in _one_line(capsys)
    assert not marker.exists()


# --- the factory's parameters from its source -------------------------------------------------
def test_static_parameters_read_a_plain_def_and_give_up_on_anything_else(tmp_path):
    from vitbench.models.sources.py_contract import static_parameters

    source = tmp_path / "m.py"
    source.write_text(textwrap.dedent('''
        import functools
        from torch import nn

        def plain(a, b=1, *args, c=2, **kwargs):
            pass

        class Net(nn.Module):
            def __init__(self, width=8, *, depth=2):
                super().__init__()

        class Open(nn.Module):
            def __init__(self, **kwargs):
                super().__init__()

        @functools.lru_cache
        def cached(x=1):
            pass

        def twice(a=1):
            pass

        twice = functools.partial(twice, a=2)
    '''))
    assert static_parameters(str(source), "plain") == {"a", "b", "c"}
    assert static_parameters(str(source), "Net") == {"width", "depth"}
    assert static_parameters(str(source), "Open") is None
    assert static_parameters(str(source), "cached") is None
    assert static_parameters(str(source), "twice") is None
    assert static_parameters(str(source), "missing") is None
    assert static_parameters(str(tmp_path / "nofile.py"), "plain") is None


# --- limits from the spec before tracing -------------------------------------------------------
@pytest.mark.parametrize("argv, field", [
    (["predict", "vit-s/16", "--img-size", "100000", "--device", "h100"], "img_size=100000"),
    (["predict", "vit-s/16", "--mlp-ratio", "1e9", "--device", "h100"], "mlp_ratio=1000000000.0"),
    (["predict", "vit-s/16", "--embed-dim", "1000008", "--num-heads", "8", "--device", "h100"], "embed_dim=1000008"),
])
def test_the_trace_refuses_what_would_not_fit_in_memory(argv, field, capsys, monkeypatch):
    import vitbench.counters.limits as limits

    monkeypatch.setattr(limits, "available_memory", lambda: 16 * 2**30)  # 16 GiB: the same answer on any machine
    assert main(argv) == 2
    line = _one_line(capsys)
    assert field in line and "largest weight" in line and "refused" in line


def test_largest_weight_by_hand():
    from vitbench.counters.limits import largest_weight
    from vitbench.presets import get_preset
    from vitbench.specs import with_overrides

    spec = with_overrides(get_preset("vit-s/16").spec, mlp_ratio=1e6)
    count, component = largest_weight(spec)
    hidden = 384 * 10**6
    assert (count, component) == (384 * hidden + hidden, "mlp_fc1")
    spec = with_overrides(get_preset("vit-s/16").spec, img_size=1600)
    count, component = largest_weight(spec)
    assert (count, component) == ((100 * 100 + 1) * 384, "pos_embed")


@pytest.mark.parametrize("argv, message", [
    (["analyze", "vit-s/16", "--img-size", "1" + "0" * 20], r"img_size=1000.*is more than 1e\+15"),
    (["analyze", "vit-s/16+embed_dim=" + "1" + "0" * 1500], r"embed_dim=.*more than 30 digits"),
    (["analyze", "vit-s/16", "--img-size", "1" + "0" * 5000], r"img_size=.*more than 30 digits"),
    (["plan", "vit-s/16", "--embed-dim", "1" + "0" * 400, "--batch-size", "1"], r"embed_dim=.*more than 30 digits"),
    (["analyze", "vit-s/16", "--mlp-ratio", "1e300"], r"mlp_ratio=1e\+300: is more than 1e\+15"),
    (["predict", "mnist-vit", "--epochs", "1e308", "--dataset-size", "10"], r"epochs=1e\+308: must be at most"),
    (["predict", "mnist-vit", "--epochs", "1", "--dataset-size", "1" + "0" * 400], r"dataset_size=1000.*must be at most"),
])
def test_huge_values_are_one_line_and_exit_2(argv, message, capsys):
    import re

    assert main(argv) == 2
    assert re.search(message, _one_line(capsys))


def test_a_resnet_of_more_blocks_than_its_formulas_walk_is_refused():
    from vitbench.presets import get_preset
    from vitbench.specs import with_overrides
    from vitbench.specs.limits import MAX_WALKED_BLOCKS

    spec = get_preset("resnet50").spec
    assert with_overrides(spec, layers=(MAX_WALKED_BLOCKS - 3, 1, 1, 1)).layers[0] == MAX_WALKED_BLOCKS - 3  # the limit itself
    with pytest.raises(SpecError, match="100,001 blocks"):
        with_overrides(spec, layers=(MAX_WALKED_BLOCKS - 2, 1, 1, 1))


# --- a well-known library's function is not a factory: refused before it is called -----------
class _Payload:
    """Unpickled, it opens (creates) ``path``: what a hostile ``.pt`` file would do."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_torch_load_of_a_pickle_is_refused_before_it_is_called(tmp_path, capsys):
    import torch

    marker = tmp_path / "unpickled.txt"
    torch.save(_Payload(str(marker)), tmp_path / "e.pt")
    assert not marker.exists()
    reference = f"py:torch:load+f={tmp_path / 'e.pt'}+weights_only=False"
    assert main(["analyze", reference, "--img-size", "28"]) == 2
    line = _one_line(capsys)
    assert "a function of the library 'torch'" in line and "not called" in line and "timm:" in line, line
    assert not marker.exists()


@pytest.mark.parametrize("reference", ["py:torch.hub:load+repo_or_dir=x+model=m+source=local", "py:numpy:load+file=x"])
def test_library_functions_are_refused_before_they_are_called(reference):
    from vitbench.models.references import resolve_all

    with pytest.raises(SpecError, match="a function of the library '(torch|numpy)'.*not called"):
        resolve_all([reference])


def test_a_library_function_re_exported_by_the_users_module_is_refused(tmp_path, monkeypatch):
    from vitbench.models.references import resolve_all

    (tmp_path / "reexport.py").write_text("from torch import load\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError, match="torch.serialization.load, a function of the library 'torch'"):
        resolve_all(["py:./reexport.py:load+f=x"])


def test_a_library_nn_module_class_stays_allowed(capsys):
    assert main(["analyze", "py:torch.nn:Linear+in_features=4+out_features=2", "--img-size", "4",
                 "--format", "csv"]) == 0
    assert "py:torch.nn:Linear" in capsys.readouterr().out


# --- a model whose own forward fails: the user's error, one line, exit 2 ----------------------
BROKEN = textwrap.dedent('''
    import torch

    class Raises(torch.nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    def shapes():
        return torch.nn.Linear(1, 1)

    def raises():
        return Raises()
''')


@pytest.fixture
def broken_dir(tmp_path, monkeypatch):
    (tmp_path / "broken.py").write_text(BROKEN)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("argv, cause", [
    (["analyze", "py:./broken.py:shapes", "--img-size", "28"], "shapes cannot be multiplied"),  # torch 2.15: "addmm: mat1..."
    (["analyze", "py:./broken.py:raises", "--img-size", "28"], "ValueError: boom"),
    (["predict", "py:./broken.py:raises", "--img-size", "28", "--device", "h100", "--no-trace-cache"], "ValueError: boom"),
])
def test_a_model_whose_forward_fails_is_the_users_error(argv, cause, broken_dir, capsys):
    assert main(argv) == 2
    line = _one_line(capsys)
    said = "error: " if argv[0] == "analyze" else "refused: "
    assert line.startswith(f"vitbench: {said}{argv[1]}"), line
    assert "its forward failed on a (1, 3, 28, 28) float32 input: " in line, line
    assert line.split("float32 input: ", 1)[1].split(":")[0] in ("RuntimeError", "ValueError"), line
    assert cause in line and "internal error" not in line


def test_the_forward_failure_keeps_its_cause(broken_dir):
    from vitbench.counters import count
    from vitbench.errors import ModelForwardError

    with pytest.raises(ModelForwardError) as caught:
        count("py:./broken.py:raises", counters=("dispatch",), input_size=(3, 8, 8))
    assert isinstance(caught.value.__cause__, ValueError) and str(caught.value.__cause__) == "boom"
    assert caught.value.shape == (1, 3, 8, 8) and caught.value.dtype == "float32"


def test_only_the_forwards_own_exceptions_are_wrapped():
    from vitbench.errors import ModelForwardError, model_forward

    with pytest.raises(SpecError):  # vitbench's own error passes as it is
        with model_forward(None, "m"):
            raise SpecError("x", 1, "bad")
    with pytest.raises(MemoryError):
        with model_forward(None, "m"):
            raise MemoryError
    with pytest.raises(ModelForwardError, match=r"model='m': its forward failed on a \(\)  input: KeyError: 'k'"):
        with model_forward(None, "m"):
            raise KeyError("k")
