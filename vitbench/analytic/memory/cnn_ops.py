"""CNN operators for the memory replay: convolution, BatchNorm, ReLU, max pooling, linear, each
forward and backward, as torchvision's ResNets and the plain CNN run them on the CPU.

Per image, what autograd saves (``w`` the activation width):
    conv       its input (C_in H W w) and, under autocast, the 16-bit weight copy
    batchnorm  its input (C H W w) and fp32 mean and invstd (8 C)
    relu       its output (in place: the input's storage)
    maxpool    its input and int64 indices of the output's size (8 C H' W')
    linear     its input
Backward allocates each input gradient, the weight gradients (kept) and the kernels'
temporaries (oneDNN reorders, im2col columns), then frees the incoming gradient and the saved
tensors.
"""

from __future__ import annotations

from vitbench.analytic.memory.closed_forms import FP32_BYTES, INDEX_BYTES
from vitbench.analytic.memory.replay import Replay, Tensor


def conv_geometry(h: int, w: int, k: int, s: int, p: int) -> tuple[int, int]:
    """Output height and width: floor((h + 2 p - k) / s) + 1."""
    return (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1


class CNNOps:
    """Operators of torchvision's ResNets and the plain CNN, replayed on a ``Replay``.

    Tensor sizes are per image (elements); ``w`` the activation width in bytes. Each forward
    appends its backward work to ``nodes`` (forward order)."""

    def __init__(self, r: Replay, w: int):
        self.r = r
        self.w = w
        self.nodes: list[tuple] = []

    def conv(self, x: Tensor, in_el: int, out_el: int, c_in: int, c_out: int, k: int,
             bias: bool, first: bool, columns: int) -> Tensor:
        """Convolution: saves its input and weight. ``first``: the input is the image (no
        input gradient); ``columns``: im2col size (0 for a 1x1, stride-1 convolution).

        PyTorch picks the kernel (``use_mkldnn`` in ATen's Convolution.cpp, assuming more than
        one thread): fp32 uses oneDNN unless B = 1 and k <= 3 and C H W <= 20480 (then the
        im2col kernel). oneDNN: input reorder (skipped for inputs of <= 4 channels), weight
        reorder, output in its blocked layout, then a plain copy. im2col kernel (also every
        16-bit convolution on CPUs without native bf16): columns are a transient."""
        r, w = self.r, self.w
        count = c_out * c_in * k * k
        wc = r.cast_weight(count, w)
        r.cast_weight(c_out if bias else 0, w)  # cached, not saved
        xin = x
        slow = r.low or (r.batch_one and k <= 3 and in_el <= 20480)
        if slow:
            if r.low and first:
                xin = r.new(in_el * w)  # cast of the fp32 image
            cols = r.new(columns * w) if columns else None
            y = r.new(out_el * w)
            r.drop(cols)
        else:
            reorder = r.new(in_el * w) if c_in > 4 else None
            wr = r.new(0, FP32_BYTES * count)
            blocked = r.new(out_el * w)
            r.drop(wr, reorder)
            y = r.new(out_el * w)
            r.drop(blocked)
        r.end_op()
        r.save(xin, wc)
        if xin is not x:
            r.drop(xin)
        self.nodes.append(("conv", xin, wc, in_el, out_el, c_in, count, bias, c_out, first, columns, slow))
        return y

    def _conv_backward(self, g, xin, wc, in_el, out_el, c_in, count, bias, c_out, first, columns, slow):
        """im2col kernel: grad input by gemm into columns and col2im, grad weight from the
        input's columns. oneDNN: grad input (grad and weight reorders, blocked result, plain
        copy), grad weight (grad and input reorders, blocked result, plain copy)."""
        r, w = self.r, self.w
        gi = None
        if slow:
            if not first:
                cols = r.new(columns * w) if columns else None
                gi = r.new(in_el * w)
                r.drop(cols)
            cols = r.new(columns * w) if columns else None
            r.weight_grad(count, w)
            r.drop(cols)
        else:
            if not first:
                go, wr = r.new(out_el * w), r.new(0, FP32_BYTES * count)
                gb = r.new(in_el * w)
                r.drop(wr, go)
                gi = r.new(in_el * w)
                r.drop(gb)
            go = r.new(out_el * w)
            xr = r.new(in_el * w) if c_in > 4 else None
            gwb = r.new(0, FP32_BYTES * count)
            r.drop(xr, go)
            r.new(0, FP32_BYTES * count)
            r.drop(gwb)
        if bias:
            r.weight_grad(c_out, w)
        r.drop(g)
        r.release(xin, wc)
        r.flush()
        return gi

    def batchnorm(self, x: Tensor, el: int, c: int) -> Tensor:
        """Training BatchNorm saves its input and per-channel fp32 mean and invstd."""
        r = self.r
        y = r.new(el * self.w)
        stats = r.new(0, 2 * FP32_BYTES * c)
        r.save(x, stats)
        r.drop(stats)
        self.nodes.append(("bn", x, stats, el, c))
        return y

    def _bn_backward(self, g, x, stats, el, c):
        """grad input, one input-sized temporary, weight and bias grads (8 C)."""
        r = self.r
        gi = r.new(el * self.w)
        r.transient((el * self.w, 0))
        r.new(0, 2 * FP32_BYTES * c)
        r.drop(g)
        r.release(x, stats)
        return gi

    def relu(self, x: Tensor, el: int, inplace: bool) -> Tensor:
        """ReLU saves its output (in place: the input's storage)."""
        r = self.r
        y = x if inplace else r.new(el * self.w)
        r.save(y)
        if not inplace:
            r.drop(x)
        self.nodes.append(("relu", y, el))
        return y

    def _relu_backward(self, g, y, el):
        r = self.r
        gi = r.new(el * self.w)
        r.drop(g)
        r.release(y)
        return gi

    def maxpool(self, x: Tensor, in_el: int, out_el: int) -> Tensor:
        """Max pooling saves its input and int64 indices of the output's size."""
        r = self.r
        y = r.new(out_el * self.w)
        idx = r.new(out_el * INDEX_BYTES)
        r.save(x, idx)
        r.drop(idx, x)
        self.nodes.append(("maxpool", x, idx, in_el))
        return y

    def _maxpool_backward(self, g, x, idx, in_el):
        r = self.r
        gi = r.new(in_el * self.w)
        r.drop(g)
        r.release(x, idx)
        return gi

    def linear(self, x: Tensor, fan_in: int, fan_out: int) -> Tensor:
        """y = x W^T + b saves its input (and, under autocast, the 16-bit weight copy)."""
        r, w = self.r, self.w
        wc = r.cast_weight(fan_in * fan_out, w)
        r.cast_weight(fan_out, w)
        y = r.new(fan_out * w)
        r.end_op()
        r.save(x, wc)
        self.nodes.append(("linear", x, wc, fan_in, fan_out))
        return y

    def _linear_backward(self, g, x, wc, fan_in, fan_out):
        r, w = self.r, self.w
        gi = r.new(fan_in * w)
        r.weight_grad(fan_in * fan_out, w)
        r.weight_grad(fan_out, w)
        r.drop(g)
        r.release(x, wc)
        r.flush()
        return gi

    def backward_node(self, node: tuple, g: Tensor) -> Tensor | None:
        """Run one recorded node's backward with incoming gradient ``g``."""
        kind, *args = node
        return getattr(self, f"_{kind}_backward")(g, *args)

    def finish(self, logits: Tensor, classes: int, train: bool) -> None:
        """Loss (cross entropy: log_softmax saved in fp32, the loss and total_weight) and
        leaving autocast; in inference the logits go."""
        r = self.r
        if train:
            self.logp = r.new(classes * FP32_BYTES)
            r.save(self.logp)
            r.drop(logits)
            self.loss = r.new(0, 2 * FP32_BYTES)
        r.leave_autocast()
        r.mark("forward_end")
        if not train:
            r.drop(logits)

    def loss_backward(self, classes: int) -> Tensor:
        """d loss / d logits (K fp32 per image); the loss's saved tensors go."""
        r = self.r
        g = r.new(classes * FP32_BYTES)
        r.release(self.logp)
        r.drop(self.loss)
        return g
