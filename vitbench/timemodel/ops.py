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
import copy
from dataclasses import dataclass
from math import prod
from typing import Any

from vitbench.counters.dispatch import custom_mapping
from vitbench.counters.formulas import sdpa_macs
from vitbench.counters.memory_trace import fake_module
from vitbench.errors import ModelError, ModelForwardError, foreign_call, model_code, model_forward
from vitbench.models import materialize
from vitbench.models.inputs import main_output
from vitbench.models.step import autocast_dtype, make_optimizer, step_loss
from vitbench.timemodel.attention_paths import math_attention, math_attention_bytes
from vitbench.timemodel.conv_kernels import conv_backward_macs, conv_gemm_shape, conv_groups, native_depthwise, nchw_half
from vitbench.timemodel.gpu_backward import backward_in_this_thread, gpu_attention
from vitbench.timemodel.trace_setup import autocast_for, cuda_present, decomposed_fast_paths, deployed

#: operators that only make views or read metadata: no data moves, no kernel runs
VIEW_OPS = frozenset({
    "view", "_unsafe_view", "reshape", "permute", "transpose", "t", "expand", "unsqueeze", "squeeze", "select", "slice",
    "as_strided", "alias", "detach", "split", "split_with_sizes", "unbind", "chunk", "narrow", "_reshape_alias", "lift_fresh",
    "view_as", "expand_as", "flatten", "unflatten", "numpy_T", "diagonal", "sym_size", "sym_stride", "sym_numel",
    "sym_storage_offset", "is_same_size", "_to_copy_noop", "empty", "empty_like", "empty_strided", "new_empty",
    "new_empty_strided", "zeros_like_noop"})
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
    shape: tuple[int, ...]  # the GEMM-like shape (m, k, n) for matmuls/convs/attention (a GPU trace's grouped
    #                         convolutions add their groups: (m, k, n, groups)); () otherwise
    dtype: str           # the dtype of the first tensor result
    kernel: str = ""     # what the calibration prices it by: gemm, conv, conv_backward, conv_grouped(_backward),
    #                      attention, attention_backward, or the operator's name (memory-bound ops)
    aliases: bool = False  # returns one of its inputs (or a view of one) without writing it: on a GPU no
    #                        kernel is launched (dropout in eval, ``to`` the same dtype, ``contiguous``)

    def as_tuple(self) -> tuple:
        """A JSON-friendly tuple (the trace cache's format); :meth:`from_tuple` inverts it."""
        return (self.name, self.component, self.macs, self.bytes, list(self.shape), self.dtype, self.kernel,
                int(self.aliases))

    @classmethod
    def from_tuple(cls, values: Any) -> Op:
        name, component, macs, moved, shape, dtype, kernel, aliases = values
        return cls(str(name), str(component), int(macs), int(moved), tuple(int(d) for d in shape), str(dtype),
                   str(kernel), bool(aliases))


#: the kernels priced by their MACs (a calibrated efficiency each); every other op by its bytes
COMPUTE_KERNELS = ("gemm", "bmm", "conv", "conv_backward", "conv_grouped", "conv_grouped_backward", "attention",
                   "attention_backward")


def kernel_of(name: str, component: str, args: tuple, for_gpu: bool = False, channels_last: bool = False) -> str:
    """The calibration entry that prices an operator (see :class:`Op`); ``for_gpu``: a convolution
    is named by the kernel a CUDA device runs (``conv_depthwise``, ``conv_nchw``: :mod:`conv_kernels`)."""
    if component == "conv" or (component == "optimizer" and name in CONV_OPS):
        groups = conv_groups(name, args)
        backward = "_backward" if name == "convolution_backward" else ""
        # a channels-last step keeps its format from layer to layer on a GPU (fake tensors' inference
        # convolutions do not always say so: every one is taken as channels-last there)
        on_nchw = for_gpu and not channels_last
        if groups > 1:
            return ("conv_depthwise" if on_nchw and native_depthwise(name, args) else "conv_grouped") + backward
        return ("conv_nchw" if on_nchw and nchw_half(name, args) else "conv") + backward
    if component == "attention":
        if name in ("bmm", "baddbmm", *MATMUL_COMPOSITES) or math_attention(name, args):
            return "bmm"
        return "attention_backward" if "backward" in name else "attention"
    if component == "linear":
        return "gemm"
    return name


#: composites that inference mode dispatches whole and that multiply matrices
MATMUL_COMPOSITES = ("matmul", "einsum", "tensordot")


def component_of(name: str, in_optimizer: bool, args: tuple = ()) -> str:
    if in_optimizer:
        return "optimizer"
    if name in MATMUL_COMPOSITES:
        import torch

        batched = sum(isinstance(a, torch.Tensor) and a.ndim >= 3 for a in _operands(name, args)) >= 2
        return "attention" if batched else "linear"
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


def _operands(name: str, args: tuple) -> tuple:
    """The tensor operands of a matmul composite (einsum: its list after the equation)."""
    if name == "einsum":
        return tuple(args[1]) if len(args) > 1 and isinstance(args[1], (list, tuple)) else ()
    return tuple(args[:2])


def gemm_shape(name: str, args: tuple, out: Any) -> tuple[int, ...]:
    """(m, k, n) of the equivalent matrix product (batch folded into m), for the rate lookup;
    () for an operator that is none, or whose arguments do not fit its form."""
    try:
        if name in ("mm", "addmm", "linear", "bmm", "baddbmm"):
            return _product_shape(name, args)
        if name in MATMUL_COMPOSITES:
            return _composite_shape(name, args, out)
        if name.startswith(("scaled_dot_product", "_scaled_dot_product", "_flash_attention", "_efficient_attention")):
            return _attention_shape(args)
        if name in CONV_OPS:
            return conv_gemm_shape(name, args, out)
    except (ValueError, IndexError, TypeError):
        return ()
    return ()


def _arg_shape(args: tuple, i: int) -> tuple[int, ...]:
    """The shape of argument ``i``; () when it is missing or not a tensor."""
    import torch

    return tuple(args[i].shape) if len(args) > i and isinstance(args[i], torch.Tensor) else ()


def _product_shape(name: str, args: tuple) -> tuple[int, ...]:
    """mm (a, b), addmm (c, a, b): (m, k, n); linear (x, w): (prod x[:-1], w[1], w[0]);
    bmm (a, b), baddbmm (c, a, b): (a0 x a1, a2, b2)."""
    if name == "mm":
        (m, k), (_, n) = _arg_shape(args, 0), _arg_shape(args, 1)
        return (m, k, n)
    if name == "addmm":
        (m, k), (_, n) = _arg_shape(args, 1), _arg_shape(args, 2)
        return (m, k, n)
    if name == "linear":
        x, w = _arg_shape(args, 0), _arg_shape(args, 1)
        return (prod(x[:-1]), w[1], w[0])
    a, b = (_arg_shape(args, 0), _arg_shape(args, 1)) if name == "bmm" else (_arg_shape(args, 1), _arg_shape(args, 2))
    return (a[0] * a[1], a[2], b[2])


def _composite_shape(name: str, args: tuple, out: Any) -> tuple[int, ...]:
    """matmul of two matrices (or stacks): (prod a[:-1], a[-1], b[-1]); otherwise from the
    result: (prod out[:-1], the first operand's last dimension, out[-1])."""
    import torch

    tensors = [tuple(t.shape) for t in _operands(name, args) if isinstance(t, torch.Tensor)]
    if name == "matmul" and len(tensors) == 2 and len(tensors[0]) >= 2 and len(tensors[1]) >= 2:
        a, b = tensors
        return (prod(a[:-1]), a[-1], b[-1])
    out_t = out if isinstance(out, torch.Tensor) else None
    if out_t is None or not out_t.ndim:
        return ()
    return (prod(out_t.shape[:-1]), tensors[0][-1] if tensors and tensors[0] else 1, out_t.shape[-1])


def _attention_shape(args: tuple) -> tuple[int, ...]:
    """Fused attention on q (..., L, E), k (..., S, E): (prod q[:-2] x L, E, S)."""
    q, k = _arg_shape(args, 0), _arg_shape(args, 1)
    return (prod(q[:-2]) * q[-2], q[-1], k[-2])


def _macs(func: Any, args: tuple, kwargs: dict, out: Any) -> int:
    """torch's own FLOP formula for the operator (FlopCounterMode's registry, vitbench's formulas
    for the fused kernels and for the composites inference mode dispatches whole), halved."""
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
    if name == "convolution_backward":
        return conv_backward_macs(args)
    if name in MATMUL_COMPOSITES:  # counted on their decomposition
        from torch.utils.flop_counter import FlopCounterMode

        with FlopCounterMode(display=False) as counter:
            func.decompose(*args, **(kwargs or {}))
        return counter.get_total_flops() // 2
    formula = _registry().get(func._overloadpacket)
    if formula is None:
        return 0
    return int(formula(*args, **(kwargs or {}), out_val=out)) // 2


_REGISTRY: dict[Any, Any] = {}


def _registry() -> dict[Any, Any]:
    """FlopCounterMode's formulas (each takes tensors and ``out_val``), with vitbench's own."""
    if not _REGISTRY:
        from torch.utils.flop_counter import FlopCounterMode

        _REGISTRY.update(FlopCounterMode(display=False, custom_mapping=custom_mapping()).flop_registry)
    return _REGISTRY


def describe(func: Any, args: tuple, kwargs: dict | None, out: Any, in_optimizer: bool = False,
             for_gpu: bool = False, channels_last: bool = False) -> Op | None:
    """The :class:`Op` of one dispatched operator call, or None for views and metadata; ``for_gpu``:
    its kernel named as a CUDA device runs it (:func:`kernel_of`), whatever the traced tensors' device."""
    import torch
    from torch.utils._pytree import tree_flatten

    name = func._overloadpacket.__name__
    if name in VIEW_OPS:
        return None
    flat_out = tree_flatten(out)[0]
    first = next((v for v in flat_out if isinstance(v, torch.Tensor)), None)
    if first is None:
        return None
    flat_in = tree_flatten((args, kwargs or {}))[0]
    moved = sum(_nbytes(v) for v in flat_in) + sum(_nbytes(v) for v in flat_out)
    component = component_of(name, in_optimizer, args)
    if component == "attention" and math_attention(name, args):
        moved += math_attention_bytes(args)
    macs = _macs(func, args, kwargs or {}, out) if component in ("attention", "linear", "conv") else 0
    kernel = kernel_of(name, component, args, for_gpu, channels_last)
    shape = gemm_shape(name, args, out) if macs else ()
    if for_gpu and len(shape) == 3 and kernel.startswith(("conv_grouped", "conv_depthwise")):
        shape = (*shape, conv_groups(name, args))  # the GPU model's kernels parallelise over channels
    return Op(name=name, component=component, macs=macs, bytes=moved, shape=shape,
              dtype=str(first.dtype).replace("torch.", ""), kernel=kernel,
              aliases=not macs and (_inactive_dropout(name, args) or _returns_an_input(name, flat_in, flat_out)))


#: dropout operators: ``(input, p, train)``; out of training (or at p = 0) each returns its input
DROPOUT_OPS = frozenset({"dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout"})


def _inactive_dropout(name: str, args: tuple) -> bool:
    """A dropout that returns its input (eval, or p = 0). Fake tensors of some torch versions
    (2.13) give it a result of its own, so its storage alone does not tell."""
    if name not in DROPOUT_OPS or len(args) < 3:
        return False
    return args[2] is False or args[1] == 0


def _returns_an_input(name: str, inputs: list, outputs: list) -> bool:
    """Whether an out-of-place operator's tensor results all share storage with its inputs
    (``dropout`` in eval returns its input; ``to`` the same dtype and ``contiguous`` of a
    contiguous tensor return ``self``): such a call writes nothing and launches no kernel.
    In-place operators (``add_``) share storage too, but write it."""
    import torch

    if name.endswith("_"):
        return False
    try:
        held = {t.untyped_storage()._cdata for t in inputs if isinstance(t, torch.Tensor)}
        results = [t for t in outputs if isinstance(t, torch.Tensor)]
        return bool(results) and all(t.untyped_storage()._cdata in held for t in results)
    except (RuntimeError, NotImplementedError, AttributeError):
        return False


class _Recorder:
    def __init__(self, for_gpu: bool = False, channels_last: bool = False) -> None:
        self.ops: list[Op] = []
        self.recording = False
        self.in_optimizer = False
        self.for_gpu = for_gpu
        self.channels_last = channels_last

    def mode(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        recorder = self

        class Record(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = foreign_call(func, *args, **(kwargs or {}))  # the model's operator
                if recorder.recording:
                    op = describe(func, args, kwargs, out, recorder.in_optimizer, recorder.for_gpu,
                                  recorder.channels_last)
                    if op is not None:
                        recorder.ops.append(op)
                return out

        return Record()


def trace_ops(build: Any, input_size: tuple[int, int, int], classes: int | None, batch: int, mode: str,
              precision: str = "fp32", optimizer: str = "adamw") -> list[Op]:
    """The operators of one step of ``build()``'s module at ``batch``.

    The forward (and, training, the loss and backward) is traced once: with gradients set to
    None after every step, each step runs the same operators. The optimizer step is not traced:
    its operators repeat per parameter, so they come from :func:`optimizer_ops`."""
    return trace_batches(build, input_size, classes, (batch,), mode, precision, optimizer)[batch]


def trace_batches(build: Any, input_size: tuple[int, int, int], classes: int | None, batches: tuple[int, ...],
                  mode: str, precision: str = "fp32", optimizer: str = "adamw", device_type: str = "cpu",
                  reparam: bool = False, channels_last: bool = False) -> dict[int, list[Op]]:
    """:func:`trace_ops` at several batch sizes, building the module once.

    ``device_type='cuda'`` traces on fake CUDA tensors under CUDA's autocast policy (no GPU is
    needed: nothing runs), which is what a GPU step dispatches. On a machine without a GPU, a
    training step's backward runs node by node in this thread (autograd's engine needs a CUDA
    device to run a backward, even of fake tensors: :func:`backward_in_this_thread`) and its
    attention takes the fused kernel a GPU would pick (:func:`gpu_attention`), so the trace is
    the one a machine with a GPU makes. A model that cannot be traced there (a tensor made on the
    CPU in its forward) is traced on the CPU instead, its kernels named as on a GPU (``for_gpu``).
    ``reparam``: the model in its deployed form (:func:`reparameterize`) before tracing;
    ``channels_last``: the model and its images in channels-last memory format."""
    def make() -> Any:
        return deployed(build) if reparam else materialize.light_build(build)

    if device_type == "cuda":
        try:
            return _trace_module(make(), input_size, classes, batches, mode, precision, optimizer, "cuda",
                                 channels_last=channels_last)
        except ModelError:  # a forward that makes CPU tensors: its CPU trace runs the same operators
            pass
    return _trace_module(make(), input_size, classes, batches, mode, precision, optimizer, "cpu",
                         for_gpu=device_type == "cuda", channels_last=channels_last)


def _trace_module(module: Any, input_size: tuple[int, int, int], classes: int | None, batches: tuple[int, ...],
                  mode: str, precision: str, optimizer: str, device_type: str, for_gpu: bool = False,
                  channels_last: bool = False) -> dict[int, list[Op]]:
    with decomposed_fast_paths():
        return _trace_steps(module, input_size, classes, batches, mode, precision, optimizer, device_type,
                            for_gpu or device_type == "cuda", channels_last)


def _trace_steps(module: Any, input_size: tuple[int, int, int], classes: int | None, batches: tuple[int, ...],
                 mode: str, precision: str, optimizer: str, device_type: str, for_gpu: bool,
                 channels_last: bool) -> dict[int, list[Op]]:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    fake_mode = FakeTensorMode()
    layout = torch.channels_last if channels_last else torch.contiguous_format
    if channels_last:
        module.to(memory_format=layout)
    fake_module(module, fake_mode, device_type)
    dtype = autocast_dtype(precision)
    sizes = [(p.numel(), p.dtype) for p in module.parameters() if p.requires_grad]
    out_ops: dict[int, list[Op]] = {}
    without_gpu = device_type == "cuda" and not cuda_present()  # a training step: see gpu_backward
    for batch in batches:
        recorder = _Recorder(for_gpu, channels_last)
        with fake_mode:
            images = torch.randn(batch, *input_size, device=device_type).contiguous(memory_format=layout)
            labels = torch.randint(0, classes, (batch,), device=device_type) if classes else None
        with fake_mode, recorder.mode():
            recorder.recording = True
            if mode == "train":
                module.train()
                with autocast_for(device_type, dtype), gpu_attention() if without_gpu else contextlib.nullcontext():
                    with model_forward(images):
                        out = module(images)
                    if labels is None and main_output(out).ndim == 2:
                        recorder.recording = False
                        labels = torch.randint(0, main_output(out).shape[-1], (batch,), device=device_type)
                        recorder.recording = True
                    loss = step_loss(out, labels)
                    del out
                with model_code():  # the model's backward
                    if without_gpu:  # autograd's engine would need a GPU
                        backward_in_this_thread(loss)
                    else:
                        loss.backward()
                del loss
                for parameter in module.parameters():
                    parameter.grad = None  # as zero_grad(set_to_none=True): the next step starts alike
            else:
                module.eval()
                with torch.inference_mode(), autocast_for(device_type, dtype), model_forward(images):
                    module(images)
        ops = recorder.ops
        if mode == "train":
            ops.extend(optimizer_ops(sizes, optimizer))
        out_ops[batch] = ops
    return out_ops


#: parameter sizes the optimizer template is traced at (two, so bytes = a + b x numel is exact)
_TEMPLATE_SIZES = (1024, 4096)
_TEMPLATES: dict[tuple[str, str], list[tuple[Op, Op]]] = {}


def optimizer_template(optimizer: str, dtype: Any = None) -> list[tuple[Op, Op]]:
    """The operators one parameter costs in a steady-state optimizer step (its second step),
    traced at two parameter sizes: pairs (op at 1024 elements, op at 4096 elements)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    dtype = dtype or torch.float32
    key = (optimizer, str(dtype))
    if key not in _TEMPLATES:
        traced = []
        for numel in _TEMPLATE_SIZES:
            recorder = _Recorder()
            with FakeTensorMode(), recorder.mode():
                parameter = torch.nn.Parameter(torch.empty(numel, dtype=dtype))
                opt = make_optimizer(optimizer, [parameter])
                for step in range(2):
                    parameter.grad = torch.empty_like(parameter)
                    recorder.recording = step == 1
                    recorder.in_optimizer = True
                    opt.step()
                    opt.zero_grad(set_to_none=True)
            traced.append(recorder.ops)
        small, large = traced
        if len(small) != len(large) or any(a.name != b.name for a, b in zip(small, large)):
            raise RuntimeError(f"the {optimizer} step runs different operators at different parameter sizes")
        _TEMPLATES[key] = list(zip(small, large))
    return _TEMPLATES[key]


def optimizer_ops(sizes: list[tuple[int, Any]], optimizer: str) -> list[Op]:
    """The operators of one optimizer step over parameters of ``sizes`` ((numel, dtype) each):
    per parameter, the template's operators with bytes = a + b x numel fitted exactly on the two
    traced sizes (per-parameter state scales with the parameter; the step count does not)."""
    low, high = _TEMPLATE_SIZES
    ops = []
    for numel, dtype in sizes:
        for small, large in optimizer_template(optimizer, dtype):
            per_element = (large.bytes - small.bytes) // (high - low)
            fixed = small.bytes - per_element * low
            ops.append(Op(small.name, "optimizer", 0, fixed + per_element * numel, (), small.dtype, small.kernel))
    return ops


def trace_target_ops(target: Any, batch: int, mode: str, precision: str = "fp32", optimizer: str = "adamw",
                     device_type: str = "cpu", reparam: bool = False, channels_last: bool = False) -> list[Op]:
    """:func:`trace_ops` of a resolved Target (``vitbench.resolve_models``)."""
    return trace_target_batches(target, (batch,), mode, precision, optimizer, device_type, reparam, channels_last)[batch]


def trace_target_batches(target: Any, batches: tuple[int, ...], mode: str, precision: str = "fp32",
                         optimizer: str = "adamw", device_type: str = "cpu", reparam: bool = False,
                         channels_last: bool = False) -> dict[int, list[Op]]:
    """:func:`trace_batches` of a resolved Target."""
    classes = target.spec.num_classes if target.spec is not None else None
    build = target.build
    if target.module is not None:
        def build():
            return copy.deepcopy(target.module)

    try:
        return trace_batches(build, target.input_size, classes, tuple(batches), mode, precision, optimizer, device_type,
                             reparam, channels_last)
    except ModelForwardError as exc:  # the model's own forward failed: name it
        raise exc.named(target.label) from exc.__cause__
