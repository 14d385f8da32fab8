"""Memory of one step of ANY model, traced on fake tensors: the fallback of ``vitbench plan`` for
models the analytic replay (:mod:`vitbench.analytic.memory`) does not cover.

The step (forward, loss, backward, AdamW/SGD step with the gradients set to None; or one
inference forward) runs under ``FakeTensorMode``: every operator computes shapes only, nothing is
allocated. A dispatch mode sees every tensor an operator returns; its storage is counted live
until Python and autograd let go of it (a weak-reference finaliser on the storage), so

    live_k = bytes of every storage alive when allocation k happens

exactly as a real CPU step would hold them, minus what kernels allocate inside themselves
(oneDNN reorders, im2col columns, the flash kernel's workspace), which no operator returns.
Each allocation is affine in the batch, so two traces at batches B1 < B2 give
``a_k = (live2_k - live1_k) / (B2 - B1)`` and ``c_k = live1_k - a_k B1`` and the same
:class:`~vitbench.analytic.memory.replay.Profile` the replay builds: peak(B) = max_k (a_k B + c_k).

Accuracy (CPU, fp32 AdamW training against the profiler-measured peak; tests/test_plan_cli.py):
the replayed specs within 2% (vit-ti/16 B=15 exact, resnet18 B=16 -0.9%, mnist-vit +1.8%);
inference misses the oneDNN patch-embedding copy (vit-ti/16 B=212: -6%).
"""

from __future__ import annotations

import contextlib
import copy
import weakref
from typing import Any

from vitbench.analytic.memory.replay import Profile, pareto
from vitbench.errors import ModelError, foreign_call, model_code
from vitbench.models import materialize
from vitbench.models.inputs import main_output
from vitbench.models.step import autocast_dtype, make_optimizer, step_loss


class NotAffine(ModelError, ValueError):
    """The model's step allocates differently at the two traced batches: no memory profile."""

#: the two batch sizes traced (B = 1 is avoided: some kernels differ for a single image)
BATCHES = (2, 3)


class _Tracker:
    """Live bytes of the storages operators return, updated as storages die."""

    def __init__(self) -> None:
        self.live = 0
        self.events: list[int] = []  # live bytes at each allocation of the recorded step
        self.recording = False
        self._sizes: dict[int, int] = {}

    def track(self, tensor: Any) -> None:
        storage = tensor.untyped_storage()
        key = storage._cdata
        if key in self._sizes:
            return
        size = storage.nbytes()
        self._sizes[key] = size
        self.live += size
        if self.recording:
            self.events.append(self.live)
        weakref.finalize(storage, self._free, key)

    def _free(self, key: int) -> None:
        self.live -= self._sizes.pop(key, 0)


def _dispatch_mode(tracker: _Tracker):
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Trace(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = foreign_call(func, *args, **(kwargs or {}))  # the model's operator
            import torch

            for value in tree_flatten(out)[0]:
                if isinstance(value, torch.Tensor):
                    tracker.track(value)
            return out

    return Trace()


def fake_module(module: Any, fake_mode: Any, device: str = "cpu") -> Any:
    """Parameters and buffers of ``module`` replaced by fake tensors on ``device`` (tied ones stay tied)."""
    import torch
    from torch import nn

    replaced: dict[int, Any] = {}
    for sub in module.modules():
        for group in (sub._parameters, sub._buffers):
            for name, tensor in list(group.items()):
                if tensor is None:
                    continue
                if id(tensor) not in replaced:
                    with fake_mode:
                        fake = torch.empty_strided(tensor.shape, tensor.stride(), dtype=tensor.dtype, device=device)
                    if isinstance(tensor, nn.Parameter):
                        fake = nn.Parameter(fake, requires_grad=tensor.requires_grad)
                    replaced[id(tensor)] = fake
                group[name] = replaced[id(tensor)]
    return module


def _trace(module: Any, input_size: tuple[int, int, int], classes: int | None, batch: int,
           mode: str, precision: str, optimizer: str) -> tuple[list[int], int]:
    """Live bytes at each allocation of the second (steady-state) step, and at forward's end."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    fake_mode = FakeTensorMode()
    fake_module(module, fake_mode)
    tracker = _Tracker()
    for tensor in [*module.parameters(), *module.buffers()]:
        tracker.track(tensor)
    dtype = autocast_dtype(precision)
    with fake_mode, _dispatch_mode(tracker), model_code():  # the model's step: its failure is a ModelError
        images = torch.randn(batch, *input_size)
        labels = torch.randint(0, classes, (batch,)) if classes else None
        opt = make_optimizer(optimizer, module.parameters()) if mode == "train" else None
        forward_end = 0
        for step in range(2):
            tracker.recording = step == 1
            autocast = torch.autocast("cpu", dtype=dtype) if dtype else contextlib.nullcontext()
            if mode == "train":
                module.train()
                opt.zero_grad(set_to_none=True)
                with autocast:
                    out = module(images)
                    if labels is None and main_output(out).ndim == 2:  # classes known only now
                        labels = torch.randint(0, main_output(out).shape[-1], (batch,))
                    loss = step_loss(out, labels)
                    del out
                forward_end = tracker.live
                loss.backward()
                del loss
                opt.step()
            else:
                module.eval()
                with torch.inference_mode(), autocast:
                    out = module(images)
                forward_end = tracker.live
                del out
    return tracker.events, forward_end


def trace_profile(build: Any, input_size: tuple[int, int, int], classes: int | None, mode: str,
                  precision: str, optimizer: str) -> Profile:
    """The affine memory profile of one step of the module ``build()`` returns (built with its
    parameters on the meta device, then made fake): traces at ``BATCHES`` combined. Raises
    :class:`NotAffine` (a ValueError) when the two traces do not line up (the model allocates
    differently per batch), a :class:`~vitbench.errors.ModelError` when the model's step fails."""
    traces = [_trace(materialize.light_build(build), input_size, classes, b, mode, precision, optimizer) for b in BATCHES]
    return combine(traces)


def combine(traces: list[tuple[list[int], int]]) -> Profile:
    """Two traces (live bytes per allocation, live bytes at forward's end) at ``BATCHES`` ->
    the affine profile a_k B + c_k."""
    (events1, end1), (events2, end2) = traces
    b1, b2 = BATCHES
    if len(events1) != len(events2):
        raise NotAffine(f"the step allocates {len(events1)} tensors at batch {b1} and {len(events2)} at {b2}")
    points = []
    for live1, live2 in (*zip(events1, events2), (end1, end2)):
        slope, rest = divmod(live2 - live1, b2 - b1)
        if rest:
            raise NotAffine("an allocation is not affine in the batch")
        points.append((slope, live1 - slope * b1))
    forward_end = points.pop()
    return Profile(pareto(points), forward_end, 0)


_TRACED: dict[tuple, Profile] = {}


def trace_target(target: Any, mode: str, precision: str, optimizer: str) -> Profile:
    """:func:`trace_profile` of a resolved Target (``vitbench.resolve_models``), cached per
    configuration. Raises a :class:`~vitbench.errors.ModelError` (:class:`NotAffine` among them)
    when it cannot be traced."""
    classes = target.spec.num_classes if target.spec is not None else None
    if target.module is not None:  # a live module: trace copies of it (their weights made fake)

        return trace_profile(lambda: copy.deepcopy(target.module), target.input_size, classes,
                             mode, precision, optimizer)
    key = (target, mode, precision, optimizer)
    if key not in _TRACED:
        _TRACED[key] = trace_profile(target.build, target.input_size, classes, mode, precision, optimizer)
    return _TRACED[key]
