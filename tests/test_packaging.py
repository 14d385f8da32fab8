"""The floor job's pins (ci/floor.txt) are pyproject.toml's lower bounds, and every dependency
has one: what the package claims to support is what .ci/run tests."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pyproject():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _floors() -> dict[str, str]:
    project = _pyproject()["project"]
    requirements = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        requirements += extra
    floors = {}
    for requirement in requirements:
        if ";" in requirement:  # an environment marker (tomli on Python 3.10): not pinned
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([^,\s]+)", requirement)
        assert match, f"{requirement!r}: every dependency states its floor as NAME>=VERSION"
        name, version = match.group(1).lower(), match.group(2)
        assert floors.setdefault(name, version) == version, f"{name}: two different floors"
    return floors


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "ci" / "floor.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def _same_release(a: str, b: str) -> bool:
    pad = lambda v: [int(x) for x in re.findall(r"\d+", v.split(".post")[0])] + [0] * 3  # noqa: E731
    return pad(a)[:3] == pad(b)[:3] and (".post" in a) == (".post" in b)


def test_every_floor_is_pinned_in_the_floor_job():
    floors, pins = _floors(), _pins()
    assert set(floors) <= set(pins), f"not pinned in ci/floor.txt: {sorted(set(floors) - set(pins))}"
    for name, floor in floors.items():
        assert _same_release(floor, pins[name]), f"{name}: pyproject says >={floor}, ci/floor.txt pins {pins[name]}"


def test_ci_runs_the_readme_command_and_the_floor_job():
    script = (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    command = "pip install -e '.[test]' && python -m pytest tests/ -n 2\n"
    assert command in readme
    assert "-m venv" in script and "ci/floor.txt" in script
    assert "pip install -q -e '.[test]'" in script and "python -m pytest tests/" in script


def test_ci_keeps_one_venv_on_disk_at_a_time_and_no_pip_cache():
    """Three venvs of torch with its CUDA libraries (about 6 GB each) and pip's cache of their
    wheels ran CI out of disk ("No space left on device" installing the third)."""
    script = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^export .*\bPIP_NO_CACHE_DIR=1\b", script, re.M)
    made = re.findall(r'python3 -m venv "\$work/(\w+)"', script)
    assert made == ["newest", "bare", "floor", "between"], made
    lines = script.splitlines()
    for name in made:
        created = next(i for i, line in enumerate(lines) if f'-m venv "$work/{name}"' in line)
        removed = next(i for i, line in enumerate(lines) if line.startswith(f'rm -rf "$work/{name}"'))
        following = [i for i, line in enumerate(lines) if "-m venv" in line and i > created]
        assert created < removed < min(following, default=len(lines)), name  # gone before the next is made
        assert not any(f"$work/{name}/" in line for line in lines[removed + 1:]), name  # and not used after


def test_ci_runs_the_fresh_venv_test_alone_from_a_venv_without_torch():
    """The gate's fresh-venv test installs torch (about 6 GB) beside the venv pytest runs in: from
    the newest venv, two torch installs ran CI out of disk ("No space left on device")."""
    script = (ROOT / ".ci" / "run").read_text()
    runs = [line for line in script.splitlines() if "-m pytest" in line and not line.lstrip().startswith("#")]
    (slow,) = [line for line in runs if "-m 'slow" in line]
    assert "-m 'slow and not fresh_venv'" in slow, slow
    (alone,) = [line for line in runs if "fresh_venv" in line and line != slow]
    assert alone.startswith('"$work/bare/bin/python" -m pytest tests/test_gate_action.py -m fresh_venv'), alone
    bare = [line.split("#")[0].strip() for line in (ROOT / "ci" / "bare.txt").read_text().splitlines()]
    names = {re.split(r"[<>=!~ ]", line)[0].lower() for line in bare if line}
    assert names == {"pytest", "pytest-xdist", "pyyaml"}, names  # what the test file and pyproject's addopts need, no torch
    declared = {re.split(r"[<>=!~ ]", r)[0].lower(): r for r in
                [*_pyproject()["project"]["dependencies"], *_pyproject()["project"]["optional-dependencies"]["test"]]}
    assert all(declared[re.split(r"[<>=!~ ]", line)[0].lower()] == line for line in bare if line)  # pyproject's bounds
    marked = [n for n, line in enumerate((ROOT / "tests" / "test_gate_action.py").read_text().splitlines())
              if line.startswith("@pytest.mark.fresh_venv")]
    assert len(marked) == 1, marked
    assert "fresh_venv:" in " ".join(_pyproject()["tool"]["pytest"]["ini_options"]["markers"])


def test_the_default_suite_runs_in_two_workers_everywhere_ci_runs_it():
    """Issue 46: the default suite in two worker processes (pytest-xdist, from the test extra),
    in the README's command 2 and in each of .ci/run's default phases (newest, floor, between);
    only the slow phase runs in one."""
    assert any(r.startswith("pytest-xdist>=") for r in _pyproject()["project"]["optional-dependencies"]["test"])
    # a test file's tests on one worker, in order (module fixtures built once, the Slurm cluster)
    assert "--dist loadfile" in _pyproject()["tool"]["pytest"]["ini_options"]["addopts"]
    runs = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
            if re.search(r"python\"? -m pytest tests/", line) and not line.lstrip().startswith("#")]
    default = [line for line in runs if " -m " not in line.split("-m pytest", 1)[1]]
    assert len(default) == 3, runs
    assert all(re.search(r" -n 2( |$)", line) for line in default), default
