"""Analytic memory model: weights, gradients, optimizer state, activations saved for backward,
attention matrices, peak training and inference memory. Pure Python, no torch import.

Notation as in :mod:`vitbench.analytic.vit` (B batch, n tokens, d width, h heads, m MLP width,
P parameters); ``w`` is the bytes of one activation value: 4 in fp32, 2 under bf16/fp16
autocast, where matmuls, convolutions, attention, GELU, dropout and BatchNorm outputs are
16-bit, while weights, gradients, optimizer state, LayerNorm outputs and statistics, the loss and
the ViT residual stream (fp32 once an fp32 CLS token or position table is added to it) stay fp32.

Closed forms (exact):
    weights     = 4 P                    (fp32 master weights, at every precision)
    gradients   = 4 P                    (training)
    optimizer   = 0 | 4 P | 8 P          (sgd | sgd-momentum | adamw: exp_avg, exp_avg_sq)
    attention matrix, one layer = B h n^2 w

Activations and peaks come from a replay of one step at the granularity of PyTorch operators:
what each operator allocates, what autograd saves for backward, when Python drops a reference,
what each backward node allocates (input gradients, weight gradients, oneDNN reorder buffers)
and frees (its saved tensors, the incoming gradient), and the optimizer's temporaries. Every
allocation is a candidate for the peak and is affine in the batch, ``a_k B + c_k``, so

    peak(B) = 4 P + buffers + optimizer state (+ AdamW step counters) + max_k (a_k B + c_k)

a maximum of affine functions: convex and increasing in B, which lets :func:`plan` solve for
the largest batch exactly. (B = 1 gets its own replay: PyTorch picks some CPU convolution
kernels differently for a single image.) The replay follows PyTorch 2.x on the CPU: oneDNN
convolutions, the CPU flash-attention kernel, CPU dropout, the single-tensor optimizers; it was
checked against what autograd saves and against the profiler's allocator events
(tests/test_memory_model.py; approximations in :func:`memory_estimate`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from vitbench.errors import SpecError
from vitbench.specs import ModelSpec, PlainCNNSpec, ResNetSpec, ViTSpec

MODES = ("train", "infer")
PRECISIONS = ("fp32", "bf16", "fp16")
OPTIMIZERS = ("adamw", "sgd", "sgd-momentum")
ATTENTIONS = ("sdpa", "math")

FP32_BYTES = 4
INDEX_BYTES = 8  # int64: max-pool indices, class targets
#: fp32 state buffers per parameter value
OPTIMIZER_BUFFERS = {"sgd": 0, "sgd-momentum": 1, "adamw": 2}


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise SpecError(name, value, f"must be one of {', '.join(choices)}")


def _check_batch(batch_size: Any) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise SpecError("batch_size", batch_size, "must be a positive integer")


# --- closed forms -------------------------------------------------------------------------------
def value_bytes(precision: str = "fp32") -> int:
    """w = 4 (fp32) or 2 (bf16, fp16 autocast): bytes of one activation value."""
    _check_choice("precision", precision, PRECISIONS)
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
    _check_choice("optimizer", optimizer, OPTIMIZERS)
    return OPTIMIZER_BUFFERS[optimizer] * FP32_BYTES * params


def buffers_bytes(spec: ModelSpec) -> int:
    """Module buffers, held like the weights: per BatchNorm of C channels running_mean and
    running_var (2 * 4 C) and num_batches_tracked (8); the ViT's fixed sin-cos table (4 N d)."""
    if isinstance(spec, ViTSpec):
        return FP32_BYTES * spec.num_patches * spec.embed_dim if spec.pos_embed == "sincos-2d" else 0
    from vitbench.analytic.cnn import cnn_layers

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
    _check_batch(batch_size)
    width = value_bytes(precision)
    if not isinstance(spec, ViTSpec):
        return 0
    return batch_size * spec.num_heads * spec.tokens**2 * width


# --- the replay machinery -------------------------------------------------------------------------
class _Tensor:
    __slots__ = ("per_image", "const", "refs")

    def __init__(self, per_image: int, const: int):
        self.per_image = per_image
        self.const = const
        self.refs = 1


class _Replay:
    """Live bytes as an affine function ``a B + c``; every allocation is a peak candidate.

    A tensor is born with one reference (its Python variable); ``save`` adds autograd's
    (training only); ``drop``/``release`` remove one; at zero the bytes are freed."""

    def __init__(self, grad: bool, low: bool, batch_one: bool = False):
        self.grad = grad
        self.low = low  # autocast to 16 bits
        self.batch_one = batch_one  # PyTorch picks some kernels differently for B = 1
        self.a = 0
        self.c = 0
        self.points: list[tuple[int, int]] = []
        self.marks: dict[str, tuple[int, int]] = {}
        self.cache: list[_Tensor] = []  # autocast's weight-cast cache (freed on leaving autocast)
        self.pending: list[tuple[_Tensor, int]] = []  # 16-bit weight grads awaiting ToCopy
        self.uncached: list[_Tensor] = []  # weight casts of the running operator (inference)

    def new(self, per_image: int = 0, const: int = 0) -> _Tensor:
        self.a += per_image
        self.c += const
        self.points.append((self.a, self.c))
        return _Tensor(per_image, const)

    def drop(self, *tensors: _Tensor | None) -> None:
        for t in tensors:
            if t is None:
                continue
            if t.refs <= 0:
                raise AssertionError("memory replay freed a tensor twice")
            t.refs -= 1
            if t.refs == 0:
                self.a -= t.per_image
                self.c -= t.const

    release = drop  # a backward node is done with what it saved

    def save(self, *tensors: _Tensor | None) -> None:
        if self.grad:
            for t in tensors:
                if t is not None:
                    t.refs += 1

    def transient(self, *sizes: tuple[int, int]) -> None:
        """Buffers allocated one after another, then all freed (reorders, workspaces)."""
        self.drop(*[self.new(p, c) for p, c in sizes])

    def cast_weight(self, count: int, width: int) -> _Tensor | None:
        """Autocast's 16-bit copy of a weight (None in fp32 or for no weight). With grad it is
        cached until autocast exits; under inference_mode autocast does not cache, and the
        copy goes when the operator returns (``end_op``)."""
        if not self.low or not count:
            return None
        t = self.new(0, width * count)
        (self.cache if self.grad else self.uncached).append(t)
        return t

    def end_op(self) -> None:
        self.drop(*self.uncached)
        self.uncached = []

    def leave_autocast(self) -> None:
        self.drop(*self.cache)
        self.cache = []

    def weight_grad(self, count: int, width: int) -> None:
        """The .grad of a weight (kept). Used in 16 bits, the node yields a 16-bit gradient;
        ToCopyBackward makes the fp32 one after the node has freed its inputs (``flush``)."""
        if self.low and width != FP32_BYTES:
            self.pending.append((self.new(0, width * count), count))
        else:
            self.new(0, FP32_BYTES * count)

    def flush(self) -> None:
        for g, count in self.pending:
            self.new(0, FP32_BYTES * count)
            self.drop(g)
        self.pending = []

    def mark(self, name: str) -> None:
        self.marks[name] = (self.a, self.c)


def _optimizer_step(r: _Replay, param_sizes: list[int], optimizer: str) -> None:
    """CPU single-tensor optimizers. AdamW per parameter: denom = (exp_avg_sq.sqrt() / c)
    .add_(eps) allocates sqrt and div (2 S); ``denom`` of the previous parameter is freed only
    when reassigned, so the transient is max_i (S_{i-1} + 2 S_i). SGD (with or without
    momentum) updates in place: no temporaries in steady state."""
    if optimizer != "adamw":
        return
    previous = None
    for size in param_sizes:
        sqrt = r.new(0, FP32_BYTES * size)
        denom = r.new(0, FP32_BYTES * size)
        r.drop(sqrt, previous)
        previous = denom
    r.drop(previous)


# --- ViT ------------------------------------------------------------------------------------------
def _vit_param_sizes(spec: ViTSpec) -> list[int]:
    """Parameter tensors in ``model.parameters()`` order (sizes in values)."""
    d, m = spec.embed_dim, spec.mlp_hidden
    sizes = []
    if spec.pool == "cls":
        sizes.append(d)
    if spec.pos_embed == "learned-1d":
        sizes.append((spec.pos_embed_len or spec.tokens) * d)
    elif spec.pos_embed == "learned-2d":
        rows, cols = spec.grid
        sizes += [rows * d // 2, cols * d // 2]
    sizes += [spec.patch_dim * d, d]
    for _ in range(spec.depth):
        sizes += [d, d, 3 * d * d] + ([3 * d] if spec.qkv_bias else [])
        sizes += [d * d, d]
        if spec.norms_per_block == 2:
            sizes += [d, d]
        sizes += [d * m, m, m * d, d]
    if spec.final_norm:
        sizes += [d, d]
    sizes += [d * spec.num_classes, spec.num_classes]
    return sizes


def _vit_step(spec: ViTSpec, r: _Replay, w: int, attention: str) -> None:
    """One step of vitbench.models.vit.VisionTransformer: forward (and loss, backward)."""
    n, d, h, m = spec.tokens, spec.embed_dim, spec.num_heads, spec.mlp_hidden
    N, K, C = spec.num_patches, spec.num_classes, spec.in_chans
    height, width = spec.img_size
    nd, nm, hnn, hn = n * d, n * m, h * n * n, h * n
    train = r.grad
    low = r.low
    # The residual stream is fp32 once an fp32 CLS token or position table is added to it.
    rw = FP32_BYTES if (spec.pool == "cls" or spec.pos_embed != "none") else w
    stream_fp32 = rw == FP32_BYTES
    drop = train and spec.dropout > 0
    attn_drop = train and spec.attn_dropout > 0
    # The CPU flash kernel has no dropout: SDPA then falls back to its math path, which on the
    # CPU upcasts 16-bit q, k, v to fp32 (aw: the width inside attention).
    fallback = attention == "sdpa" and attn_drop
    if fallback:
        attention = "math"
    aw = FP32_BYTES if (fallback and low) else w

    def linear(x: _Tensor, x_fp32: bool, fan_in: int, fan_out: int, rows: int, bias: bool = True,
               input_grad: bool = True):
        """y = x W^T + b saves its input (for dW) and, when x needs a gradient, its weight;
        under autocast the 16-bit casts of W and of an fp32 input are what is saved (the cast
        bias only sits in autocast's cache). Returns (y, saved input, saved weight copy)."""
        wc = r.cast_weight(fan_in * fan_out, w)
        r.cast_weight(fan_out if bias else 0, w)
        xin = r.new(rows * fan_in * w) if (low and x_fp32) else x
        y = r.new(rows * fan_out * w)
        r.end_op()
        r.save(xin, wc if input_grad else None)
        if not input_grad:
            wc = None
        if xin is not x:
            r.drop(xin)
        return y, xin, wc

    def linear_backward(g: _Tensor, g_shared: bool, xin: _Tensor, wc: _Tensor | None,
                        fan_in: int, fan_out: int, rows: int, bias: bool = True,
                        x_fp32: bool = False) -> _Tensor:
        """grad input (rows x fan_in), grad weight and bias; frees the incoming gradient unless
        a residual add shares it, and what the forward saved."""
        gi = r.new(rows * fan_in * w)
        r.weight_grad(fan_in * fan_out, w)
        if bias:
            r.weight_grad(fan_out, w)
        if not g_shared:
            r.drop(g)
        r.release(xin, wc)
        if low and x_fp32:  # ToCopyBackward of the input's cast
            g32 = r.new(rows * fan_in * FP32_BYTES)
            r.drop(gi)
            gi = g32
        r.flush()
        return gi

    def dropout(x: _Tensor, elements: int, width_: int):
        """CPU dropout: noise = bernoulli(1 - p) / (1 - p) in the input dtype, y = x * noise;
        autograd saves the noise (CUDA's fused kernel would save a 1-byte mask)."""
        noise = r.new(elements * width_)
        y = r.new(elements * width_)
        r.save(noise)
        r.drop(noise, x)
        return y, noise

    def layer_norm(x: _Tensor, rows: int):
        """LayerNorm saves its input and the per-row mean and rstd (fp32)."""
        y = r.new(rows * d * rw)
        stats = r.new(rows * 2 * FP32_BYTES)
        r.save(x, stats)
        r.drop(stats)
        return y, stats

    def layer_norm_backward(g: _Tensor, x: _Tensor, stats: _Tensor, rows: int) -> _Tensor:
        gi = r.new(rows * d * rw)
        r.new(0, FP32_BYTES * 2 * d)  # weight and bias grads
        r.drop(g)
        r.release(x, stats)
        return gi

    # --- forward: patch embedding, tokens, positions ----------------------------------------
    image = r.new(C * height * width * FP32_BYTES)  # the batch and its targets, held by the caller
    _labels = r.new(INDEX_BYTES) if train else None  # held by the caller for the whole step
    pe_weights = spec.patch_dim * d
    if spec.patch_embed == "conv":
        wc = r.cast_weight(spec.patch_dim * d, w)
        r.cast_weight(d, w)
        img_in = r.new(C * height * width * w) if low else image
        # the kernel choice of _CNN.conv: im2col for 16 bits, or B = 1 with a patch <= 3
        slow_pe = low or (r.batch_one and spec.patch_size <= 3 and C * height * width <= 20480)
        if slow_pe:  # im2col columns live until the output exists
            cols = r.new(spec.patch_dim * N * w)
            tokens = r.new(N * d * w)
            r.drop(cols)
        else:  # oneDNN: weight reorder, output in its own layout, then a plain copy
            r.transient((0, FP32_BYTES * pe_weights))
            blocked = r.new(N * d * w)
            tokens = r.new(N * d * w)
            r.drop(blocked)
        r.end_op()
        r.save(img_in, wc)
        if img_in is not image:
            r.drop(img_in)
        pe_saved = (img_in, wc)
    else:
        patches = r.new(C * height * width * FP32_BYTES)  # reshape of the permuted view copies
        tokens, pe_in, pe_wc = linear(patches, True, spec.patch_dim, d, N, input_grad=False)
        r.drop(patches)
        pe_saved = (pe_in, pe_wc)
    x = tokens
    if spec.pos_embed in ("learned-2d", "sincos-2d"):
        grid = r.new(0, N * d * FP32_BYTES) if spec.pos_embed == "learned-2d" else None
        y = r.new(N * d * rw)
        r.drop(x, grid)
        x = y
    if spec.pool == "cls":
        y = r.new(nd * rw)  # cat
        r.drop(x)
        x = y
    if spec.pos_embed == "learned-1d":
        y = r.new(nd * rw)
        r.drop(x)
        x = y
    pos_noise = None
    held = x  # forward_features' local ``x``: alive until the blocks return
    held.refs += 1
    if drop:
        x, pos_noise = dropout(x, nd, rw)

    # --- forward: blocks ------------------------------------------------------------------
    blocks: list[dict[str, Any]] = []
    for _ in range(spec.depth):
        s: dict[str, Any] = {"x_in": x}
        y1, s["ln1"] = layer_norm(x, n)
        qkv, s["qkv_in"], s["qkv_w"] = linear(y1, stream_fp32, d, 3 * d, n, spec.qkv_bias)
        if attention == "sdpa":
            # CPU flash attention saves q, k, v (views of qkv), its output and the fp32
            # log-sum-exp; its per-thread workspace is small and ignored. The output's layout
            # makes transpose(1, 2).reshape a view.
            out = r.new(nd * w)
            lse = r.new(hn * FP32_BYTES)
            r.save(qkv, out, lse)
            r.drop(lse)
            s["sdpa"] = (qkv, out, lse)
            attn_out = out
        else:
            upcast = [r.new(nd * aw) for _ in range(3)] if aw != w else []  # q, k, v to fp32
            qs = r.new(nd * aw)  # q * scale
            qc = r.new(nd * aw)  # matmul folds the non-contiguous q and k^T into copies
            kc = r.new(nd * aw)
            scores = r.new(hnn * aw)
            r.save(qc, kc)
            r.drop(qs, qc, kc)
            probs = r.new(hnn * aw)  # softmax saves its output
            r.save(probs)
            r.drop(scores)
            attn_noise = None
            used = probs
            if attn_drop:
                used, attn_noise = dropout(probs, hnn, aw)
            vc = r.new(nd * aw)
            o = r.new(nd * aw)
            r.save(used, vc)
            r.drop(vc, *upcast)
            if aw != w:  # back to the autocast dtype
                o16 = r.new(nd * w)
                r.drop(o)
                o = o16
            attn_out = r.new(nd * w)  # transpose(1, 2).reshape copies
            r.drop(o, used)
            s["math"] = (qc, kc, probs, attn_noise, used, vc)
        proj, s["proj_in"], s["proj_w"] = linear(attn_out, False, d, d, n)
        r.drop(attn_out, qkv)  # Attention.forward's locals go
        if drop:
            proj, s["proj_noise"] = dropout(proj, nd, w)
        r.drop(y1)  # the caller's reference to LN1's output
        if rw != w:
            r.transient((nd * rw, 0))  # type promotion of the branch before the add
        x_mid = r.new(nd * rw)
        r.drop(proj)
        s["x_mid"] = x_mid
        y2, s["ln2"] = layer_norm(x_mid, n)
        f1, s["fc1_in"], s["fc1_w"] = linear(y2, stream_fp32, d, m, n)
        g1 = r.new(nm * w)  # GELU saves its input
        r.save(f1)
        r.drop(f1)
        s["fc1_out"] = f1
        if drop:
            g1, s["drop1"] = dropout(g1, nm, w)
        f2, s["fc2_in"], s["fc2_w"] = linear(g1, False, m, d, n)
        r.drop(g1)
        if drop:
            f2, s["drop2"] = dropout(f2, nd, w)
        r.drop(y2)
        if rw != w:
            r.transient((nd * rw, 0))
        x_out = r.new(nd * rw)
        r.drop(f2, x_mid)
        r.drop(x)  # nn.Sequential's reference to the block input
        blocks.append(s)
        x = x_out
    r.drop(held)

    # --- forward: head and loss -------------------------------------------------------------
    if spec.pool == "cls":
        pooled = x  # x[:, 0] is a view: it keeps the whole stream alive
    else:
        pooled = r.new(d * rw)
        r.drop(x)
    head_in = pooled
    norm_saved = None
    if spec.final_norm:
        head_in = r.new(d * rw)
        stats = r.new(2 * FP32_BYTES)
        r.save(pooled, stats)
        r.drop(stats, pooled)
        norm_saved = (pooled, stats)
    logits, head_xin, head_wc = linear(head_in, stream_fp32, d, K, 1)
    r.drop(head_in)
    if not train:
        r.mark("forward_end")
        r.drop(logits)
        r.leave_autocast()
        return
    logp = r.new(K * FP32_BYTES)  # log_softmax, saved for backward
    r.save(logp)
    r.drop(logits)
    loss = r.new(0, 2 * FP32_BYTES)  # the loss and nll_loss's saved total_weight
    r.leave_autocast()
    r.mark("forward_end")

    # --- backward -------------------------------------------------------------------------
    g = r.new(K * FP32_BYTES)  # d loss / d logits
    r.release(logp)
    g = linear_backward(g, False, head_xin, head_wc, d, K, 1, x_fp32=stream_fp32)
    if norm_saved is not None:
        gi = r.new(d * rw)
        r.new(0, FP32_BYTES * 2 * d)
        r.drop(g)
        r.release(*norm_saved)
        g = gi
    gx = r.new(nd * rw)  # Select/MeanBackward: the stream's gradient
    r.drop(g)
    def branch_gradient(saved: dict, noise: str) -> tuple[Any, bool]:
        """The residual add's gradient entering a branch: cast to the branch dtype, then through
        the branch's output dropout; ``shared`` says whether it is still the stream's tensor."""
        gb, shared = gx, True
        if rw != w:
            gb, shared = r.new(nd * w), False
        if noise in saved:
            gd = r.new(nd * w)
            r.release(saved[noise])
            if not shared:
                r.drop(gb)
            gb, shared = gd, False
        return gb, shared

    for s in reversed(blocks):
        # MLP branch: x_out = x_mid + drop2(fc2(drop1(gelu(fc1(LN2(x_mid))))))
        gb, shared = branch_gradient(s, "drop2")
        gh = linear_backward(gb, shared, s["fc2_in"], s["fc2_w"], m, d, n)
        if "drop1" in s:
            gd = r.new(nm * w)
            r.drop(gh)
            r.release(s["drop1"])
            gh = gd
        gf = r.new(nm * w)  # GELU backward
        r.drop(gh)
        r.release(s["fc1_out"])
        gy = linear_backward(gf, False, s["fc1_in"], s["fc1_w"], d, m, n, x_fp32=stream_fp32)
        r.drop(layer_norm_backward(gy, s["x_mid"], s["ln2"], n))  # accumulated in place
        # attention branch: x_mid = x_in + proj_drop(proj(attention(LN1(x_in))))
        gb, shared = branch_gradient(s, "proj_noise")
        ga = linear_backward(gb, shared, s["proj_in"], s["proj_w"], d, d, n)
        if attention == "sdpa":
            gq, gk, gv = r.new(nd * w), r.new(nd * w), r.new(nd * w)
            r.drop(ga)
            r.release(*s["sdpa"])
        else:
            qc, kc, probs, attn_noise, used, vc = s["math"]
            gc = r.new(nd * w)  # UnsafeViewBackward: a contiguous copy
            r.drop(ga)
            if aw != w:
                g32 = r.new(nd * aw)
                r.drop(gc)
                gc = g32
            gp, gv = r.new(hnn * aw), r.new(nd * aw)
            r.drop(gc)
            r.release(used, vc)
            if attn_noise is not None:
                gd = r.new(hnn * aw)
                r.drop(gp)
                r.release(attn_noise)
                gp = gd
            gs = r.new(hnn * aw)  # softmax backward
            r.drop(gp)
            r.release(probs)
            gq0, gk = r.new(nd * aw), r.new(nd * aw)
            r.drop(gs)
            r.release(qc, kc)
            gq = r.new(nd * aw)  # the scale's MulBackward
            r.drop(gq0)
            if aw != w:  # the upcasts' ToCopyBackward
                converted = [r.new(nd * w) for _ in range(3)]
                r.drop(gq, gk, gv)
                gq, gk, gv = converted
        gqkv = r.new(3 * nd * w)  # UnbindBackward stacks
        r.drop(gq, gk, gv)
        gcopy = r.new(3 * nd * w)  # the permute/reshape's backward copies
        r.drop(gqkv)
        gy = linear_backward(gcopy, False, s["qkv_in"], s["qkv_w"], d, 3 * d, n, spec.qkv_bias,
                             x_fp32=stream_fp32)
        r.drop(layer_norm_backward(gy, s["x_in"], s["ln1"], n))

    # --- backward: positions, tokens, patch embedding ---------------------------------------
    if pos_noise is not None:
        gd = r.new(nd * rw)
        r.release(pos_noise)
        r.drop(gx)
        gx = gd
    if spec.pos_embed == "learned-1d":
        r.new(0, FP32_BYTES * (spec.pos_embed_len or n) * d)
    if spec.pool == "cls":
        r.new(0, FP32_BYTES * d)
    if spec.pos_embed == "learned-2d":
        rows, cols = spec.grid
        r.new(0, FP32_BYTES * (rows + cols) * (d // 2))
    if spec.patch_embed == "conv":
        gcont = r.new(N * d * w)  # the gradient of the transposed view, made contiguous
        if slow_pe:
            cols = r.new(spec.patch_dim * N * w)
            r.weight_grad(pe_weights, w)
            r.drop(cols)
        else:
            reorder = r.new(N * d * w)
            blocked = r.new(0, FP32_BYTES * pe_weights)
            r.drop(reorder)
            r.new(0, FP32_BYTES * pe_weights)
            r.drop(blocked)
        r.weight_grad(d, w)
        r.drop(gcont)
    else:
        r.weight_grad(spec.patch_dim * d, w)
        r.weight_grad(d, w)
    r.release(*pe_saved)
    r.flush()
    r.drop(gx, loss)
    r.mark("backward_end")


# --- CNNs -----------------------------------------------------------------------------------------
class _CNN:
    """Operators of torchvision's ResNets and the plain CNN, replayed on a ``_Replay``.

    Tensor sizes are per image (elements); ``w`` the activation width in bytes."""

    def __init__(self, r: _Replay, w: int):
        self.r = r
        self.w = w
        self.nodes: list[tuple] = []  # backward work, in forward order

    def conv(self, x: _Tensor, in_el: int, out_el: int, c_in: int, c_out: int, k: int,
             bias: bool, first: bool, columns: int) -> _Tensor:
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
        r, w = self.r, self.w
        gi = None
        if slow:  # grad input: gemm into columns, col2im; grad weight: im2col of the input
            if not first:
                cols = r.new(columns * w) if columns else None
                gi = r.new(in_el * w)
                r.drop(cols)
            cols = r.new(columns * w) if columns else None
            r.weight_grad(count, w)
            r.drop(cols)
        else:
            if not first:  # grad input: grad reorder, weight reorder, blocked result, plain copy
                go, wr = r.new(out_el * w), r.new(0, FP32_BYTES * count)
                gb = r.new(in_el * w)
                r.drop(wr, go)
                gi = r.new(in_el * w)
                r.drop(gb)
            # grad weight: grad and input reorders, blocked result, plain copy
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

    def batchnorm(self, x: _Tensor, el: int, c: int) -> _Tensor:
        """Training BatchNorm saves its input and per-channel fp32 mean and invstd."""
        r = self.r
        y = r.new(el * self.w)
        stats = r.new(0, 2 * FP32_BYTES * c)
        r.save(x, stats)
        r.drop(stats)
        self.nodes.append(("bn", x, stats, el, c))
        return y

    def _bn_backward(self, g, x, stats, el, c):
        r = self.r
        gi = r.new(el * self.w)
        r.transient((el * self.w, 0))
        r.new(0, 2 * FP32_BYTES * c)
        r.drop(g)
        r.release(x, stats)
        return gi

    def relu(self, x: _Tensor, el: int, inplace: bool) -> _Tensor:
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

    def maxpool(self, x: _Tensor, in_el: int, out_el: int) -> _Tensor:
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

    def linear(self, x: _Tensor, fan_in: int, fan_out: int) -> _Tensor:
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

    def backward_node(self, node: tuple, g: _Tensor) -> _Tensor | None:
        kind, *args = node
        return getattr(self, f"_{kind}_backward")(g, *args)


def _conv_geometry(h: int, w: int, k: int, s: int, p: int) -> tuple[int, int]:
    return (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1


def _cnn_param_sizes(spec: ResNetSpec | PlainCNNSpec) -> list[int]:
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
    from vitbench.analytic.cnn import cnn_layers

    sizes = []
    for layer in cnn_layers(spec):
        if layer.op == "batchnorm":
            sizes += [layer.params // 2] * 2
        elif layer.op == "linear":
            sizes += [layer.params - layer.out_elements, layer.out_elements]
        elif layer.params:
            sizes.append(layer.params)
    return sizes


def _resnet_step(spec: ResNetSpec, r: _Replay, w: int) -> None:
    """torchvision's ResNet (or GenericResNet from its blocks): stem, blocks, pool, fc."""
    train = r.grad
    net = _CNN(r, w)
    c, (h, wd) = spec.in_chans, spec.img_size
    image = r.new(c * h * wd * FP32_BYTES)
    _labels = r.new(INDEX_BYTES) if train else None  # held by the caller for the whole step
    # stem
    if spec.stem == "imagenet":
        k, s, p = 7, 2, 3
    else:
        k, s, p = 3, 1, 1
    oh, ow = _conv_geometry(h, wd, k, s, p)
    out_el = spec.stem_width * oh * ow
    x = net.conv(image, c * h * wd, out_el, c, spec.stem_width, k, False, True,
                 c * k * k * oh * ow)
    y = net.batchnorm(x, out_el, spec.stem_width)
    r.drop(x)
    x = net.relu(y, out_el, inplace=True)
    c, h, wd = spec.stem_width, oh, ow
    if spec.stem == "imagenet":
        oh, ow = _conv_geometry(h, wd, 3, 2, 1)
        y = net.maxpool(x, c * h * wd, c * oh * ow)
        x, h, wd = y, oh, ow
    # A module's input stays referenced (by nn.Module.__call__'s arguments) until it returns:
    # the input of every stage lives through the stage, and in GenericResNet, whose stages sit
    # in one more nn.Sequential, the stem's output lives through all stages.
    stem_out = x
    if not spec.is_torchvision:
        stem_out.refs += 1
    structure: list[tuple] = []  # per block: node indices (start, main path end, end)
    for stage, (blocks, width) in enumerate(zip(spec.layers, spec.widths)):
        stage_in = x
        stage_in.refs += 1
        for b in range(blocks):
            stride = 2 if stage > 0 and b == 0 else 1
            out_c = width * spec.expansion
            in_el = c * h * wd
            start = len(net.nodes)
            if spec.block == "basic":
                convs = [(width, 3, stride, 1), (out_c, 3, 1, 1)]
            else:
                convs = [(width, 1, 1, 0), (width, 3, stride, 1), (out_c, 1, 1, 0)]
            out = x
            cc, hh, ww = c, h, wd
            for i, (co, kk, ss, pp) in enumerate(convs):
                oh, ow = _conv_geometry(hh, ww, kk, ss, pp)
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
                oh, ow = _conv_geometry(h, wd, 1, stride, 0)
                el = out_c * oh * ow
                ds = net.conv(x, in_el, el, c, out_c, 1, False, False, c * oh * ow if stride != 1 else 0)
                identity = net.batchnorm(ds, el, out_c)
                r.drop(ds)
            r.drop(identity)  # out += identity (in place), nothing saved
            out = net.relu(out, cc * hh * ww, inplace=True)
            r.drop(x)
            structure.append((start, main_end, len(net.nodes)))
            x, c, h, wd = out, cc, hh, ww
        r.drop(stage_in)
    if not spec.is_torchvision:
        r.drop(stem_out)
    # head: adaptive average pool (saves its input), flatten (a view), fc
    pooled = r.new(c * w)
    r.save(x)
    r.drop(x)
    pool_in = x
    logits = net.linear(pooled, c, spec.num_classes)
    r.drop(pooled)
    _finish(r, net, logits, spec.num_classes, train)
    if not train:
        return
    g = _loss_backward(r, net, spec.num_classes)
    g = net.backward_node(net.nodes.pop(), g)  # fc
    gi = r.new(c * h * wd * w)  # AdaptiveAvgPool backward
    r.drop(g)
    r.release(pool_in)
    g = gi
    # blocks in reverse; the final ReLU node closes each block
    for start, main_end, end in reversed(structure):
        nodes = net.nodes[start:end]
        relu_node = nodes[-1]
        g = net.backward_node(relu_node, g)  # gradient of out += identity, shared by both paths
        g.refs += 1
        gx_ds = None
        if end - 1 > main_end:  # downsample path runs first (created last)
            gd = net.backward_node(nodes[main_end - start + 1], g)  # its BatchNorm
            gx_ds = net.backward_node(nodes[main_end - start], gd)  # its convolution
        gm = g
        for node in reversed(nodes[: main_end - start]):
            gm = net.backward_node(node, gm)
        r.drop(gm)  # the main path's input gradient is accumulated in place
        if gx_ds is not None:
            g = gx_ds  # into the downsample's; else into the identity's, g
        del net.nodes[start:end]
    for node in reversed(net.nodes):
        g = net.backward_node(node, g)
    r.drop(g)  # the caller still holds the batch during the optimizer step
    r.mark("backward_end")


def _plain_cnn_step(spec: PlainCNNSpec, r: _Replay, w: int) -> None:
    """The slides' CNN: [conv + ReLU] x k, max pool, BatchNorm per stage; flatten; FC + ReLU."""
    train = r.grad
    net = _CNN(r, w)
    c, (h, wd) = spec.in_chans, spec.img_size
    image = r.new(c * h * wd * FP32_BYTES)
    _labels = r.new(INDEX_BYTES) if train else None  # held by the caller for the whole step
    x = image
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
        y = net.maxpool(x, c * h * wd, c * oh * ow)
        x, h, wd = y, oh, ow
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
    _finish(r, net, logits, spec.num_classes, train)
    if not train:
        return
    g = _loss_backward(r, net, spec.num_classes)
    for node in reversed(net.nodes):
        g = net.backward_node(node, g)
    r.drop(g)  # the caller still holds the batch during the optimizer step
    r.mark("backward_end")


def _finish(r: _Replay, net: _CNN, logits: _Tensor, classes: int, train: bool) -> None:
    """Loss (cross entropy: log_softmax saved in fp32) and leaving autocast."""
    if train:
        logp = r.new(classes * FP32_BYTES)
        r.save(logp)
        r.drop(logits)
        net.logp = logp  # type: ignore[attr-defined]
        net.loss = r.new(0, 2 * FP32_BYTES)  # type: ignore[attr-defined]  # + total_weight
    r.leave_autocast()
    r.mark("forward_end")
    if not train:
        r.drop(logits)


def _loss_backward(r: _Replay, net: _CNN, classes: int) -> _Tensor:
    g = r.new(classes * FP32_BYTES)
    r.release(net.logp)  # type: ignore[attr-defined]
    r.drop(net.loss)  # type: ignore[attr-defined]
    return g


# --- estimates ------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _profile(spec: ModelSpec, mode: str, precision: str, optimizer: str, attention: str,
             batch_one: bool) -> _Profile:
    """The replay for batches of one image (``batch_one``) or of more (kernels differ)."""
    from vitbench.analytic import params

    w = value_bytes(precision)
    r = _Replay(grad=mode == "train", low=w != FP32_BYTES, batch_one=batch_one)
    if isinstance(spec, ViTSpec):
        _vit_step(spec, r, w, attention)
        sizes = _vit_param_sizes(spec)
    elif isinstance(spec, ResNetSpec):
        _resnet_step(spec, r, w)
        sizes = _cnn_param_sizes(spec)
    elif isinstance(spec, PlainCNNSpec):
        _plain_cnn_step(spec, r, w)
        sizes = _cnn_param_sizes(spec)
    else:
        raise SpecError("model", spec, "is not a model spec")
    if mode == "train":
        _optimizer_step(r, sizes, optimizer)
    p = params(spec)
    fixed = weights_bytes(p) + buffers_bytes(spec)
    if mode == "train":
        fixed += optimizer_bytes(p, optimizer)
        if optimizer == "adamw":  # one fp32 scalar ``step`` per parameter tensor
            fixed += FP32_BYTES * len(sizes)
    return _Profile(_pareto(r.points), r.marks["forward_end"], fixed)


@dataclass(frozen=True)
class _Profile:
    points: tuple[tuple[int, int], ...]  # (bytes per image, constant bytes) at each allocation
    forward_end: tuple[int, int]  # live bytes when the forward pass and loss end
    fixed: int  # weights + optimizer state, held throughout

    def peak(self, batch_size: int) -> int:
        return self.fixed + max(a * batch_size + c for a, c in self.points)


def _pareto(points: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Keep only points not dominated in both slope and intercept (the others never win)."""
    kept: list[tuple[int, int]] = []
    for a, c in sorted(set(points), key=lambda p: (-p[0], -p[1])):
        if not kept or c > kept[-1][1]:
            kept.append((a, c))
    return tuple(kept)


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
        return {
            "pred_weights_bytes": self.weights_bytes,
            "pred_gradients_bytes": self.gradients_bytes,
            "pred_optimizer_bytes": self.optimizer_bytes,
            "pred_activations_bytes": self.activations_bytes,
            "pred_attention_matrix_bytes": self.attention_matrix_bytes,
            "pred_peak_memory_bytes": self.peak_bytes,
        }


def _resolve_attention(spec: ModelSpec, attention: str | None) -> str:
    if attention is not None:
        _check_choice("attention", attention, ATTENTIONS)
        return attention
    return spec.attention if isinstance(spec, ViTSpec) else "sdpa"


def _validate(mode: str, precision: str, optimizer: str) -> None:
    _check_choice("mode", mode, MODES)
    _check_choice("precision", precision, PRECISIONS)
    _check_choice("optimizer", optimizer, OPTIMIZERS)


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

    Approximations (all bytes are the CPU's):
    - oneDNN's backward-weights reduction scratchpads are left out: for some shapes (k x k
      patch convolutions, 512-channel 3x3 convolutions on 2x2 maps) oneDNN allocates several
      copies of a weight; they depend on the ISA, the thread count and the shape.
    - Kernel choice as ATen's ``use_mkldnn`` with more than one thread: fp32 convolutions use
      oneDNN (input reorder skipped for <= 4 channels) except B = 1 with k <= 3 and
      C H W <= 20480 (im2col); 16-bit convolutions use im2col, as on CPUs without native
      bf16 (AVX2); with AVX-512-BF16/AMX oneDNN runs them with other transients.
    - The CPU flash-attention kernel's per-thread workspace and BatchNorm's per-channel
      temporaries are ignored; allocator rounding and the interpreter are not modelled.
    - Dropout (p > 0) saves CPU dropout's noise in the activation dtype; CUDA saves a 1-byte
      mask. fp16 is modelled like bf16 (GradScaler's few scalars ignored).
    - Python references follow vitbench's ViT and torchvision's ResNet: a module's input lives
      until the module returns.
    - On CUDA add the context, cuDNN/cuBLAS workspaces and the caching allocator's rounding;
      this model was validated on the CPU only."""
    _check_batch(batch_size)
    _validate(mode, precision, optimizer)
    kernel = _resolve_attention(spec, attention)
    from vitbench.analytic import params

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

    (exact; every k must also satisfy fixed + c_k <= memory)."""
    if isinstance(memory_bytes, bool) or not isinstance(memory_bytes, int) or memory_bytes < 0:
        raise SpecError("memory_bytes", memory_bytes, "must be a non-negative integer")
    _validate(mode, precision, optimizer)
    kernel = _resolve_attention(spec, attention)
    if _profile(spec, mode, precision, optimizer, kernel, True).peak(1) > memory_bytes:
        return 0
    profile = _profile(spec, mode, precision, optimizer, kernel, False)
    room = memory_bytes - profile.fixed
    best: int | None = None
    for a, c in profile.points:
        if c > room:
            return 1
        if a > 0:
            limit = (room - c) // a
            best = limit if best is None else min(best, limit)
    return max(best or 1, 1)  # the input batch alone makes some a_k > 0


__all__ = [
    "MemoryEstimate",
    "attention_matrix_bytes",
    "memory_estimate",
    "plan",
    "weights_bytes",
    "gradients_bytes",
    "optimizer_bytes",
    "value_bytes",
]
