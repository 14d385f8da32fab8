"""Closed-form parameter and MAC counts of ResNets and plain CNNs (pure Python).

A convolution of C_in -> C_out channels, k x k kernel, stride s, padding p on an H x W input:
    H_out = floor((H + 2p - k) / s) + 1   (likewise W_out)
    params = C_out * C_in * k^2 (+ C_out bias)
    MACs   = H_out * W_out * C_out * C_in * k^2
A linear layer F_in -> F_out: params = F_in F_out + F_out, MACs = F_in F_out.
BatchNorm over C channels: 2C parameters (running statistics are buffers), no MACs.
"""

from __future__ import annotations

from dataclasses import dataclass

from vitbench.specs import PlainCNNSpec, ResNetSpec


@dataclass(frozen=True)
class Layer:
    """One weight layer or element-wise operation, in execution order."""

    component: str
    op: str  # conv | linear | batchnorm | relu | add | maxpool | avgpool
    params: int
    macs: int
    out_elements: int


def conv_out(extent: int, kernel: int, stride: int, padding: int) -> int:
    """H_out = floor((H + 2p - k) / s) + 1."""
    return (extent + 2 * padding - kernel) // stride + 1


class _Tracker:
    """Walks a network, recording layers while tracking the feature-map shape."""

    def __init__(self, channels: int, height: int, width: int):
        self.c, self.h, self.w = channels, height, width
        self.layers: list[Layer] = []

    def conv(self, component: str, out_c: int, k: int, s: int, p: int, bias: bool) -> None:
        h, w = conv_out(self.h, k, s, p), conv_out(self.w, k, s, p)
        weights = out_c * self.c * k * k
        self.layers.append(
            Layer(component, "conv", weights + (out_c if bias else 0), h * w * weights, out_c * h * w)
        )
        self.c, self.h, self.w = out_c, h, w

    def elementwise(self, component: str, op: str, params: int = 0) -> None:
        self.layers.append(Layer(component, op, params, 0, self.c * self.h * self.w))

    def batchnorm(self, component: str) -> None:
        self.elementwise(component, "batchnorm", 2 * self.c)

    def pool(self, component: str, op: str, k: int, s: int, p: int) -> None:
        self.h, self.w = conv_out(self.h, k, s, p), conv_out(self.w, k, s, p)
        self.elementwise(component, op)

    def linear(self, component: str, in_f: int, out_f: int) -> None:
        self.layers.append(Layer(component, "linear", in_f * out_f + out_f, in_f * out_f, out_f))


def resnet_layers(spec: ResNetSpec) -> list[Layer]:
    """Layers of a ResNet in order; components ``stem``, ``stage1``..``stageN``, ``classifier``."""
    t = _Tracker(spec.in_chans, *spec.img_size)
    if spec.stem == "imagenet":
        t.conv("stem", spec.stem_width, 7, 2, 3, bias=False)
    else:
        t.conv("stem", spec.stem_width, 3, 1, 1, bias=False)
    t.batchnorm("stem")
    t.elementwise("stem", "relu")
    if spec.stem == "imagenet":
        t.pool("stem", "maxpool", 3, 2, 1)
    for index, (blocks, width) in enumerate(zip(spec.layers, spec.widths)):
        component = f"stage{index + 1}"
        for block in range(blocks):
            stride = 2 if index > 0 and block == 0 else 1
            in_c, in_h, in_w = t.c, t.h, t.w
            out_c = width * spec.expansion
            if spec.block == "basic":
                t.conv(component, width, 3, stride, 1, bias=False)
                t.batchnorm(component)
                t.elementwise(component, "relu")
                t.conv(component, width, 3, 1, 1, bias=False)
                t.batchnorm(component)
            else:
                t.conv(component, width, 1, 1, 0, bias=False)
                t.batchnorm(component)
                t.elementwise(component, "relu")
                t.conv(component, width, 3, stride, 1, bias=False)
                t.batchnorm(component)
                t.elementwise(component, "relu")
                t.conv(component, out_c, 1, 1, 0, bias=False)
                t.batchnorm(component)
            if stride != 1 or in_c != out_c:
                main = (t.c, t.h, t.w)
                t.c, t.h, t.w = in_c, in_h, in_w
                t.conv(component, out_c, 1, stride, 0, bias=False)
                t.batchnorm(component)
                t.c, t.h, t.w = main
            t.elementwise(component, "add")
            t.elementwise(component, "relu")
    t.h, t.w = 1, 1
    t.elementwise("classifier", "avgpool")
    t.linear("classifier", spec.widths[-1] * spec.expansion, spec.num_classes)
    return t.layers


def plain_cnn_layers(spec: PlainCNNSpec) -> list[Layer]:
    """Layers of the plain CNN; components ``stage1``..``stageN`` and ``classifier``."""
    t = _Tracker(spec.in_chans, *spec.img_size)
    for index, channels in enumerate(spec.stages):
        component = f"stage{index + 1}"
        for out_c in channels:
            t.conv(component, out_c, 3, 1, 1, bias=True)
            t.elementwise(component, "relu")
        t.pool(component, "maxpool", 2, 2, 0)
        if spec.batchnorm:
            t.batchnorm(component)
    features = spec.flat_features
    for out_f in spec.fc_dims:
        t.linear("classifier", features, out_f)
        t.c, t.h, t.w = out_f, 1, 1
        t.elementwise("classifier", "relu")
        features = out_f
    t.linear("classifier", features, spec.num_classes)
    return t.layers


def cnn_layers(spec: ResNetSpec | PlainCNNSpec) -> list[Layer]:
    return resnet_layers(spec) if isinstance(spec, ResNetSpec) else plain_cnn_layers(spec)


def params(spec: ResNetSpec | PlainCNNSpec) -> int:
    """Sum of every layer's parameters."""
    return sum(layer.params for layer in cnn_layers(spec))


def macs_by_component(spec: ResNetSpec | PlainCNNSpec, batch_size: int = 1) -> dict[str, int]:
    """B * sum of convolution and linear MACs, grouped by component."""
    out: dict[str, int] = {}
    for layer in cnn_layers(spec):
        if layer.macs or layer.op in ("conv", "linear"):
            out[layer.component] = out.get(layer.component, 0) + batch_size * layer.macs
    return out


def elementwise_by_kind(spec: ResNetSpec | PlainCNNSpec, batch_size: int = 1) -> dict[str, int]:
    """B * output elements of each element-wise operation kind (batchnorm, relu, add, pools)."""
    out: dict[str, int] = {}
    for layer in cnn_layers(spec):
        if layer.op not in ("conv", "linear"):
            out[layer.op] = out.get(layer.op, 0) + batch_size * layer.out_elements
    return out
