"""Closed forms of the memory model (exact): weights, gradients, optimizer state, module
buffers, one layer's attention matrix. Pure Python, no torch import.

Notation as in :mod:`vitbench.analytic.vit` (B batch, n tokens, h heads, P parameters); ``w`` is
the bytes of one activation value: 4 in fp32, 2 under bf16/fp16 autocast.

    weights     = 4 P                    (fp32 master weights, at every precision)
    gradients   = 4 P                    (training)
    optimizer   = 0 | 4 P | 8 P          (sgd | sgd-momentum | adamw: exp_avg, exp_avg_sq)
    attention matrix, one layer = B h n^2 w
"""

from __future__ import annotations

from typing import Any

from vitbench.analytic.cnn import cnn_layers
from vitbench.errors import SpecError
from vitbench.settings import ATTENTIONS, MODES, OPTIMIZERS, PRECISIONS, check_batch_size
from vitbench.specs import ModelSpec, ViTSpec

FP32_BYTES = 4
INDEX_BYTES = 8  # int64: max-pool indices, class targets
#: fp32 state buffers per parameter value
OPTIMIZER_BUFFERS = {"sgd": 0, "sgd-momentum": 1, "adamw": 2}


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    """SpecError naming ``name`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise SpecError(name, value, f"must be one of {', '.join(choices)}")


check_batch = check_batch_size


def check_run(mode: str, precision: str, optimizer: str) -> None:
    """Validate the run choices (one SpecError naming the first bad field)."""
    check_choice("mode", mode, MODES)
    check_choice("precision", precision, PRECISIONS)
    check_choice("optimizer", optimizer, OPTIMIZERS)


def resolve_attention(spec: ModelSpec, attention: str | None) -> str:
    """The attention path: ``attention`` if given (validated), else the ViT spec's own, else
    "sdpa" (ignored by CNNs)."""
    if attention is not None:
        check_choice("attention", attention, ATTENTIONS)
        return attention
    return spec.attention if isinstance(spec, ViTSpec) else "sdpa"


def value_bytes(precision: str = "fp32") -> int:
    """w = 4 (fp32) or 2 (bf16, fp16 autocast): bytes of one activation value."""
    check_choice("precision", precision, PRECISIONS)
    return FP32_BYTES if precision == "fp32" else 2


def weights_bytes(params: int) -> int:
    """weights = 4 P (the fp32 master copy, also under autocast)."""
    return FP32_BYTES * params


def gradients_bytes(params: int) -> int:
    """gradients = 4 P (one fp32 .grad per parameter)."""
    return FP32_BYTES * params


def optimizer_bytes(params: int, optimizer: str = "adamw") -> int:
    """optimizer state = k * 4 P, k = 0 (sgd), 1 (sgd-momentum: the momentum buffer),
    2 (adamw: exp_avg and exp_avg_sq). AdamW's scalar step counters (4 bytes per parameter
    tensor, not per value) are left out."""
    check_choice("optimizer", optimizer, OPTIMIZERS)
    return OPTIMIZER_BUFFERS[optimizer] * FP32_BYTES * params


def buffers_bytes(spec: ModelSpec) -> int:
    """Module buffers, held like the weights: per BatchNorm of C channels running_mean and
    running_var (2 * 4 C) and num_batches_tracked (8); the ViT's fixed sin-cos table (4 N d)."""
    if isinstance(spec, ViTSpec):
        return FP32_BYTES * spec.num_patches * spec.embed_dim if spec.pos_embed == "sincos-2d" else 0

    return sum(
        layer.params * FP32_BYTES + INDEX_BYTES  # params = 2 C (weight and bias)
        for layer in cnn_layers(spec)
        if layer.op == "batchnorm"
    )


def attention_matrix_bytes(spec: ModelSpec, batch_size: int = 1, precision: str = "fp32") -> int:
    """One layer's attention probabilities softmax(Q K^T / sqrt(d_h)): B * h * n^2 * w bytes.

    The explicit (math) attention path keeps this for backward in every layer; fused kernels
    (flash, memory-efficient, CPU flash) never store it. 0 for CNNs.
    ViT-B/16 at 224 px: 12 * 197^2 * 4 = 1,862,832 bytes per image and layer."""
    check_batch(batch_size)
    width = value_bytes(precision)
    if not isinstance(spec, ViTSpec):
        return 0
    return batch_size * spec.num_heads * spec.tokens**2 * width
