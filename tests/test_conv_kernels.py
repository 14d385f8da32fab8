"""Which kernel a convolution runs on a CUDA device (vitbench.timemodel.conv_kernels), checked
case by case against PyTorch's rule in aten/src/ATen/native/Convolution.cpp (use_cudnn_depthwise
and check_cudnn_depthwise_workload_with_filter, cuDNN >= 8.2), on meta tensors, and the kernel
names a GPU trace carries for them."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import torch

from vitbench.timemodel.conv_kernels import conv_groups, native_depthwise, nchw_half


def conv_args(batch, channels, size, kernel, stride=1, dtype=torch.float16, groups=None, out=None,
              channels_last=False, dilation=1):
    """aten.convolution's arguments: (input, weight, bias, stride, padding, dilation, transposed,
    output_padding, groups)."""
    groups = channels if groups is None else groups
    out = channels if out is None else out
    x = torch.empty(batch, channels, size, size, dtype=dtype, device="meta")
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    w = torch.empty(out, channels // groups, kernel, kernel, dtype=dtype, device="meta")
    return (x, w, None, [stride, stride], [kernel // 2] * 2, [dilation, dilation], False, [0, 0], groups)


@pytest.mark.parametrize("case, native", [
    # float16, 3x3 and 5x5 filters at stride 1, >= 32 channels, width >= 7: cuDNN
    (dict(batch=64, channels=96, size=56, kernel=3), False),
    (dict(batch=64, channels=96, size=56, kernel=5), False),
    # ConvNeXt's 7x7 filter: only 1/3/5 go to cuDNN
    (dict(batch=64, channels=96, size=56, kernel=7), True),
    # bfloat16 and float32: only float16 goes to cuDNN (in NCHW)
    (dict(batch=64, channels=96, size=56, kernel=3, dtype=torch.bfloat16), True),
    (dict(batch=64, channels=96, size=56, kernel=3, dtype=torch.float32), True),
    # fewer than 32 channels, or a width under 7
    (dict(batch=64, channels=16, size=56, kernel=3), True),
    (dict(batch=64, channels=96, size=6, kernel=3), True),
    # stride 2, batch > 1: a 3x3 needs >= 512 channels, or >= 256 at width >= 28
    (dict(batch=64, channels=240, size=28, kernel=3, stride=2), True),
    (dict(batch=64, channels=256, size=28, kernel=3, stride=2), False),
    (dict(batch=64, channels=512, size=14, kernel=3, stride=2), False),
    # stride 2 at batch 1: any 3x3 or 5x5
    (dict(batch=1, channels=64, size=28, kernel=3, stride=2), False),
    # dilated: never cuDNN in NCHW
    (dict(batch=64, channels=96, size=56, kernel=3, dilation=2), True),
    # channels-last input: always cuDNN, whatever the precision or filter
    (dict(batch=64, channels=96, size=56, kernel=7, dtype=torch.bfloat16, channels_last=True), False),
])
def test_depthwise_backend(case, native):
    assert native_depthwise("convolution", conv_args(**case)) is native


def test_not_depthwise_is_never_native():
    # grouped but not depthwise (ResNeXt's 32 groups): cuDNN's grouped kernels
    assert not native_depthwise("convolution", conv_args(64, 128, 28, 3, groups=32))
    # ungrouped
    assert not native_depthwise("convolution", conv_args(64, 128, 28, 3, groups=1, dtype=torch.bfloat16))


def test_backward_reads_its_input_and_weight():
    # convolution_backward(grad_out, input, weight, bias_sizes, stride, padding, dilation, transposed,
    #                      output_padding, groups, output_mask)
    x, w, _, stride, padding, dilation, transposed, output_padding, groups = conv_args(
        64, 96, 56, 7, dtype=torch.bfloat16)
    grad = torch.empty_like(x)
    args = (grad, x, w, [96], stride, padding, dilation, transposed, output_padding, groups, [True, True, False])
    assert native_depthwise("convolution_backward", args)
    assert conv_groups("convolution_backward", args) == 96


@pytest.mark.parametrize("case, rewritten", [
    (dict(batch=8, channels=64, size=28, kernel=3, groups=1, dtype=torch.bfloat16), True),
    (dict(batch=8, channels=64, size=28, kernel=3, groups=1, dtype=torch.float16), True),
    # float32 (TF32) convolutions have NCHW kernels
    (dict(batch=8, channels=64, size=28, kernel=3, groups=1, dtype=torch.float32), False),
    # a 1x1 filter on NCHW is a matrix product per image
    (dict(batch=8, channels=64, size=28, kernel=1, groups=1, dtype=torch.bfloat16), False),
    # already channels-last
    (dict(batch=8, channels=64, size=28, kernel=3, groups=1, dtype=torch.bfloat16, channels_last=True), False),
])
def test_nchw_half(case, rewritten):
    assert nchw_half("convolution", conv_args(**case)) is rewritten


def _kernels(net: Any, mode: str, device_type: str, channels_last: bool = False) -> Counter:
    from vitbench.models.references import resolve
    from vitbench.timemodel.trace_cache import cached_trace

    target = resolve(net, input_size=(3, 32, 32))
    return Counter(op.kernel for op in cached_trace(target, 2, mode, "bf16", "sgd", device_type, use_cache=False,
                                                    channels_last=channels_last))


def _mobile_block() -> Any:
    """EfficientNet's pattern in small: a 3x3 stem, two depthwise 3x3 convolutions (32 and 64
    channels), 1x1 convolutions between them."""
    from torch import nn

    return nn.Sequential(nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.SiLU(),
                         nn.Conv2d(32, 32, 3, padding=1, groups=32), nn.Conv2d(32, 64, 1),
                         nn.Conv2d(64, 64, 3, padding=1, groups=64), nn.Conv2d(64, 16, 1))


def test_gpu_trace_names_the_kernels():
    """A bfloat16 step traced for a GPU: its depthwise convolutions run PyTorch's own kernels
    (forward and backward: use_cudnn_depthwise takes only float16), its 3x3 stem rewrites its
    layout (NCHW, half precision, a spatial filter), its 1x1 convolutions do not; channels-last
    sends every depthwise one to cuDNN and rewrites nothing; a CPU trace keeps the plain names.
    (timm's EfficientNet-B0, traced the same way, has 16 depthwise and 64 other convolutions
    besides its stem: -m slow.)"""
    gpu = _kernels(_mobile_block(), "train", "cuda")
    assert gpu["conv_depthwise"] == gpu["conv_depthwise_backward"] == 2
    assert gpu["conv_nchw"] == 1 and gpu["conv"] == 2
    for mode in ("infer", "train"):
        last = _kernels(_mobile_block(), mode, "cuda", channels_last=True)
        assert last["conv_grouped"] == 2 and last["conv_depthwise"] == 0 and last["conv_nchw"] == 0
    cpu = _kernels(_mobile_block(), "infer", "cpu")
    assert cpu["conv_grouped"] == 2 and cpu["conv"] == 3


@pytest.mark.slow
def test_efficientnet_b0_traced_for_a_gpu_names_its_kernels():
    from vitbench.models.references import resolve
    from vitbench.timemodel.trace_cache import cached_trace

    target = resolve("timm:efficientnet_b0")
    gpu = Counter(op.kernel for op in cached_trace(target, 2, "train", "bf16", "sgd", "cuda", use_cache=False))
    assert gpu["conv_depthwise"] == gpu["conv_depthwise_backward"] == 16
    assert gpu["conv_nchw"] == 1 and gpu["conv"] == 65 - 1
    cpu = Counter(op.kernel for op in cached_trace(target, 2, "infer", "bf16", "sgd", "cpu", use_cache=False))
    assert cpu["conv_grouped"] == 16 and cpu["conv"] == 65


@pytest.mark.parametrize("batch, channels, width, takes", [
    (16, 128, 7, True), (17, 128, 7, False), (16, 127, 7, False), (16, 128, 8, False), (2, 1024, 1, True)])
def test_a_stride_two_pointwise_depthwise_filter_goes_to_cudnn_at_the_edges_of_pytorchs_rule(batch, channels, width, takes):
    """PyTorch's use_cudnn_depthwise for a 1x1 filter at stride 2 and a batch above 1: batch at
    most 16, at least 128 channels, a map at most 7 wide; each edge on both sides."""
    from vitbench.timemodel.conv_kernels import _cudnn_takes_stride_two

    assert _cudnn_takes_stride_two(batch, channels, width, kernel=1) is takes



def test_a_depthwise_backward_is_judged_on_its_input_not_its_gradient():
    """convolution_backward's arguments start with the output's gradient: a depthwise layer that
    doubles its channels (32 in, 64 out, 32 groups) is still PyTorch's depthwise kernel."""
    x, w = torch.empty(2, 32, 56, 56, device="meta"), torch.empty(64, 1, 3, 3, device="meta")
    gradient = torch.empty(2, 64, 56, 56, device="meta")
    assert native_depthwise("convolution", (x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 32))
    assert native_depthwise("convolution_backward",
                            (gradient, x, w, [64], [1, 1], [1, 1], [1, 1], False, [0, 0], 32, [True, True, True]))


def test_conv2d_has_no_transposed_argument_and_groups_default_to_one():
    x, w = torch.empty(2, 32, 56, 56, device="meta"), torch.empty(32, 1, 3, 3, device="meta")
    assert native_depthwise("conv2d", (x, w, None, [1, 1], [1, 1], [1, 1], 32))  # never transposed
    assert conv_groups("conv2d", (x, w, None, [1, 1], [1, 1], [1, 1], 32)) == 32
    assert conv_groups("conv2d", (x, w)) == 1 and conv_groups("mm", (x, w)) == 1
    assert conv_groups("conv2d", (x, w, None, [1, 1], [1, 1], [1, 1], 0)) == 1  # no group count: one group
