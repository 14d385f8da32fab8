import os
import random
import warnings
from collections import defaultdict
from importlib import metadata

import pytest

os.environ.setdefault("CI", os.environ.get("CI", ""))
# traced steps go to a fresh folder per run: a test never reads a trace an earlier run (or
# earlier code) left in the user's cache, and never leaves one there
if "VITBENCH_TRACE_DIR" not in os.environ:
    import tempfile

    os.environ["VITBENCH_TRACE_DIR"] = tempfile.mkdtemp(prefix="vitbench-test-traces-")
# pytest-xdist's workers share the machine's cores: each takes its share of threads (set before
# any test module imports torch), or two workers on two cores each start two threads and wait on
# each other's (measured: 13% longer on test_predict/test_counters/test_choose)
if os.environ.get("PYTEST_XDIST_WORKER_COUNT") and "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))
warnings.filterwarnings("ignore", category=FutureWarning, module="torch.jit")

#: the versions that decide what the tests observe, printed at the top of every run
REPORTED_VERSIONS = ("torch", "torchvision", "timm", "transformers", "fvcore", "pandas", "numpy", "pyarrow", "submitit")

#: ``VITBENCH_SLOW_SAMPLE=F``: run every slow test function, but only a seeded random fraction F
#: of the cases of each parametrized one (at least one); ``VITBENCH_SLOW_SEED=N`` picks the
#: sample (default: a new seed each run, printed in the header, so a failure can be replayed).
SAMPLE_ENV, SEED_ENV = "VITBENCH_SLOW_SAMPLE", "VITBENCH_SLOW_SEED"


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _slow_sample() -> tuple[float, int] | None:
    text = os.environ.get(SAMPLE_ENV)
    if not text:
        return None
    fraction = float(text)
    if not 0 < fraction <= 1:
        raise pytest.UsageError(f"{SAMPLE_ENV}={text}: must be a fraction in (0, 1]")
    seed = os.environ.get(SEED_ENV)
    if not seed:
        # drawn once, in the controlling process, and handed to pytest-xdist's workers through the
        # environment they start with: each drawing its own would collect different tests
        seed = os.environ[SEED_ENV] = str(random.SystemRandom().randrange(10**6))
    return fraction, int(seed)


def pytest_configure(config):
    config._vitbench_slow_sample = _slow_sample()


def pytest_report_header(config):
    lines = ["versions: " + ", ".join(f"{name} {_version(name)}" for name in REPORTED_VERSIONS)]
    sample = config._vitbench_slow_sample
    if sample is not None and "slow" in (config.option.markexpr or "") and "not slow" not in config.option.markexpr:
        lines.append(f"slow tests sampled: {sample[0]:g} of each parametrized slow test's cases, "
                     f"seed {sample[1]} (replay: {SEED_ENV}={sample[1]})")
    return lines


def sample_slow(items, fraction: float, seed: int):
    """(kept, deselected): every slow test function keeps a seeded ``fraction`` of its
    parametrized cases (at least one); non-slow items, unparametrized slow tests and tests marked
    ``unsampled`` (cases that build on each other, such as the README's examples) are all kept."""
    groups = defaultdict(list)
    for item in items:
        if "slow" in item.keywords and "unsampled" not in item.keywords and getattr(item, "callspec", None) is not None:
            groups[(item.path, item.originalname)].append(item)
    rng = random.Random(seed)
    dropped = set()
    for key in sorted(groups, key=lambda k: (str(k[0]), k[1])):
        cases = groups[key]
        keep = max(1, round(fraction * len(cases)))
        chosen = set(id(item) for item in rng.sample(cases, keep))
        dropped.update(id(item) for item in cases if id(item) not in chosen)
    return [i for i in items if id(i) not in dropped], [i for i in items if id(i) in dropped]


def _selects(config, markers: set[str]) -> bool:
    """Whether ``-m`` selects a test carrying ``markers`` (True when the expression cannot be
    evaluated: then the parameters are computed, as without the marker)."""
    expression = config.option.markexpr
    if not expression:
        return True
    try:
        from _pytest.mark.expression import Expression

        return Expression.compile(expression).evaluate(lambda name, **_: name in markers)
    except Exception:  # noqa: BLE001 - a private API: any change in it only costs collection time
        return True


def pytest_generate_tests(metafunc):
    """``@pytest.mark.parametrize_when_selected(ARGNAME, FACTORY)``: ``FACTORY()`` gives the
    parameters, called only when ``-m`` selects the test (the default run deselects slow tests,
    and their samples of the timm and transformers registries cost seconds to draw)."""
    marker = metafunc.definition.get_closest_marker("parametrize_when_selected")
    if marker is None:
        return
    argname, factory = marker.args
    markers = {m.name for m in metafunc.definition.iter_markers()}
    metafunc.parametrize(argname, factory() if _selects(metafunc.config, markers) else [])


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001 - torch missing or broken: CUDA tests cannot run either
        return False


def pytest_collection_modifyitems(config, items):
    cuda_items = [item for item in items if "cuda" in item.keywords]
    # torch is imported only when a collected test needs CUDA (a torch-free test file starts in
    # a second, not the five torch takes: the mutation harness runs such files once a mutant)
    if cuda_items and not _has_cuda():
        skip = pytest.mark.skip(reason="needs a CUDA device")
        for item in cuda_items:
            item.add_marker(skip)
    sample = config._vitbench_slow_sample
    if sample is not None:
        kept, deselected = sample_slow(items, *sample)
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = kept


def pytest_assertrepr_compare(op, left, right):
    """Two lists of rows (dicts) that differ: name the keys that differ in each row, with both
    values, where pytest's own diff would be cut at the first row's first characters."""
    rows = (list, tuple)
    if op != "==" or not isinstance(left, rows) or not isinstance(right, rows):
        return None
    if not all(isinstance(r, dict) for r in (*left, *right)) or len(left) != len(right):
        return None
    lines = ["rows differ:"]
    for index, (a, b) in enumerate(zip(left, right)):
        for key in sorted(set(a) | set(b), key=str):
            if a.get(key, "<absent>") != b.get(key, "<absent>"):
                lines.append(f"row {index}, {key!r}: {a.get(key, '<absent>')!r} != {b.get(key, '<absent>')!r}")
    return lines if len(lines) > 1 else None
