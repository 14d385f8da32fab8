"""Analytic memory model: weights, gradients, optimizer state, activations saved for backward,
attention matrices, peak training and inference memory. Pure Python, no torch import.

Notation as in :mod:`vitbench.analytic.vit` (B batch, n tokens, d width, h heads, m MLP width,
P parameters); ``w`` is the bytes of one activation value: 4 in fp32, 2 under bf16/fp16
autocast, where matmuls, convolutions, attention, GELU, dropout and BatchNorm outputs are
16-bit, while weights, gradients, optimizer state, LayerNorm outputs and statistics, the loss and
the ViT residual stream (fp32 once an fp32 CLS token or position table is added to it) stay fp32.

Modules:
    closed_forms  exact closed forms (weights 4 P, gradients 4 P, optimizer 0/4 P/8 P,
                  attention matrix B h n^2 w, module buffers) and argument checks
    replay        the replay engine: live bytes as a B + c at every allocation
    vit, cnn      per-family replays of one step, one function per sub-layer (cnn_ops: the
                  CNN operators)
    planner       memory_estimate (peak for a batch) and plan (largest batch for a budget)
    records       plan_records: the rows of ``vitbench plan`` (and of ``vitbench.plan_records``)

Activations and peaks come from a replay of one step at the granularity of PyTorch operators:
what each operator allocates, what autograd saves for backward, when Python drops a reference,
what each backward node allocates (input gradients, weight gradients, oneDNN reorder buffers)
and frees (its saved tensors, the incoming gradient), and the optimizer's temporaries. Every
allocation is a candidate for the peak and is affine in the batch, ``a_k B + c_k``, so

    peak(B) = 4 P + buffers + optimizer state (+ AdamW step counters) + max_k (a_k B + c_k)

a maximum of affine functions: convex and increasing in B, which lets :func:`plan` solve for
the largest batch exactly. The replay follows PyTorch 2.x on the CPU: oneDNN convolutions, the
CPU flash-attention kernel, CPU dropout, the single-tensor optimizers; it was checked against
what autograd saves and against the profiler's allocator events (tests/test_memory_model.py;
approximations in :func:`memory_estimate`).
"""

from __future__ import annotations

from vitbench.analytic.memory.closed_forms import (
    attention_matrix_bytes,
    buffers_bytes,
    gradients_bytes,
    optimizer_bytes,
    value_bytes,
    weights_bytes,
)
from vitbench.analytic.memory.planner import (
    MemoryEstimate,
    memory_estimate,
    plan,
    predicted_max_batch,
    predicted_peak_bytes,
    unsupported_reason,
)
from vitbench.analytic.memory.records import identity_record, plan_records
from vitbench.specs import ViTSpec  # noqa: F401  (the ViT spec, for callers of this module)

__all__ = [
    "MemoryEstimate",
    "attention_matrix_bytes",
    "buffers_bytes",
    "gradients_bytes",
    "identity_record",
    "memory_estimate",
    "optimizer_bytes",
    "plan",
    "plan_records",
    "predicted_max_batch",
    "predicted_peak_bytes",
    "unsupported_reason",
    "value_bytes",
    "weights_bytes",
]
