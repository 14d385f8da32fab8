"""How a step is set up for tracing (:mod:`vitbench.timemodel.ops`): the model in its deployed
form, a device's autocast policy switched on without that device, and PyTorch's fused inference
fast paths turned off so that every operator's work is visible."""

from __future__ import annotations

import contextlib
import heapq
from collections import Counter
from typing import Any

from vitbench.errors import ModelError, model_code


def deployed(build: Any) -> Any:
    """``build()``'s module reparameterised (:func:`reparameterize`): built on meta (fusing
    needs every tensor on one device), or, where that fails, built for real on the CPU."""
    import torch

    try:
        with torch.device("meta"), model_code():
            return reparameterize(build())
    except ModelError:  # the model's code cannot run on meta: retried with real tensors
        pass
    with torch.device("cpu"):
        return reparameterize(build())


def reparameterize(module: Any) -> Any:
    """The deployed (reparameterised, fused) form of ``module``, as timm benchmarks and users
    deploy it: timm's ``reparameterize_model`` when timm is installed, else the same walk here:
    each child with a ``fuse`` method is replaced by what it returns, else its ``reparameterize``
    or ``switch_to_deploy`` is called; then its own children, in place."""
    try:
        from timm.utils.model import reparameterize_model
    except ImportError:
        _deploy_children(module)
        return module
    return reparameterize_model(module, inplace=True)


def _deploy_children(module: Any) -> None:
    for name, child in list(module.named_children()):
        if hasattr(child, "fuse"):
            setattr(module, name, child.fuse())
        elif hasattr(child, "reparameterize"):
            child.reparameterize()
        elif hasattr(child, "switch_to_deploy"):
            child.switch_to_deploy()
        _deploy_children(child)


@contextlib.contextmanager
def autocast_for(device_type: str, dtype: Any):
    """``torch.autocast(device_type, dtype)``; for CUDA without a GPU (fake tensors) the same
    policy switched on directly, since ``torch.autocast('cuda')`` disables itself there."""
    import torch

    if dtype is None:
        yield
        return
    if device_type != "cuda" or torch.cuda.is_available():
        with torch.autocast(device_type, dtype=dtype):
            yield
        return
    enabled, previous = torch.is_autocast_enabled("cuda"), torch.get_autocast_dtype("cuda")
    torch.set_autocast_enabled("cuda", True)
    torch.set_autocast_dtype("cuda", dtype)
    torch.autocast_increment_nesting()
    try:
        yield
    finally:
        if torch.autocast_decrement_nesting() == 0:
            torch.clear_autocast_cache()
        torch.set_autocast_enabled("cuda", enabled)
        torch.set_autocast_dtype("cuda", previous)


@contextlib.contextmanager
def decomposed_fast_paths():
    """``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer`` in inference take a fused
    "fast path" (``_native_multi_head_attention``, ``_transformer_encoder_layer_fwd``) whose
    work no FLOP formula sees: a trace of it priced a user's encoder at 0.14x its measured time.
    Traced with the fast path off, the step is its component operators (the ones the counters
    count), each priced by its work."""
    import torch

    mha = torch.backends.mha  # set_fastpath_enabled: in every torch vitbench supports (>= 2.13)
    enabled = mha.get_fastpath_enabled()
    mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        mha.set_fastpath_enabled(enabled)


def backward_in_this_thread(loss: Any) -> None:
    """``loss.backward()`` without autograd's engine, which runs a CUDA tensor's backward on a
    device thread that needs a CUDA device, fake tensors included: every node of the graph is
    called here, in the engine's order (of the ready nodes, the one with the highest sequence
    number first), the gradients flowing into a node summed as the engine sums them, a missing
    one passed as None (the engine's undefined gradient), each reduced and cast as the engine
    does (:func:`_as_the_engine_delivers`). So a GPU's training step is traced on
    a machine without a GPU under CUDA's autocast policy, as the GPU runs it (traced on the CPU,
    the CPU's policy keeps layer norms and what follows them in low precision: Swin-T's step
    moved 21% fewer bytes). Tensor hooks are not run (the engine runs them; models rarely have any)."""
    import torch

    root = loss.grad_fn
    if root is None:  # as the engine says it
        raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    waiting: Counter = Counter()  # edges into each node not yet delivered
    seen, stack = {root}, [root]
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is not None:
                waiting[child] += 1
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
    buffers: dict[Any, list[Any]] = {root: [torch.ones_like(loss)]}
    ready = [(-root._sequence_nr(), 0, root)]
    pushed = 1
    with torch.no_grad():
        while ready:
            node = heapq.heappop(ready)[2]
            if type(node).__name__ == "AccumulateGrad":  # the engine hands the gradient over, no copy
                (grad,) = buffers.pop(node)
                variable = node.variable
                if grad is not None:
                    variable.grad = grad.detach() if variable.grad is None else variable.grad + grad
                continue
            grads = (node if callable(node) else node.apply)(*buffers.pop(node))
            grads = grads if isinstance(grads, tuple) else (grads,)
            for (child, slot), grad in zip(node.next_functions, grads):
                if child is None:
                    continue
                buffer = buffers.setdefault(child, [None] * len(child._input_metadata))
                if grad is not None:
                    grad = _as_the_engine_delivers(grad, child._input_metadata[slot])
                    buffer[slot] = grad if buffer[slot] is None else buffer[slot] + grad
                waiting[child] -= 1
                if waiting[child] == 0:
                    heapq.heappush(ready, (-child._sequence_nr(), pushed, child))
                    pushed += 1


@contextlib.contextmanager
def gpu_attention():
    """Within the block, ``scaled_dot_product_attention`` on 4-D fake CUDA tensors takes the fused
    kernel a GPU would pick, where PyTorch cannot ask a device that is not there (it then takes the
    math path: two batched products around a softmax, the maps in memory): flash attention in half
    precision with no mask and at most 256 channels a head, memory-efficient attention otherwise
    (a mask expanded to batch x heads x queries x keys, a boolean one made additive, as PyTorch
    does). Tensors of other shapes go on as they would."""
    import torch
    from torch.overrides import TorchFunctionMode

    sdpa = torch.nn.functional.scaled_dot_product_attention

    class FusedAttention(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is sdpa:
                fused = _fused_attention(*args, **kwargs)
                if fused is not None:
                    return fused
            return func(*args, **kwargs)

    with FusedAttention():
        yield


def _fused_attention(query: Any, key: Any, value: Any, attn_mask: Any = None, dropout_p: float = 0.0,
                     is_causal: bool = False, scale: float | None = None, enable_gqa: bool = False) -> Any:
    """The fused kernel's output for :func:`gpu_attention`, or None where it does not apply."""
    import torch

    aten = torch.ops.aten
    tensors = (query, key, value)
    if (enable_gqa or any(t.dim() != 4 for t in tensors) or query.shape[:2] != key.shape[:2]
            or key.shape[:3] != value.shape[:3] or query.shape[-1] != key.shape[-1]
            or len({t.dtype for t in tensors}) != 1 or query.device.type != "cuda"):
        return None
    half = query.dtype in (torch.float16, torch.bfloat16)
    if attn_mask is None and half and query.shape[-1] <= 256 and query.shape[-1] == value.shape[-1]:
        return aten._scaled_dot_product_flash_attention(query, key, value, dropout_p, is_causal, False, scale=scale)[0]
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn_mask = torch.zeros(attn_mask.shape, dtype=query.dtype, device=query.device).masked_fill(
                ~attn_mask, float("-inf"))
        attn_mask = attn_mask.to(query.dtype).expand(query.shape[0], query.shape[1], query.shape[2], key.shape[2])
    needs_grad = any(t.requires_grad for t in tensors)
    return aten._scaled_dot_product_efficient_attention(query, key, value, attn_mask, needs_grad, dropout_p,
                                                        is_causal, scale=scale)[0]


def _as_the_engine_delivers(grad: Any, metadata: Any) -> Any:
    """A gradient as the engine hands it to the next node (its ``validate_outputs``): summed to
    the shape that input had (a broadcast bias), then cast to its dtype (an fp32 parameter
    under autocast)."""
    if tuple(grad.shape) != tuple(metadata.shape):
        grad = grad.sum_to_size(metadata.shape)
    return grad.to(metadata.dtype) if grad.dtype != metadata.dtype else grad


def cuda_present() -> bool:
    """Whether this machine has a CUDA device (a backward of fake CUDA tensors needs one)."""
    import torch

    return torch.cuda.is_available()


__all__ = ["autocast_for", "backward_in_this_thread", "cuda_present", "decomposed_fast_paths", "deployed", "gpu_attention",
           "reparameterize"]
