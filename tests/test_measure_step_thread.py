"""Capped CPU blocks run on a step thread that is replaced after running out of memory.

The CI observation this answers: ``--batch-size auto`` on a live convolutional module under a
32 MiB cap searched up to batch 856 (it fit), then every measurement from 856 down to 366 was
"out of memory". The probe at the edge had failed inside oneDNN's primitive creation, and from
then on every convolution primitive created in that thread failed ("could not create a
primitive"), cap or no cap.
"""

from __future__ import annotations

import contextlib
import threading

import pytest
from _fresh import in_fresh_process

from vitbench.measure.step_thread import InlineSteps, StepThread, step_runner


def test_step_thread_runs_blocks_on_one_warmed_thread_and_renews_it():
    warmed: list[threading.Thread] = []
    steps = StepThread(warm=lambda: warmed.append(threading.current_thread()))
    try:
        first = steps.call(threading.current_thread)
        assert first is not threading.current_thread() and warmed == [first]  # warmed on its own thread
        assert steps.call(threading.current_thread) is first  # one long-lived thread
        assert steps.call(lambda: 6 * 7) == 42
        with pytest.raises(ZeroDivisionError):
            steps.call(lambda: 1 / 0)
        assert steps.call(threading.current_thread) is first  # an exception does not end it
        steps.renew()
        second = steps.call(threading.current_thread)
        assert warmed == [first, second] and second is not first  # a new thread, warmed before use
    finally:
        steps.close()
    steps.close()  # twice is fine
    with pytest.raises(RuntimeError, match="closed"):
        steps.call(lambda: None)


def test_capped_cpu_runs_get_a_step_thread_others_run_inline():
    calls: list[threading.Thread] = []
    for device, capped in (("cpu", False), ("cuda", True)):  # no cap to fail under; a CUDA device is per thread
        inline = step_runner(device, capped, warm=lambda: calls.append(threading.current_thread()))
        assert isinstance(inline, InlineSteps) and calls[-1] is threading.current_thread()
        assert inline.call(threading.current_thread) is threading.current_thread()
    threaded = step_runner("cpu", True, warm=lambda: calls.append(threading.current_thread()))
    try:
        assert isinstance(threaded, StepThread) and calls[-1] is not threading.current_thread()
        assert threaded.call(threading.current_thread) is calls[-1]
    finally:
        threaded.close()


@pytest.mark.parametrize("limit, where", [(None, "MainThread"), (256 * 2**20, "vitbench-steps")])
@pytest.mark.slow
def test_measured_cpu_steps_run_on_the_step_thread_under_a_cap(monkeypatch, limit, where):
    import vitbench.measure.timer as timer
    from vitbench.measure.profile import RunSettings, measure

    seen: list[threading.Thread] = []
    original = timer.time_steps

    def spy(*args, **kwargs):
        seen.append(threading.current_thread())
        return original(*args, **kwargs)

    monkeypatch.setattr(timer, "time_steps", spy)
    row = measure("mnist-vit", RunSettings(device="cpu", batch_size=2, min_run_time_s=0.02, warmup=1, memory=False,
                                            threads=1, runs=1, memory_limit_bytes=limit))
    assert row["status"] == "ok", row["error"]
    assert [t.name for t in seen] == [where]
    assert where == "MainThread" or not seen[0].is_alive()  # the step thread is closed after the run


@contextlib.contextmanager
def _thread_after_a_primitive_failure():
    """(conv, its step thread, the cap, the batch it failed at) right after oneDNN failed to
    create a convolution primitive on that thread under the cap: the cap's level is set to what
    the process holds (plus a growing slack) and new shapes are tried until that happens."""
    import torch
    from torch import nn

    from vitbench.measure.oom import MemoryCap, _vm_data_bytes, is_oom

    torch.set_num_threads(1)
    conv = nn.Conv2d(3, 32, 4, stride=4)
    steps = StepThread(warm=lambda: conv(torch.randn(2, 3, 32, 32)))
    cap = MemoryCap("cpu", 32 * 2**20, steps=steps)
    try:
        for batch in range(900, 1000):
            x = torch.randn(batch, 3, 32, 32)
            cap.level = _vm_data_bytes() + (batch - 900) * 64 * 1024
            try:
                cap.run(lambda x=x: conv(x))
            except RuntimeError as exc:
                assert is_oom(exc, capped=True), exc
                if "could not create a primitive" in str(exc):
                    break
                cap.recover()
        else:
            pytest.fail("no oneDNN primitive failure under the cap")
        del x
        yield conv, steps, cap, batch
    finally:
        steps.close()


@pytest.mark.slow
@in_fresh_process
def test_a_failed_primitive_creation_breaks_only_its_own_thread():
    # What oneDNN 3.12 (torch 2.14) does, and why capped blocks need a thread they can discard:
    # if this ever fails, the step thread's renewal may no longer be needed.
    import torch

    with _thread_after_a_primitive_failure() as (conv, steps, cap, _):
        cap.level = None  # no cap at all now
        with pytest.raises(RuntimeError, match="could not create a primitive"):
            steps.call(lambda: conv(torch.randn(7, 3, 32, 32)))  # the same thread: broken
        other = StepThread(warm=lambda: None)
        try:
            assert other.call(lambda: conv(torch.randn(7, 3, 32, 32))).shape == (7, 32, 8, 8)
        finally:
            other.close()


@pytest.mark.slow
@in_fresh_process
def test_capped_blocks_work_again_after_recovering_from_a_primitive_failure():
    import torch

    from vitbench.measure.oom import _vm_data_bytes

    with _thread_after_a_primitive_failure() as (conv, _, cap, failed_at):
        cap.recover()  # what the batch search and the measuring attempts do after an OOM
        assert cap.level >= _vm_data_bytes() + 32 * 2**20 + 64 * 2**20  # rebased: limit + headroom
        for batch in (7, failed_at, 500):  # new shapes, and the one that failed
            out = cap.run(lambda batch=batch: conv(torch.randn(batch, 3, 32, 32)))
            assert out.shape == (batch, 32, 8, 8)
