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
    from vitbench.models.sources.py_factory import static_parameters

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


def test_a_library_nn_module_class_is_refused_and_a_users_subclass_is_not(tmp_path, monkeypatch, capsys):
    """Issue 45: by allow-list, a library's classes are not factories either (``py:torch.nn:Linear``
    was allowed before), named directly or re-exported; the user's own subclass is."""
    (tmp_path / "layers.py").write_text("from torch import nn\nfrom torch.nn import Linear\n\n"
                                        "class Mine(nn.Linear):\n    pass\n")
    monkeypatch.chdir(tmp_path)
    assert main(["analyze", "py:torch.nn:Linear+in_features=4+out_features=2", "--img-size", "4"]) == 2
    assert "'torch.nn' is in an installed library's folder" in _one_line(capsys)
    assert main(["analyze", "py:./layers.py:Linear+in_features=4+out_features=2", "--img-size", "4"]) == 2
    assert "is torch.nn.modules.linear.Linear, a class of the library 'torch'" in _one_line(capsys)
    assert main(["analyze", "py:./layers.py:Mine+in_features=4+out_features=2", "--img-size", "4", "--format", "csv"]) == 0
    assert "py:./layers.py:Mine" in capsys.readouterr().out


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


# --- issue 45: py: by allow-list, every model checked before the first import -------------------
def _editable_finder() -> str:
    """The name of an editable install's finder module (``__editable___*_finder``) in this
    environment: vitbench's own when it is installed with ``pip install -e``."""
    import importlib.machinery

    names = [n for n in sys.modules if n.startswith("__editable__") and n.endswith("_finder")]
    for folder in sys.path if not names else ():
        if __import__("os").path.isdir(folder):
            names += [p[:-3] for p in __import__("os").listdir(folder) if p.startswith("__editable__") and p.endswith("_finder.py")]
    assert names and importlib.machinery.PathFinder.find_spec(names[0]) is not None, "vitbench is installed editable here"
    return names[0]


#: issue 45's holes: installed libraries' functions that py: called because they were on no
#: deny-list (module, attribute, the module to import to put a recorder in their place)
LIBRARY_HOLES = [
    ("sympy", "sympify"), ("sympy.parsing.sympy_parser", "parse_expr"), ("markdown", "markdownFromFile"),
    ("fsspec", "open_files"), ("pip", "main"), ("pytest", "main"), ("jinja2.utils", "import_string"),
    ("setuptools._distutils.spawn", "find_executable"), (None, "install"),
]


@pytest.mark.parametrize("module, attribute", LIBRARY_HOLES, ids=[m or "editable-finder" for m, _ in LIBRARY_HOLES])
def test_an_installed_librarys_function_is_refused_before_its_module_is_imported(module, attribute, monkeypatch, capsys):
    """A module this process has loaded gets a recorder in its function's place: before issue 45
    ``py:`` found it in ``sys.modules`` and called the recorder. A module not loaded stays so.
    Now the reference is refused from where the module's file lies: nothing imported or called."""
    from vitbench.models.sources import py_factory

    module = module or _editable_finder()
    called, imported = [], []
    loaded = module in sys.modules
    if loaded:
        monkeypatch.setattr(sys.modules[module], attribute, lambda *a, **k: called.append((a, k)))
    monkeypatch.setattr(py_factory, "import_namespace", lambda *a: imported.append(a))
    assert main(["analyze", "--img-size", "8", f"py:{module}:{attribute}+x=1"]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"vitbench: error: model='py:{module}:{attribute}': ") and "installed library's folder" in line, line
    assert "nothing was imported" in line and called == [] and imported == []
    assert (module in sys.modules) == loaded


def test_sympify_with_a_shell_payload_runs_nothing(tmp_path, monkeypatch, capsys):
    """The issue's first case, as an attacker gives it: the payload ran the shell before."""
    marker = tmp_path / "X"
    monkeypatch.chdir(tmp_path)
    assert main(["analyze", "--img-size", "8", f"py:sympy:sympify+a=__import__('os').system('touch {marker}')"]) == 2
    assert "'sympy' is in an installed library's folder" in _one_line(capsys)
    assert not marker.exists()


def test_a_user_file_re_exporting_sympify_is_imported_but_sympify_not_called(tmp_path, monkeypatch, capsys):
    marker = tmp_path / "X"
    (tmp_path / "mine.py").write_text("from sympy import sympify as f\n")
    monkeypatch.chdir(tmp_path)
    assert main(["analyze", "--img-size", "8", f"py:./mine.py:f+a=__import__('os').system('touch {marker}')"]) == 2
    line = _one_line(capsys)
    assert "is sympy.core.sympify.sympify, a function of the library 'sympy'" in line and "not called" in line, line
    assert not marker.exists()


def test_a_librarys_file_given_by_its_path_is_refused(tmp_path, capsys):
    import sympy

    marker = tmp_path / "X"
    assert main(["analyze", "--img-size", "8", f"py:{sympy.__file__}:sympify+a=__import__('os').system('touch {marker}')"]) == 2
    assert "installed library's folder" in _one_line(capsys)
    assert not marker.exists()


WRAPPERS = textwrap.dedent('''
    import functools
    import torch
    from sympy import sympify

    later = functools.partial(sympify, "1")
    cached = functools.lru_cache(sympify)
    method = torch.nn.Module().zero_grad
    made = {}
    exec("def f(img_size=8):\\n    return torch.nn.Conv2d(3, 3, 3)", {"torch": torch}, made)
    made = made["f"]

    @torch.no_grad()
    def decorated(img_size=8):
        return torch.nn.Conv2d(3, 3, 3)

    @functools.lru_cache
    def mine(img_size=8):
        return torch.nn.Conv2d(3, 3, 3)

    def inner(img_size=8):
        return torch.nn.Conv2d(3, 3, 3)

    mine_partial = functools.partial(inner, img_size=8)


    class Disguised:  # says it wraps the user's function, but calling it runs sympify
        __wrapped__ = inner
        __call__ = staticmethod(sympify)


    disguised = Disguised()
''')


@pytest.mark.parametrize("factory, message", [
    ("later", "is sympy.core.sympify.sympify, a function of the library 'sympy'"),  # a partial, unwrapped
    ("cached", "is sympy.core.sympify.sympify, a function of the library 'sympy'"),  # a C wrapper's __wrapped__
    ("method", "is torch.nn.modules.module.Module.zero_grad, a function of the library 'torch'"),  # a bound method
    ("made", "not in a file of its own"),  # exec'd: its code object names no file
    ("decorated", "called through a wrapper whose code is in an installed library's folder"),
    ("disguised", "called through a wrapper whose code is in an installed library's folder"),  # its class's __call__
])
def test_every_layer_of_what_is_called_must_be_the_users_code(factory, message, tmp_path, monkeypatch, capsys):
    (tmp_path / "wrappers.py").write_text(WRAPPERS)
    monkeypatch.chdir(tmp_path)
    assert main(["analyze", "--img-size", "8", f"py:./wrappers.py:{factory}"]) == 2
    line = _one_line(capsys)
    assert message in line and "not called" in line, line


@pytest.mark.parametrize("factory", ["mine", "mine_partial"])
def test_the_users_own_function_behind_a_cache_or_a_partial_still_runs(factory, tmp_path, monkeypatch, capsys):
    (tmp_path / "wrappers.py").write_text(WRAPPERS)
    monkeypatch.chdir(tmp_path)
    assert main(["analyze", "--img-size", "8", f"py:./wrappers.py:{factory}", "--format", "csv"]) == 0, capsys.readouterr().err


def test_a_file_in_any_library_folder_or_another_pythons_standard_library_is_refused(tmp_path, capsys):
    for folder in ("venv/lib/python3.9/site-packages/lib", "usr/lib/python3/dist-packages", "proj/__pypackages__/3.11/lib"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "m.py").write_text("def f():\n    raise SystemExit('imported')\n")
        assert main(["analyze", f"py:{tmp_path / folder / 'm.py'}:f"]) == 2
        assert "installed library's folder" in _one_line(capsys)
    other = tmp_path / "opt" / "python3.8" / "lib" / "python3.8"
    other.mkdir(parents=True)
    for name in ("os.py", "_collections_abc.py", "shutil.py"):
        (other / name).write_text("raise SystemExit('imported')\n")
    assert main(["analyze", f"py:{other / 'shutil.py'}:rmtree+path={tmp_path}"]) == 2
    assert "standard library" in _one_line(capsys)
    assert (tmp_path / "opt").is_dir()


def test_a_module_a_distribution_installed_outside_site_packages_is_refused(tmp_path, monkeypatch, capsys):
    """``pip install --target vendor``: no site-packages in the path, but the installation's
    RECORD names the file."""
    from vitbench.models.sources import py_contract

    vendor = tmp_path / "vendor"
    (vendor / "vendored").mkdir(parents=True)
    (vendor / "vendored" / "__init__.py").write_text("raise SystemExit('imported')\n")
    info = vendor / "vendored-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vendored\nVersion: 1.0\n")
    (info / "RECORD").write_text("vendored/__init__.py,,\nvendored-1.0.dist-info/METADATA,,\n")
    monkeypatch.syspath_prepend(str(vendor))
    py_contract._distribution_files.cache_clear()
    try:
        assert main(["analyze", "py:vendored:f"]) == 2
        assert "'vendored' is a file of the installed distribution 'vendored'" in _one_line(capsys)
        assert main(["analyze", f"py:{vendor / 'vendored' / '__init__.py'}:f"]) == 2
        assert "installed distribution 'vendored'" in _one_line(capsys)
    finally:
        py_contract._distribution_files.cache_clear()
    assert "vendored" not in sys.modules


EDITABLE_FINDER = textwrap.dedent('''
    # what setuptools writes for ``pip install -e`` (a table from names to the project's folders)
    import sys
    from importlib.machinery import PathFinder
    from importlib.util import spec_from_file_location
    from pathlib import Path

    MAPPING = {"edproj": %r}


    class _EditableFinder:
        @classmethod
        def find_spec(cls, fullname, path=None, target=None):
            if fullname in MAPPING:
                return spec_from_file_location(fullname, Path(MAPPING[fullname]) / "__init__.py")
            parent, _, child = fullname.rpartition(".")
            if parent in MAPPING:
                return PathFinder.find_spec(fullname, path=[MAPPING[parent]])
            return None


    def install():
        if _EditableFinder not in sys.meta_path:
            sys.meta_path.append(_EditableFinder)
''')


def test_an_editable_install_of_the_users_project_is_theirs_and_its_finder_is_not(tmp_path, monkeypatch, capsys):
    """The decision (docs/models.md): ``pip install -e .`` of the user's project leaves its files
    in their folder, found through the install's finder: their code, allowed; the finder module
    itself is in site-packages: refused, its ``install`` never called."""
    import importlib

    project = tmp_path / "project" / "src" / "edproj"
    project.mkdir(parents=True)
    (project / "__init__.py").write_text("")
    (project / "models.py").write_text("from torch import nn\n\ndef build(img_size=8):\n    return nn.Conv2d(3, 3, 3)\n")
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / "__editable___edproj_0_1_finder.py").write_text(EDITABLE_FINDER % str(project))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    for name in ("edproj", "edproj.models", "__editable___edproj_0_1_finder"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.chdir(tmp_path)
    try:
        importlib.import_module("__editable___edproj_0_1_finder").install()  # what its .pth does at start-up
        assert main(["analyze", "py:edproj.models:build", "--img-size", "8", "--format", "csv"]) == 0, capsys.readouterr().err
        capsys.readouterr()
        assert main(["analyze", "py:__editable___edproj_0_1_finder:install"]) == 2
        assert "'__editable___edproj_0_1_finder' is in an installed library's folder" in _one_line(capsys)
    finally:
        for name in ("edproj", "edproj.models", "__editable___edproj_0_1_finder"):
            sys.modules.pop(name, None)


def test_the_static_check_walks_folders_and_imports_no_package(tmp_path, monkeypatch):
    """``importlib.util.find_spec('a.b')`` imports ``a`` (running its ``__init__``); the check
    finds ``a``'s spec alone and ``b`` by walking ``a``'s folders."""
    import importlib.util

    from vitbench.models.sources.py_factory import check_reference

    (tmp_path / "walked").mkdir()
    (tmp_path / "walked" / "__init__.py").write_text("import pathlib\npathlib.Path(__file__).with_name('ran').write_text('')\n")
    (tmp_path / "walked" / "sub.py").write_text("def build():\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert check_reference("py:walked.sub:build", "walked.sub:build", {}) == str(tmp_path / "walked" / "sub.py")
    assert importlib.util.find_spec("walked") is not None
    assert "walked" not in sys.modules and not (tmp_path / "walked" / "ran").exists()
    with pytest.raises(SpecError, match=r"No module named 'walked.nosuch' \(looked for its file, nothing imported\)"):
        check_reference("py:walked.nosuch:build", "walked.nosuch:build", {})
    assert "walked" not in sys.modules
    monkeypatch.delitem(sys.modules, "walked", raising=False)
    importlib.util.find_spec("walked.sub")  # what the check must not do: it runs the package
    assert (tmp_path / "walked" / "ran").exists()


@pytest.mark.parametrize("argv", [
    ["analyze", "py:./mine.py:build", "nosuchmodel"],
    ["analyze", "py:./mine.py:build", "py:sympy:sympify"],
    ["analyze", "py:./mine.py:build", "py:./missing.py:build"],
    ["analyze", "py:./mine.py:build", "timm:nosuch_model_xyz"],
    ["plan", "py:./mine.py:build", "nosuchmodel", "--batch-size", "1"],
    ["predict", "py:./mine.py:build", "nosuchmodel", "--device", "h100"],
    ["profile", "py:./mine.py:build", "nosuchmodel"],
    ["validate", "py:./mine.py:build", "nosuchmodel"],
    ["sweep", "--model", "py:./mine.py:build,nosuchmodel", "--out", "{tmp}/s"],
    ["sweep", "--model", "py:./mine.py:build,py:pip:main", "--out", "{tmp}/s"],
])
def test_every_model_is_checked_before_the_first_user_module_is_imported(argv, factory_dir, capsys):
    assert main([a.format(tmp=factory_dir) for a in argv]) == 2
    line = _one_line(capsys)
    assert "nosuch" in line or "sympy" in line or "missing.py" in line or "pip" in line, line
    assert not (factory_dir / "imported.txt").exists()


def test_resolve_all_checks_every_reference_first(factory_dir):
    from vitbench.models.references import check_before_import, resolve_all

    with pytest.raises(Exception, match="nosuchmodel"):
        resolve_all(["py:./mine.py:build", "mnist-vit", "nosuchmodel"], {"img_size": 8})
    with pytest.raises(Exception, match="nosuchmodel"):
        check_before_import(["py:./mine.py:build", "nosuchmodel"])
    assert not (factory_dir / "imported.txt").exists()
    targets = resolve_all(["mnist-vit", "py:./mine.py:build", "cifar-vit/4"], {"depth": ["1", "2"], "img_size": 32})
    assert [t.name for t in targets] == ["mnist-vit"] * 2 + ["py:./mine.py:build"] * 2 + ["cifar-vit/4"] * 2
    assert (factory_dir / "imported.txt").exists()
