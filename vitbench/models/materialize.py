"""Build a module cheaply and honestly for the counters.

Counters need shapes, not weights; but some tensors must hold real values. ``light_build`` runs a
constructor with every *parameter* created on the meta device (no storage, so weight
initialisation costs nothing: the same trick as accelerate's ``init_empty_weights``) while
buffers and other tensors computed in ``__init__`` stay real CPU tensors: relative-position
indices, RoPE frequencies, RegNet's block widths. Then:

- ``meta_state``: every parameter and buffer as a meta tensor, for ``functional_call`` under the
  dispatch counter (no memory, no compute, the module itself untouched);
- ``materialize_parameters``: parameters become zero-filled storage (no initialiser runs), so
  fvcore can execute the model; buffers keep their real values, so an index gathers what the
  model would gather (uninitialised indices made timm's relpos ViTs crash with an IndexError).

A constructor that cannot run with meta parameters (it computes with them: timm's hybrid ViTs
run a dummy forward through their CNN backbone) is run with real parameters, but every random
initialiser gives zeros (:func:`zero_init`): drawing random numbers for hundreds of millions of
weights was most of its cost (timm's vitamin_xlarge_384: 3.4 s built, 1.1 s so).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from vitbench.errors import ModelError, foreign_call, model_code

if TYPE_CHECKING:
    from torch import nn


@contextlib.contextmanager
def parameters_on_meta() -> Iterator[None]:
    """Within the block, every registered parameter is moved to the meta device on registration."""
    from torch import nn

    original = nn.Module.register_parameter

    def register(module: nn.Module, name: str, param) -> None:
        original(module, name, param)
        param = module._parameters.get(name)
        if param is not None and param.device.type != "meta":
            kind = type(param)
            extra = dict(param.__dict__)  # e.g. timm/hf attributes set on parameters
            extra["requires_grad"] = param.requires_grad
            module._parameters[name] = foreign_call(kind, param.to("meta"), **extra)  # the model's class

    nn.Module.register_parameter = register  # type: ignore[method-assign]
    try:
        yield
    finally:
        nn.Module.register_parameter = original  # type: ignore[method-assign]


def light_build(factory: Callable[[], Any]) -> nn.Module:
    """``factory()`` with parameters on meta and everything else real (on the CPU). A
    constructor that cannot run with meta parameters, whatever the error (timm's mixed-RoPE ViTs
    read their values; timm's hybrid ViTs run a dummy forward through the CNN backbone) is run
    again with real parameters on the CPU, every random initialiser filling zeros
    (:func:`zero_init`); if that fails too, its error is the one raised."""
    import torch

    try:
        with parameters_on_meta(), torch.device("cpu"), model_code():
            return factory()
    except ModelError:  # the constructor cannot run with meta parameters: retried below
        pass
    with torch.device("cpu"), zero_init():
        return factory()


def zero_init() -> Any:
    """A context in which every random fill (``Tensor.uniform_``, ``normal_``, ...) and every
    initialiser of ``torch.nn.init`` zero-fills its tensor instead, and returns it; everything else
    runs as it would: values differ, shapes and operators do not. A torch function mode, so it
    holds in this thread only."""
    return _zero_init_class()()


@functools.cache
def _zero_init_class() -> type:
    import torch
    from torch.nn import init
    from torch.overrides import TorchFunctionMode

    tensor = torch.Tensor
    fills = frozenset({
        tensor.uniform_, tensor.normal_, tensor.log_normal_, tensor.exponential_, tensor.cauchy_, tensor.geometric_,
        tensor.random_, tensor.bernoulli_, init.uniform_, init.normal_, init.trunc_normal_, init.kaiming_uniform_,
        init.kaiming_normal_, init.xavier_uniform_, init.xavier_normal_, init.orthogonal_, init.sparse_,
    })

    class ZeroInit(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func in fills:
                target = args[0] if args else next(v for v in kwargs.values() if isinstance(v, torch.Tensor))
                with torch.no_grad():
                    return target.zero_()
            return func(*args, **kwargs)

    return ZeroInit


def meta_state(module: nn.Module) -> dict[str, Any]:
    """Every parameter and buffer of ``module`` as a meta tensor (for ``functional_call``; a
    tied tensor once, under its first name, so that functional_call keeps it tied)."""
    state: dict[str, Any] = {}
    for name, tensor in module.named_parameters():
        state[name] = tensor.detach().to("meta")
    for name, tensor in module.named_buffers():
        state[name] = tensor.detach().to("meta")
    return state


def materialize_parameters(module: nn.Module, device: str = "cpu") -> nn.Module:
    """Meta parameters -> zero-filled storage on ``device`` (tied ones stay tied). Zeros, not
    uninitialised memory: a tracer that executes the model must not meet NaNs or denormals
    (which also make CPU matmuls many times slower); no initialiser is run."""
    import torch
    from torch import nn

    replaced: dict[int, nn.Parameter] = {}
    for sub in module.modules():
        for name, param in list(sub._parameters.items()):
            if param is None or param.device.type != "meta":
                continue
            if id(param) not in replaced:
                replaced[id(param)] = nn.Parameter(
                    torch.zeros_like(param, device=device), requires_grad=param.requires_grad
                )
            sub._parameters[name] = replaced[id(param)]
    for sub in module.modules():
        for name, buffer in list(sub._buffers.items()):
            if buffer is None:
                continue
            if buffer.device.type == "meta":  # a module built entirely on meta: zeros, not garbage
                sub._buffers[name] = torch.zeros_like(buffer, device=device)
            elif buffer.device != torch.device(device):
                sub._buffers[name] = buffer.to(device)
    return module


def parameter_count(module: nn.Module) -> int:
    """Parameters of the module (tied parameters once), as ``sum(p.numel())`` over ``parameters()``."""
    return sum(p.numel() for p in module.parameters())
