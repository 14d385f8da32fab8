"""The thread that capped CPU steps run on, replaced after a step runs out of memory.

oneDNN (3.12, in torch 2.14) keeps per-thread state that a failed allocation while creating a
primitive leaves broken: after one convolution primitive fails to be created under a memory cap,
every later convolution primitive created *in that thread* fails with "could not create a
primitive", at any shape and with the cap lifted; other threads are unaffected
(``tests/test_measure_step_thread.py``). A ``--batch-size auto`` search probes at the edge of
the cap, so in the main thread one unlucky probe made every later measurement "out of memory"
(a CI run: "no batch from 856 down to 366 fits" for a model whose batch 856 had just fit).

So on the CPU, a capped run's blocks (building and timing; the batch search's probes) run on a
:class:`StepThread`: one long-lived thread, started and warmed up (its OpenMP team, oneDNN's
state) before the cap's level is fixed, so its stack and thread pool are not charged to the cap;
after a block runs out of memory it is replaced by a fresh, warmed-up one
(:meth:`StepThread.renew`). With the steady allocator (``--allocator steady``) every thread allocates from
the main heap, and steps time the same there as in the main thread
(``benchmarks/test_bench_step_thread.py``: ratios 0.96-1.02); with glibc's defaults
(``--allocator system``) a second thread gets its own malloc arena, and a small ViT's steps took
0.74-0.82x the main thread's time there. Uncapped runs keep the main thread (:class:`InlineSteps`:
there is no cap to fail under, and ``system`` then times steps as a plain loop would), and so
does CUDA (the current device is per thread, and a CUDA OOM breaks no thread).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_STOP = object()


class InlineSteps:
    """Runs blocks in the calling thread; ``warm`` runs once, now."""

    def __init__(self, warm: Callable[[], None]):
        warm()

    def call(self, fn: Callable[[], T]) -> T:
        return fn()

    def renew(self) -> None:
        """Nothing to replace: the calling thread is the only one."""

    def close(self) -> None:
        pass


class StepThread:
    """One daemon thread that runs the blocks given to :meth:`call`, one at a time; ``warm``
    runs on every new thread before its first block. A daemon, and not waited for when a call
    was interrupted (Ctrl-C arrives in the main thread), so that an interrupted measurement
    does not keep the interpreter from exiting."""

    def __init__(self, warm: Callable[[], None]):
        self._warm = warm
        self._requests: queue.SimpleQueue | None = None
        self._thread: threading.Thread | None = None
        self._busy = False
        self._start()

    def _start(self) -> None:
        requests: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=_serve, args=(requests,), name="vitbench-steps", daemon=True)
        self._requests = requests
        self._thread.start()
        self.call(self._warm)

    def call(self, fn: Callable[[], T]) -> T:
        """``fn()`` on the thread: its result, or its exception raised here."""
        if self._requests is None:
            raise RuntimeError("step thread already closed")
        reply: queue.SimpleQueue = queue.SimpleQueue()
        self._busy = True
        self._requests.put((fn, reply))
        ok, value = reply.get()  # an interrupt here leaves _busy set: close() will not wait
        self._busy = False
        if ok:
            return value
        raise value

    def renew(self) -> None:
        """Replace the thread by a fresh, warmed-up one (after a block ran out of memory)."""
        self.close()
        self._start()

    def close(self) -> None:
        if self._requests is None:
            return
        self._requests.put(_STOP)
        if self._thread is not None and not self._busy:
            self._thread.join(timeout=60)
        self._requests = self._thread = None


def _serve(requests: queue.SimpleQueue) -> None:
    while True:
        request = requests.get()
        if request is _STOP:
            return
        fn, reply = request
        try:
            result: tuple[bool, Any] = (True, fn())
        except BaseException as exc:  # noqa: BLE001 -- handed to the caller, who decides
            result = (False, exc)
        reply.put(result)
        del request, fn, result  # no reference to the block's tensors stays on this thread


def step_runner(device: str, capped: bool, warm: Callable[[], None]) -> InlineSteps | StepThread:
    """A :class:`StepThread` for a capped run on the CPU, else :class:`InlineSteps`."""
    return StepThread(warm) if capped and not device.startswith("cuda") else InlineSteps(warm)
