"""One step of a model, as every path that runs, traces or times one defines it: the autocast
dtype of a precision, the optimizer, the loss. ``profile`` measures this step, the memory tracer
and the time model trace it; one definition keeps the three in agreement."""

from __future__ import annotations

from typing import Any

from vitbench.models.inputs import main_output

#: precision -> autocast dtype (the name in torch); fp32 runs without autocast
AUTOCAST_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def autocast_dtype(precision: str) -> Any:
    """The ``torch.dtype`` autocast runs ``precision`` in, or None for fp32 (no autocast)."""
    import torch

    name = AUTOCAST_DTYPES.get(precision)
    return getattr(torch, name) if name else None


def make_optimizer(name: str, parameters):
    """``adamw`` (lr 1e-4), ``sgd-momentum`` (lr 1e-2, momentum 0.9) or ``sgd`` (lr 1e-2)."""
    import torch

    if name == "adamw":
        return torch.optim.AdamW(parameters, lr=1e-4)
    if name == "sgd-momentum":
        return torch.optim.SGD(parameters, lr=1e-2, momentum=0.9)
    return torch.optim.SGD(parameters, lr=1e-2)


def step_loss(output, targets):
    """Cross-entropy for class scores (batch, classes); for any other output (an encoder's
    hidden states) the mean square, so that backward reaches every parameter."""
    import torch.nn.functional as F

    output = getattr(output, "logits", output)
    output = main_output(output)
    if targets is not None and output.dim() == 2:
        return F.cross_entropy(output, targets)
    return output.float().pow(2).mean()


__all__ = ["AUTOCAST_DTYPES", "autocast_dtype", "make_optimizer", "step_loss"]
