"""A repeated (cached) question, in a fresh process, against the floor of ``python -c "import
torch, vitbench.timemodel.run"`` (issue 44: within 1 s beyond it).

Each case is asked once to fill the caches (its trace, and the question cache: the reference's
resolution, counts, memory profile), then the floor and the question are run in turn, the order
alternating each round, so both see the same machine. Each side's wall time and CPU time
(user + system of the child) are kept; the budget is asserted on the median of the paired wall
differences, question - floor. The last run also lists the model libraries the question
imported: none of timm, transformers, torchvision's models or torch._dynamo may be.

Bytecode: the children write and read ``.pyc`` files under a temporary ``PYTHONPYCACHEPREFIX``
(as an installed package does), even where ``PYTHONDONTWRITEBYTECODE`` is set: otherwise every
run compiles vitbench's modules from source, more of them for the question than for the floor.
"""

from __future__ import annotations

import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

import vitbench

#: the issue's budget: a cached question within this many seconds beyond the floor
BUDGET_S = 1.0
ROUNDS = 5
FLOOR = ["-c", "import torch, vitbench.timemodel.run"]
LIBRARIES = ("timm", "transformers", "torchvision.models", "torch._dynamo")
_LISTED = ("import sys; from vitbench.cli import main; code = main(sys.argv[1:]); "
           f"print('imported:', *[m for m in {LIBRARIES!r} if m in sys.modules]); sys.exit(code)")

CASES = {
    "timm, one device": ["predict", "timm:convnext_tiny", "--device", "h100"],
    "timm, 4 devices x 2 batches": ["predict", "timm:convnext_tiny", "--device", "h100,a100,l4,rtx4090", "--batch-size", "1,64"],
    "torchvision": ["predict", "torchvision:resnet50", "--device", "h100"],
    "hf": ["predict", "hf:dinov2", "--device", "h100"],
    "preset": ["predict", "vit-b/16", "--device", "h100"],
    "choose, timm": ["choose", "timm:convnext_tiny", "--device", "h100,a100,l4", "--precision", "bf16", "--epochs", "300",
                     "--dataset-size", "1281167"],
}


def _timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, standard output) of one child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *argv], env=env, cwd=cwd, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr[-2000:]
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


@pytest.mark.parametrize("case", list(CASES))
def test_a_repeated_question_within_a_second_of_importing_torch(case, benchmark, run_timed, report, tmp_path):
    if case == "hf" and importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed (vitbench[hf])")
    root = Path(vitbench.__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(root), VITBENCH_TRACE_DIR=str(tmp_path / "traces"),
               VITBENCH_CACHE_DIR=str(tmp_path / "cache"), PYTHONPYCACHEPREFIX=str(tmp_path / "pycache"))
    question = ["-m", "vitbench", *CASES[case], "-q"]
    _timed(question, env, root)  # fills the caches (and the bytecode of both sides)
    _timed(FLOOR, env, root)
    times: dict[str, list[tuple[float, float]]] = {"floor": [], "question": []}
    for index in range(ROUNDS):
        order = ("floor", "question") if index % 2 == 0 else ("question", "floor")
        for side in order:
            times[side].append(_timed(FLOOR if side == "floor" else question, env, root)[:2])
    *_, listed = _timed(["-c", _LISTED, *CASES[case], "-q"], env, root)
    imported = listed.strip().splitlines()[-1].split()[1:]

    differences = [q[0] - f[0] for q, f in zip(times["question"], times["floor"])]
    cpu_differences = [q[1] - f[1] for q, f in zip(times["question"], times["floor"])]
    extra_s, extra_cpu_s = statistics.median(differences), statistics.median(cpu_differences)
    floor_s, question_s = (statistics.median(w for w, _ in times[side]) for side in ("floor", "question"))
    run_timed(lambda: _timed(question, env, root), rounds=1, warmup_rounds=0)
    load = os.getloadavg()[0]
    benchmark.extra_info.update(floor_s=floor_s, question_s=question_s, extra_s=extra_s, extra_cpu_s=extra_cpu_s,
                                ratio=question_s / floor_s, load=load, imported=imported)
    report(f"cached `vitbench {' '.join(CASES[case])}`",
           f"{question_s:.2f} s against the floor's {floor_s:.2f} s ({question_s / floor_s:.2f}x): {extra_s:+.2f} s wall, "
           f"{extra_cpu_s:+.2f} s CPU beyond it (medians of {ROUNDS} interleaved pairs; load {load:.1f}); "
           f"imported {', '.join(imported) or 'no model library'}")
    assert imported == []
    assert extra_s < BUDGET_S
