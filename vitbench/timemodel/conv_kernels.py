"""Which kernel a traced convolution runs on a GPU, its (m, k, n) as a product and a convolution
backward's MACs: what the time model needs to know about convolutions beyond their shapes.

PyTorch runs a *depthwise* convolution on CUDA (groups = input channels, output channels a
multiple of them, not transposed) either through cuDNN or through its own kernels
(``aten/src/ATen/native/cuda/DepthwiseConv2d.cu``: one thread an output, a loop over the
window; the weight's gradient reduced per weight element), by ``ConvParams::use_cudnn_depthwise``
(``aten/src/ATen/native/Convolution.cpp``, cuDNN >= 8.2):

    cuDNN   channels-last input, or
            float16 input and weight, 4-D, no dilation, equal strides, >= 32 channels, and
            (``check_cudnn_depthwise_workload_with_filter``) a square 1x1, 3x3 or 5x5 filter,
            width >= 7 and stride 1 (stride 2: batch 1 with a 3x3/5x5 filter or a 1x1 on width <= 28;
            batch <= 16 with a 1x1 filter, >= 128 channels, width <= 7; a 3x3/5x5 filter with >= 512
            channels, or >= 256 channels at width >= 28)
    native  everything else: every bfloat16 and float32 depthwise convolution in NCHW, and
            ConvNeXt's 7x7 ones in any precision

Their speeds differ by an order of magnitude (the native weight gradient is the slowest), so the
trace names the native ones ``conv_depthwise`` (``conv_depthwise_backward``) apart from
``conv_grouped`` (cuDNN's grouped and depthwise kernels). An ungrouped half-precision
convolution on an NCHW input is ``conv_nchw`` (``conv_nchw_backward``): cuDNN's tensor-core
kernels for it rewrite the activations to NHWC and back (:func:`nchw_half`). Newer PyTorch releases may refine the
rule; the one here is the one the recorded measurements (torch 2.11) ran under.
"""

from __future__ import annotations

from math import prod
from typing import Any

#: where each convolution operator keeps (input, weight, stride, dilation, transposed, groups)
#: in its arguments; None: the operator has no such argument (conv2d is never transposed)
_ARGUMENTS = {
    "convolution": (0, 1, 3, 5, 6, 8),
    "_convolution": (0, 1, 3, 5, 6, 8),
    "conv1d": (0, 1, 3, 5, None, 6),
    "conv2d": (0, 1, 3, 5, None, 6),
    "conv3d": (0, 1, 3, 5, None, 6),
    "convolution_backward": (1, 2, 4, 6, 7, 9),
    "mkldnn_convolution": (0, 1, 4, 5, None, 6),
}


def _tensor(value: Any) -> Any:
    import torch

    return value if isinstance(value, torch.Tensor) else None


def _ints(value: Any, default: int = 1) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value):
        return tuple(value) or (default,)
    return (default,)


def native_depthwise(name: str, args: tuple) -> bool:
    """Whether this convolution (forward or backward), run on a CUDA device, runs PyTorch's own
    depthwise kernels rather than cuDNN's (the module docstring's rule). The caller says the
    device: a training step for a GPU is traced on CPU tensors where no GPU is present."""
    import torch

    places = _ARGUMENTS.get(name)
    if places is None or len(args) <= places[5]:
        return False
    x, w = _tensor(args[places[0]]), _tensor(args[places[1]])
    if x is None or w is None:
        return False
    transposed = bool(args[places[4]]) if places[4] is not None else False
    groups = args[places[5]] if isinstance(args[places[5]], int) else 1
    channels = x.shape[1] if x.dim() >= 2 else 0
    if transposed or x.dim() not in (4, 5) or groups <= 1 or channels != groups or w.shape[0] % channels:
        return False
    if x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous():
        return False  # channels-last: always cuDNN
    return not _cudnn_takes(x, w, _ints(args[places[2]]), _ints(args[places[3]]))


def nchw_half(name: str, args: tuple) -> bool:
    """Whether this convolution (forward or backward) is a half-precision (float16, bfloat16) one
    with a spatial filter on an NCHW input: cuDNN's tensor-core kernels for those work in NHWC,
    so a CUDA device rewrites the activations' layout on the way in and out (float32/TF32
    convolutions have NCHW kernels; a 1x1 filter on NCHW is a plain matrix product per image;
    a channels-last input needs no rewrite)."""
    import torch

    places = _ARGUMENTS.get(name)
    x = _tensor(args[places[0]]) if places is not None and len(args) > places[0] else None
    w = _tensor(args[places[1]]) if places is not None and len(args) > places[1] else None
    if x is None or w is None or x.dim() != 4 or x.dtype not in (torch.float16, torch.bfloat16):
        return False
    if w.dim() == 4 and w.shape[2] == 1 and w.shape[3] == 1:
        return False
    return x.is_contiguous() and not x.is_contiguous(memory_format=torch.channels_last)


def conv_groups(name: str, args: tuple) -> int:
    """The ``groups`` argument of a convolution (forward or backward); 1 where it has none."""
    places = _ARGUMENTS.get(name)
    value = args[places[5]] if places is not None and len(args) > places[5] else 1
    return value if isinstance(value, int) and value > 0 else 1


def _cudnn_takes(x: Any, w: Any, stride: tuple[int, ...], dilation: tuple[int, ...]) -> bool:
    """use_cudnn_depthwise for an NCHW depthwise convolution (float16 only)."""
    import torch

    if x.dtype != torch.float16 or w.dtype != torch.float16 or x.dim() != 4 or any(d != 1 for d in dilation):
        return False
    height, width = x.shape[2], x.shape[3]
    if not (len(set(stride)) == 1 or height == 1) or x.shape[1] < 32:
        return False
    step = stride[-1]
    if height == 1 and step == 1:
        return True
    kernel = w.shape[3]
    if w.shape[2] != kernel or kernel not in (1, 3, 5) or width < 7:
        return False
    return step == 1 or (step == 2 and _cudnn_takes_stride_two(x.shape[0], x.shape[1], width, kernel))


def _cudnn_takes_stride_two(batch: int, channels: int, width: int, kernel: int) -> bool:
    """use_cudnn_depthwise's rule for a square 1x1, 3x3 or 5x5 filter at stride 2."""
    if batch == 1:
        return (kernel == 1 and width <= 28) or kernel in (3, 5)
    if kernel == 1:
        return batch <= 16 and channels >= 128 and width <= 7
    return channels >= 512 or (channels >= 256 and width >= 28)


def _shape(args: tuple, i: int) -> tuple[int, ...]:
    value = _tensor(args[i]) if len(args) > i else None
    return tuple(value.shape) if value is not None else ()


def conv_gemm_shape(name: str, args: tuple, out: Any) -> tuple[int, ...]:
    """A convolution as ``groups`` products of (m, k) x (k, out / groups), folded into m:
    (batch x output positions x groups, in_channels / groups x kernel elements, out / groups)."""
    import torch

    x, w = (_shape(args, 0), _shape(args, 1)) if name != "convolution_backward" else (_shape(args, 1), _shape(args, 2))
    out_t = out[0] if isinstance(out, (tuple, list)) else out
    ref = out_t if name != "convolution_backward" and isinstance(out_t, torch.Tensor) else None
    dims = tuple(ref.shape[2:]) if ref is not None else tuple(args[0].shape[2:])
    spatial = prod(dims)
    k = prod(w[1:])  # in_channels / groups x kernel elements
    groups = x[1] // w[1] if w[1] else 1
    return (x[0] * spatial * groups, k, w[0] // groups)


def conv_backward_macs(args: tuple) -> int:
    """MACs of ``aten.convolution_backward(grad_out, input, weight, ..., transposed, ..., groups,
    output_mask)``: each gradient asked for costs what the forward convolution costs,

        forward = N x prod(out spatial) x prod(weight)            (weight: C_out x C_in/groups x kernel)
                  N x prod(in spatial) x prod(weight)              (transposed: C_in x C_out/groups x kernel)
        backward = (output_mask[0] + output_mask[1]) x forward

    (FlopCounterMode's formula counts the weight's gradient as an ungrouped convolution:
    ``groups`` times too many MACs, 768x for a ConvNeXt-T depthwise layer)."""
    grad_out, x, w = _shape(args, 0), _shape(args, 1), _shape(args, 2)
    if not grad_out or not x or not w:
        return 0
    transposed = bool(args[7]) if len(args) > 7 else False
    mask = args[10] if len(args) > 10 else (True, True, True)
    spatial = prod(x[2:]) if transposed else prod(grad_out[2:])
    forward = grad_out[0] * spatial * prod(w)
    return forward * (int(bool(mask[0])) + int(bool(mask[1])))


__all__ = ["conv_backward_macs", "conv_gemm_shape", "conv_groups", "native_depthwise", "nchw_half"]
