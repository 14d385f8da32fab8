"""Counting at the dispatcher: torch's FlopCounterMode on the meta device, with formulas for the
fused attention kernels it counts as zero (the CPU flash kernel and, before torch 2.15, its
backward, which a training step's trace prices; native multi-head attention).

FlopCounterMode counts FLOPs (2 per multiply-accumulate) for matmuls and convolutions; vitbench
reports ``dispatch_macs`` = FLOPs / 2. Running on ``meta`` tensors allocates no weights and no
activations, so even ViT-H/14 counts in about a second.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from vitbench.counters.formulas import mha_macs, sdpa_backward_macs, sdpa_macs
from vitbench.errors import model_forward


def _flash_cpu_flops(query, key, value, *args, out_shape=None, **kwargs) -> int:
    return 2 * sdpa_macs(query, key, value)


def _flash_cpu_backward_flops(grad_out, query, key, value, *args, out_shape=None, **kwargs) -> int:
    return 2 * sdpa_backward_macs(query, key, value)


def _native_mha_flops(query, key, value, embed_dim, num_heads, *args, out_shape=None, **kwargs) -> int:
    return 2 * mha_macs(query, key, embed_dim)


def custom_mapping() -> dict[Any, Any]:
    import torch

    aten = torch.ops.aten
    mapping: dict[Any, Any] = {aten._native_multi_head_attention: _native_mha_flops}
    if hasattr(aten, "_scaled_dot_product_flash_attention_for_cpu"):
        mapping[aten._scaled_dot_product_flash_attention_for_cpu] = _flash_cpu_flops
    if hasattr(aten, "_scaled_dot_product_flash_attention_for_cpu_backward"):
        mapping[aten._scaled_dot_product_flash_attention_for_cpu_backward] = _flash_cpu_backward_flops
    return mapping


@dataclass(frozen=True)
class DispatchCount:
    macs: int
    by_operator: dict[str, int] = field(hash=False)
    by_module: dict[str, int] = field(hash=False)  # MACs per module, children included


def dispatch_count(module, inputs: tuple[Any, ...], state: dict[str, Any] | None = None,
                   label: str | None = None) -> DispatchCount:
    """Run ``module(*inputs)`` forward under FlopCounterMode (no autograd graph kept); with
    ``state``, through ``torch.func.functional_call(module, state, inputs)``: the module's
    parameters and buffers replaced by these tensors (meta ones), the module itself untouched.
    With ``label``, what the forward raises is a :class:`~vitbench.errors.ModelForwardError`
    naming it (the model's own failure, the user's to fix)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False, depth=None, custom_mapping=custom_mapping())
    with torch.no_grad(), counter:
        with model_forward(inputs[0], label) if label is not None and inputs else contextlib.nullcontext():
            if state is None:
                module(*inputs)
            else:
                torch.func.functional_call(module, state, inputs)
    counts = counter.get_flop_counts()
    by_operator = {str(op.__name__ if hasattr(op, "__name__") else op): int(v) // 2 for op, v in counts.get("Global", {}).items()}
    by_module = {}
    for name, ops in counts.items():
        if name == "Global":
            continue
        # FlopCounterMode names modules "<RootClass>.<path>"; keep the path relative to the root.
        path = name.split(".", 1)[1] if "." in name else ""
        by_module[path] = sum(int(v) for v in ops.values()) // 2
    return DispatchCount(
        macs=counter.get_total_flops() // 2, by_operator=by_operator, by_module=by_module
    )
