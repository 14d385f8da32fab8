"""Memory replay of one step of torchvision's ResNet (or vitbench's GenericResNet built from
its blocks) and of the slides' plain CNN, on the operators of :mod:`.cnn_ops`.

Python references follow the modules: a module's input stays referenced (by
``nn.Module.__call__``'s arguments) until it returns, so the input of every ResNet stage lives
through the stage, and in GenericResNet, whose stages sit in one more ``nn.Sequential``, the
stem's output lives through all stages.
"""

from __future__ import annotations

from vitbench.analytic.cnn import cnn_layers
from vitbench.analytic.memory.closed_forms import FP32_BYTES, INDEX_BYTES
from vitbench.analytic.memory.cnn_ops import CNNOps, conv_geometry
from vitbench.analytic.memory.replay import Replay, Tensor
from vitbench.specs import PlainCNNSpec, ResNetSpec


def cnn_param_sizes(spec: ResNetSpec | PlainCNNSpec) -> list[int]:
    """Parameter tensors in ``model.parameters()`` order (sizes in values)."""
    if isinstance(spec, PlainCNNSpec):
        sizes: list[int] = []
        c = spec.in_chans
        for channels in spec.stages:
            for co in channels:
                sizes += [co * c * 9, co]
                c = co
            if spec.batchnorm:
                sizes += [c, c]
        features = spec.flat_features
        for out_f in (*spec.fc_dims, spec.num_classes):
            sizes += [features * out_f, out_f]
            features = out_f
        return sizes

    sizes = []
    for layer in cnn_layers(spec):
        if layer.op == "batchnorm":
            sizes += [layer.params // 2] * 2
        elif layer.op == "linear":
            sizes += [layer.params - layer.out_elements, layer.out_elements]
        elif layer.params:
            sizes.append(layer.params)
    return sizes


def _inputs(r: Replay, c: int, h: int, w: int) -> Tensor:
    """The fp32 batch (C H W 4 per image) and, in training, the int64 targets: both held by
    the caller for the whole step."""
    image = r.new(c * h * w * FP32_BYTES)
    if r.grad:
        r.new(INDEX_BYTES)
    return image


def resnet_step(spec: ResNetSpec, r: Replay, w: int) -> None:
    """torchvision's ResNet (or GenericResNet from its blocks): stem, blocks, pool, fc; in
    training, loss and backward."""
    net = CNNOps(r, w)
    x, (c, h, wd) = _resnet_stem(spec, net)
    stem_out = x
    if not spec.is_torchvision:
        stem_out.refs += 1
    structure: list[tuple[int, int, int]] = []  # per block: node indices (start, main end, end)
    for stage, (blocks, width) in enumerate(zip(spec.layers, spec.widths)):
        stage_in = x
        stage_in.refs += 1
        for b in range(blocks):
            stride = 2 if stage > 0 and b == 0 else 1
            x, (c, h, wd) = _resnet_block(spec, net, x, (c, h, wd), width, stride, structure)
        r.drop(stage_in)
    if not spec.is_torchvision:
        r.drop(stem_out)
    # head: adaptive average pool (saves its input), flatten (a view), fc
    pooled = r.new(c * w)
    r.save(x)
    r.drop(x)
    logits = net.linear(pooled, c, spec.num_classes)
    r.drop(pooled)
    net.finish(logits, spec.num_classes, r.grad)
    if r.grad:
        _resnet_backward(spec, net, x, c * h * wd, structure)


def _resnet_stem(spec: ResNetSpec, net: CNNOps) -> tuple[Tensor, tuple[int, int, int]]:
    """conv (7x7/2 imagenet, 3x3/1 cifar), BatchNorm, ReLU, (imagenet) 3x3/2 max pool."""
    r = net.r
    c, (h, wd) = spec.in_chans, spec.img_size
    image = _inputs(r, c, h, wd)
    k, s, p = (7, 2, 3) if spec.stem == "imagenet" else (3, 1, 1)
    oh, ow = conv_geometry(h, wd, k, s, p)
    out_el = spec.stem_width * oh * ow
    x = net.conv(image, c * h * wd, out_el, c, spec.stem_width, k, False, True, c * k * k * oh * ow)
    y = net.batchnorm(x, out_el, spec.stem_width)
    r.drop(x)
    x = net.relu(y, out_el, inplace=True)
    c, h, wd = spec.stem_width, oh, ow
    if spec.stem == "imagenet":
        oh, ow = conv_geometry(h, wd, 3, 2, 1)
        x = net.maxpool(x, c * h * wd, c * oh * ow)
        h, wd = oh, ow
    return x, (c, h, wd)


def _resnet_block(spec: ResNetSpec, net: CNNOps, x: Tensor, shape: tuple[int, int, int],
                  width: int, stride: int, structure: list) -> tuple[Tensor, tuple[int, int, int]]:
    """Basic (3x3, 3x3) or bottleneck (1x1, 3x3, 1x1) block: conv-BN(-ReLU) per layer, the
    downsample (1x1 conv + BN) when the shape changes, ``out += identity`` in place, ReLU.
    Appends the block's node indices to ``structure``."""
    r = net.r
    c, h, wd = shape
    out_c = width * spec.expansion
    start = len(net.nodes)
    if spec.block == "basic":
        convs = [(width, 3, stride, 1), (out_c, 3, 1, 1)]
    else:
        convs = [(width, 1, 1, 0), (width, 3, stride, 1), (out_c, 1, 1, 0)]
    out = x
    cc, hh, ww = c, h, wd
    for i, (co, kk, ss, pp) in enumerate(convs):
        oh, ow = conv_geometry(hh, ww, kk, ss, pp)
        el_in, el = cc * hh * ww, co * oh * ow
        columns = 0 if (kk == 1 and ss == 1) else cc * kk * kk * oh * ow
        conv_out = net.conv(out, el_in, el, cc, co, kk, False, False, columns)
        if out is not x:
            r.drop(out)
        bn_out = net.batchnorm(conv_out, el, co)
        r.drop(conv_out)
        out = net.relu(bn_out, el, inplace=True) if i < len(convs) - 1 else bn_out
        cc, hh, ww = co, oh, ow
    main_end = len(net.nodes)
    identity = None
    if stride != 1 or c != out_c:
        oh, ow = conv_geometry(h, wd, 1, stride, 0)
        el = out_c * oh * ow
        ds = net.conv(x, c * h * wd, el, c, out_c, 1, False, False, c * oh * ow if stride != 1 else 0)
        identity = net.batchnorm(ds, el, out_c)
        r.drop(ds)
    r.drop(identity)  # out += identity (in place), nothing saved
    out = net.relu(out, cc * hh * ww, inplace=True)
    r.drop(x)
    structure.append((start, main_end, len(net.nodes)))
    return out, (cc, hh, ww)


def _resnet_backward(spec: ResNetSpec, net: CNNOps, pool_in: Tensor, pool_el: int,
                     structure: list[tuple[int, int, int]]) -> None:
    """Loss, fc, average pool, the blocks in reverse (each block's final ReLU first; its
    gradient is shared by the main and downsample paths and accumulated in place), the stem."""
    r, w = net.r, net.w
    g = net.loss_backward(spec.num_classes)
    g = net.backward_node(net.nodes.pop(), g)  # fc
    gi = r.new(pool_el * w)  # AdaptiveAvgPool backward
    r.drop(g)
    r.release(pool_in)
    g = gi
    for start, main_end, end in reversed(structure):
        g = _block_backward(net, g, start, main_end, end)
        del net.nodes[start:end]
    for node in reversed(net.nodes):
        g = net.backward_node(node, g)
    r.drop(g)  # the caller still holds the batch during the optimizer step
    r.mark("backward_end")


def _block_backward(net: CNNOps, g: Tensor, start: int, main_end: int, end: int) -> Tensor:
    """One residual block's backward; returns the gradient of its input."""
    r = net.r
    nodes = net.nodes[start:end]
    g = net.backward_node(nodes[-1], g)  # gradient of out += identity, shared by both paths
    g.refs += 1
    gx_ds = None
    if end - 1 > main_end:  # downsample path runs first (created last)
        gd = net.backward_node(nodes[main_end - start + 1], g)  # its BatchNorm
        gx_ds = net.backward_node(nodes[main_end - start], gd)  # its convolution
    gm = g
    for node in reversed(nodes[: main_end - start]):
        gm = net.backward_node(node, gm)
    r.drop(gm)  # the main path's input gradient is accumulated in place
    return gx_ds if gx_ds is not None else g  # into the downsample's; else the identity's


def plain_cnn_step(spec: PlainCNNSpec, r: Replay, w: int) -> None:
    """The slides' CNN: [conv + ReLU] x k, max pool, BatchNorm per stage; flatten; FC + ReLU."""
    net = CNNOps(r, w)
    c, (h, wd) = spec.in_chans, spec.img_size
    x = _inputs(r, c, h, wd)
    first = True
    for channels in spec.stages:
        for co in channels:
            el = co * h * wd
            y = net.conv(x, c * h * wd, el, c, co, 3, True, first, c * 9 * h * wd)
            if not first:
                r.drop(x)
            first = False
            x = net.relu(y, el, inplace=False)
            c = co
        oh, ow = h // 2, wd // 2
        x = net.maxpool(x, c * h * wd, c * oh * ow)
        h, wd = oh, ow
        if spec.batchnorm:
            y = net.batchnorm(x, c * h * wd, c)
            r.drop(x)
            x = y
    features = spec.flat_features
    for out_f in spec.fc_dims:
        y = net.linear(x, features, out_f)
        r.drop(x)
        x = net.relu(y, out_f, inplace=False)
        features = out_f
    logits = net.linear(x, features, spec.num_classes)
    r.drop(x)
    net.finish(logits, spec.num_classes, r.grad)
    if not r.grad:
        return
    g = net.loss_backward(spec.num_classes)
    for node in reversed(net.nodes):
        g = net.backward_node(node, g)
    r.drop(g)  # the caller still holds the batch during the optimizer step
    r.mark("backward_end")
