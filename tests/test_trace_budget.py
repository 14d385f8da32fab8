"""A whole step is traced only within a stated budget, decided from the spec before anything is
built (issue 45: `predict vit-b/16 --depth 2000`, inside the documented tracing limit, ran 37 s,
reached 7.2 GB and ended with exit 3). It is refused in one line from the spec, within 10 s of
CPU and 2 GB, checked with resource.getrusage in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import asdict

import pytest
from _calibrations import synthetic

import vitbench
from vitbench.counters.limits import MAX_TRACED_BLOCKS, trace_refusal
from vitbench.specs.limits import MAX_STEP_TRACED_BLOCKS

GIB = 1 << 30

#: runs one command in a fresh interpreter and prints its exit code, its CPU seconds and its peak
#: resident memory as JSON on the last line of stderr. The peak is /proc/self/status's VmHWM, the
#: interpreter's own address space: Linux carries the parent's peak into a child's ru_maxrss
#: across fork and exec, so a pytest process (an xdist worker) past 2 GB made every child read
#: as over 2 GB; ru_maxrss only where there is no /proc
_MEASURED = """
import json, resource, sys
from vitbench.cli import main
code = main(sys.argv[1:])
usage = resource.getrusage(resource.RUSAGE_SELF)
try:
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))
except (OSError, StopIteration):
    peak = usage.ru_maxrss * 1024
print(json.dumps({"code": code, "cpu_s": usage.ru_utime + usage.ru_stime, "maxrss_bytes": peak}), file=sys.stderr)
"""


def _measured(*argv: str) -> tuple[dict, str, float]:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", _MEASURED, *argv], capture_output=True, text=True, timeout=300)
    wall = time.monotonic() - start
    *lines, last = done.stderr.strip().splitlines()
    return json.loads(last), "\n".join(lines), wall


def _build_fails(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("the model was built: the refusal must come from the spec")

    monkeypatch.setattr("vitbench.models.materialize.light_build", fail)
    monkeypatch.setattr("vitbench.timemodel.ops.trace_target_batches", fail)
    monkeypatch.setattr("vitbench.timemodel.ops.trace_target_ops", fail)


def test_the_step_budget_is_below_the_counters_limit_and_its_first_depth_is_refused():
    assert MAX_STEP_TRACED_BLOCKS < MAX_TRACED_BLOCKS
    at, over = (vitbench.resolve("vit-b/16", depth=d) for d in (MAX_STEP_TRACED_BLOCKS, MAX_STEP_TRACED_BLOCKS + 1))
    assert trace_refusal(at, "tracing the step") is None
    found = trace_refusal(over, "tracing the step")
    assert found.startswith(f"tracing the step would build and trace all {MAX_STEP_TRACED_BLOCKS + 1:,} blocks")
    assert f"at most {MAX_STEP_TRACED_BLOCKS:,}" in found and "\n" not in found
    # the counters (a forward on fake tensors) keep their own limit
    assert trace_refusal(over, "tracing", max_blocks=MAX_TRACED_BLOCKS) is None


@pytest.mark.parametrize("mode", ["infer", "train"])
def test_predict_refuses_depth_2000_from_the_spec(mode, monkeypatch):
    _build_fails(monkeypatch)
    [row] = vitbench.predict("vit-b/16", depth=2000, mode=mode, calibration=synthetic())
    assert row["status"] == "refused" and "2,000 blocks" in row["error"] and row["macs"] > 0  # the analytic figures stand


@pytest.mark.slow
def test_predict_vit_b_depth_2000_on_the_command_line_is_one_line_within_10_s_and_2_gb(tmp_path):
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(asdict(synthetic())))
    usage, err, wall = _measured("predict", "vit-b/16", "--depth", "2000", "--calibration", str(path), "-q", "--format", "csv")
    assert usage["code"] == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "2,000 blocks" in lines[0] and "Traceback" not in err
    assert usage["cpu_s"] < 10 and usage["maxrss_bytes"] < 2 * GIB, usage
    assert wall < 60  # the machine is shared: wall time is only a hang's bound


@pytest.mark.slow
def test_the_deepest_step_accepted_is_traced_within_2_gb(tmp_path):
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(asdict(synthetic())))
    usage, err, wall = _measured("predict", "vit-b/16", "--depth", str(MAX_STEP_TRACED_BLOCKS), "--mode", "train",
                                 "--calibration", str(path), "--no-trace-cache", "-q", "--format", "csv")
    assert usage["code"] == 0, err
    assert usage["maxrss_bytes"] < 2 * GIB, usage
    assert usage["cpu_s"] < 60, usage  # measured: about 15 s of CPU on a busy 2-core machine
