"""Transformer operators for the memory replay: linear, dropout and LayerNorm, forward and
backward, as PyTorch runs them on the CPU (under autocast, 16-bit weight casts cached).

Per row, what autograd saves (``w`` activation width, ``rw`` the residual stream's):
    linear     its input (fan_in w; under autocast the 16-bit cast of an fp32 input) and,
               when the input needs a gradient, the weight (its 16-bit cast under autocast)
    dropout    CPU dropout's noise in the input dtype (elements w)
    layer_norm its input and fp32 mean and rstd (8 bytes)
"""

from __future__ import annotations

from vitbench.analytic.memory.closed_forms import FP32_BYTES
from vitbench.analytic.memory.replay import Replay, Tensor


class ViTOps:
    """Operators on a ``Replay``: ``w`` the activation width, ``rw`` the residual stream's
    (LayerNorm outputs), ``d`` the width LayerNorm normalises."""

    def __init__(self, r: Replay, w: int, rw: int, d: int):
        self.r, self.w, self.rw, self.d = r, w, rw, d
        self.low = r.low

    def linear(self, x: Tensor, x_fp32: bool, fan_in: int, fan_out: int, rows: int,
               bias: bool = True, input_grad: bool = True):
        """y = x W^T + b saves its input (for dW) and, when x needs a gradient, its weight;
        under autocast the 16-bit casts of W and of an fp32 input are what is saved (the cast
        bias only sits in autocast's cache). Returns (y, saved input, saved weight copy)."""
        r, w = self.r, self.w
        wc = r.cast_weight(fan_in * fan_out, w)
        r.cast_weight(fan_out if bias else 0, w)
        xin = r.new(rows * fan_in * w) if (self.low and x_fp32) else x
        y = r.new(rows * fan_out * w)
        r.end_op()
        r.save(xin, wc if input_grad else None)
        if not input_grad:
            wc = None
        if xin is not x:
            r.drop(xin)
        return y, xin, wc

    def linear_backward(self, g: Tensor, g_shared: bool, xin: Tensor, wc: Tensor | None,
                        fan_in: int, fan_out: int, rows: int, bias: bool = True,
                        x_fp32: bool = False) -> Tensor:
        """grad input (rows x fan_in), grad weight and bias; frees the incoming gradient unless
        a residual add shares it, and what the forward saved."""
        r, w = self.r, self.w
        gi = r.new(rows * fan_in * w)
        r.weight_grad(fan_in * fan_out, w)
        if bias:
            r.weight_grad(fan_out, w)
        if not g_shared:
            r.drop(g)
        r.release(xin, wc)
        if self.low and x_fp32:  # ToCopyBackward of the input's cast
            g32 = r.new(rows * fan_in * FP32_BYTES)
            r.drop(gi)
            gi = g32
        r.flush()
        return gi

    def dropout(self, x: Tensor, elements: int, width: int):
        """CPU dropout: noise = bernoulli(1 - p) / (1 - p) in the input dtype, y = x * noise;
        autograd saves the noise (CUDA's fused kernel would save a 1-byte mask)."""
        r = self.r
        noise = r.new(elements * width)
        y = r.new(elements * width)
        r.save(noise)
        r.drop(noise, x)
        return y, noise

    def dropout_backward(self, g: Tensor, noise: Tensor, elements: int, width: int) -> Tensor:
        """grad input = g * noise."""
        gd = self.r.new(elements * width)
        self.r.drop(g)
        self.r.release(noise)
        return gd

    def layer_norm(self, x: Tensor, rows: int):
        """LayerNorm saves its input and the per-row mean and rstd (fp32)."""
        r = self.r
        y = r.new(rows * self.d * self.rw)
        stats = r.new(rows * 2 * FP32_BYTES)
        r.save(x, stats)
        r.drop(stats)
        return y, stats

    def layer_norm_backward(self, g: Tensor, x: Tensor, stats: Tensor, rows: int) -> Tensor:
        """grad input, weight and bias grads; frees g and what the forward saved."""
        r = self.r
        gi = r.new(rows * self.d * self.rw)
        r.new(0, FP32_BYTES * 2 * self.d)  # weight and bias grads
        r.drop(g)
        r.release(x, stats)
        return gi
