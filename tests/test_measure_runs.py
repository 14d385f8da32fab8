"""Repeated runs pooled into one row, the stability warnings, --timeout, and the measure/ package
layout (no import circle, one entry module for the worker)."""

from __future__ import annotations

import ast
import statistics
from pathlib import Path

import pytest

from vitbench.measure.runs import pool
from vitbench.measure.stability import run_cv, timing_warnings
from vitbench.settings import RunSettings


def _run(samples, **extra):
    return {"status": "ok", "error": None, "batch_size": 4, "samples_s": samples, "steps_per_sample": 2,
            "warnings": extra.pop("warnings", []), **extra}


def test_pool_by_hand():
    a, b, c = [1.0, 1.1, 1.2], [2.0, 2.1, 2.2, 2.3], [1.5, 1.6, 1.4]
    row = pool([_run(a, peak_memory_bytes=10), _run(b), _run(c)], RunSettings(runs=3))
    assert row["runs"] == 3 and row["runs_requested"] == 3
    assert row["run_samples_s"] == [a, b, c]
    assert row["run_medians_s"] == pytest.approx([1.1, 2.15, 1.5])
    assert row["samples_s"] == a + b + c and row["n_samples"] == 10
    # pooled: the median of all ten samples (sorted: 1.0 1.1 1.2 1.4 1.5 | 1.6 2.0 2.1 2.2 2.3)
    assert row["latency_p50_s"] == pytest.approx((1.5 + 1.6) / 2)
    assert row["throughput_img_s"] == pytest.approx(4 / 1.55)
    assert row["run_cv"] == pytest.approx(statistics.stdev([1.1, 2.15, 1.5]) / statistics.fmean([1.1, 2.15, 1.5]))
    assert row["peak_memory_bytes"] == 10  # the first run's memory pass
    # the pooled spread includes the runs' disagreement: larger than any run's own CV
    assert row["latency_cv"] > max(statistics.stdev(s) / statistics.fmean(s) for s in (a, b, c))
    assert any(w["code"] == "unstable-runs" and "unstable between runs" in w["message"] and "--runs" in w["advice"] for w in row["warnings"])


def test_a_failed_first_run_is_the_row():
    failed = {"status": "oom", "error": "MemoryError", "batch_size": 4, "warnings": []}
    row = pool([failed], RunSettings(runs=3))
    assert row["status"] == "oom" and row["runs"] == 0 and row["runs_requested"] == 3


def test_stability_warnings():
    steady = [1.00, 1.01, 0.99, 1.00, 1.02, 0.98]
    assert timing_warnings(steady, [1.0, 1.01, 0.995], threads=1) == []
    assert run_cv([1.0]) is None
    (found,) = timing_warnings(steady, [1.0, 1.3, 1.0], threads=1)
    assert found["code"] == "unstable-runs" and "unstable between runs" in found["message"] and "+30%" in found["message"]
    assert "--runs" in found["advice"]
    noisy = [1.0, 1.5, 0.7, 2.0, 1.1, 0.9]
    assert [w["code"] for w in timing_warnings(noisy, [1.0], threads=None)] == ["unstable-steps"]


@pytest.mark.slow
def test_runs_in_worker_processes_are_pooled():
    from vitbench.measure.profile import measure
    from vitbench.specs import ViTSpec

    tiny = ViTSpec(name="tiny-vit", img_size=32, patch_size=8, embed_dim=64, depth=2, num_heads=2, num_classes=10)
    r = measure(tiny, RunSettings(device="cpu", batch_size=4, min_run_time_s=0.05, warmup=1, memory=False, threads=1, runs=2))
    assert r["status"] == "ok", r["error"]
    assert r["isolate"] is True and r["runs"] == 2 and len(r["run_samples_s"]) == 2
    assert r["samples_s"] == [s for run in r["run_samples_s"] for s in run]
    assert r["run_medians_s"] == [statistics.median(s) for s in r["run_samples_s"]]
    assert r["throughput_img_s"] == pytest.approx(4 / statistics.median(r["samples_s"]))
    assert r["threads"] == 1 and r["env_threads"] == 1


def test_timeout_without_isolate_runs_in_a_worker_and_times_out():
    from vitbench.measure.profile import measure

    r = measure("mnist-vit", RunSettings(device="cpu", runs=1, timeout_s=0.001, memory=False))
    assert r["status"] == "error" and "timed out after 0.001 s" in r["error"]
    assert RunSettings(runs=1, timeout_s=5).in_worker and not RunSettings(runs=1).in_worker


def _imports(path: Path) -> set[str]:
    """Every vitbench.measure module a file imports, at module level or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "vitbench.measure":
                found |= {f"vitbench.measure.{a.name}" for a in node.names}
            elif node.module.startswith("vitbench.measure."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("vitbench.measure.")}
    return found


def test_measure_package_has_no_import_circle():
    import vitbench.measure as package

    root = Path(package.__file__).parent
    graph = {f"vitbench.measure.{p.stem}": _imports(p) for p in root.glob("*.py") if p.stem != "__init__"}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                raise AssertionError("import circle: " + " -> ".join(path + [nxt]))
            if nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    # the worker process has its own entry module, which nothing imports
    assert "vitbench.measure.worker" in graph
    assert not any("vitbench.measure.worker" in deps for deps in graph.values())


def test_only_the_first_run_names_the_attention_kernel(monkeypatch):
    """A row's later runs skip the profiler pass that names the attention kernel (the pooled row
    keeps the first run's): importing torch's profiler cost 3 of a later run's 7 s of CPU time."""
    import json

    from vitbench.measure import isolate, runs

    asked: list[bool] = []

    def fake_worker(target, settings, device, detect_attention=True):
        asked.append(detect_attention)
        return _run([0.01, 0.011, 0.012], attention_kernel="cpu_flash" if detect_attention else None)

    monkeypatch.setattr(runs, "run_in_worker", fake_worker)
    target = type("T", (), {"portable": True})()
    row = runs.measure_runs(target, RunSettings(runs=3, device="cpu"), "cpu")
    assert asked == [True, False, False] and row["attention_kernel"] == "cpu_flash" and row["runs"] == 3
    one = RunSettings(runs=1, device="cpu")
    model = type("M", (), {"to_request": lambda self: {"reference": "vit-ti/16"}})()
    assert "detect_attention" not in json.loads(isolate.request(model, one, "cpu"))
    assert json.loads(isolate.request(model, one, "cpu", detect_attention=False))["detect_attention"] is False
