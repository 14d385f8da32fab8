"""Every aten operator of one step of any model, with its shapes, work and bytes, traced on fake
tensors (nothing is computed or allocated): the input of the time model.

The step is the one ``profile`` times (:mod:`vitbench.measure.workload`): an inference forward,
or forward, loss, backward (autograd on fake tensors), optimizer step and gradients set to None.
Each operator becomes an :class:`Op`:

    macs  = torch.utils.flop_counter's formula for the operator / 2  (matmuls, convolutions,
            attention kernels, forward and backward; 0 for the rest)
    bytes = bytes of every tensor argument + bytes of every tensor result (views excepted)

and a ``component``: ``attention`` (batched matmuls and fused attention kernels), ``linear``
(mm/addmm), ``conv``, ``optimizer`` (every operator of the optimizer step), ``elementwise`` (the
rest: norms, activations, softmax, residual adds, the loss, copies). Views and metadata
operators move no data and are dropped.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

#: operators that only make views or read metadata: no data moves, no kernel runs
VIEW_OPS = frozenset({
    "view", "_unsafe_view", "reshape", "permute", "transpose", "t", "expand", "unsqueeze", "squeeze",
    "select", "slice", "as_strided", "alias", "detach", "split", "split_with_sizes", "unbind", "chunk",
    "narrow", "_reshape_alias", "lift_fresh", "view_as", "expand_as", "flatten", "unflatten", "numpy_T",
    "diagonal", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_same_size", "_to_copy_noop",
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros_like_noop",
})
ATTENTION_OPS = ("bmm", "baddbmm", "scaled_dot_product", "_scaled_dot_product", "_flash_attention", "_efficient_attention", "_native_multi_head_attention")
LINEAR_OPS = ("mm", "addmm", "linear")
CONV_OPS = ("convolution", "convolution_backward", "conv1d", "conv2d", "conv3d", "_convolution", "mkldnn_convolution")
COMPONENTS = ("attention", "linear", "conv", "elementwise", "optimizer")


@dataclass(frozen=True)
class Op:
    name: str            # aten overload packet, e.g. 'addmm'
    component: str       # one of COMPONENTS
    macs: int            # multiply-accumulates (FLOPs / 2 by torch's flop formulas)
    bytes: int           # bytes read (tensor arguments) + written (tensor results)
    shape: tuple[int, ...]  # the GEMM-like shape (m, k, n) for matmuls/convs/attention; () otherwise
    dtype: str           # the dtype of the first tensor result


def component_of(name: str, in_optimizer: bool) -> str:
    if in_optimizer:
        return "optimizer"
    if any(name.startswith(prefix) for prefix in ATTENTION_OPS):
        return "attention"
    if name in LINEAR_OPS:
        return "linear"
    if name in CONV_OPS:
        return "conv"
    return "elementwise"


def _nbytes(value: Any) -> int:
    import torch

    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    return 0


def gemm_shape(name: str, args: tuple, out: Any) -> tuple[int, ...]:
    """(m, k, n) of the equivalent matrix product (batch folded into m), for the rate lookup."""
    import torch

    def shape(i):
        return tuple(args[i].shape) if len(args) > i and isinstance(args[i], torch.Tensor) else ()

    try:
        if name == "mm":
            (m, k), (_, n) = shape(0), shape(1)
            return (m, k, n)
        if name == "addmm":
            (m, k), (_, n) = shape(1), shape(2)
            return (m, k, n)
        if name == "linear":
            x, w = shape(0), shape(1)
            m = 1
            for d in x[:-1]:
                m *= d
            return (m, w[1], w[0])
        if name in ("bmm", "baddbmm"):
            a, b = (shape(0), shape(1)) if name == "bmm" else (shape(1), shape(2))
            return (a[0] * a[1], a[2], b[2])
        if name.startswith(("scaled_dot_product", "_scaled_dot_product", "_flash_attention", "_efficient_attention")):
            q, k = shape(0), shape(1)
            batch = 1
            for d in q[:-2]:
                batch *= d
            return (batch * q[-2], q[-1], k[-2])
        if name in CONV_OPS:
            x, w = (shape(0), shape(1)) if name != "convolution_backward" else (shape(1), shape(2))
            out_t = out[0] if isinstance(out, (tuple, list)) else out
            spatial = 1
            ref = out_t if name != "convolution_backward" and isinstance(out_t, torch.Tensor) else None
            dims = tuple(ref.shape[2:]) if ref is not None else tuple(args[0].shape[2:])
            for d in dims:
                spatial *= d
            k = 1
            for d in w[1:]:  # in_channels / groups x kernel elements
                k *= d
            return (x[0] * spatial, k, w[0])
    except (ValueError, IndexError, TypeError):
        return ()
    return ()


def _macs(func: Any, args: tuple, kwargs: dict, out: Any) -> int:
    """torch's own FLOP formula for the operator (FlopCounterMode's registry, vitbench's formulas
    for the fused kernels and for the composites inference mode dispatches whole), halved."""
    from math import prod

    from vitbench.counters.formulas import sdpa_macs

    name = func._overloadpacket.__name__
    if name == "linear":
        x, w = args[0], args[1]
        return prod(x.shape[:-1]) * w.shape[1] * w.shape[0]
    if name in ("conv1d", "conv2d", "conv3d"):  # composites, dispatched whole in inference mode
        w = args[1]
        return out.numel() * prod(w.shape[1:])
    if name == "scaled_dot_product_attention":
        q, k, v = args[:3]
        return sdpa_macs(q.shape, k.shape, v.shape)
    formula = _registry().get(func._overloadpacket)
    if formula is None:
        return 0
    return int(formula(*args, **(kwargs or {}), out_val=out)) // 2


_REGISTRY: dict[Any, Any] = {}


def _registry() -> dict[Any, Any]:
    """FlopCounterMode's formulas (each takes tensors and ``out_val``), with vitbench's own."""
    if not _REGISTRY:
        from torch.utils.flop_counter import FlopCounterMode

        from vitbench.counters.dispatch import custom_mapping

        _REGISTRY.update(FlopCounterMode(display=False, custom_mapping=custom_mapping()).flop_registry)
    return _REGISTRY


class _Recorder:
    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.recording = False
        self.in_optimizer = False

    def mode(self):
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_flatten

        recorder = self

        class Record(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                if recorder.recording:
                    name = func._overloadpacket.__name__
                    flat_out = tree_flatten(out)[0]
                    import torch

                    if name not in VIEW_OPS and any(isinstance(v, torch.Tensor) for v in flat_out):
                        flat_in = tree_flatten((args, kwargs or {}))[0]
                        moved = sum(_nbytes(v) for v in flat_in) + sum(_nbytes(v) for v in flat_out)
                        first = next((v for v in flat_out if isinstance(v, torch.Tensor)), None)
                        component = component_of(name, recorder.in_optimizer)
                        macs = _macs(func, args, kwargs or {}, out) if component in ("attention", "linear", "conv") else 0
                        recorder.ops.append(Op(
                            name=name, component=component, macs=macs, bytes=moved,
                            shape=gemm_shape(name, args, out) if macs else (),
                            dtype=str(first.dtype).replace("torch.", "") if first is not None else "",
                        ))
                return out

        return Record()


def trace_ops(build: Any, input_size: tuple[int, int, int], classes: int | None, batch: int, mode: str,
              precision: str = "fp32", optimizer: str = "adamw") -> list[Op]:
    """The operators of the second (steady-state) step of ``build()``'s module at ``batch``."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from vitbench.counters.memory_trace import _fake_module, _loss
    from vitbench.measure.workload import AUTOCAST_DTYPES, make_optimizer
    from vitbench.models.inputs import main_output
    from vitbench.models.materialize import light_build

    module = light_build(build)
    fake_mode = FakeTensorMode()
    _fake_module(module, fake_mode)
    recorder = _Recorder()
    dtype = getattr(torch, AUTOCAST_DTYPES[precision]) if precision in AUTOCAST_DTYPES else None
    with fake_mode, recorder.mode():
        images = torch.randn(batch, *input_size)
        labels = torch.randint(0, classes, (batch,)) if classes else None
        opt = make_optimizer(optimizer, module.parameters()) if mode == "train" else None
        for step in range(2):
            recorder.recording = step == 1
            autocast = torch.autocast("cpu", dtype=dtype) if dtype else contextlib.nullcontext()
            if mode == "train":
                module.train()
                with autocast:
                    out = module(images)
                    if labels is None and main_output(out).ndim == 2:
                        labels = torch.randint(0, main_output(out).shape[-1], (batch,))
                    loss = _loss(out, labels)
                    del out
                loss.backward()
                del loss
                recorder.in_optimizer = True
                opt.step()
                opt.zero_grad(set_to_none=True)
                recorder.in_optimizer = False
            else:
                module.eval()
                with torch.inference_mode(), autocast:
                    module(images)
    return recorder.ops


def trace_target_ops(target: Any, batch: int, mode: str, precision: str = "fp32", optimizer: str = "adamw") -> list[Op]:
    """:func:`trace_ops` of a resolved Target (``vitbench.resolve_models``)."""
    classes = target.spec.num_classes if target.spec is not None else None
    if target.module is not None:
        import copy

        return trace_ops(lambda: copy.deepcopy(target.module), target.input_size, classes, batch, mode, precision, optimizer)
    return trace_ops(target.build, target.input_size, classes, batch, mode, precision, optimizer)
