"""A GPU's training step traced on a machine without a GPU (:mod:`vitbench.timemodel.ops`):
autograd's engine will not run the backward of fake CUDA tensors without a CUDA device, and
PyTorch cannot ask a device that is not there which fused attention kernel to take. Both are done
here as the GPU would do them, so a question is traced alike with or without a GPU
(``tests/test_gpu_backward.py``; ``benchmarks/gpu/trace_parity.py`` checks it on a GPU)."""

from __future__ import annotations

import contextlib
import heapq
from collections import Counter
from typing import Any


def backward_in_this_thread(loss: Any) -> None:
    """``loss.backward()`` without autograd's engine, which runs a CUDA tensor's backward on a
    device thread that needs a CUDA device, fake tensors included: every node of the graph is
    called here, in the engine's order (of the ready nodes, the one with the highest sequence
    number first), the gradients flowing into a node summed as the engine sums them, a missing
    one passed as None (the engine's undefined gradient), each reduced and cast as the engine
    does (:func:`_as_the_engine_delivers`). So a GPU's training step is traced on
    a machine without a GPU under CUDA's autocast policy, as the GPU runs it (traced on the CPU,
    the CPU's policy keeps layer norms and what follows them in low precision: Swin-T's bf16
    step at batch 32 moved 22.7 GB instead of 27.7). Tensor and module backward hooks are not run
    (the engine runs them; no model of timm 1.0.31 or torchvision 0.29 registers one, only timm's
    utilities for activation statistics do)."""
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


__all__ = ["backward_in_this_thread", "gpu_attention"]
