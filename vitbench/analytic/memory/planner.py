"""Memory estimates and the planner: the replay of one step turned into a peak for any batch,
and inverted into the largest batch that fits a budget. Pure Python, no torch import.

    peak(B) = 4 P + buffers + optimizer state (+ AdamW step counters) + max_k (a_k B + c_k)

a maximum of affine functions over the replay's allocations k: convex and increasing in B, so

    B_max = min over k with a_k > 0 of floor((memory - fixed - c_k) / a_k)

is exact. B = 1 gets its own replay: PyTorch picks some CPU convolution kernels differently
for a single image.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

from vitbench.analytic import params
from vitbench.analytic.memory.closed_forms import (
    FP32_BYTES,
    attention_matrix_bytes,
    buffers_bytes,
    check_batch,
    check_run,
    gradients_bytes,
    optimizer_bytes,
    resolve_attention,
    value_bytes,
    weights_bytes,
)
from vitbench.analytic.memory.cnn import cnn_param_sizes, plain_cnn_step, resnet_step
from vitbench.analytic.memory.replay import Profile, Replay, optimizer_step, pareto
from vitbench.analytic.memory.vit import vit_param_sizes, vit_step
from vitbench.errors import SpecError
from vitbench.specs import ModelSpec, PlainCNNSpec, ResNetSpec, ViTSpec
from vitbench.specs.target import Target

#: the families the replay covers, and the spec fields each covers (a field added to a spec later
#: is refused at a non-default value until the replay models it)
REPLAYED_FIELDS: dict[type, frozenset[str]] = {
    ViTSpec: frozenset((
        "name", "img_size", "patch_size", "in_chans", "embed_dim", "depth", "num_heads", "mlp_ratio",
        "mlp_hidden_dim", "num_classes", "pool", "pos_embed", "pos_embed_len", "qkv_bias",
        "patch_embed", "final_norm", "norms_per_block", "dropout", "attn_dropout", "attention",
    )),
    ResNetSpec: frozenset(("name", "img_size", "in_chans", "num_classes", "block", "layers", "widths",
                           "stem", "stem_width")),
    PlainCNNSpec: frozenset(("name", "img_size", "in_chans", "num_classes", "stages", "fc_dims",
                             "batchnorm")),
}


def unsupported_reason(model: Any) -> str | None:
    """None when the memory model replays ``model``; else one line saying why it cannot.

    Covered: vitbench's ViTSpec, ResNetSpec and PlainCNNSpec, field by field (a field outside
    ``REPLAYED_FIELDS`` at a non-default value is refused, as are ViT pooling other than CLS or
    mean and a ViT without a head). Anything else (a Swin or ConvNeXt spec, a reference without
    such a spec, an nn.Module) has no memory formula: measure it with ``vitbench profile``."""
    covered = REPLAYED_FIELDS.get(type(model))
    if covered is None:
        what = getattr(model, "kind", None) or type(model).__name__
        return (f"no memory formula for {what} models (the memory model replays vitbench's ViT, "
                "ResNet and plain-CNN specs); measure it with `vitbench profile`")
    for field in dataclasses.fields(model):
        value = getattr(model, field.name)
        if field.name not in covered and value != field.default:
            if field.name == "class_token" and value == (model.pool == "cls"):
                continue  # the default, spelled out
            return f"{field.name}={value!r} is not in the memory model; measure it with `vitbench profile`"
    if isinstance(model, ViTSpec) and model.pool not in ("cls", "mean"):
        return f"pool={model.pool!r} is not in the memory model; measure it with `vitbench profile`"
    if model.num_classes < 1:
        return "num_classes=0 (no head) is not in the memory model; measure it with `vitbench profile`"
    return None


def _check_supported(model: Any) -> None:
    reason = unsupported_reason(model)
    if reason is not None:
        raise SpecError("model", getattr(model, "name", model), reason)


@functools.lru_cache(maxsize=256)
def _profile(spec: ModelSpec, mode: str, precision: str, optimizer: str, attention: str,
             batch_one: bool) -> Profile:
    """The replay for batches of one image (``batch_one``) or of more (kernels differ)."""
    w = value_bytes(precision)
    r = Replay(grad=mode == "train", low=w != FP32_BYTES, batch_one=batch_one)
    if isinstance(spec, ViTSpec):
        vit_step(spec, r, w, attention)
        sizes = vit_param_sizes(spec)
    elif isinstance(spec, ResNetSpec):
        resnet_step(spec, r, w)
        sizes = cnn_param_sizes(spec)
    else:
        plain_cnn_step(spec, r, w)
        sizes = cnn_param_sizes(spec)
    if mode == "train":
        optimizer_step(r, sizes, optimizer)
    p = params(spec)
    fixed = weights_bytes(p) + buffers_bytes(spec)
    if mode == "train":
        fixed += optimizer_bytes(p, optimizer)
        if optimizer == "adamw":  # one fp32 scalar ``step`` per parameter tensor
            fixed += FP32_BYTES * len(sizes)
    return Profile(pareto(r.points), r.marks["forward_end"], fixed)


@dataclass(frozen=True)
class MemoryEstimate:
    """Predicted bytes for one configuration. ``activations_bytes``: what is live at the end of
    the forward pass beyond weights (the input batch, tensors saved for backward, autocast's
    weight copies; in inference, the output). ``attention_matrix_bytes``: one layer's h x n x n
    probabilities for the batch (kept only by the math path). ``peak_bytes``: the largest
    total during the step."""

    spec: ModelSpec
    batch_size: int
    mode: str
    precision: str
    optimizer: str
    attention: str | None
    weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    attention_matrix_bytes: int
    peak_bytes: int

    def as_record(self) -> dict[str, Any]:
        """The ``pred_*`` columns (bytes)."""
        return {
            "pred_weights_bytes": self.weights_bytes,
            "pred_gradients_bytes": self.gradients_bytes,
            "pred_optimizer_bytes": self.optimizer_bytes,
            "pred_activations_bytes": self.activations_bytes,
            "pred_attention_matrix_bytes": self.attention_matrix_bytes,
            "pred_peak_memory_bytes": self.peak_bytes,
        }


def memory_estimate(
    spec: ModelSpec,
    batch_size: int = 1,
    mode: str = "train",
    precision: str = "fp32",
    optimizer: str = "adamw",
    attention: str | None = None,
) -> MemoryEstimate:
    """Predicted memory of one training step (forward, loss, backward, optimizer step; the
    gradients set to None before it) or one no-grad forward, with ``batch_size`` images.

        peak(B) = 4 P + buffers + optimizer state + max over allocations k of (a_k B + c_k)

    ``activations_bytes``: training, what is live at the end of forward and loss beyond weights
    (the input batch and targets, every tensor autograd saved, autocast's weight copies);
    inference, the largest live activation set (the peak less weights and buffers).
    ``attention`` (ViTs) overrides the spec's kernel: ``sdpa`` (fused: saves its output and a
    B h n fp32 log-sum-exp) or ``math`` (saves the B h n^2 probabilities).

    A model the replay does not cover raises SpecError naming ``model`` with the reason
    (:func:`unsupported_reason`).

    Approximations (all bytes are the CPU's):
    - oneDNN's backward-weights reduction scratchpads are left out: for some shapes (k x k
      patch convolutions, 512-channel 3x3 convolutions on 2x2 maps) oneDNN allocates several
      copies of a weight; they depend on the ISA, the thread count and the shape.
    - Kernel choice as ATen's ``use_mkldnn`` with more than one thread: fp32 convolutions use
      oneDNN (input reorder skipped for <= 4 channels) except B = 1 with k <= 3 and
      C H W <= 20480 (im2col); 16-bit convolutions use im2col, as on CPUs without native
      bf16 (AVX2); on any CPU with AVX-512 oneDNN runs them, and 16-bit matmuls, with scratchpads
      of its own (0.2-1.2% of a small ViT's bf16 training peak; none with ONEDNN_MAX_CPU_ISA=AVX2).
    - The CPU flash-attention kernel's per-thread workspace and BatchNorm's per-channel
      temporaries are ignored; allocator rounding and the interpreter are not modelled.
    - Dropout (p > 0) saves CPU dropout's noise in the activation dtype; CUDA saves a 1-byte
      mask. fp16 is modelled like bf16 (GradScaler's few scalars ignored).
    - Python references follow vitbench's ViT and torchvision's ResNet: a module's input lives
      until the module returns.
    - On CUDA add the context, cuDNN/cuBLAS workspaces and the caching allocator's rounding;
      this model was validated on the CPU only.

    Args:
        spec: a spec the memory replay covers (ViT, ResNet, plain CNN).
        batch_size: images per step.
        mode: ``train`` or ``infer``.
        precision: ``fp32``, ``bf16`` or ``fp16`` autocast.
        optimizer: ``adamw``, ``sgd`` or ``sgd-momentum``.
        attention: a ViT's attention path (``sdpa``, ``math``); None: the spec's.

    Returns:
        A :class:`MemoryEstimate`: ``peak_bytes`` and its parts (weights, gradients, optimizer
        state, activations), ``as_record()`` for a row.

    Raises:
        SpecError: a wrong batch size or choice, or a model the replay does not cover.
    """
    check_batch(batch_size)
    check_run(mode, precision, optimizer)
    kernel = resolve_attention(spec, attention)
    _check_supported(spec)

    p = params(spec)
    train = mode == "train"
    profile = _profile(spec, mode, precision, optimizer, kernel, batch_size == 1)
    peak = profile.peak(batch_size)
    a, c = profile.forward_end
    activations = a * batch_size + c if train else peak - profile.fixed
    return MemoryEstimate(
        spec=spec,
        batch_size=batch_size,
        mode=mode,
        precision=precision,
        optimizer=optimizer if train else None,  # type: ignore[arg-type]
        attention=kernel if isinstance(spec, ViTSpec) else None,
        weights_bytes=weights_bytes(p),
        gradients_bytes=gradients_bytes(p) if train else 0,
        optimizer_bytes=optimizer_bytes(p, optimizer) if train else 0,
        activations_bytes=activations,
        attention_matrix_bytes=attention_matrix_bytes(spec, batch_size, precision),
        peak_bytes=peak,
    )


def plan(
    spec: ModelSpec,
    memory_bytes: int,
    mode: str = "train",
    precision: str = "fp32",
    optimizer: str = "adamw",
    attention: str | None = None,
) -> int:
    """The largest batch B >= 1 whose predicted peak is <= ``memory_bytes``; 0 if B = 1 does
    not fit. peak(B) = fixed + max_k (a_k B + c_k), so

        B_max = min over k with a_k > 0 of floor((memory - fixed - c_k) / a_k)

    (exact; every k must also satisfy fixed + c_k <= memory).

    Args:
        spec: a spec the memory replay covers (ViT, ResNet, plain CNN).
        memory_bytes: the budget, bytes.
        mode: ``train`` or ``infer``.
        precision: ``fp32``, ``bf16`` or ``fp16`` autocast.
        optimizer: ``adamw``, ``sgd`` or ``sgd-momentum``.
        attention: a ViT's attention path (``sdpa``, ``math``); None: the spec's.

    Returns:
        The largest batch size that fits, 0 if one image does not.

    Raises:
        SpecError: a wrong budget or choice, or a model the replay does not cover (the reason).
    """
    if isinstance(memory_bytes, bool) or not isinstance(memory_bytes, int) or memory_bytes < 0:
        raise SpecError("memory_bytes", memory_bytes, "must be a non-negative integer")
    check_run(mode, precision, optimizer)
    kernel = resolve_attention(spec, attention)
    _check_supported(spec)
    return largest_batch(
        _profile(spec, mode, precision, optimizer, kernel, False),
        memory_bytes,
        _profile(spec, mode, precision, optimizer, kernel, True),
    )


def largest_batch(profile: Profile, memory_bytes: int, profile_one: Profile | None = None) -> int:
    """The largest B >= 1 with ``profile.peak(B) <= memory_bytes`` (``profile_one``: the profile
    for B = 1 when kernels differ there); 0 if B = 1 does not fit. Exact:

        B_max = min over k with a_k > 0 of floor((memory - fixed - c_k) / a_k)"""
    if (profile_one or profile).peak(1) > memory_bytes:
        return 0
    room = memory_bytes - profile.fixed
    best: int | None = None
    for a, c in profile.points:
        if c > room:
            return 1
        if a > 0:
            limit = (room - c) // a
            best = limit if best is None else min(best, limit)
    return max(best or 1, 1)  # the input batch alone makes some a_k > 0


def spec_of(model: Any) -> Any:
    """A Target's analytic spec (None when it has none); anything else as it is."""
    return model.spec if isinstance(model, Target) else model


def predicted_peak_bytes(model: Any, settings: Any, batch_size: int | None = None) -> int | None:
    """The predicted peak (bytes of live tensors: weights, buffers, optimizer state, gradients,
    activations, temporaries) of one step of ``model`` (a spec or a Target) run as
    ``settings`` (a RunSettings: its mode, precision, optimizer, attention) with ``batch_size``
    images (default ``settings.batch_size``). None when the replay does not cover ``model``
    (see :func:`unsupported_reason`) or the batch is "auto". What a memory cap or the
    machine's RAM is compared with before running; process overhead (interpreter, libraries,
    allocator caching) comes on top."""
    model = spec_of(model)
    batch = settings.batch_size if batch_size is None else batch_size
    if batch == "auto" or model is None or unsupported_reason(model) is not None:
        return None
    return memory_estimate(model, batch, settings.mode, settings.precision, settings.optimizer,
                           settings.attention).peak_bytes


def predicted_max_batch(model: Any, memory_bytes: int, settings: Any) -> int | None:
    """:func:`plan` for a RunSettings: the largest batch whose predicted peak fits
    ``memory_bytes`` (0 if one image does not fit); None when no memory model covers ``model``.
    Where ``--batch-size auto`` starts its search."""
    model = spec_of(model)
    if model is None or unsupported_reason(model) is not None:
        return None
    return plan(model, memory_bytes, settings.mode, settings.precision, settings.optimizer,
                settings.attention)
