"""Arithmetic intensity (FLOP per byte moved) per kind of operation, counted on the meta device.

One forward pass of the model at the measured batch runs on meta tensors (no memory, no compute)
under a ``TorchDispatchMode``. Each aten op is charged the bytes of its distinct tensor inputs
plus its outputs (every op reads its operands from memory and writes its result once: the
unfused roofline model) and its FLOPs: 2 * MACs from ``torch.utils.flop_counter``'s formulas for
matmuls, convolutions and attention, one operation per output element for everything else.
View ops move no data and are skipped. Under bf16 / fp16 autocast the matmul, convolution and
attention operands are charged at 2 bytes per element (autocast casts them); the rest stays fp32.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from vitbench.measure.roofline import bound
from vitbench.models import build_meta

#: kinds of operation reported, in display order
KINDS = ("linear", "conv", "attention", "norm", "elementwise")

_LINEAR = {"mm", "addmm", "linear", "_addmm_activation"}
_CONV = {"convolution", "_convolution", "cudnn_convolution", "mkldnn_convolution", "_slow_conv2d_forward", "convolution_overrideable"}
_ATTENTION = {"bmm", "baddbmm", "_softmax", "softmax", "_safe_softmax"}
_NORM = {"native_layer_norm", "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training", "layer_norm", "batch_norm"}
_FREE = {"detach", "_unsafe_view", "alias", "lift_fresh", "empty", "zeros", "ones", "_to_copy"}


def op_kind(name: str) -> str:
    """The reported kind of an aten op (overload packet name, e.g. 'addmm')."""
    if name in _LINEAR:
        return "linear"
    if name in _CONV:
        return "conv"
    if name in _ATTENTION or "scaled_dot_product" in name or "attention" in name:
        return "attention"
    if name in _NORM:
        return "norm"
    return "elementwise"


@dataclass(frozen=True)
class KindIntensity:
    flops: int
    bytes: int

    @property
    def intensity(self) -> float | None:
        """FLOP per byte."""
        return self.flops / self.bytes if self.bytes else None


def forward_intensity(spec, batch_size: int, precision: str = "fp32", channels_last: bool = False) -> dict[str, KindIntensity]:
    """FLOPs and bytes per op kind for one forward pass of ``spec`` at ``batch_size``."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
    from torch.utils.flop_counter import flop_registry

    half = precision in ("bf16", "fp16")
    flops: dict[str, int] = defaultdict(int)
    moved: dict[str, int] = defaultdict(int)

    def nbytes(t: Any, kind: str) -> int:
        size = 2 if half and kind in ("linear", "conv", "attention") and t.is_floating_point() else t.element_size()
        return t.numel() * size

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            packet = func._overloadpacket
            name = packet.__name__
            if func.is_view or name in _FREE:
                return out
            kind = op_kind(name)
            inputs = {id(t): t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)}
            outputs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
            moved[kind] += sum(nbytes(t, kind) for t in inputs.values()) + sum(nbytes(t, kind) for t in outputs)
            if packet in flop_registry:
                flops[kind] += int(flop_registry[packet](*args, **kwargs, out_val=out))
            else:
                flops[kind] += sum(t.numel() for t in outputs)
            return out

    model = build_meta(spec).eval()
    c, (h, w) = spec.in_chans, spec.img_size
    x = torch.empty(batch_size, c, h, w, device="meta")
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    with torch.no_grad(), Mode():
        model(x)
    return {k: KindIntensity(flops[k], moved[k]) for k in KINDS if moved.get(k)}


def intensity_columns(per_kind: dict[str, KindIntensity], ridge: float | None) -> dict[str, Any]:
    """``arith_intensity`` (whole forward pass) and ``arith_intensity_<kind>`` (FLOP/byte), with
    ``bound`` / ``bound_<kind>`` = 'compute' | 'memory' against the ridge point when known."""
    total_flops = sum(v.flops for v in per_kind.values())
    total_bytes = sum(v.bytes for v in per_kind.values())
    overall = total_flops / total_bytes if total_bytes else None
    out: dict[str, Any] = {"arith_intensity": overall, "ridge_intensity": ridge, "bound": bound(overall, ridge)}
    for kind in KINDS:
        value = per_kind[kind].intensity if kind in per_kind else None
        out[f"arith_intensity_{kind}"] = value
        out[f"bound_{kind}"] = bound(value, ridge)
    return out
